package temporal

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/testsuite"

	"github.com/cadre-dev/cadre/internal/executor"
	flow "github.com/cadre-dev/cadre/internal/workflow"
)

// signals records the halt signals a workflow sends to other workflows,
// answering each as the server would: t3's workflow has ended, so
// signalling it fails.
type signals struct {
	mu   sync.Mutex
	sent map[string]executor.RunHalt // by workflow id
}

func (s *signals) mock(t *testing.T, env *testsuite.TestWorkflowEnvironment) {
	env.OnSignalExternalWorkflow(mock.Anything, mock.Anything, mock.Anything, mock.Anything, mock.Anything).Return(
		func(_, id, runID, name string, arg any) error {
			s.mu.Lock()
			defer s.mu.Unlock()
			h, ok := arg.(executor.RunHalt)
			if name != SignalHalt || runID != "" || !ok {
				t.Errorf("signal %q to %s run %q with %#v, want the halt signal to the latest run", name, id, runID, arg)
			}
			if s.sent == nil {
				s.sent = map[string]executor.RunHalt{}
			}
			s.sent[id] = h
			if id == WorkflowID("r1", "t3") {
				return errors.New("workflow execution already completed")
			}
			return nil
		}).Maybe()
}

// A hard stop tells each of the run's other items' workflows that the
// run failed, and why (not itself); one whose workflow has ended does
// not keep the item from ending.
func TestHardStopSignalsTheRunsOtherItems(t *testing.T) {
	f := runnerSteps(flow.StageCode, 0)
	f.staged, f.items = runnerStage(3), []string{"t1", "t2", "t3"}
	env := newEnv(t, f)
	var s signals
	s.mock(t, env)
	ended := runItem(t, env, input)
	reason := lastPipeline(t, f).Decision.Reason
	if ended.Status != "failed" || ended.Halt != "failed" || reason == "" {
		t.Fatalf("result %+v (reason %q), want failed halting the run", ended, reason)
	}
	h := executor.RunHalt{Status: "failed", Reason: reason}
	want := map[string]executor.RunHalt{WorkflowID("r1", "t2"): h, WorkflowID("r1", "t3"): h}
	if diff := cmp.Diff(want, s.sent); diff != "" {
		t.Errorf("halt signals (-want +got):\n%s", diff)
	}
}

// The stage pipeline's budget pauses the run as on the embedded engine:
// the item pauses and tells the others the run paused; a runner's quota
// pauses the item alone.
func TestBudgetPauseSignalsTheRunsOtherItems(t *testing.T) {
	for _, tc := range []struct {
		name   string
		err    error
		budget bool
	}{
		{"budget", &executor.BudgetPause{Reason: "budget reached: spent $0.0100 of $0.0050"}, true},
		{"quota", fmt.Errorf("runner claude hit a quota: %w", flow.ErrPaused), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := runnerSteps(flow.StageCode, 0)
			f.items = []string{"t1", "t2"}
			f.staged = func(context.Context, StageInput) (executor.Staged, error) {
				return executor.Staged{}, stepFailure(tc.err, nil)
			}
			env := newEnv(t, f)
			var s signals
			s.mock(t, env)
			runItem(t, env, input)
			end := f.ends[0]
			if end.Paused == "" || end.Budget != tc.budget {
				t.Errorf("ending %+v, want paused, budget %v", end, tc.budget)
			}
			var want map[string]executor.RunHalt
			if tc.budget {
				want = map[string]executor.RunHalt{WorkflowID("r1", "t2"): {Status: "paused", Reason: "budget reached: spent $0.0100 of $0.0050"}}
			}
			if diff := cmp.Diff(want, s.sent); diff != "" {
				t.Errorf("halt signals (-want +got):\n%s", diff)
			}
		})
	}
}

