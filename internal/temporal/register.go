package temporal

import (
	"context"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/workflow"
)

// Steps are the activities an item's workflow calls: Activities in a
// worker, fakes in tests.
type Steps interface {
	Begin(ctx context.Context, in ItemRef) (BeginResult, error)
	Agent(ctx context.Context, in AgentInput) (StepResult, error)
	Action(ctx context.Context, in ActionInput) (StepResult, error)
	Stage(ctx context.Context, in StageInput) (StageResult, error)
	Ask(ctx context.Context, in HumanInput) (Asked, error)
	Answer(ctx context.Context, in AnswerInput) (AnswerResult, error)
	End(ctx context.Context, in EndInput) (EndResult, error)
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
	r.RegisterWorkflowWithOptions(wf.Fix, workflow.RegisterOptions{Name: FixWorkflowName})
}

// RegisterActivities registers steps under the names histories record.
func RegisterActivities(r ActivityRegistry, steps Steps) {
	for name, fn := range map[string]any{ActBegin: steps.Begin, ActAgent: steps.Agent, ActAction: steps.Action, ActStage: steps.Stage,
		ActAsk: steps.Ask, ActAnswer: steps.Answer, ActEnd: steps.End} {
		r.RegisterActivityWithOptions(fn, activity.RegisterOptions{Name: name})
	}
}

// RegisterHome registers the home's activities, on its own queue.
func RegisterHome(r ActivityRegistry, h HomeSteps) {
	r.RegisterActivityWithOptions(h.Export, activity.RegisterOptions{Name: ActExport})
	r.RegisterActivityWithOptions(h.Apply, activity.RegisterOptions{Name: ActApply})
	r.RegisterActivityWithOptions(h.Fail, activity.RegisterOptions{Name: ActFail})
}
