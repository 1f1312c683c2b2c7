package temporal

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/activity"

	"github.com/cadre-dev/cadre/internal/executor"
	"github.com/cadre-dev/cadre/internal/signal"
	flow "github.com/cadre-dev/cadre/internal/workflow"
)

// fakeSteps records the activities the workflow calls and answers them as
// the test says; it stands for the engine in a worker.
type fakeSteps struct {
	mu       sync.Mutex
	calls    []string // "agent <id> visit <n>", "action <id>", ...
	ends     []executor.Ending
	warnings []string // what the item's end was told to warn of
	answers  []flow.Answer

	workflow string
	agent    func(ctx context.Context, in AgentInput) (flow.Outcome, error)
	asked    Asked // what Ask returns
	begin    error // what Begin fails with
	// beginning, when set, is Begin's work: what it returns Begin fails
	// with.
	beginning func(ctx context.Context) error

	// The stage pipeline's: the item's first stage and attempts, and
	// what each stage's step gives (nil: runnerStage).
	stage    string
	attempts int
	halted   bool     // the run halted before the item began
	items    []string // the run's items, as Begin reads them from the journal
	staged   func(ctx context.Context, in StageInput) (executor.Staged, error)
	states   []flow.State // the state each stage was asked in
}

// fakeLimits are the limits fakeSteps' Begin gives an item.
var fakeLimits = flow.FlowLimits{EscalateBelowConfidence: 5, MaxReviewRounds: 2, AuditPassRating: 8, MaxAttempts: 2}

func (f *fakeSteps) log(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fmt.Sprintf(format, args...))
}

func (f *fakeSteps) Begin(ctx context.Context, in ItemRef) (BeginResult, error) {
	f.log("begin %s/%s", in.Run, in.Item)
	if f.beginning != nil {
		if err := f.beginning(ctx); err != nil {
			return BeginResult{}, err
		}
	}
	if f.begin != nil {
		return BeginResult{}, f.begin
	}
	return BeginResult{Begun: executor.Begun{Workflow: f.workflow, Limits: fakeLimits,
		Stage: f.stage, Attempts: f.attempts, Halted: f.halted, Items: f.items}}, nil
}

func (f *fakeSteps) Stage(ctx context.Context, in StageInput) (StageResult, error) {
	st, err := f.stage1(ctx, in)
	return StageResult{Staged: st}, err
}

func (f *fakeSteps) stage1(ctx context.Context, in StageInput) (executor.Staged, error) {
	st := in.Decision.Step
	f.log("stage %s review %q", st.ID, st.Review)
	f.mu.Lock()
	f.states = append(f.states, in.State)
	f.mu.Unlock()
	if f.staged != nil {
		return f.staged(ctx, in)
	}
	return runnerStage(9)(ctx, in)
}

// runnerStage is a stage whose agent succeeds, the auditor rating each
// visit as ratings says (the last one for later visits).
func runnerStage(ratings ...int) func(context.Context, StageInput) (executor.Staged, error) {
	return func(_ context.Context, in StageInput) (executor.Staged, error) {
		st := in.Decision.Step
		c := 9
		sig := signal.Signal{Agent: st.Role, Result: signal.Success, Confidence: &c}
		if st.Role == flow.RoleAuditor {
			r := ratings[min(st.Attempt, len(ratings))-1]
			sig.Result, sig.Rating = signal.Pass, &r
			if r < 8 {
				sig.Result = signal.Fail
			}
		}
		return executor.Staged{Event: flow.Event{Kind: flow.StepDone, Role: st.Role, Step: st.ID, Signal: sig, Output: "out/" + st.ID}}, nil
	}
}

func (f *fakeSteps) Agent(ctx context.Context, in AgentInput) (StepResult, error) {
	f.log("agent %s visit %d", in.Call.ID, in.Visit)
	if f.agent != nil {
		out, err := f.agent(ctx, in)
		return StepResult{Outcome: out}, err
	}
	return StepResult{Outcome: flow.Outcome{Output: "out/" + in.Call.ID}}, nil
}

func (f *fakeSteps) Action(ctx context.Context, in ActionInput) (StepResult, error) {
	f.log("action %s", in.Call.ID)
	return StepResult{}, nil
}

func (f *fakeSteps) Ask(ctx context.Context, in HumanInput) (Asked, error) {
	f.log("ask %s", in.Call.ID)
	return f.asked, nil
}

func (f *fakeSteps) Answer(ctx context.Context, in AnswerInput) (AnswerResult, error) {
	f.log("answer %s", in.Call.ID)
	f.mu.Lock()
	f.answers = append(f.answers, in.Answer)
	f.mu.Unlock()
	return AnswerResult{}, nil
}

func (f *fakeSteps) End(ctx context.Context, in EndInput) (EndResult, error) {
	ended, err := f.end1(in)
	return EndResult{Ended: ended}, err
}

// end1 journals the item's end as the engine's End does, halting the run
// as it does: a stage-pipeline hard stop or budget pause, a tampered
// tree (not a planted link: that item fails alone), and an item stopped by another's halt ends with that halt.
func (f *fakeSteps) end1(in EndInput) (executor.Ended, error) {
	f.log("end")
	f.mu.Lock()
	f.ends = append(f.ends, in.Ending)
	f.warnings = append(f.warnings, in.Warnings...)
	f.mu.Unlock()
	end := in.Ending
	ended := executor.Ended{Status: end.Result.Status, Reason: end.Result.Reason}
	r := end.Pipeline
	switch {
	case end.Stopped || (r != nil && end.Paused == "" && end.Tampered == "" && end.Planted == "" && r.Decision.Kind == flow.Stopped):
		ended = executor.Ended{Status: "stopped"}
		if h := end.Halted; h != nil {
			ended.Halt, ended.HaltReason = h.Status, h.Reason
		}
	case end.Tampered != "":
		ended = executor.Ended{Status: "failed", Reason: end.Tampered, Halt: "failed", HaltReason: in.Item + ": " + end.Tampered}
	case end.Planted != "":
		ended = executor.Ended{Status: "failed", Reason: end.Planted} // the item alone
	case end.Paused != "":
		ended = executor.Ended{Status: "paused", Reason: end.Paused}
		if end.Budget {
			ended.Halt, ended.HaltReason = "paused", end.Paused
		}
	case r != nil && r.Decision.Kind == flow.Complete:
		ended = executor.Ended{Status: "completed"}
	case r != nil:
		ended = executor.Ended{Status: "failed", Reason: r.Decision.Reason, Halt: "failed", HaltReason: r.Decision.Reason}
	}
	return ended, nil
}

// testWorkflows are the built-in workflows plus testdata's.
func testWorkflows(t *testing.T) *Workflows {
	t.Helper()
	dir := t.TempDir()
	for _, name := range []string{"fanout.yaml", "route.yaml"} {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	defs, err := flow.LoadDefs(dir, func(string) bool { return true })
	if err != nil {
		t.Fatal(err)
	}
	return &Workflows{Defs: defs, Roles: func(string) bool { return true }}
}

var mockAny = mock.Anything

func activityHeartbeat(ctx context.Context) { activity.RecordHeartbeat(ctx, "working") }
