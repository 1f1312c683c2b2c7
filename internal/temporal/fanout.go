package temporal

import (
	"context"
	"errors"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	flow "github.com/cadre-dev/cadre/internal/workflow"
)

// The interpreter takes a context.Context; inside a workflow it carries the
// workflow.Context, which the Exec's activities and the fan-out need.
type ctxKey struct{}

// wfContext is a context.Context around a workflow.Context: Err reports
// the workflow's cancellation, so the interpreter sees cadre stop.
type wfContext struct {
	context.Context
	w workflow.Context
}

func (c wfContext) Err() error {
	if c.w.Err() != nil {
		return context.Canceled
	}
	return nil
}

func (c wfContext) Value(key any) any {
	if key == (ctxKey{}) {
		return c.w
	}
	return c.Context.Value(key)
}

func withWorkflow(w workflow.Context) context.Context {
	return wfContext{Context: context.Background(), w: w}
}

func workflowOf(ctx context.Context) workflow.Context {
	return ctx.Value(ctxKey{}).(workflow.Context)
}

// fanout is the interpreter's Fanout on the workflow's coroutines, with the
// embedded engine's semantics: the first error in index order wins; a
// failure cancels the siblings, a pause for a human does not.
func fanout(ctx context.Context, n int, fn func(context.Context, int) error) error {
	parent := workflowOf(ctx)
	wctx, cancel := workflow.WithCancel(parent)
	defer cancel()
	errs := make([]error, n)
	wg := workflow.NewWaitGroup(wctx)
	for i := range n {
		wg.Add(1)
		workflow.Go(wctx, func(c workflow.Context) {
			defer wg.Done()
			if errs[i] = fn(withWorkflow(c), i); errs[i] != nil && !errors.Is(errs[i], flow.ErrPaused) {
				cancel()
			}
		})
	}
	wg.Wait(parent)
	var paused error
	for _, err := range errs {
		switch {
		case err == nil:
		case errors.Is(err, flow.ErrPaused):
			if paused == nil {
				paused = err
			}
		case (temporal.IsCanceledError(err) || errors.Is(err, context.Canceled)) && wctx.Err() != nil && parent.Err() == nil:
			// cancelled because a sibling failed; report the sibling
		default:
			return err
		}
	}
	if paused != nil {
		return paused
	}
	if parent.Err() != nil {
		return parent.Err()
	}
	return nil
}
