package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/proc"
	"github.com/cadre-dev/cadre/internal/store"
)

// An agent that outlives cadre (a crash, kill -9) would go on changing the
// working tree beside the resumed step. Agents die with cadre (see proc),
// and as a last guard the journal keeps the process group of every running
// agent step, which a resume kills before the step runs again.

// recordGroup is the Invocation.OnStart of a step: it journals the process
// group of each agent process the runner starts. A failure to journal it
// is a warning, not a failed step: the agent dies with cadre anyway.
func (e *Engine) recordGroup(ctx context.Context, ir *itemRun, step string) func(pid int) {
	return func(pid int) {
		g, err := proc.GroupOf(pid)
		if err == nil {
			err = e.d.Store.SetStepGroup(context.WithoutCancel(ctx), ir.run, step, g.ID, g.Start)
		}
		if err != nil {
			e.publish(ir, event.Event{Type: event.Warning, Step: step,
				Message: fmt.Sprintf("journal the agent process of step %s: %v", step, err)})
		}
	}
}

// killOrphan kills the process group that the journal shows running for
// step when the step never finished, and waits until it is gone, so the
// step runs again alone. The group is killed only while its leader is the
// recorded process (same pid and start time): a pid reused since is left
// alone. A group whose leader is gone but whose members live on cannot be
// told from a later group with the same id; it is reported, not killed.
// rec is the step as the journal has it, read once by the caller.
func (e *Engine) killOrphan(ctx context.Context, ir *itemRun, rec store.Step) error {
	step := rec.ID
	if rec.Status != store.StepStarted || rec.Pgid == 0 {
		return nil
	}
	killed, err := proc.KillGroup(ctx, proc.Group{ID: rec.Pgid, Start: rec.PgidStart})
	switch {
	case errors.Is(err, proc.ErrUnverified):
		e.publish(ir, event.Event{Type: event.Warning, Step: step,
			Message: fmt.Sprintf("step %s may have left processes running: %v; check them before trusting its result", step, err)})
	case err != nil:
		return fmt.Errorf("kill the agent left running by step %s: %w", step, err)
	case killed:
		e.publish(ir, event.Event{Type: event.Warning, Step: step,
			Message: fmt.Sprintf("killed process group %d, the agent of step %s left running when cadre stopped", rec.Pgid, step)})
	}
	return nil
}
