package temporal

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/cadre-dev/cadre/internal/executor"
	"github.com/cadre-dev/cadre/internal/signal"
	flow "github.com/cadre-dev/cadre/internal/workflow"
)

// eventsPerActivity is how much one activity grows a history in these
// tests: scheduled, started, completed, and the workflow task around it.
const eventsPerActivity = 6

// continuing runs the item workflow in the SDK's test environment with
// the history limits lim, each run's history growing by
// eventsPerActivity with each activity, as a server's does. Each
// continue-as-new starts the next run with the input it carries, as the
// server does; started, when set, is called with each run's environment.
// It returns the item's end and how many runs it took.
func continuing(t *testing.T, f Steps, lim HistoryLimits, in ItemInput, started func(*testsuite.TestWorkflowEnvironment)) (executor.Ended, int) {
	t.Helper()
	for runs := 1; runs < 50; runs++ {
		var s testsuite.WorkflowTestSuite
		s.SetLogger(log.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
		env := s.NewTestWorkflowEnvironment()
		wf := testWorkflows(t)
		wf.History = lim
		RegisterWorkflow(env, wf)
		RegisterActivities(env, f)
		events := 3 // the workflow's start
		env.SetCurrentHistoryLength(events)
		env.SetOnActivityCompletedListener(func(*activity.Info, converter.EncodedValue, error) {
			events += eventsPerActivity
			env.SetCurrentHistoryLength(events)
		})
		if started != nil {
			started(env)
		}
		env.ExecuteWorkflow(WorkflowName, in)
		err := env.GetWorkflowError()
		var can *workflow.ContinueAsNewError
		if errors.As(err, &can) {
			if can.WorkflowType.Name != WorkflowName {
				t.Fatalf("continued as %s", can.WorkflowType.Name)
			}
			in = ItemInput{}
			if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &in); err != nil {
				t.Fatal(err)
			}
			if in.Carry == nil || in.Carry.Runs != runs {
				t.Fatalf("run %d carried %+v", runs, in.Carry)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		var ended executor.Ended
		if err := env.GetWorkflowResult(&ended); err != nil {
			t.Fatal(err)
		}
		return ended, runs
	}
	t.Fatal("the workflow never ended")
	return executor.Ended{}, 0
}

// An item whose history reaches the limit continues as new between its
// steps, and ends as it would have in one run: the same steps, each
// performed once, with the same visits and inputs, the same end. The
// interpreter's steps done in earlier runs are not performed again, and
// the item is begun once.
func TestContinueAsNewEndsAsOneRun(t *testing.T) {
	// The critic rejects the executor's first work, passes its second.
	reviewed := func(_ context.Context, in AgentInput) (flow.Outcome, error) {
		c, r := 9, 9
		res := signal.Pass
		if in.Call.Role == "critic" && in.Visit == 1 {
			r, res = 4, signal.Fail
		}
		return flow.Outcome{Output: "out/" + in.Call.ID, Signal: signal.Signal{Result: res, Confidence: &c, Rating: &r}}, nil
	}
	for _, tc := range []struct {
		name      string
		f         func() *fakeSteps
		unordered bool // parallel steps
	}{
		{"fan-out", func() *fakeSteps { return &fakeSteps{workflow: "fanout"} }, true},
		{"review loop", func() *fakeSteps { return &fakeSteps{workflow: "standard", agent: reviewed} }, false},
		{"runner workflow", func() *fakeSteps {
			return &fakeSteps{workflow: flow.PipelineWorkflow, stage: flow.StagePlan, staged: runnerStage(4, 5, 9)}
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			one := tc.f()
			want, runs := continuing(t, one, DefaultHistoryLimits, input, nil)
			if runs != 1 {
				t.Fatalf("%d runs under the default limits", runs)
			}
			many := tc.f()
			got, runs := continuing(t, many, HistoryLimits{Events: 2 * eventsPerActivity, Bytes: 1 << 30}, input, nil)
			if runs < 2 {
				t.Errorf("%d runs, want the item continued as new", runs)
			}
			if tc.unordered {
				slices.Sort(one.calls)
				slices.Sort(many.calls)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("end (-one run +continued):\n%s", diff)
			}
			if diff := cmp.Diff(one.calls, many.calls); diff != "" {
				t.Errorf("steps (-one run +continued):\n%s", diff)
			}
			if diff := cmp.Diff(one.ends, many.ends); diff != "" {
				t.Errorf("endings (-one run +continued):\n%s", diff)
			}
			if diff := cmp.Diff(one.states, many.states); diff != "" {
				t.Errorf("runner states (-one run +continued):\n%s", diff)
			}
			if len(one.calls) < 5 {
				t.Errorf("only %q: the test needs an item of several steps", one.calls)
			}
		})
	}
}

// A signal that comes before the workflow continues as new is not lost:
// an approval no question waited for yet answers the question asked in
// the next run; a stop ends the item stopped in this run, no stage after.
func TestContinueAsNewCarriesSignals(t *testing.T) {
	lowCoder := func(ctx context.Context, in StageInput) (executor.Staged, error) {
		st, err := runnerStage(9)(ctx, in)
		if in.Decision.Step.Role == flow.RoleCoder {
			c := 1
			st.Event.Signal.Confidence = &c
		}
		return st, err
	}
	lim := HistoryLimits{Events: 2 * eventsPerActivity, Bytes: 1 << 30}
	// The signal comes while the first stage runs, which takes the
	// history past the limit: the next stage is the next run's.
	var env *testsuite.TestWorkflowEnvironment
	started := func(e *testsuite.TestWorkflowEnvironment) { env = e }
	signalling := func(name string, arg any, staged func(context.Context, StageInput) (executor.Staged, error)) func(context.Context, StageInput) (executor.Staged, error) {
		sent := false
		return func(ctx context.Context, in StageInput) (executor.Staged, error) {
			if !sent {
				sent = true
				env.SignalWorkflow(name, arg)
			}
			return staged(ctx, in)
		}
	}

	f := &fakeSteps{workflow: flow.PipelineWorkflow, stage: flow.StagePlan}
	f.staged = signalling(SignalApprove, Approval{Approved: true, Note: "sent early"}, lowCoder)
	ended, runs := continuing(t, f, lim, input, started)
	if runs < 2 {
		t.Errorf("%d runs, want the item continued as new", runs)
	}
	if ended.Status != "completed" {
		t.Errorf("ended %+v, want completed", ended)
	}
	if len(f.answers) != 1 || f.answers[0].Note != "sent early" {
		t.Errorf("answers journaled %+v, want the approval sent before the question", f.answers)
	}

	f = &fakeSteps{workflow: flow.PipelineWorkflow, stage: flow.StagePlan}
	f.staged = signalling(SignalStop, nil, runnerStage(9))
	ended, runs = continuing(t, f, lim, input, started)
	if runs != 1 {
		t.Errorf("%d runs: a stopping item ends rather than continue as new", runs)
	}
	if ended.Status != "stopped" {
		t.Errorf("ended %+v, want stopped", ended)
	}
	var stages int
	for _, c := range f.calls {
		if strings.HasPrefix(c, "stage ") {
			stages++
		}
	}
	if stages != 1 {
		t.Errorf("calls %q: want no stage after the stop", f.calls)
	}
}

// A question answered in an earlier run is neither asked nor answered
// again when the next run's interpreter decides its way back past it.
func TestContinueAsNewAfterAQuestion(t *testing.T) {
	f := &fakeSteps{workflow: "simple", agent: lowConfidence}
	lim := HistoryLimits{Events: 2 * eventsPerActivity, Bytes: 1 << 30}
	ended, runs := continuing(t, f, lim, input, func(env *testsuite.TestWorkflowEnvironment) {
		env.RegisterDelayedCallback(func() { env.SignalWorkflow(SignalApprove, Approval{Approved: true, Note: "later"}) }, 1)
	})
	if ended.Status != flow.ResultCompleted {
		t.Errorf("ended %+v", ended)
	}
	want := []string{"begin r1/t1", "agent t1/work/executor#1 visit 1", "ask t1/work/executor#1/human",
		"answer t1/work/executor#1/human", "action t1/work/commit#1", "end"}
	if diff := cmp.Diff(want, f.calls); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	if runs < 2 {
		t.Errorf("%d runs, want the item continued as new before its commit", runs)
	}
}
