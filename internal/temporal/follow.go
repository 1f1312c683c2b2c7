package temporal

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/workflow"

	"github.com/cadre-dev/cadre/internal/follow"
	"github.com/cadre-dev/cadre/internal/store"
	flow "github.com/cadre-dev/cadre/internal/workflow"
)

// FixWorkflowName is the workflow of a reaction's fix (cadre watch on
// the Temporal engine): fix-surgeon's step and its commit, each an
// activity of the item on the run's task queue, so a worker lost in the
// middle hands the step to another and the journal keeps either from
// being done twice.
const FixWorkflowName = "cadre.FollowFix"

// versionFixVouched marks the fix workflows that commit only a fix its
// agent answered SUCCESS to: histories recorded before it committed any
// fix whose step had not failed.
const versionFixVouched = "fix-vouched"

// FixInput is a reaction's fix.
type FixInput struct {
	Ref         ItemRef         `json:"ref"`
	Agent       flow.AgentCall  `json:"agent"`
	Visit       int             `json:"visit"`
	Commit      flow.ActionCall `json:"commit"`
	StepTimeout time.Duration   `json:"step_timeout"`
	Heartbeat   time.Duration   `json:"heartbeat,omitempty"`
}

// FixResult is what the fix's agent step did; its commit is in the
// journal.
type FixResult struct {
	Agent flow.Outcome `json:"agent"`
}

// Fix runs a reaction's fix: the agent step, then, unless it failed, the
// commit.
func (w *Workflows) Fix(ctx workflow.Context, in FixInput) (FixResult, error) {
	hb := in.Heartbeat
	if hb <= 0 {
		hb = DefaultHeartbeat
	}
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: in.StepTimeout + DefaultGrace,
		HeartbeatTimeout: hb, RetryPolicy: retry, WaitForCancellation: true})
	var agent StepResult
	if err := workflow.ExecuteActivity(actx, ActAgent, AgentInput{ItemRef: in.Ref, Call: in.Agent, Visit: in.Visit}).Get(ctx, &agent); err != nil {
		return FixResult{}, err
	}
	if agent.Outcome.Failed {
		return FixResult{Agent: agent.Outcome}, nil
	}
	if workflow.GetVersion(ctx, versionFixVouched, workflow.DefaultVersion, 1) == 1 && !follow.Commits(agent.Outcome) {
		return FixResult{Agent: agent.Outcome}, nil
	}
	var commit StepResult
	if err := workflow.ExecuteActivity(actx, ActAction, ActionInput{ItemRef: in.Ref, Call: in.Commit}).Get(ctx, &commit); err != nil {
		return FixResult{}, err
	}
	return FixResult{Agent: agent.Outcome}, nil
}

// FollowSteps performs reactions' fixes on Temporal workers sharing the
// journal (follow.Steps): one FixWorkflowName workflow each, its id the
// reaction's, so a watch started again after a crash waits for the one
// already running instead of starting another.
type FollowSteps struct {
	Client      client.Client
	TaskQueue   string
	Store       *store.Store
	StepTimeout time.Duration
	Heartbeat   time.Duration
}

func (s FollowSteps) Fix(ctx context.Context, it follow.Item, id, note string, fb follow.Feedback) (follow.Fixed, error) {
	call, visit, commit, err := follow.FixCalls(ctx, s.Store, it, id, note, fb)
	if err != nil {
		return follow.Fixed{}, err
	}
	in := FixInput{Ref: ItemRef{Run: it.Run, Item: it.ID}, Agent: call, Visit: visit, Commit: commit,
		StepTimeout: s.StepTimeout, Heartbeat: s.Heartbeat}
	wid := "cadre-follow/" + it.Run + "/" + strings.ReplaceAll(id, "#", "-")
	run, err := s.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: wid, TaskQueue: s.TaskQueue,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		// Run again, a finished fix replays from the journal.
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE}, FixWorkflowName, in)
	if already := (*serviceerror.WorkflowExecutionAlreadyStarted)(nil); errors.As(err, &already) {
		run, err = s.Client.GetWorkflow(ctx, wid, ""), nil
	}
	if err != nil {
		return follow.Fixed{}, fmt.Errorf("start workflow %s: %w", wid, err)
	}
	var res FixResult
	if err := run.Get(ctx, &res); err != nil {
		return follow.Fixed{}, fmt.Errorf("workflow %s: %w", wid, err)
	}
	return follow.FixedOf(ctx, s.Store, it, id, res.Agent)
}
