package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/cadre-dev/cadre/internal/store"
	"github.com/google/go-cmp/cmp"
)

func TestStepLifecycle(t *testing.T) {
	ctx := context.Background()
	s, _ := open(t)
	mustRun(t, s, "r1", t0)
	const id = "task-a/code/coder#1"
	start := store.Step{RunID: "r1", ItemID: "task-a", ID: id, Role: "coder", Runner: "claude", Model: "sonnet", Kind: "agent",
		OutputPath: ".cadre/runs/r1/out.md", StartedAt: t0}

	// First try fails.
	if err := s.StartStep(ctx, start); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetStep(ctx, "r1", id)
	if err != nil {
		t.Fatal(err)
	}
	want := start
	want.Status, want.Tries = "started", 1
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("after start (-want +got):\n%s", diff)
	}
	failEnd := t0.Add(time.Minute)
	if err := s.FinishStep(ctx, store.Step{RunID: "r1", ID: id, Status: "failed", ExitCode: 3, Error: "crashed",
		Usage: store.Usage{InputTokens: 10, CostUSD: 0.5}, EndedAt: &failEnd}); err != nil {
		t.Fatal(err)
	}
	got, err = s.GetStep(ctx, "r1", id)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != "failed" || got.ExitCode != 3 || got.Error != "crashed" || got.EndedAt == nil || !got.EndedAt.Equal(failEnd) ||
		got.OutputPath != start.OutputPath {
		t.Errorf("after failure: %+v", got)
	}

	// Restart after failure: back to started, second try, outcome cleared.
	restart := start
	restart.Model, restart.StartedAt = "opus", t0.Add(2*time.Minute)
	if err := s.StartStep(ctx, restart); err != nil {
		t.Fatal(err)
	}
	got, err = s.GetStep(ctx, "r1", id)
	if err != nil {
		t.Fatal(err)
	}
	want = restart
	want.Status, want.Tries = "started", 2
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("after restart (-want +got):\n%s", diff)
	}

	// Second try completes.
	end := t0.Add(3 * time.Minute)
	done := store.Step{RunID: "r1", ID: id, Status: "completed", OutputPath: ".cadre/runs/r1/out2.md",
		Signal: json.RawMessage(`{"status":"COMPLETE"}`), Result: json.RawMessage(`{"commit":"abc123"}`),
		Usage:   store.Usage{InputTokens: 100, OutputTokens: 20, CacheReadTokens: 5, CacheWriteTokens: 7, CostUSD: 1.25, CostEstimated: true},
		EndedAt: &end}
	if err := s.FinishStep(ctx, done); err != nil {
		t.Fatal(err)
	}
	got, err = s.GetStep(ctx, "r1", id)
	if err != nil {
		t.Fatal(err)
	}
	want = restart
	want.Status, want.Tries, want.OutputPath = "completed", 2, done.OutputPath
	want.Signal, want.Result, want.Usage, want.EndedAt = done.Signal, done.Result, done.Usage, &end
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("after completion (-want +got):\n%s", diff)
	}

	// A completed step is never started or finished again.
	if err := s.StartStep(ctx, start); !errors.Is(err, store.ErrCompleted) {
		t.Errorf("StartStep on completed step: err = %v, want ErrCompleted", err)
	}
	if err := s.FinishStep(ctx, store.Step{RunID: "r1", ID: id, Status: "failed"}); !errors.Is(err, store.ErrCompleted) {
		t.Errorf("FinishStep on completed step: err = %v, want ErrCompleted", err)
	}
	got, err = s.GetStep(ctx, "r1", id)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != "completed" || got.Tries != 2 {
		t.Errorf("refused calls changed the step: status %q tries %d", got.Status, got.Tries)
	}
}

