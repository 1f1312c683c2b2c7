package temporal

import (
	"context"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/cadre-dev/cadre/internal/executor"
	"github.com/cadre-dev/cadre/internal/store"
)

// Starter runs a run's items as workflows on a task queue.
type Starter struct {
	Client      client.Client
	TaskQueue   string
	StepTimeout time.Duration
	Heartbeat   time.Duration // 0: DefaultHeartbeat
	// Home names the run's journal (HomeOf), which this process serves to
	// workers on other machines; "": only workers sharing it take part.
	Home string
}

// stopWait bounds how long a cancelled run waits for its workflows to
// journal their items stopped.
const stopWait = time.Minute

// Drive is an executor.Driver: it starts the item's workflow, or attaches
// to it when it already runs or ran, and waits for its end. Cancelling ctx
// (cadre stop --now, Ctrl-C) cancels the workflow, whose running steps are
// cancelled and whose item is journaled stopped.
func (s *Starter) Drive(ctx context.Context, runID string, it store.Item) error {
	id := WorkflowID(runID, it.ID)
	in := ItemInput{Run: runID, Item: it.ID, StepTimeout: s.StepTimeout, Heartbeat: s.Heartbeat, Home: s.Home}
	run, err := s.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: s.TaskQueue,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		// A closed workflow of an item that has not ended (stopped,
		// paused, its run interrupted) runs again on resume: its
		// completed steps replay from the journal.
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE}, WorkflowName, in)
	if already := (*serviceerror.WorkflowExecutionAlreadyStarted)(nil); errors.As(err, &already) {
		run, err = s.Client.GetWorkflow(ctx, id, ""), nil // it ran before: its result
	}
	if err != nil {
		return fmt.Errorf("start workflow %s: %w", id, err)
	}
	var ended executor.Ended
	err = run.Get(ctx, &ended)
	if ctx.Err() == nil {
		if err != nil && !temporal.IsCanceledError(err) {
			return fmt.Errorf("workflow %s: %w", id, err)
		}
		switch ended.Halt {
		case store.RunFailed, store.RunPaused:
			// The item's end halted the run, or obeyed another's halt
			// (the halting item's workflow told the others itself).
			return &executor.RunHalt{Status: ended.Halt, Reason: ended.HaltReason}
		}
		// Cancelled by cadre stop --now from elsewhere: the workflow
		// journaled the item stopped before it ended.
		return nil
	}
	bg, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopWait)
	defer cancel()
	if err := s.Client.CancelWorkflow(bg, id, ""); err != nil {
		return fmt.Errorf("cancel workflow %s: %w", id, err)
	}
	run.Get(bg, nil) // ends cancelled once the item is journaled stopped
	return ctx.Err()
}
