package store_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/cadre-dev/cadre/internal/store"
)

// BenchmarkScores100k measures the aggregate behind `cadre scores` and the
// selector over 100,000 evaluations: 10 roles × 5 runners × 2 models, a mix of
// kinds, verdicts, scores and usage. The rows go in one transaction during
// setup, outside the timer (b.Loop starts it).
func BenchmarkScores100k(b *testing.B) {
	const n = 100_000
	s, _ := open(b)
	ctx := context.Background()
	evs := make([]store.Evaluation, 0, n)
	kinds := []string{store.KindGatekeeper, store.KindJudge, store.KindReview, store.KindOutcome}
	for i := range n {
		e := store.Evaluation{
			Source: store.SourceRun, RunID: fmt.Sprintf("r%d", i/1000), ItemID: fmt.Sprintf("i%d", i/40),
			StepID: fmt.Sprintf("s%d", i/4), Kind: kinds[i%4],
			Role: fmt.Sprintf("role%d", i%10), Runner: fmt.Sprintf("runner%d", i/10%5), Model: fmt.Sprintf("m%d", i/50%2),
		}
		if i%7 == 0 {
			e.Source = store.SourceBench
		}
		if e.Kind != store.KindJudge {
			p := i%3 != 0
			e.Passed = &p
		}
		if e.Kind != store.KindOutcome {
			sc := float64(i%11) / 10
			e.Score = &sc
		}
		if e.Kind == store.KindGatekeeper {
			e.Usage = &store.EvalUsage{CostUSD: float64(i%50) / 100, LatencyMS: int64(i % 9000), InputTokens: 1000, OutputTokens: 200}
		}
		evs = append(evs, e)
	}
	if err := s.RecordEvaluations(ctx, evs...); err != nil {
		b.Fatal(err)
	}
	for _, bb := range []struct {
		name   string
		filter store.EvalFilter
		groups int
	}{
		{"all", store.EvalFilter{}, 100},
		{"source", store.EvalFilter{Source: store.SourceRun}, 100},
		{"role", store.EvalFilter{Role: "role3"}, 10},
	} {
		b.Run(bb.name, func(b *testing.B) {
			for b.Loop() {
				rows, err := s.EvalStats(ctx, bb.filter)
				if err != nil {
					b.Fatal(err)
				}
				if len(rows) != bb.groups {
					b.Fatalf("got %d groups, want %d", len(rows), bb.groups)
				}
			}
		})
	}
}