func TestStartStepAfterCrash(t *testing.T) {
	// A step left "started" by a killed process is started again on resume.
	ctx := context.Background()
	s, _ := open(t)
	mustRun(t, s, "r1", t0)
	st := store.Step{RunID: "r1", ID: "s#1", Kind: "command"}
	for range 2 {
		if err := s.StartStep(ctx, st); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.GetStep(ctx, "r1", "s#1")
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != "started" || got.Tries != 2 {
		t.Errorf("status %q tries %d, want started 2", got.Status, got.Tries)
	}
}

func TestStepErrors(t *testing.T) {
	ctx := context.Background()
	s, _ := open(t)
	mustRun(t, s, "r1", t0)
	if err := s.StartStep(ctx, store.Step{RunID: "r1", ID: "s"}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		err      error
		notFound bool
	}{
		{"start in unknown run", s.StartStep(ctx, store.Step{RunID: "nope", ID: "s"}), true},
		{"start without id", s.StartStep(ctx, store.Step{RunID: "r1"}), false},
		{"finish unstarted", s.FinishStep(ctx, store.Step{RunID: "r1", ID: "other", Status: "completed"}), true},
		{"finish bad status", s.FinishStep(ctx, store.Step{RunID: "r1", ID: "s", Status: "started"}), false},
		{"finish bad signal", s.FinishStep(ctx, store.Step{RunID: "r1", ID: "s", Status: "completed", Signal: json.RawMessage("nope")}), false},
		{"finish bad result", s.FinishStep(ctx, store.Step{RunID: "r1", ID: "s", Status: "completed", Result: json.RawMessage("{")}), false},
		{"get missing", func() error { _, err := s.GetStep(ctx, "r1", "zz"); return err }(), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.err == nil {
				t.Fatal("no error")
			}
			if errors.Is(tt.err, store.ErrNotFound) != tt.notFound {
				t.Errorf("err = %v; want ErrNotFound: %v", tt.err, tt.notFound)
			}
		})
	}
	got, err := s.GetStep(ctx, "r1", "s")
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != "started" {
		t.Errorf("rejected FinishStep changed the step to %q", got.Status)
	}
}

func TestStepsInStartOrder(t *testing.T) {
	ctx := context.Background()
	s, _ := open(t)
	mustRun(t, s, "r1", t0)
	mustRun(t, s, "r2", t0)
	for _, st := range []store.Step{
		{RunID: "r1", ID: "c"}, {RunID: "r1", ID: "a"}, {RunID: "r2", ID: "x"}, {RunID: "r1", ID: "b"},
	} {
		if err := s.StartStep(ctx, st); err != nil {
			t.Fatal(err)
		}
	}
	steps, err := s.Steps(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, st := range steps {
		ids = append(ids, st.ID)
	}
	if diff := cmp.Diff([]string{"c", "a", "b"}, ids); diff != "" {
		t.Errorf("Steps order (-want +got):\n%s", diff)
	}
}

func TestItemStepsOfOneItemInStartOrder(t *testing.T) {
	ctx := context.Background()
	s, _ := open(t)
	mustRun(t, s, "r1", t0)
	mustRun(t, s, "r2", t0)
	for _, st := range []store.Step{
		{RunID: "r1", ItemID: "i", ID: "c"}, {RunID: "r1", ItemID: "j", ID: "a"}, {RunID: "r2", ItemID: "i", ID: "x"},
		{RunID: "r1", ItemID: "i", ID: "b"},
	} {
		if err := s.StartStep(ctx, st); err != nil {
			t.Fatal(err)
		}
	}
	steps, err := s.ItemSteps(ctx, "r1", "i")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, st := range steps {
		ids = append(ids, st.RunID+"/"+st.ItemID+"/"+st.ID)
	}
	if diff := cmp.Diff([]string{"r1/i/c", "r1/i/b"}, ids); diff != "" {
		t.Errorf("ItemSteps (-want +got):\n%s", diff)
	}
	if steps, err := s.ItemSteps(ctx, "r1", "none"); err != nil || len(steps) != 0 {
		t.Errorf("unknown item: %v, %v", steps, err)
	}
}

func TestTotals(t *testing.T) {
	ctx := context.Background()
	u := func(in int64, cost float64, est bool) store.Usage {
		return store.Usage{InputTokens: in, OutputTokens: in * 2, CacheReadTokens: in * 3, CacheWriteTokens: in * 4, CostUSD: cost, CostEstimated: est}
	}
	type finish struct {
		id, status string
		usage      store.Usage
	}
	tests := []struct {
		name   string
		starts []string // step ids started, in order (repeats = retries)
		ends   []finish // applied after each start of the same index, "" status = left running
		want   store.Usage
	}{
		{"empty", nil, nil, store.Usage{}},
		{"completed and failed count", []string{"a", "b"},
			[]finish{{"a", "completed", u(1, 0.25, false)}, {"b", "failed", u(10, 0.5, false)}},
			store.Usage{InputTokens: 11, OutputTokens: 22, CacheReadTokens: 33, CacheWriteTokens: 44, CostUSD: 0.75}},
		{"started-only not counted", []string{"a", "b"},
			[]finish{{"a", "completed", u(1, 1, false)}, {"b", "", store.Usage{}}},
			store.Usage{InputTokens: 1, OutputTokens: 2, CacheReadTokens: 3, CacheWriteTokens: 4, CostUSD: 1}},
		{"failed try of a retried step still counts", []string{"a", "a"},
			[]finish{{"a", "failed", u(5, 0.5, false)}, {"a", "completed", u(7, 1.5, true)}},
			store.Usage{InputTokens: 12, OutputTokens: 24, CacheReadTokens: 36, CacheWriteTokens: 48, CostUSD: 2, CostEstimated: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := open(t)
			mustRun(t, s, "r1", t0)
			mustRun(t, s, "other", t0)
			// Usage in another run must not leak into r1's totals.
			if err := s.StartStep(ctx, store.Step{RunID: "other", ID: "a"}); err != nil {
				t.Fatal(err)
			}
			if err := s.FinishStep(ctx, store.Step{RunID: "other", ID: "a", Status: "completed", Usage: u(1000, 100, true)}); err != nil {
				t.Fatal(err)
			}
			for i, id := range tt.starts {
				if err := s.StartStep(ctx, store.Step{RunID: "r1", ID: id}); err != nil {
					t.Fatal(err)
				}
				if f := tt.ends[i]; f.status != "" {
					if err := s.FinishStep(ctx, store.Step{RunID: "r1", ID: f.id, Status: f.status, Usage: f.usage}); err != nil {
						t.Fatal(err)
					}
				}
			}
			got, err := s.Totals(ctx, "r1")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Totals (-want +got):\n%s", diff)
			}
		})
	}
}

