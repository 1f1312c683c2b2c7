package evalstore

import (
	"context"
	"encoding/json"

	"github.com/cadre-dev/cadre/internal/store"
	"github.com/cadre-dev/cadre/internal/workflow"
)

// Verdict is one evaluation of an agent step by a run: a gatekeeper's
// checks, a judge's scores, a reviewer's rating, the item's outcome.
type Verdict struct {
	Kind   string   // store.Kind*
	Passed *bool    // nil when the kind gives no pass/fail
	Score  *float64 // 0..1, nil when none
	Detail any      // JSON-encoded into the record
}

// Record is verdict v on the journaled step st of run's item as a
// score-store record, with the runner, model and role of the step, so
// every real run feeds the model selector; false when st is not an
// agent's work, which there is nothing to attribute to. Only an outcome
// carries the step's cost, time and tokens: the store's means are per
// step.
func Record(run, item string, st store.Step, v Verdict) (store.Evaluation, bool) {
	if st.Kind != "agent" || st.Runner == "" {
		return store.Evaluation{}, false
	}
	ev := store.Evaluation{Source: store.SourceRun, RunID: run, ItemID: item, StepID: st.ID, Role: st.Role,
		Runner: st.Runner, Model: st.Model, Kind: v.Kind, Passed: v.Passed, Score: v.Score}
	if v.Detail != nil {
		ev.Detail, _ = json.Marshal(v.Detail)
	}
	if v.Kind == store.KindOutcome {
		u := &store.EvalUsage{CostUSD: st.Usage.CostUSD, InputTokens: st.Usage.InputTokens, OutputTokens: st.Usage.OutputTokens}
		if st.EndedAt != nil {
			u.LatencyMS = st.EndedAt.Sub(st.StartedAt).Milliseconds()
		}
		ev.Usage = u
	}
	return ev, true
}

// Verdicts is a verdict of kind on every working step of run's item among
// steps (its completed agent steps of roles that do not review): how the
// item ended, or what became of its pull request. A good end scores 1.
func Verdicts(run, item string, steps []store.Step, kind string, good bool) []store.Evaluation {
	score := 0.0
	if good {
		score = 1
	}
	var evs []store.Evaluation
	for _, st := range steps {
		if st.ItemID != item || st.Status != store.StepCompleted || workflow.IsReviewing(st.Role) {
			continue
		}
		if ev, ok := Record(run, item, st, Verdict{Kind: kind, Passed: &good, Score: &score}); ok {
			evs = append(evs, ev)
		}
	}
	return evs
}

// RecordPullRequest records what became of an item's pull request (merged,
// or closed unmerged) for each working step of the latest run that worked
// on the item: a merge is the strongest verdict a change gets. It returns
// how many steps it recorded.
func RecordPullRequest(ctx context.Context, st *store.Store, item string, merged bool) (int, error) {
	run, err := st.LatestRunOf(ctx, item)
	if err != nil {
		return 0, err
	}
	steps, err := st.Steps(ctx, run)
	if err != nil {
		return 0, err
	}
	evs := Verdicts(run, item, steps, store.KindMerged, merged)
	return len(evs), st.RecordEvaluations(ctx, evs...)
}
