package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/cadre-dev/cadre/internal/executor"
	"github.com/cadre-dev/cadre/internal/runstop"
	"github.com/cadre-dev/cadre/internal/store"
	"github.com/cadre-dev/cadre/internal/workflow"
)

// The stage pipeline (workflow "runner" on the wire) in an executor that
// drives workflow.Next itself (the Temporal workflow): each decision's
// effect is one call here, performed by the embedded engine's own code
// (step, syncFrontmatter, completeItem, failItem, stopItem), so the
// pipeline's effects have one implementation whichever executor decides.
// A hard stop halts the run in every process through its halt file (see
// package executor).

// Stage performs (or replays from the journal) the step of decision d,
// made in state st: the task file's frontmatter is brought to the state
// first, as the embedded engine does before each decision. A pause (a
// runner's quota, the budget) is an error wrapping workflow.ErrPaused, a
// tampered tree one wrapping executor.ErrTampered.
func (s *ItemSteps) Stage(ctx context.Context, st workflow.State, d workflow.Decision) (executor.Staged, error) {
	e, ir := s.e, s.ir
	if d.Kind != workflow.RunStep {
		return executor.Staged{}, fmt.Errorf("stage of %s: decision %v runs no step", ir.it.ID, d.Kind)
	}
	if e.runHalted(ir.run) {
		// cadre stop or another item's hard stop came since the last
		// stage reported none: no new stage starts, as the embedded
		// engine's next decides Stopped.
		return executor.Staged{}, executor.ErrStopping
	}
	if err := s.provision(ctx); err != nil {
		return executor.Staged{}, err
	}
	ir.forgetWritten()
	if err := e.syncFrontmatter(ctx, ir, st, d); err != nil {
		return executor.Staged{}, err
	}
	// The budget as the journal has it (cadre resume --budget-usd may
	// have raised it since this process opened the run); the item
	// pauses, and the run with it (executor.BudgetPause).
	if reason := e.budgetReached(ctx, ir, d.Step.ID, e.runBudget(ctx, ir)); reason != "" {
		return executor.Staged{}, &executor.BudgetPause{Reason: reason}
	}
	ev, err := e.step(ctx, ir, st, d.Step)
	if pe := (*pausedError)(nil); errors.As(err, &pe) {
		return executor.Staged{}, fmt.Errorf("%s: %w", pe.reason, workflow.ErrPaused)
	}
	if err != nil {
		return executor.Staged{}, tampered(err)
	}
	// The next stage may run in another process: its frontmatter must
	// not be overtaken by a write still queued here.
	if err := ir.board.Flush(); err != nil {
		return executor.Staged{}, fmt.Errorf("update task %s: %w", ir.it.ID, err)
	}
	return executor.Staged{Event: ev, Halted: e.runHalted(ir.run)}, nil
}

// endPipeline journals how a stage-pipeline item ended, as the embedded
// engine's item loop does: completed and committed, failed (which halts
// the run), stopped, or paused.
func (s *ItemSteps) endPipeline(ctx context.Context, end executor.Ending) (itemOutcome, error) {
	e, ir := s.e, s.ir
	st, d := end.Pipeline.State, end.Pipeline.Decision
	switch {
	case end.Stopped:
		return e.stopItem(ctx, ir, st, workflow.Decision{Kind: workflow.Stopped, Reason: "cancelled"})
	case end.Tampered != "":
		return e.failItem(ctx, ir, st, end.Tampered)
	case end.Planted != "":
		return e.failAlone(ctx, ir, st, plantedLink(planted(end.Planted)))
	case end.Paused != "":
		if err := e.setItem(ctx, ir, paused(st.Stage, end.Paused)); err != nil {
			return itemOutcome{}, err
		}
		if end.Budget {
			// The run pauses, as the embedded engine's overBudget halts it.
			return itemOutcome{halt: store.RunPaused, reason: end.Paused}, nil
		}
		return itemOutcome{paused: true, reason: end.Paused}, nil
	}
	switch d.Kind {
	case workflow.Complete, workflow.HardStop, workflow.Stopped:
	default:
		return e.failItem(ctx, ir, st, fmt.Sprintf("unexpected decision %v", d.Kind))
	}
	ir.forgetWritten()
	if err := e.syncFrontmatter(ctx, ir, st, d); err != nil {
		return itemOutcome{}, err
	}
	switch d.Kind {
	case workflow.Complete:
		// The commit is made in the item's tree, which this process may
		// not have opened yet.
		if err := s.provision(ctx); err != nil {
			return e.failItem(ctx, ir, st, err.Error())
		}
		return e.completeItem(ctx, ir, st)
	case workflow.HardStop:
		return e.failItem(ctx, ir, st, d.Reason)
	}
	return e.stopItem(ctx, ir, st, d)
}

// haltRun tells the run's items in every process that the run halted.
func (e *Engine) haltRun(run, reason string) error { return runstop.Halt(e.StateDir(), run, reason) }

// haltReason is why the run halted (another process's item hard-stopped
// it), or "".
func (e *Engine) haltReason(run string) string { return runstop.HaltReason(e.StateDir(), run) }

// mustStop says whether the item must start no new step: cadre stop came,
// or the run halted. The halt file is how an item of another process (a
// Temporal worker) halts the run; a run whose items run in several
// processes goes by its files only, as this process's halt in memory
// would outlive the run's attempt.
func (e *Engine) mustStop(ir *itemRun) bool {
	return e.runHalted(ir.run) || (!ir.rs.files && ir.rs.halted() != "")
}

// runHalted says whether the run's items must start no new stage.
func (e *Engine) runHalted(run string) bool {
	return e.stopRequested(run) || runstop.Halted(e.StateDir(), run)
}

// forgetWritten drops what this process last wrote to the task file: an
// executor's other processes may have written it since (the item's
// previous step ran on another worker), so the next values are written
// even when they equal this process's last ones.
func (ir *itemRun) forgetWritten() {
	ir.boardMu.Lock()
	defer ir.boardMu.Unlock()
	clear(ir.written)
}

// BudgetPause is the embedded stage pipeline's budget pause too: the
// executors' one type (executor.BudgetPause).
type BudgetPause = executor.BudgetPause
