package temporal

import (
	"context"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/workflow"

	"github.com/cadre-dev/cadre/internal/engine"
	flow "github.com/cadre-dev/cadre/internal/workflow"
)

// Steps are the activities an item's workflow calls: Activities in a
// worker, fakes in tests.
type Steps interface {
	Begin(ctx context.Context, in ItemRef) (engine.Begun, error)
	Agent(ctx context.Context, in AgentInput) (flow.Outcome, error)
	Action(ctx context.Context, in ActionInput) (flow.Outcome, error)
	Stage(ctx context.Context, in StageInput) (engine.Staged, error)
	Ask(ctx context.Context, in HumanInput) (Asked, error)
	Answer(ctx context.Context, in AnswerInput) error
	End(ctx context.Context, in EndInput) (engine.Ended, error)
}

// WorkflowRegistry is where workflows are registered: a worker, a test
// environment or a replayer.
type WorkflowRegistry interface {
	RegisterWorkflowWithOptions(w any, options workflow.RegisterOptions)
}

// ActivityRegistry is where activities are registered.
type ActivityRegistry interface {
	RegisterActivityWithOptions(a any, options activity.RegisterOptions)
}

// RegisterWorkflow registers the item workflow under the name histories
// record.
func RegisterWorkflow(r WorkflowRegistry, wf *Workflows) {
	r.RegisterWorkflowWithOptions(wf.Item, workflow.RegisterOptions{Name: WorkflowName})
}

// RegisterActivities registers steps under the names histories record.
func RegisterActivities(r ActivityRegistry, steps Steps) {
	for name, fn := range map[string]any{ActBegin: steps.Begin, ActAgent: steps.Agent, ActAction: steps.Action, ActStage: steps.Stage,
		ActAsk: steps.Ask, ActAnswer: steps.Answer, ActEnd: steps.End} {
		r.RegisterActivityWithOptions(fn, activity.RegisterOptions{Name: name})
	}
}
