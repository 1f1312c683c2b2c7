package report

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/store"
)

// Row is the account of one group of agent steps.
type Row struct {
	Key      string        `json:"key"`
	Steps    int           `json:"steps"`
	Failed   int           `json:"failed"`
	Usage    event.Usage   `json:"usage"`
	Duration time.Duration `json:"duration_ns"`
	// With --by model, when the run's steps were evaluated: the mean
	// quality (0..1) of this model's scored evaluations and how many
	// there were. Omitted otherwise, so 0 always means a score of 0.
	EvalMeanScore *float64 `json:"eval_mean_score,omitempty"`
	EvalSamples   int      `json:"eval_samples,omitempty"`
}

// Keys are the groupings Rows accepts.
var Keys = []string{"role", "runner", "model", "item"}

// Rows groups a run's agent steps by role, runner, model or item, sorted
// by cost then name.
func Rows(ctx context.Context, st *store.Store, runID, by string) ([]Row, error) {
	return RowsOf(ctx, st, runID, by, nil)
}

// RowsOf is Rows of the run's steps already read from the journal (nil:
// read them): a reader reporting several ways reads them once.
func RowsOf(ctx context.Context, st *store.Store, runID, by string, steps []store.Step) ([]Row, error) {
	key := map[string]func(store.Step) string{
		"role":   func(s store.Step) string { return s.Role },
		"runner": func(s store.Step) string { return s.Runner },
		"model":  func(s store.Step) string { return s.Model },
		"item":   func(s store.Step) string { return s.ItemID },
	}[by]
	if key == nil {
		return nil, fmt.Errorf("--by %q: want one of role, runner, model, item", by)
	}
	if steps == nil {
		var err error
		if steps, err = st.Steps(ctx, runID); err != nil {
			return nil, err
		}
	}
	rows := map[string]*Row{}
	for _, s := range steps {
		if s.Kind != "agent" {
			continue
		}
		k := key(s)
		if k == "" {
			k = "(default)"
		}
		r := rows[k]
		if r == nil {
			r = &Row{Key: k}
			rows[k] = r
		}
		r.Steps++
		if s.Status == store.StepFailed {
			r.Failed++
		}
		r.Usage = r.Usage.Add(Usage(s.Usage))
		if s.EndedAt != nil {
			r.Duration += s.EndedAt.Sub(s.StartedAt)
		}
	}
	if by == "model" {
		if err := addEvalScores(ctx, st, runID, rows); err != nil {
			return nil, err
		}
	}
	out := make([]Row, 0, len(rows))
	for _, r := range rows {
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Usage.CostUSD != out[j].Usage.CostUSD {
			return out[i].Usage.CostUSD > out[j].Usage.CostUSD
		}
		return out[i].Key < out[j].Key
	})
	return out, nil
}

// addEvalScores gives each model's row the run's evaluations of its steps,
// summed across roles and runners by their counts.
func addEvalScores(ctx context.Context, st *store.Store, runID string, rows map[string]*Row) error {
	stats, err := st.EvalStats(ctx, store.EvalFilter{RunID: runID, Source: store.SourceRun})
	if err != nil {
		return err
	}
	sums := map[string]float64{}
	for _, x := range stats {
		k := x.Model
		if k == "" {
			k = "(default)"
		}
		r := rows[k]
		if r == nil || x.Scored == 0 {
			continue // evaluated steps that are not agent steps of the report
		}
		r.EvalSamples += x.Scored
		sums[k] += x.MeanScore * float64(x.Scored)
	}
	for k, sum := range sums {
		mean := sum / float64(rows[k].EvalSamples)
		rows[k].EvalMeanScore = &mean
	}
	return nil
}
