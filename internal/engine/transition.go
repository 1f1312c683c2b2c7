package engine

import (
	"context"
	"errors"
	"fmt"
	"syscall"

	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/store"
)

// A change is one transition of an item's journaled state: its status
// and what else the transition sets, with the events that tell of it.
type change struct {
	status   string // a store item status; "" keeps it
	stage    *string
	attempts *int
	reason   *string // why it ended, paused or was skipped (the item's error)
	step     *string // its current step
	events   []event.Event
}

// JournalError is a write of the journal that failed. The item stops
// where the journal last has it: nothing after the failed write was
// done, and cadre resume continues from the last step recorded.
type JournalError struct {
	Item string
	Err  error
}

func (e *JournalError) Error() string {
	return fmt.Sprintf("item %s stopped: the journal could not record it (%v); cadre resume continues from its last recorded step", e.Item, e.Err)
}

func (e *JournalError) Unwrap() error { return e.Err }

// journalErr wraps err, a failed journal write of item, as a
// *JournalError (once), or returns nil.
func journalErr(item string, err error) error {
	if err == nil {
		return nil
	}
	if je := (*JournalError)(nil); errors.As(err, &je) {
		return err
	}
	return &JournalError{Item: item, Err: err}
}

// transit journals c for item of run, then publishes its events, so that
// no event tells of a state the journal lacks. A failed write publishes
// nothing and returns a *JournalError.
func (e *Engine) transit(ctx context.Context, run, item string, c change) error {
	u := store.ItemUpdate{Stage: c.stage, Attempts: c.attempts, Error: c.reason, CurrentStep: c.step}
	if c.status != "" {
		u.Status = &c.status
	}
	if err := e.d.Store.UpdateItem(ctx, run, item, u); err != nil {
		return journalErr(item, err)
	}
	for _, ev := range c.events {
		ev.Run, ev.Item = run, item
		e.d.Bus.Publish(ev)
	}
	return nil
}

// setItem is transit for the item ir works on.
func (e *Engine) setItem(ctx context.Context, ir *itemRun, c change) error {
	return e.transit(ctx, ir.run, ir.it.ID, c)
}

// skipped is the change of an item with nothing to do, saying why.
func skipped(reason string) change {
	return change{status: store.ItemSkipped, reason: &reason,
		events: []event.Event{{Type: event.Warning, Message: "skipped: " + reason}}}
}

// paused is the change of an item that waits (a human, a runner's quota,
// the budget) in stage.
func paused(stage, reason string) change {
	return change{status: store.ItemPaused, reason: &reason,
		events: []event.Event{{Type: event.ItemPaused, Stage: stage, Message: reason}}}
}

// failedBefore is the change of an item that failed before its first
// step (its worktree could not be made), in stage.
func failedBefore(stage, reason string) change {
	return change{status: store.ItemFailed, reason: &reason,
		events: []event.Event{{Type: event.TaskFailed, Stage: stage, Error: reason}}}
}

// stopped is the change of an item that stays to do for cadre resume.
func stopped(events ...event.Event) change {
	return change{status: store.ItemStopped, events: events}
}

// finishStep journals a step's outcome; a failed write is a *JournalError
// of the step's item.
func (e *Engine) finishStep(ctx context.Context, rec store.Step) error {
	return journalErr(rec.ItemID, e.d.Store.FinishStep(ctx, rec))
}

// failStep journals that a step failed (rec.Error says why) and returns
// cause, the error the step failed with, joined with the journal's own
// failure when the record could not be written: the step then stays
// started in the journal, and resume runs it again.
func (e *Engine) failStep(ctx context.Context, rec store.Step, cause error) error {
	rec.Status = store.StepFailed
	if err := e.finishStep(context.WithoutCancel(ctx), rec); err != nil {
		return both(cause, err)
	}
	return cause
}

// both is err and then also, on one line, either nil; it wraps both.
func both(err, also error) error {
	switch {
	case err == nil:
		return also
	case also == nil:
		return err
	}
	return fmt.Errorf("%w; %w", err, also)
}

// FaultStop ends a run that stopped because the machine could not keep
// its state (a full disk, a journal that refused a write), not because of
// its work: the run is stopped, resumable, and cadre resume continues it
// once the cause is fixed.
type FaultStop struct {
	Run string
	Err error
}

func (f *FaultStop) Error() string {
	msg := f.Err.Error()
	if errors.Is(f.Err, syscall.ENOSPC) || errors.Is(f.Err, syscall.EDQUOT) {
		msg += "; free disk space, then cadre resume " + f.Run + " continues"
	} else if !isJournalErr(f.Err) {
		msg += "; cadre resume " + f.Run + " continues"
	}
	return msg
}

func (f *FaultStop) Unwrap() error { return f.Err }

// isFault says whether err is the machine's rather than the work's: no
// space left, or a journal write that failed.
func isFault(err error) bool {
	return isJournalErr(err) || errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}
