package temporal

import (
	"context"
	"fmt"
	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/activity"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/cadre-dev/cadre/internal/engine"
	flow "github.com/cadre-dev/cadre/internal/workflow"
)

// fakeSteps records the activities the workflow calls and answers them as
// the test says; it stands for the engine in a worker.
type fakeSteps struct {
	mu      sync.Mutex
	calls   []string // "agent <id> visit <n>", "action <id>", ...
	ends    []engine.Ending
	answers []flow.Answer

	workflow string
	agent    func(ctx context.Context, in AgentInput) (flow.Outcome, error)
	asked    Asked // what Ask returns
}

func (f *fakeSteps) log(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fmt.Sprintf(format, args...))
}

func (f *fakeSteps) Begin(ctx context.Context, in ItemRef) (engine.Begun, error) {
	f.log("begin %s/%s", in.Run, in.Item)
	return engine.Begun{Workflow: f.workflow, Limits: flow.FlowLimits{EscalateBelowConfidence: 5, MaxReviewRounds: 2}}, nil
}

func (f *fakeSteps) Agent(ctx context.Context, in AgentInput) (flow.Outcome, error) {
	f.log("agent %s visit %d", in.Call.ID, in.Visit)
	if f.agent != nil {
		return f.agent(ctx, in)
	}
	return flow.Outcome{Output: "out/" + in.Call.ID}, nil
}

func (f *fakeSteps) Action(ctx context.Context, in ActionInput) (flow.Outcome, error) {
	f.log("action %s", in.Call.ID)
	return flow.Outcome{}, nil
}

func (f *fakeSteps) Ask(ctx context.Context, in HumanInput) (Asked, error) {
	f.log("ask %s", in.Call.ID)
	return f.asked, nil
}

func (f *fakeSteps) Answer(ctx context.Context, in AnswerInput) error {
	f.log("answer %s", in.Call.ID)
	f.mu.Lock()
	f.answers = append(f.answers, in.Answer)
	f.mu.Unlock()
	return nil
}

func (f *fakeSteps) End(ctx context.Context, in EndInput) (engine.Ended, error) {
	f.log("end")
	f.mu.Lock()
	f.ends = append(f.ends, in.Ending)
	f.mu.Unlock()
	if in.Ending.Stopped {
		return engine.Ended{Status: "stopped"}, nil
	}
	return engine.Ended{Status: in.Ending.Result.Status, Reason: in.Ending.Result.Reason}, nil
}

// testWorkflows are the built-in workflows plus testdata's.
func testWorkflows(t *testing.T) *Workflows {
	t.Helper()
	dir := t.TempDir()
	data, err := os.ReadFile("testdata/fanout.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "fanout.yaml"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	defs, err := flow.LoadDefs(dir, func(string) bool { return true })
	if err != nil {
		t.Fatal(err)
	}
	return &Workflows{Defs: defs, Roles: func(string) bool { return true }}
}

var mockAny = mock.Anything

func activityHeartbeat(ctx context.Context) { activity.RecordHeartbeat(ctx, "working") }