// An interrupted try's usage, noted while its step stays started, counts
// in the totals; noting again replaces it; the step's retry adds its own.
func TestNoteUsage(t *testing.T) {
	ctx := context.Background()
	s, _ := open(t)
	mustRun(t, s, "r1", t0)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	total := func() float64 {
		t.Helper()
		u, err := s.Totals(ctx, "r1")
		must(err)
		return u.CostUSD
	}
	a := store.Step{RunID: "r1", ItemID: "i", ID: "a"}
	if err := s.NoteUsage(ctx, a); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("noting a step never started: %v, want ErrNotFound", err)
	}
	must(s.StartStep(ctx, a))
	a.Usage, a.Model = store.Usage{InputTokens: 100, CostUSD: 1}, "claude-x"
	must(s.NoteUsage(ctx, a))
	a.Usage = store.Usage{InputTokens: 200, CostUSD: 2}
	must(s.NoteUsage(ctx, a))
	if got := total(); got != 2 {
		t.Errorf("after two notes of one try: $%v, want $2 (the later replaces)", got)
	}
	st, err := s.GetStep(ctx, "r1", "a")
	must(err)
	if st.Status != store.StepStarted || st.Usage.InputTokens != 200 || st.Model != "claude-x" {
		t.Errorf("noted step: %s, %+v, model %q", st.Status, st.Usage, st.Model)
	}
	must(s.StartStep(ctx, a))
	must(s.FinishStep(ctx, store.Step{RunID: "r1", ID: "a", Status: store.StepCompleted, Usage: store.Usage{CostUSD: 5}}))
	if got := total(); got != 7 {
		t.Errorf("after the retry: $%v, want $7 (both tries)", got)
	}
	if err := s.NoteUsage(ctx, a); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("noting a completed step: %v, want ErrNotFound", err)
	}
}

func BenchmarkStepLifecycle(b *testing.B) {
	ctx := context.Background()
	s, _ := open(b)
	mustRun(b, s, "r1", t0)
	usage := store.Usage{InputTokens: 1000, OutputTokens: 200, CostUSD: 0.01}
	sig := json.RawMessage(`{"status":"COMPLETE","confidence":90}`)
	for i := 0; b.Loop(); i++ {
		id := "item/code/coder#" + strconv.Itoa(i)
		if err := s.StartStep(ctx, store.Step{RunID: "r1", ItemID: "item", ID: id, Kind: "agent"}); err != nil {
			b.Fatal(err)
		}
		if err := s.FinishStep(ctx, store.Step{RunID: "r1", ID: id, Status: "completed", Signal: sig, Usage: usage}); err != nil {
			b.Fatal(err)
		}
	}
}

