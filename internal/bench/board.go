package bench

import (
	"context"
	"sort"

	"github.com/cadre-dev/cadre/internal/store"
)

// Row is one runner/model's results for one role in a benchmark.
type Row struct {
	Role, Runner, Model string
	Cases               int     // evaluated jobs
	PassRate            float64 // share that passed the gatekeeper, 0..1
	MeanScore           float64 // mean judge score 0..1, a failed gatekeeper counting 0
	MeanCostUSD         float64
	MeanLatencyMS       float64
}

// Candidate is the row's runner, or runner/model when the model is known.
func (r Row) Candidate() string {
	if r.Model == "" {
		return r.Runner
	}
	return r.Runner + "/" + r.Model
}

// Leaderboard reads a benchmark's evaluations from the score store as rows
// per role, best first (see Rank).
func Leaderboard(ctx context.Context, st *store.Store, runID string) ([]Row, error) {
	stats, err := st.EvalStats(ctx, store.EvalFilter{Source: store.SourceBench, RunID: runID})
	if err != nil {
		return nil, err
	}
	rows := make([]Row, 0, len(stats))
	for _, s := range stats {
		r := Row{Role: s.Role, Runner: s.Runner, Model: s.Model, Cases: s.Samples, MeanScore: s.MeanScore,
			MeanCostUSD: s.MeanCostUSD, MeanLatencyMS: s.MeanLatencyMS}
		if s.Checked > 0 {
			r.PassRate = float64(s.Passed) / float64(s.Checked)
		}
		rows = append(rows, r)
	}
	Rank(rows)
	return rows, nil
}

// Rank orders rows by role, then best first: higher mean score (quality
// is what the benchmark measures), then higher pass rate, then lower cost,
// then lower latency, then by name so equal rows keep a stable order.
func Rank(rows []Row) {
	sort.SliceStable(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		switch {
		case a.Role != b.Role:
			return a.Role < b.Role
		case a.MeanScore != b.MeanScore:
			return a.MeanScore > b.MeanScore
		case a.PassRate != b.PassRate:
			return a.PassRate > b.PassRate
		case a.MeanCostUSD != b.MeanCostUSD:
			return a.MeanCostUSD < b.MeanCostUSD
		case a.MeanLatencyMS != b.MeanLatencyMS:
			return a.MeanLatencyMS < b.MeanLatencyMS
		}
		return a.Candidate() < b.Candidate()
	})
}