// An item told of another's halt while its step runs: the step finishes,
// none starts after it though the step reported no halt (its worker does
// not see the run's halt file), and the item ends stopped carrying the
// halt, so the run ends with it; it tells no one else.
func TestHaltSignalStopsAnItemWhoseWorkerSeesNoHaltFile(t *testing.T) {
	h := executor.RunHalt{Status: "failed", Reason: "t2: audit rated 3/10"}
	slow := func(ctx context.Context) error {
		for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); {
			if ctx.Err() != nil {
				return ctx.Err() // the halt must not cancel the running step
			}
			activityHeartbeat(ctx)
			time.Sleep(10 * time.Millisecond)
		}
		return nil
	}
	for _, tc := range []struct {
		name string
		f    *fakeSteps
		want []string
	}{
		{"declarative", &fakeSteps{workflow: "simple", agent: func(ctx context.Context, in AgentInput) (flow.Outcome, error) {
			return flow.Outcome{Output: "done"}, slow(ctx)
		}}, []string{"begin r1/t1", "agent t1/work/executor#1 visit 1", "end"}},
		{"runner", &fakeSteps{workflow: flow.PipelineWorkflow, stage: flow.StageCode, staged: func(ctx context.Context, in StageInput) (executor.Staged, error) {
			if err := slow(ctx); err != nil {
				return executor.Staged{}, err
			}
			return runnerStage(9)(ctx, in) // Halted false: no halt file here
		}}, []string{"begin r1/t1", `stage t1/code/coder#1 review ""`, "end"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.f.items = []string{"t1", "t2", "t3"}
			env := newEnv(t, tc.f)
			env.OnSignalExternalWorkflow(mock.Anything, mock.Anything, mock.Anything, mock.Anything, mock.Anything).Return(
				func(_, id, _, _ string, _ any) error {
					t.Errorf("%s signalled: an item that obeyed a halt tells no one", id)
					return nil
				}).Maybe()
			env.RegisterDelayedCallback(func() { env.SignalWorkflow(SignalHalt, h) }, time.Second)
			ended := runItem(t, env, input)
			if diff := cmp.Diff(tc.want, tc.f.calls); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
			if len(tc.f.ends) != 1 || tc.f.ends[0].Halted == nil || *tc.f.ends[0].Halted != h {
				t.Fatalf("endings %+v, want one carrying the halt", tc.f.ends)
			}
			if r := tc.f.ends[0].Pipeline; r != nil && r.Decision.Kind != flow.Stopped {
				t.Errorf("runner ending %+v, want stopped", r)
			}
			if want := (executor.Ended{Status: "stopped", Halt: "failed", HaltReason: h.Reason}); ended != want {
				t.Errorf("result %+v, want %+v", ended, want)
			}
		})
	}
}

// An item waiting for a human is told of the halt too: its question
// stays unanswered in the journal and it ends stopped, instead of waiting
// for a stop signal from the process that started the run.
func TestHaltSignalEndsAWaitForAHuman(t *testing.T) {
	h := executor.RunHalt{Status: "paused", Reason: "budget reached"}
	for _, f := range []*fakeSteps{
		{workflow: "simple", agent: lowConfidence},
		{workflow: flow.PipelineWorkflow, stage: flow.StageCode, staged: func(ctx context.Context, in StageInput) (executor.Staged, error) {
			got, err := runnerStage(9)(ctx, in)
			c := 1
			got.Event.Signal.Confidence = &c
			return got, err
		}},
	} {
		t.Run(f.workflow, func(t *testing.T) {
			env := newEnv(t, f)
			env.RegisterDelayedCallback(func() { env.SignalWorkflow(SignalHalt, h) }, time.Hour)
			ended := runItem(t, env, input)
			if len(f.answers) != 0 || len(f.ends) != 1 || f.ends[0].Halted == nil {
				t.Fatalf("answers %+v, endings %+v: want none answered, one carrying the halt", f.answers, f.ends)
			}
			if last := f.calls[len(f.calls)-2]; last[:4] != "ask " {
				t.Errorf("calls %q, want the question, then the end", f.calls)
			}
			if ended.Status != "stopped" || ended.Halt != "paused" {
				t.Errorf("result %+v: want stopped, the run paused", ended)
			}
		})
	}
}
