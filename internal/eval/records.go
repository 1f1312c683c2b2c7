package eval

// Record is one runner/model's evaluations for a role as the score store
// sums them (store.EvalStat carries the same figures). eval does not import
// the store: it stays pure and the store stays free of selection policy;
// the engine copies one into the other.
type Record struct {
	Runner, Model string
	Scored        int     // evaluations with a quality score
	MeanScore     float64 // 0..1 over Scored
	Costed        int     // evaluations carrying the evaluated step's cost
	MeanCostUSD   float64 // over Costed
}

// StatsFor gives each candidate the Stats the selector reads, from one
// role's records. A candidate names a runner and maybe a model: "claude"
// has the record of every claude row whatever model it used (the runner's
// default model changes under it, and a pinned model is still claude's
// work), while "claude/sonnet" has only the sonnet rows. Means are combined
// weighted by their counts. Samples are the scored evaluations, since an
// evaluation without a score says nothing about quality. Candidates
// without a scored record are left out: the selector reads a missing
// entry as no samples.
func StatsFor(cands []Candidate, recs []Record) map[Candidate]Stats {
	out := map[Candidate]Stats{}
	for _, c := range cands {
		var (
			scored, costed   int
			sumScore, sumUSD float64
		)
		for _, r := range recs {
			if r.Runner != c.Runner || (c.Model != "" && r.Model != c.Model) {
				continue
			}
			scored += r.Scored
			sumScore += r.MeanScore * float64(r.Scored)
			costed += r.Costed
			sumUSD += r.MeanCostUSD * float64(r.Costed)
		}
		if scored == 0 {
			continue
		}
		st := Stats{Samples: scored, MeanQuality: sumScore / float64(scored)}
		if costed > 0 {
			st.MeanCostUSD = sumUSD / float64(costed)
		}
		out[c] = st
	}
	return out
}
