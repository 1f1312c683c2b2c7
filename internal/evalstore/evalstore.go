// Package evalstore reads the score store for the model selector and
// turns a run's verdicts on agent steps into its records: it is the one
// place where the store's figures (internal/store) meet the selection
// policy (internal/eval), so that neither imports the other.
package evalstore

import (
	"context"

	"github.com/cadre-dev/cadre/internal/eval"
	"github.com/cadre-dev/cadre/internal/store"
)

// Stats reads role's evaluations, from runs and benchmarks alike, and
// returns the selector's Stats for each of cands (see eval.StatsFor).
func Stats(ctx context.Context, st *store.Store, role string, cands []eval.Candidate) (map[eval.Candidate]eval.Stats, error) {
	rows, err := st.EvalStats(ctx, store.EvalFilter{Role: role})
	if err != nil {
		return nil, err
	}
	recs := make([]eval.Record, 0, len(rows))
	for _, r := range rows {
		recs = append(recs, eval.Record{Runner: r.Runner, Model: r.Model, Scored: r.Scored, MeanScore: r.MeanScore,
			Costed: r.Costed, MeanCostUSD: r.MeanCostUSD})
	}
	return eval.StatsFor(cands, recs), nil
}
