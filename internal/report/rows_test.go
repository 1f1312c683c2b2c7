package report

import (
	"context"
	"math"
	"path/filepath"
	"testing"

	"github.com/cadre-dev/cadre/internal/store"
)

// reportStore holds run r1 with agent steps by two models and a commit
// step, and evaluations of the agent steps (plus one of another run).
func reportStore(t *testing.T, evaluate bool) *store.Store {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "j.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	for _, id := range []string{"r1", "r2"} {
		if err := st.CreateRun(ctx, store.Run{ID: id}); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range []store.Step{
		{ID: "a/code", Role: "coder", Runner: "claude", Model: "sonnet", Kind: "agent"},
		{ID: "b/code", Role: "coder", Runner: "claude", Model: "sonnet", Kind: "agent"},
		{ID: "a/audit", Role: "auditor", Runner: "codex", Model: "", Kind: "agent"},
		{ID: "a/commit", Kind: "commit"},
	} {
		s.RunID, s.Status = "r1", store.StepCompleted
		if err := st.StartStep(ctx, s); err != nil {
			t.Fatal(err)
		}
		if err := st.FinishStep(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	if !evaluate {
		return st
	}
	score := func(v float64) *float64 { return &v }
	ev := func(run, step, role, runner, model, kind string, q *float64) store.Evaluation {
		return store.Evaluation{Source: store.SourceRun, RunID: run, StepID: step, Role: role, Runner: runner, Model: model, Kind: kind, Score: q}
	}
	if err := st.RecordEvaluations(ctx,
		ev("r1", "a/code", "coder", "claude", "sonnet", store.KindJudge, score(0.9)),
		ev("r1", "b/code", "coder", "claude", "sonnet", store.KindJudge, score(0.6)),
		ev("r1", "b/code", "coder", "claude", "sonnet", store.KindOutcome, nil),      // no score: not a sample
		ev("r2", "a/code", "coder", "claude", "sonnet", store.KindJudge, score(0.0)), // another run
	); err != nil {
		t.Fatal(err)
	}
	return st
}

func TestReportByModelAddsEvaluations(t *testing.T) {
	ctx := context.Background()
	rows, err := Rows(ctx, reportStore(t, true), "r1", "model")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Row{}
	for _, r := range rows {
		got[r.Key] = r
	}
	if r := got["sonnet"]; r.EvalSamples != 2 || r.EvalMeanScore == nil || math.Abs(*r.EvalMeanScore-0.75) > 1e-9 {
		t.Errorf("sonnet row = %+v, want 2 scored evaluations with mean 0.75 (this run only)", r)
	}
	if r := got["(default)"]; r.EvalSamples != 0 || r.EvalMeanScore != nil {
		t.Errorf("unevaluated model row = %+v, want no evaluation figures", r)
	}

	rows, err = Rows(ctx, reportStore(t, true), "r1", "role")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.EvalSamples != 0 || r.EvalMeanScore != nil {
			t.Errorf("--by role row %+v carries evaluation figures", r)
		}
	}
}
