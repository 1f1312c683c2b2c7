package engine

import (
	"context"
	"encoding/json"

	"github.com/cadre-dev/cadre/internal/eval"
	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/signal"
	"github.com/cadre-dev/cadre/internal/store"
	"github.com/cadre-dev/cadre/internal/workflow"
)

// verdict is one evaluation of an agent step by the run: a gatekeeper's
// checks, a judge's scores, a reviewer's rating, or the item's outcome.
type verdict struct {
	kind   string   // store.Kind*
	step   string   // the evaluated step
	passed *bool    // nil when the kind gives no pass/fail
	score  *float64 // 0..1, nil when none
	detail any      // JSON-encoded into the record
}

// evaluate records v in the score store, with the runner, model and role
// of the evaluated step, so every real run feeds the model selector. Only the outcome
// carries the step's cost, time and tokens: the store's means are per
// step. A failure to record is a warning; it loses no work.
func (e *Engine) evaluate(ctx context.Context, ir *itemRun, v verdict) {
	st, err := e.d.Store.GetStep(ctx, ir.run, v.step)
	if err != nil {
		return // not journaled: nothing to attribute
	}
	if ev, ok := evaluation(ir, st, v); ok {
		e.record(ctx, ir, ev)
	}
}

// evaluation is v of the journaled agent step st as a score-store record.
func evaluation(ir *itemRun, st store.Step, v verdict) (store.Evaluation, bool) {
	if st.Kind != "agent" || st.Runner == "" {
		return store.Evaluation{}, false // not an agent's work: nothing to attribute
	}
	ev := store.Evaluation{Source: store.SourceRun, RunID: ir.run, ItemID: ir.it.ID, StepID: st.ID, Role: st.Role,
		Runner: st.Runner, Model: st.Model, Kind: v.kind, Passed: v.passed, Score: v.score}
	if v.detail != nil {
		ev.Detail, _ = json.Marshal(v.detail)
	}
	if v.kind == store.KindOutcome {
		u := &store.EvalUsage{CostUSD: st.Usage.CostUSD, InputTokens: st.Usage.InputTokens, OutputTokens: st.Usage.OutputTokens}
		if st.EndedAt != nil {
			u.LatencyMS = st.EndedAt.Sub(st.StartedAt).Milliseconds()
		}
		ev.Usage = u
	}
	return ev, true
}

// record writes evaluations; a failure is a warning, losing no work.
func (e *Engine) record(ctx context.Context, ir *itemRun, evs ...store.Evaluation) {
	if len(evs) == 0 {
		return
	}
	if err := e.d.Store.RecordEvaluations(context.WithoutCancel(ctx), evs...); err != nil {
		e.publish(ir, event.Event{Type: event.Warning, Step: evs[0].StepID, Message: "score store: " + err.Error()})
	}
}

// reviewed records a reviewing role's verdict on the work it reviewed: a
// judge's scores as a judge evaluation, any other reviewer's rating as a
// review.
func (e *Engine) reviewed(ctx context.Context, ir *itemRun, sp agentSpec, sig signal.Signal, j *eval.Judgement) {
	ir.workMu.Lock()
	work := ir.lastWork
	ir.workMu.Unlock()
	if sp.Work != nil {
		work = sp.Work.Step
	}
	if work == "" || !workflow.IsReviewing(sp.Role) {
		return
	}
	passed := workflow.Rejection(sp.Role, sig, e.passRating(sp)) == ""
	v := verdict{kind: store.KindReview, step: work, passed: &passed,
		detail: map[string]any{"reviewer": sp.Role, "step": sp.ID, "result": sig.Result, "verdict": sig.Verdict, "summary": sig.LoopSummary}}
	if sig.Rating != nil {
		s := float64(*sig.Rating) / 10
		v.score = &s
	}
	if j != nil {
		q := j.Quality()
		v.kind, v.score = store.KindJudge, &q
		v.detail = map[string]any{"step": sp.ID, "scores": j.Scores, "overall": j.Overall, "reasoning": j.Reasoning}
	}
	e.evaluate(ctx, ir, v)
}

// outcomes records how the item ended for every working step it ran.
func (e *Engine) outcomes(ctx context.Context, ir *itemRun, completed bool) {
	steps, err := e.d.Store.ItemSteps(ctx, ir.run, ir.it.ID)
	if err != nil {
		return
	}
	score := 0.0
	if completed {
		score = 1
	}
	// One write for the item, from the rows just read.
	var evs []store.Evaluation
	for _, st := range steps {
		if st.ItemID != ir.it.ID || st.Status != store.StepCompleted || workflow.IsReviewing(st.Role) {
			continue
		}
		if ev, ok := evaluation(ir, st, verdict{kind: store.KindOutcome, step: st.ID, passed: &completed, score: &score}); ok {
			evs = append(evs, ev)
		}
	}
	e.record(ctx, ir, evs...)
}

// RecordPullRequest records what became of an item's pull request (merged,
// or closed unmerged) for each working step of the latest run that worked
// on the item: a merge is the strongest verdict a change gets. It returns how many steps it recorded.
func RecordPullRequest(ctx context.Context, st *store.Store, item string, merged bool) (int, error) {
	run, err := st.LatestRunOf(ctx, item)
	if err != nil {
		return 0, err
	}
	steps, err := st.Steps(ctx, run)
	if err != nil {
		return 0, err
	}
	score := 0.0
	if merged {
		score = 1
	}
	var evs []store.Evaluation
	for _, s := range steps {
		if s.ItemID != item || s.Kind != "agent" || s.Status != store.StepCompleted || s.Runner == "" || workflow.IsReviewing(s.Role) {
			continue
		}
		evs = append(evs, store.Evaluation{Source: store.SourceRun, RunID: run, ItemID: item, StepID: s.ID, Role: s.Role,
			Runner: s.Runner, Model: s.Model, Kind: store.KindMerged, Passed: &merged, Score: &score})
	}
	return len(evs), st.RecordEvaluations(ctx, evs...)
}
