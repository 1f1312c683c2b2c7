package evalstore

import (
	"context"
	"math"
	"path/filepath"
	"testing"

	"github.com/cadre-dev/cadre/internal/eval"
	"github.com/cadre-dev/cadre/internal/store"
)

func TestStatsReadsOneRoleFromTheStore(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "j.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	score := func(v float64) *float64 { return &v }
	rec := func(step, role, runner, model, source string, q float64, usd float64) store.Evaluation {
		return store.Evaluation{Source: source, RunID: "r1", StepID: step, Role: role, Runner: runner, Model: model,
			Kind: store.KindJudge, Score: score(q), Usage: &store.EvalUsage{CostUSD: usd}}
	}
	if err := st.RecordEvaluations(ctx,
		rec("s1", "coder", "claude", "sonnet", store.SourceRun, 0.9, 0.2),
		rec("s2", "coder", "claude", "opus", store.SourceBench, 0.5, 0.6),
		rec("s3", "planner", "claude", "sonnet", store.SourceRun, 0.1, 0.1), // another role: not counted
	); err != nil {
		t.Fatal(err)
	}
	claude, sonnet := eval.Candidate{Runner: "claude"}, eval.Candidate{Runner: "claude", Model: "sonnet"}
	got, err := Stats(ctx, st, "coder", []eval.Candidate{claude, sonnet})
	if err != nil {
		t.Fatal(err)
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	if c := got[claude]; c.Samples != 2 || !near(c.MeanQuality, 0.7) || !near(c.MeanCostUSD, 0.4) {
		t.Errorf("claude = %+v, want 2 samples, quality 0.7, cost 0.4 (runs and benchmarks, every model)", c)
	}
	if s := got[sonnet]; s.Samples != 1 || !near(s.MeanQuality, 0.9) || !near(s.MeanCostUSD, 0.2) {
		t.Errorf("claude/sonnet = %+v, want 1 sample, quality 0.9, cost 0.2", s)
	}
}
