package engine

import (
	"context"

	"github.com/cadre-dev/cadre/internal/eval"
	"github.com/cadre-dev/cadre/internal/evalstore"
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

// evaluate records v in the score store (evalstore.Record), so every
// real run feeds the model selector. A failure to record is a warning; it
// loses no work.
func (e *Engine) evaluate(ctx context.Context, ir *itemRun, v verdict) {
	st, err := e.d.Store.GetStep(ctx, ir.run, v.step)
	if err != nil {
		return // not journaled: nothing to attribute
	}
	rec, ok := evalstore.Record(ir.run, ir.it.ID, st, evalstore.Verdict{Kind: v.kind, Passed: v.passed, Score: v.score, Detail: v.detail})
	if ok {
		e.record(ctx, ir, rec)
	}
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
	// One write for the item, from the rows just read.
	e.record(ctx, ir, evalstore.Verdicts(ir.run, ir.it.ID, steps, store.KindOutcome, completed)...)
}
