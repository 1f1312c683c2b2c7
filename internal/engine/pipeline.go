package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/cadre-dev/cadre/internal/store"
	"github.com/cadre-dev/cadre/internal/workflow"
)

// The stage pipeline (workflow "runner" on the wire) in an executor that
// drives workflow.Next itself (the Temporal workflow): each decision's
// effect is one call here, performed by the embedded engine's own code
// (step, syncFrontmatter, completeItem, failItem, stopItem), so the
// pipeline's effects have one implementation whichever executor decides.
//
// A hard stop halts the whole run. The embedded engine tells its other
// items through the run's shared state in memory; an executor's items run
// in several processes, so the hard-stopping item writes the run's halt
// file beside its stop file (.cadre/runs/<run>/halt, holding the reason),
// and every stage call reports whether the run halted or was asked to
// stop, which the executor hands to workflow.Next as a Stop before its
// next decision, as the embedded engine's next does. The file reaches
// the workers that share the repository's state directory; the executor
// also tells the run's other items itself (RunHalt, from the end of the
// item that halted the run), so the halt reaches workers that do not see
// the file. Resuming the run removes it.

// Staged is a stage-pipeline step's outcome, for workflow.Next.
type Staged struct {
	Event workflow.Event `json:"event"`
	// Halted: cadre stop or another item's hard stop came; the item
	// starts no new stage.
	Halted bool `json:"halted,omitempty"`
}

// RunHalt is why a run's items must start no new step: an item's hard
// stop or tampered tree failed the run (Status store.RunFailed), or a
// stage-pipeline item found the run's budget spent, which pauses the run
// (store.RunPaused) as on the embedded engine. The executor tells the
// run's other items with it, and a Driver returns it as its error so the
// run ends with it.
type RunHalt struct {
	Status string `json:"status"`
	Reason string `json:"reason"`
}

func (h *RunHalt) Error() string { return "run " + h.Status + ": " + h.Reason }

// BudgetPause is a stage-pipeline stage refused because the run has
// spent its budget: the item pauses and, as on the embedded engine
// (overBudget), so does the run. It wraps workflow.ErrPaused.
type BudgetPause struct{ Reason string }

func (b *BudgetPause) Error() string { return b.Reason + ": " + workflow.ErrPaused.Error() }
func (b *BudgetPause) Unwrap() error { return workflow.ErrPaused }

// PipelineEnding is the stage pipeline's last decision for an item, and
// the state it was made in.
type PipelineEnding struct {
	State    workflow.State    `json:"state"`
	Decision workflow.Decision `json:"decision"`
}

// Stage performs (or replays from the journal) the step of decision d,
// made in state st: the task file's frontmatter is brought to the state
// first, as the embedded engine does before each decision. A pause (a
// runner's quota, the budget) is an error wrapping workflow.ErrPaused, a
// tampered tree one wrapping ErrTampered.
func (s *ItemSteps) Stage(ctx context.Context, st workflow.State, d workflow.Decision) (Staged, error) {
	e, ir := s.e, s.ir
	if d.Kind != workflow.RunStep {
		return Staged{}, fmt.Errorf("stage of %s: decision %v runs no step", ir.it.ID, d.Kind)
	}
	if e.runHalted(ir.run) {
		// cadre stop or another item's hard stop came since the last
		// stage reported none: no new stage starts, as the embedded
		// engine's next decides Stopped.
		return Staged{}, ErrStopping
	}
	if err := s.provision(ctx); err != nil {
		return Staged{}, err
	}
	ir.forgetWritten()
	if err := e.syncFrontmatter(ctx, ir, st, d); err != nil {
		return Staged{}, err
	}
	// The budget as the journal has it (cadre resume --budget-usd may
	// have raised it since this process opened the run); the item
	// pauses, and the run with it (BudgetPause).
	if reason := e.budgetReached(ctx, ir.run, d.Step.ID, e.runBudget(ctx, ir)); reason != "" {
		return Staged{}, &BudgetPause{Reason: reason}
	}
	ev, err := e.step(ctx, ir, st, d.Step)
	if pe := (*pausedError)(nil); errors.As(err, &pe) {
		return Staged{}, fmt.Errorf("%s: %w", pe.reason, workflow.ErrPaused)
	}
	if err != nil {
		return Staged{}, tampered(err)
	}
	// The next stage may run in another process: its frontmatter must
	// not be overtaken by a write still queued here.
	if err := ir.board.Flush(); err != nil {
		return Staged{}, fmt.Errorf("update task %s: %w", ir.it.ID, err)
	}
	return Staged{Event: ev, Halted: e.runHalted(ir.run)}, nil
}

// endPipeline journals how a stage-pipeline item ended, as the embedded
// engine's item loop does: completed and committed, failed (which halts
// the run), stopped, or paused.
func (s *ItemSteps) endPipeline(ctx context.Context, end Ending) (itemOutcome, error) {
	e, ir := s.e, s.ir
	st, d := end.Pipeline.State, end.Pipeline.Decision
	switch {
	case end.Stopped:
		return e.stopItem(ctx, ir, st, workflow.Decision{Kind: workflow.Stopped, Reason: "cancelled"})
	case end.Tampered != "":
		return e.failItem(ctx, ir, st, end.Tampered)
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

func (e *Engine) haltPath(run string) string {
	return filepath.Join(e.StateDir(), "runs", run, "halt")
}

// haltRun tells the run's items in every process that the run halted.
func (e *Engine) haltRun(run, reason string) error {
	p := e.haltPath(run)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("halt run %s: %w", run, err)
	}
	if err := os.WriteFile(p, []byte(reason+"\n"), 0o644); err != nil {
		return fmt.Errorf("halt run %s: %w", run, err)
	}
	return nil
}

// haltReason is why the run halted (another process's item hard-stopped
// it), or "".
func (e *Engine) haltReason(run string) string {
	data, err := os.ReadFile(e.haltPath(run))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
}

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
	if e.stopRequested(run) {
		return true
	}
	_, err := os.Stat(e.haltPath(run))
	return err == nil
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
