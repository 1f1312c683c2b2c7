package engine

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/executor"
	"github.com/cadre-dev/cadre/internal/runspec"
	"github.com/cadre-dev/cadre/internal/store"
	"github.com/cadre-dev/cadre/internal/workflow"
)

// started is how begin started an item, for either executor: the executor.Begun
// an executor's workflow reads, the outcome of an item that ended before
// any step, and what the embedded engine drives next (the stage
// pipeline's first state and decision, or the declarative workflow).
type started struct {
	executor.Begun
	out itemOutcome
	s   workflow.State
	d   workflow.Decision
	def *workflow.Def
}

// begin starts item ir, in either executor: it journals the item skipped
// (a dependency not completed, nothing to do) or failed (its task file
// would not load: loadErr; an unknown workflow; a worktree that could
// not be made) before any step, or running. provision gives the item its
// tree; eager provisions the stage pipeline's before its first decision
// (the embedded engine), which an executor's first stage does otherwise.
// A remote that did not answer is returned as an error, to try again.
func (e *Engine) begin(ctx context.Context, ir *itemRun, loadErr error, provision func(context.Context) error, eager bool) (started, error) {
	g, err := runspec.Granted(ctx, e.d.Store, ir.run, ir.it.ID)
	if err != nil {
		return started{}, err
	}
	grants := g.N
	ir.grants = grants
	ir.setAgain(g)
	b := started{Begun: executor.Begun{Limits: e.flowLimits(), Items: slices.Sorted(maps.Keys(ir.rs.done)), Goals: ir.task.Goals()}}
	b.Limits.MaxAttempts *= 1 + grants
	end := func(c change, out itemOutcome) (started, error) {
		if err := e.setItem(ctx, ir, c); err != nil {
			return started{}, err
		}
		b.Status, b.Reason, b.out = c.status, *c.reason, out
		return b, nil
	}
	if loadErr != nil {
		msg := loadErr.Error()
		return end(change{status: store.ItemFailed, reason: &msg}, itemOutcome{failed: true, reason: msg})
	}
	// A run started with confinement and resumed without, or a worker
	// with none: the item fails before any step.
	if msg := e.unconfinedRefusal(ir.it); msg != "" {
		return end(change{status: store.ItemFailed, reason: &msg}, itemOutcome{failed: true, reason: msg})
	}
	if reason := e.unmetDeps(ir.task, ir.rs); reason != "" {
		return end(skipped(reason), itemOutcome{})
	}
	name := e.workflowOf(ir.opts, ir.task)
	if ir.cycle == nil {
		e.startCycle(ir, name, false)
	}
	failed := func(stage string, err error) (started, error) {
		if isRemoteErr(err) {
			return started{}, err // the remote may answer the next try
		}
		return end(failedBefore(stage, err.Error()), itemOutcome{failed: true, reason: err.Error()})
	}
	ev := event.Event{Type: event.TaskStarted, Message: ir.task.Title + " (" + name + ")"}
	if name == workflow.PipelineWorkflow {
		b.Stage, b.Attempts, b.Halted = ir.it.InitStage, ir.it.InitAttempts, e.mustStop(ir)
		b.s, b.d = workflow.Begin(e.itemLimits(ir), ir.it.ID, b.Stage, b.Attempts, b.Halted)
		if b.d.Kind == workflow.Skip {
			return end(skipped(b.d.Reason), itemOutcome{completed: b.s.Stage == workflow.StageCompleted})
		}
		if eager && b.d.Kind == workflow.RunStep {
			if err := provision(ctx); err != nil {
				return failed(b.s.Stage, err)
			}
		}
		ev = event.Event{Type: event.TaskStarted, Stage: b.s.Stage, Message: ir.task.Title}
	} else {
		switch stage := ir.it.InitStage; stage {
		case workflow.StageCompleted, workflow.StageBacklog, workflow.StageFailed:
			return end(skipped("stage "+stage+": nothing to do"), itemOutcome{completed: stage == workflow.StageCompleted})
		}
		def, ok := e.d.Workflows.Get(name)
		if !ok {
			msg := fmt.Sprintf("unknown workflow %q (see cadre workflows list)", name)
			return end(change{status: store.ItemFailed, reason: &msg}, itemOutcome{failed: true, reason: msg})
		}
		if err := provision(ctx); err != nil {
			return failed("", err)
		}
		b.def = def
	}
	if ir.cycle.Shared() {
		// Begun again (a retried Begin, a resumed run): its replayed
		// steps append again.
		ir.cycle.Reset()
	}
	if err := e.setItem(ctx, ir, change{status: store.ItemRunning, events: []event.Event{ev}}); err != nil {
		return started{}, err
	}
	b.Workflow = name
	if b.def == nil {
		return b, nil
	}
	if err := e.comment(ctx, ir, "start", fmt.Sprintf("cadre is working on this issue (run %s, workflow %s).", ir.run, name)); err != nil {
		return started{}, err
	}
	if err := e.trackState(ctx, ir, "started", e.d.Config.Tracker.States.Started); err != nil {
		return started{}, err
	}
	e.setBoard(ir, map[string]any{"stage": "code", "mode": name})
	return b, nil
}
