package evalstore

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/cadre-dev/cadre/internal/store"
)

// workSteps are item a's steps in run r1: two working agent steps, one
// of them failed, a reviewer's, a commit, a step without a runner, and a
// working step of another item.
func workSteps() []store.Step {
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	end := start.Add(1500 * time.Millisecond)
	step := func(item, id, kind, role, runner, status string) store.Step {
		return store.Step{RunID: "r1", ItemID: item, ID: id, Kind: kind, Role: role, Runner: runner, Model: "m", Status: status,
			StartedAt: start, EndedAt: &end, Usage: store.Usage{CostUSD: 0.5, InputTokens: 10, OutputTokens: 20}}
	}
	return []store.Step{
		step("a", "a/code#1", "agent", "coder", "claude", store.StepCompleted),
		step("a", "a/code#2", "agent", "coder", "claude", store.StepFailed),
		step("a", "a/plan#1", "agent", "planner", "codex", store.StepCompleted),
		step("a", "a/audit#1", "agent", "auditor", "claude", store.StepCompleted),
		step("a", "a/commit", "commit", "", "", store.StepCompleted),
		step("a", "a/x#1", "agent", "coder", "", store.StepCompleted),
		step("b", "b/code#1", "agent", "coder", "claude", store.StepCompleted),
	}
}

// TestVerdictsOnWorkingSteps: an item's end is a verdict on each of its
// completed working agent steps only; only an outcome carries the
// step's usage.
func TestVerdictsOnWorkingSteps(t *testing.T) {
	evs := Verdicts("r1", "a", workSteps(), store.KindOutcome, true)
	var got []string
	for _, ev := range evs {
		got = append(got, ev.StepID)
		if ev.RunID != "r1" || ev.ItemID != "a" || ev.Kind != store.KindOutcome || ev.Passed == nil || !*ev.Passed || ev.Score == nil || *ev.Score != 1 {
			t.Errorf("%s: %+v, want a passed outcome of r1's item a scoring 1", ev.StepID, ev)
		}
		if ev.Usage == nil || ev.Usage.CostUSD != 0.5 || ev.Usage.LatencyMS != 1500 || ev.Usage.OutputTokens != 20 {
			t.Errorf("%s: usage %+v, want the step's", ev.StepID, ev.Usage)
		}
	}
	if len(got) != 2 || got[0] != "a/code#1" || got[1] != "a/plan#1" {
		t.Errorf("evaluated %v, want a/code#1 and a/plan#1", got)
	}
	for _, ev := range Verdicts("r1", "a", workSteps(), store.KindMerged, false) {
		if ev.Usage != nil || *ev.Score != 0 || *ev.Passed {
			t.Errorf("%s: %+v, want a failed verdict scoring 0 without usage", ev.StepID, ev)
		}
	}
}

// TestRecordPullRequest: a merge is recorded for the working steps of the
// latest run that worked on the item.
func TestRecordPullRequest(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "j.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.CreateRun(ctx, store.Run{ID: "r1"}, store.Item{ID: "a"}, store.Item{ID: "b"}); err != nil {
		t.Fatal(err)
	}
	for _, s := range workSteps() {
		status := s.Status
		s.Status = store.StepStarted
		if err := st.StartStep(ctx, s); err != nil {
			t.Fatal(err)
		}
		s.Status = status
		if err := st.FinishStep(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	n, err := RecordPullRequest(ctx, st, "a", true)
	if err != nil || n != 2 {
		t.Fatalf("recorded %d, %v; want 2", n, err)
	}
	evs, err := st.Evaluations(ctx, store.EvalFilter{RunID: "r1"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 2 {
		t.Fatalf("%d evaluations in the store, want 2", len(evs))
	}
	for _, ev := range evs {
		if ev.Kind != store.KindMerged || ev.ItemID != "a" || ev.Passed == nil || !*ev.Passed {
			t.Errorf("%+v, want a passed merge of item a", ev)
		}
	}
}
