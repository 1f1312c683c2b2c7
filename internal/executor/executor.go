// Package executor is the contract between the engine and an executor
// that makes an item's decisions itself (the Temporal workflow) and has
// the engine perform each effect, one call at a time, journaled in the
// same store: what the engine's step calls return (Begun, Staged, Ended),
// how an item's workflow ended (Ending), how a run halts across processes
// (RunHalt), and the errors that tell the executor what not to retry
// (ErrTampered, ErrPermanent, ErrStopping, BudgetPause). The values
// travel in Temporal's histories as JSON: their keys must not change.
//
// A hard stop halts the whole run. The embedded engine tells its other
// items through the run's shared state in memory; an executor's items run
// in several processes, so the hard-stopping item writes the run's halt
// file (package runstop), and every stage call reports whether the run
// halted or was asked to stop (Staged.Halted), which the executor hands to
// the stage pipeline's next decision. The file reaches the workers that
// share the repository's state directory; the executor also tells the
// run's other items itself (RunHalt, from the end of the item that halted
// the run), so the halt reaches workers that do not see the file.
package executor

import (
	"context"
	"errors"

	"github.com/cadre-dev/cadre/internal/store"
	"github.com/cadre-dev/cadre/internal/workflow"
)

// Driver runs one item of a journaled run to its end in an executor (a
// Temporal workflow per item, performing its steps through the engine)
// and returns once the item's outcome is journaled. It returns a *RunHalt
// when the item's end halted the run, or obeyed another item's halt: the
// process driving the run may not see the run's halt file, which is
// written where the item's last step ran.
type Driver func(ctx context.Context, runID string, it store.Item) error

// OpenOptions say how an executor's process works on a run's items.
type OpenOptions struct {
	// Remote, when set, names the git remote of this process's
	// repository (e.g. "origin") through which the items' branches
	// travel between workers on different machines (package remote).
	Remote string
}

// ErrTampered is wrapped when a step found the item's tree tampered with:
// the item fails and the run stops, as in the embedded engine.
var ErrTampered = errors.New("tampered")

// ErrPermanent is wrapped by the errors of an item's step that no retry
// cures, only a person: the item's task file will not load (bad
// frontmatter, the file removed), the remote its branch travels through
// is missing or unusable. An executor that retries failed steps fails the
// item at once on them. Their messages are their causes' own.
var ErrPermanent = errors.New("permanent")

// Permanent marks err with ErrPermanent, its message unchanged.
func Permanent(err error) error { return permanentError{err} }

type permanentError struct{ err error }

func (p permanentError) Error() string   { return p.err.Error() }
func (p permanentError) Unwrap() []error { return []error{p.err, ErrPermanent} }

// ErrStopping is returned by a step refused because cadre stop came (its
// stop file) or another item's hard stop halted the run (its halt file):
// the item ends stopped, resumable, as it does on the stop signal.
var ErrStopping = errors.New("stopped by request")

// Begun is how an item starts: the workflow to run with its limits, or,
// when Status is set, how it ended before any step.
type Begun struct {
	Workflow string              `json:"workflow,omitempty"`
	Limits   workflow.FlowLimits `json:"limits"`
	Status   string              `json:"status,omitempty"` // store.ItemFailed or store.ItemSkipped
	Reason   string              `json:"reason,omitempty"`
	// The stage pipeline's: the item's stage and attempts as the run
	// first saw them (workflow.Initial), and whether the run halted or
	// was asked to stop before the item began.
	Stage    string `json:"stage,omitempty"`
	Attempts int    `json:"attempts,omitempty"`
	Halted   bool   `json:"halted,omitempty"`
	// Items are the ids of the run's items, in order: an item whose end
	// halts the run tells the others (RunHalt).
	Items []string `json:"items,omitempty"`
	// Goals are the item's goal cycles, when its task file orders
	// several (## Goals).
	Goals []string `json:"goals,omitempty"`
}

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
// spent its budget: the item pauses and, as on the embedded engine, so
// does the run. It wraps workflow.ErrPaused.
type BudgetPause struct{ Reason string }

func (b *BudgetPause) Error() string { return b.Reason + ": " + workflow.ErrPaused.Error() }
func (b *BudgetPause) Unwrap() error { return workflow.ErrPaused }

// PipelineEnding is the stage pipeline's last decision for an item, and
// the state it was made in.
type PipelineEnding struct {
	State    workflow.State    `json:"state"`
	Decision workflow.Decision `json:"decision"`
}

// Ending is how an item's workflow ended, for the engine to journal.
type Ending struct {
	Result workflow.Result `json:"result"`
	// Pipeline, for the stage pipeline, is its last decision (Result is
	// the interpreter's, unused then).
	Pipeline *PipelineEnding `json:"runner,omitempty"`
	Paused   string          `json:"paused,omitempty"`   // it waits (a runner's quota)
	Tampered string          `json:"tampered,omitempty"` // a step found the tree tampered with
	// Planted: a step found a link an agent planted among the item's
	// files (wrapping safefile.ErrUnsafe); the item fails alone.
	Planted string `json:"planted,omitempty"`
	Stopped bool   `json:"stopped,omitempty"` // cancelled (cadre stop)
	// Budget: Paused is the stage pipeline's budget (BudgetPause),
	// which pauses the whole run.
	Budget bool `json:"budget,omitempty"`
	// Halted is another item's halt of the run that this item obeyed
	// (told by the executor, not the halt file): an item it stopped ends
	// with the run's halt, whichever item's end the run reads first.
	Halted *RunHalt `json:"halted,omitempty"`
}

// Ended is the item's journaled status after its end.
type Ended struct {
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"`
	// Halt, when set, stops the whole run with this status (a tampered
	// tree: the items share the repository's git), for HaltReason.
	Halt       string `json:"halt,omitempty"`
	HaltReason string `json:"halt_reason,omitempty"`
}