func TestStepGroup(t *testing.T) {
	ctx := context.Background()
	s, _ := open(t)
	mustRun(t, s, "r1", t0)
	const id = "a/code/coder#1"
	step := store.Step{RunID: "r1", ItemID: "a", ID: id, Role: "coder", Kind: "agent"}
	group := func() (int, uint64) {
		t.Helper()
		got, err := s.GetStep(ctx, "r1", id)
		if err != nil {
			t.Fatal(err)
		}
		return got.Pgid, got.PgidStart
	}
	if err := s.SetStepGroup(ctx, "r1", id, 42, 7); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("SetStepGroup of an unknown step = %v, want ErrNotFound", err)
	}
	if err := s.StartStep(ctx, step); err != nil {
		t.Fatal(err)
	}
	if err := s.SetStepGroup(ctx, "r1", id, 42, 1<<40); err != nil {
		t.Fatal(err)
	}
	if pgid, start := group(); pgid != 42 || start != 1<<40 {
		t.Errorf("group = %d, %d; want 42, %d", pgid, start, uint64(1<<40))
	}
	// A new try starts with no group: the old one is not its agent.
	if err := s.StartStep(ctx, step); err != nil {
		t.Fatal(err)
	}
	if pgid, start := group(); pgid != 0 || start != 0 {
		t.Errorf("after restart group = %d, %d; want none", pgid, start)
	}
	if err := s.SetStepGroup(ctx, "r1", id, 43, 8); err != nil {
		t.Fatal(err)
	}
	if err := s.FinishStep(ctx, store.Step{RunID: "r1", ID: id, Status: store.StepCompleted}); err != nil {
		t.Fatal(err)
	}
	if pgid, start := group(); pgid != 0 || start != 0 {
		t.Errorf("after finish group = %d, %d; want none", pgid, start)
	}
	if err := s.SetStepGroup(ctx, "r1", id, 44, 9); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("SetStepGroup of a finished step = %v, want ErrNotFound", err)
	}
}

// BenchmarkAppendEvents is one batch of an agent step's events (started,
// output, completed) journaled in one transaction.
func BenchmarkAppendEvents(b *testing.B) {
	ctx := context.Background()
	s, _ := open(b)
	mustRun(b, s, "r1", t0)
	data := json.RawMessage(`{"type":"stepCompleted","run":"r1","item":"item","step":"item/code/coder#1","role":"coder","runner":"claude","usage":{"input_tokens":1000,"output_tokens":200}}`)
	batch := []store.Event{{RunID: "r1", Type: "stepStarted", ItemID: "item", Data: data}, {RunID: "r1", Type: "agentOutput", ItemID: "item", Data: data}, {RunID: "r1", Type: "stepCompleted", ItemID: "item", Data: data}}
	b.ReportAllocs()
	for b.Loop() {
		if err := s.AppendEvents(ctx, batch); err != nil {
			b.Fatal(err)
		}
	}
}

// LastCompleted finds the latest completed step of an id across runs;
// steps started or failed since do not count.
func TestLastCompleted(t *testing.T) {
	ctx := context.Background()
	s, _ := open(t)
	const id = "acme/widgets#7/publish/pr#1"
	if _, err := s.LastCompleted(ctx, id); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("before any run: %v, want ErrNotFound", err)
	}
	for i, status := range []string{store.StepCompleted, store.StepCompleted, store.StepFailed, ""} {
		run := "r" + strconv.Itoa(i)
		mustRun(t, s, run, t0.Add(time.Duration(i)*time.Hour))
		if err := s.StartStep(ctx, store.Step{RunID: run, ID: id, Kind: "pr"}); err != nil {
			t.Fatal(err)
		}
		if status != "" {
			if err := s.FinishStep(ctx, store.Step{RunID: run, ID: id, Status: status, Result: json.RawMessage(`{"run":"` + run + `"}`)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	got, err := s.LastCompleted(ctx, id)
	if err != nil || got.RunID != "r1" || got.Status != store.StepCompleted {
		t.Errorf("LastCompleted = run %q, %q, %v; want r1's completed step", got.RunID, got.Status, err)
	}
}
