package temporal

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/cadre-dev/cadre/internal/executor"
	"github.com/cadre-dev/cadre/internal/proc"
	"github.com/cadre-dev/cadre/internal/runner"
	"github.com/cadre-dev/cadre/internal/safefile"
	"github.com/cadre-dev/cadre/internal/signal"
	flow "github.com/cadre-dev/cadre/internal/workflow"
	"github.com/cadre-dev/cadre/internal/workspace"
)

func newEnv(t *testing.T, f Steps) *testsuite.TestWorkflowEnvironment {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	s.SetLogger(log.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	env := s.NewTestWorkflowEnvironment()
	RegisterWorkflow(env, testWorkflows(t))
	RegisterActivities(env, f)
	return env
}

// runItem runs the item workflow to its end in env and returns its result.
func runItem(t *testing.T, env *testsuite.TestWorkflowEnvironment, in ItemInput) executor.Ended {
	t.Helper()
	env.ExecuteWorkflow(WorkflowName, in)
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var ended executor.Ended
	if err := env.GetWorkflowResult(&ended); err != nil {
		t.Fatal(err)
	}
	return ended
}

var input = ItemInput{Run: "r1", Item: "t1", StepTimeout: time.Minute}

// The interpreter's decisions, not the Temporal code, choose the
// activities: the same step ids and visits as the embedded engine, the
// parallel branches both, then the commit, then the item's end.
func TestItemRunsTheInterpretersSteps(t *testing.T) {
	f := &fakeSteps{workflow: "fanout"}
	env := newEnv(t, f)
	ended := runItem(t, env, input)
	if ended.Status != flow.ResultCompleted {
		t.Errorf("ended %+v, want completed", ended)
	}
	if len(f.calls) != 5 {
		t.Fatalf("calls %q, want begin, two agents, commit, end", f.calls)
	}
	agents := []string{f.calls[1], f.calls[2]}
	if !(contains(agents, "agent t1/work/executor#1 visit 1") && contains(agents, "agent t1/work/debugger#1 visit 1")) {
		t.Errorf("parallel agents %q", agents)
	}
	want := []string{"begin r1/t1", "action t1/work/commit#1", "end"}
	if diff := cmp.Diff(want, []string{f.calls[0], f.calls[3], f.calls[4]}); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}

// A failed agent step fails the item through the interpreter's rule (a
// critical phase): nothing is committed.
func TestFailedStepFailsTheItemWithoutCommit(t *testing.T) {
	f := &fakeSteps{workflow: "simple", agent: func(context.Context, AgentInput) (flow.Outcome, error) {
		return flow.Outcome{Failed: true, Reason: "no signal"}, nil
	}}
	env := newEnv(t, f)
	runItem(t, env, input)
	want := []string{"begin r1/t1", "agent t1/work/executor#1 visit 1", "end"}
	if diff := cmp.Diff(want, f.calls); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	if got := f.ends[0].Result; got.Status != flow.ResultFailed || !strings.Contains(got.Reason, "no signal") {
		t.Errorf("ending %+v, want failed: no signal", got)
	}
}

func lowConfidence(context.Context, AgentInput) (flow.Outcome, error) {
	c := 1
	return flow.Outcome{Signal: signal.Signal{Result: signal.Pass, Confidence: &c}}, nil
}

// An escalation waits for the approve signal, which the query shows it
// waiting on; the answer is journaled and the work goes on to its commit.
func TestApproveSignalAnswersAnEscalation(t *testing.T) {
	f := &fakeSteps{workflow: "simple", agent: lowConfidence}
	env := newEnv(t, f)
	var pending []flow.HumanCall
	env.RegisterDelayedCallback(func() {
		v, err := env.QueryWorkflow(QueryPending)
		if err != nil {
			t.Error(err)
			return
		}
		if err := v.Get(&pending); err != nil {
			t.Error(err)
		}
		env.SignalWorkflow(SignalApprove, Approval{Approved: true, Note: "go ahead"})
	}, time.Hour)
	runItem(t, env, input)
	if len(pending) != 1 || pending[0].ID != "t1/work/executor#1/human" {
		t.Errorf("pending before the signal: %+v", pending)
	}
	want := []string{"begin r1/t1", "agent t1/work/executor#1 visit 1", "ask t1/work/executor#1/human",
		"answer t1/work/executor#1/human", "action t1/work/commit#1", "end"}
	if diff := cmp.Diff(want, f.calls); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]flow.Answer{{Approved: true, Note: "go ahead"}}, f.answers); diff != "" {
		t.Errorf("journaled answers (-want +got):\n%s", diff)
	}
}

// A rejection by signal ends the item failed, saying the human's note.
func TestRejectSignalFailsTheItem(t *testing.T) {
	f := &fakeSteps{workflow: "simple", agent: lowConfidence}
	env := newEnv(t, f)
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(SignalApprove, Approval{Approved: false, Note: "wrong approach"})
	}, time.Hour)
	runItem(t, env, input)
	if got := f.ends[0].Result; got.Status != flow.ResultFailed || !strings.Contains(got.Reason, "wrong approach") {
		t.Errorf("ending %+v, want failed with the note", got)
	}
	if contains(f.calls, "action t1/work/commit#1") {
		t.Errorf("rejected work was committed: %q", f.calls)
	}
}

// An answer already in the journal (cadre approve) is taken without
// waiting for a signal.
func TestJournaledAnswerNeedsNoSignal(t *testing.T) {
	f := &fakeSteps{workflow: "simple", agent: lowConfidence, asked: Asked{Answered: true, Answer: flow.Answer{Approved: true}}}
	env := newEnv(t, f)
	runItem(t, env, input)
	if contains(f.calls, "answer t1/work/executor#1/human") || !contains(f.calls, "action t1/work/commit#1") {
		t.Errorf("calls %q", f.calls)
	}
}

// Cancelling the workflow (cadre stop --now) cancels the running agent
// step and journals the item stopped; the workflow ends cancelled.
func TestCancelStopsTheRunningStep(t *testing.T) {
	f := &fakeSteps{workflow: "simple", agent: func(ctx context.Context, in AgentInput) (flow.Outcome, error) {
		for ctx.Err() == nil {
			// Cancellation reaches an activity through its heartbeats.
			activityHeartbeat(ctx)
			time.Sleep(10 * time.Millisecond)
		}
		return flow.Outcome{}, ctx.Err()
	}}
	env := newEnv(t, f)
	env.RegisterDelayedCallback(env.CancelWorkflow, time.Second)
	env.ExecuteWorkflow(WorkflowName, input)
	if err := env.GetWorkflowError(); !temporal.IsCanceledError(err) {
		t.Fatalf("workflow error %v, want cancelled", err)
	}
	if len(f.ends) != 1 || !f.ends[0].Stopped {
		t.Errorf("endings %+v, want one stopped", f.ends)
	}
	if contains(f.calls, "action t1/work/commit#1") {
		t.Errorf("calls %q: committed after the cancel", f.calls)
	}
}

// A step that outlives its start-to-close timeout (its agent's timeout
// plus the grace: a hung worker) is given up, and the item fails saying
// so, uncommitted, rather than hanging.
func TestStepTimeoutFailsTheItem(t *testing.T) {
	f := &fakeSteps{workflow: "simple", agent: func(ctx context.Context, in AgentInput) (flow.Outcome, error) {
		<-ctx.Done() // hangs until its deadline
		return flow.Outcome{}, ctx.Err()
	}}
	env := newEnv(t, f)
	in := input
	// The grace also bounds the journal-only activities (the item's start):
	// long enough for them on a loaded machine, short enough for the test.
	in.StepTimeout, in.Grace = 100*time.Millisecond, 500*time.Millisecond
	runItem(t, env, in)
	// Which of the activity's timeouts fires first (start-to-close, or
	// schedule-to-start on a loaded machine) is the SDK's business; that a
	// timeout fails the item uncommitted is the point.
	if len(f.ends) == 0 {
		t.Fatalf("the item never ended; calls %q", f.calls)
	}
	if got := f.ends[0].Result; got.Status != flow.ResultFailed || !strings.Contains(strings.ToLower(got.Reason), "timeout") {
		t.Errorf("ending %+v, want failed by the timeout", got)
	}
	if contains(f.calls, "action t1/work/commit#1") {
		t.Errorf("calls %q: committed after a timeout", f.calls)
	}
}

// A step that keeps failing past its retries (the journal unreachable, a
// timeout each time) fails the item saying why rather than hanging.
func TestStepFailingPastRetriesFailsTheItem(t *testing.T) {
	f := &fakeSteps{workflow: "simple"}
	env := newEnv(t, f)
	env.OnActivity(ActAgent, mockAny, mockAny).Return(StepResult{}, temporal.NewApplicationError("journal unreachable", "io"))
	runItem(t, env, input)
	if got := f.ends[0].Result; got.Status != flow.ResultFailed || !strings.Contains(got.Reason, "journal unreachable") {
		t.Errorf("ending %+v, want failed, saying why", got)
	}
}

// A runner's quota pauses the item at once: the step is not retried.
func TestQuotaPausesWithoutRetry(t *testing.T) {
	f := &fakeSteps{workflow: "simple", agent: func(context.Context, AgentInput) (flow.Outcome, error) {
		return flow.Outcome{}, stepFailure(fmt.Errorf("runner claude hit a quota: %w", flow.ErrPaused), nil)
	}}
	env := newEnv(t, f)
	runItem(t, env, input)
	want := []string{"begin r1/t1", "agent t1/work/executor#1 visit 1", "end"}
	if diff := cmp.Diff(want, f.calls); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	if !strings.Contains(f.ends[0].Paused, "quota") {
		t.Errorf("ending %+v, want paused by the quota", f.ends[0])
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// cadre stop (graceful) is the stop signal: the running step finishes and
// its outcome is kept, no new step starts (no commit), and the item ends
// stopped, resumable, with the workflow completing rather than failing.
func TestStopSignalLetsTheRunningStepFinish(t *testing.T) {
	var finished bool
	f := &fakeSteps{workflow: "simple", agent: func(ctx context.Context, in AgentInput) (flow.Outcome, error) {
		for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); {
			if ctx.Err() != nil {
				return flow.Outcome{}, ctx.Err() // a graceful stop must not cancel it
			}
			activityHeartbeat(ctx)
			time.Sleep(10 * time.Millisecond)
		}
		finished = true
		return flow.Outcome{Output: "done"}, nil
	}}
	env := newEnv(t, f)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(SignalStop, nil) }, time.Second)
	ended := runItem(t, env, input)
	if !finished {
		t.Error("the running step did not finish")
	}
	want := []string{"begin r1/t1", "agent t1/work/executor#1 visit 1", "end"}
	if diff := cmp.Diff(want, f.calls); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	if len(f.ends) != 1 || !f.ends[0].Stopped || ended.Status != "stopped" {
		t.Errorf("endings %+v, result %+v: want one stopped", f.ends, ended)
	}
}

// An item waiting for a human stops too: its question stays unanswered
// in the journal, for cadre approve and resume.
func TestStopSignalEndsAWaitForAHuman(t *testing.T) {
	f := &fakeSteps{workflow: "simple", agent: lowConfidence}
	env := newEnv(t, f)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(SignalStop, nil) }, time.Hour)
	runItem(t, env, input)
	want := []string{"begin r1/t1", "agent t1/work/executor#1 visit 1", "ask t1/work/executor#1/human", "end"}
	if diff := cmp.Diff(want, f.calls); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	if len(f.answers) != 0 || len(f.ends) != 1 || !f.ends[0].Stopped {
		t.Errorf("answers %+v, endings %+v: want none answered, one stopped", f.answers, f.ends)
	}
}

// A step refused because cadre stop came through the stop file, or
// another item's hard stop halted the run (its halt file), ends the item
// stopped as the stop signal does, resumable, not paused: the interpreter
// starts nothing more.
func TestRefusedStepStopsTheItem(t *testing.T) {
	f := &fakeSteps{workflow: "fanout", agent: func(_ context.Context, in AgentInput) (flow.Outcome, error) {
		if strings.Contains(in.Call.ID, "debugger") {
			return flow.Outcome{}, stepFailure(executor.ErrStopping, nil)
		}
		return flow.Outcome{Output: "done"}, nil
	}}
	env := newEnv(t, f)
	ended := runItem(t, env, input)
	if contains(f.calls, "action t1/work/commit#1") {
		t.Errorf("calls %q: committed after the stop", f.calls)
	}
	if len(f.ends) != 1 || !f.ends[0].Stopped || f.ends[0].Paused != "" || ended.Status != "stopped" {
		t.Errorf("endings %+v, result %+v: want one stopped", f.ends, ended)
	}
}

// An item whose Begin fails for good (at once on a worker's setup, or
// past its retries) is journaled failed by the run's home, whose journal
// the item's workers may not reach, saying why in one line; the workflow
// completes with that end, so the run goes on with its other items
// rather than waiting for ever. Nothing else runs for the item.
func TestBeginFailingForGoodFailsTheItemAtHome(t *testing.T) {
	for _, tc := range []struct {
		name  string
		err   error
		tries int
	}{
		{"setup", temporal.NewNonRetryableApplicationError("item t1: this worker's repository has no remote origin", ErrTypeNoOrigin, nil), 1},
		{"past retries", errors.New("fetch origin: connection refused"), 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeSteps{workflow: "simple", begin: tc.err}
			env := newEnv(t, f)
			h := &fakeHome{}
			RegisterHome(env, h)
			in := input
			in.Home = "elsewhere:/repo/.cadre"
			ended := runItem(t, env, in)
			msg := tc.err.Error()
			var ae *temporal.ApplicationError
			if errors.As(tc.err, &ae) {
				msg = ae.Message()
			}
			why := "could not begin: " + msg
			if want := (executor.Ended{Status: "failed", Reason: why}); ended != want {
				t.Errorf("result %+v, want %+v", ended, want)
			}
			if diff := cmp.Diff([]FailInput{{ItemRef: ItemRef{Run: "r1", Item: "t1"}, Reason: why}}, h.fails); diff != "" {
				t.Errorf("journaled at home (-want +got):\n%s", diff)
			}
			if len(f.calls) != tc.tries || len(f.ends) != 0 {
				t.Errorf("calls %q, want %d begins and nothing more", f.calls, tc.tries)
			}
		})
	}
}

// A run without a home (recorded before homes) has no journal outside
// its items' workers: its workflow fails as it did.
func TestBeginFailingWithoutAHomeFailsTheWorkflow(t *testing.T) {
	f := &fakeSteps{workflow: "simple", begin: temporal.NewNonRetryableApplicationError("no origin", ErrTypeNoOrigin, nil)}
	env := newEnv(t, f)
	h := &fakeHome{}
	RegisterHome(env, h)
	env.ExecuteWorkflow(WorkflowName, input)
	if err := env.GetWorkflowError(); err == nil || !strings.Contains(err.Error(), "no origin") {
		t.Errorf("workflow error %v, want Begin's", err)
	}
	if len(h.fails) != 0 {
		t.Errorf("journaled at home: %+v", h.fails)
	}
}

// untilCancelled is a Begin still under way when cadre stop --now comes:
// it learns of the cancel through its heartbeats.
func untilCancelled(ctx context.Context) error {
	for ctx.Err() == nil {
		activityHeartbeat(ctx)
		time.Sleep(10 * time.Millisecond)
	}
	return ctx.Err()
}

// cadre stop --now while the item begins journals it stopped, as the
// embedded engine an item stopped before its first step (cadre status
// shows it stopped, cadre resume starts it again), with or without a
// home; nothing else runs for it, nothing fails it, and the workflow ends
// cancelled.
func TestCancelDuringBeginStopsTheItem(t *testing.T) {
	for _, home := range []string{"", "elsewhere:/repo/.cadre"} {
		t.Run("home "+home, func(t *testing.T) {
			f := &fakeSteps{workflow: "simple", beginning: untilCancelled}
			env := newEnv(t, f)
			h := &fakeHome{}
			RegisterHome(env, h)
			env.RegisterDelayedCallback(env.CancelWorkflow, time.Second)
			in := input
			in.Home = home
			env.ExecuteWorkflow(WorkflowName, in)
			if err := env.GetWorkflowError(); !temporal.IsCanceledError(err) {
				t.Fatalf("workflow error %v, want cancelled", err)
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			if diff := cmp.Diff([]string{"begin r1/t1", "end"}, f.calls); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]executor.Ending{{Stopped: true}}, f.ends); diff != "" {
				t.Errorf("endings (-want +got):\n%s", diff)
			}
			if len(h.fails) != 0 {
				t.Errorf("journaled failed at home: %+v", h.fails)
			}
		})
	}
}

// An error of the setup (a program not installed, an unknown runner,
// credentials refused, no sandbox, a task file that will not load, a
// remote missing) fails the item at once with its own one-line message:
// no retry can cure it.
func TestSetupErrorFailsTheItemAtOnce(t *testing.T) {
	for _, err := range []error{
		fmt.Errorf("runner claude: %w: install it or fix runners.claude.command", &proc.NotFoundError{Command: "claude", InPath: true}),
		fmt.Errorf("%w %q: define it under runners: in cadre.yaml", runner.ErrUnknown, "nope"),
		&runner.Error{Kind: runner.KindAuth, Runner: "claude", Msg: "invalid x-api-key"},
		fmt.Errorf("%w: bwrap (bubblewrap) not found in PATH", proc.ErrNoSandbox),
		fmt.Errorf("item t1 refused: %w", workspace.ErrDirtyWorktree),
		permanent("open tasks/t1.md: no such file or directory"),
		permanent(`open run r1: remote "origin": git remote: exit status 2: error: No such remote 'origin' (add it with git remote add)`),
	} {
		t.Run(err.Error(), func(t *testing.T) {
			f := &fakeSteps{workflow: "simple", agent: func(context.Context, AgentInput) (flow.Outcome, error) {
				return flow.Outcome{}, stepFailure(err, nil)
			}}
			env := newEnv(t, f)
			runItem(t, env, input)
			want := []string{"begin r1/t1", "agent t1/work/executor#1 visit 1", "end"}
			if diff := cmp.Diff(want, f.calls); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
			if got := f.ends[0].Result; got.Status != flow.ResultFailed || got.Reason != err.Error() {
				t.Errorf("ending %+v, want failed with %q", got, err.Error())
			}
		})
	}
}

// permanent is an error as the engine marks one no retry cures (a task
// file that will not load, a remote missing): its message is msg.
func permanent(msg string) error { return permanentErr{errors.New(msg)} }

type permanentErr struct{ error }

func (p permanentErr) Unwrap() []error { return []error{p.error, executor.ErrPermanent} }

// A failure that may pass (a busy journal, the network) is retried: the
// step's second try goes on to the commit.
func TestTransientErrorIsRetried(t *testing.T) {
	tries := 0
	f := &fakeSteps{workflow: "simple", agent: func(context.Context, AgentInput) (flow.Outcome, error) {
		if tries++; tries == 1 {
			return flow.Outcome{}, stepFailure(errors.New("journal: database is locked (SQLITE_BUSY)"), nil)
		}
		return flow.Outcome{Output: "done"}, nil
	}}
	env := newEnv(t, f)
	if ended := runItem(t, env, input); ended.Status != flow.ResultCompleted {
		t.Errorf("ended %+v, want completed", ended)
	}
	want := []string{"begin r1/t1", "agent t1/work/executor#1 visit 1", "agent t1/work/executor#1 visit 1", "action t1/work/commit#1", "end"}
	if diff := cmp.Diff(want, f.calls); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}

// A full disk pauses the item at once, saying what to do, and a link an
// agent planted among the item's files fails it alone at once: neither is
// retried (no retry passes them, and one may repeat paid work), and
// neither halts the run, in a declarative workflow as in the stage
// pipeline.
func TestFullDiskPausesAndPlantedLinkFailsAtOnce(t *testing.T) {
	full := fmt.Errorf("write step file: %w", &os.PathError{Op: "write", Path: "contexts/x.json", Err: syscall.ENOSPC})
	link := fmt.Errorf("write step file: contexts/x.json: a symbolic link is on its path (not followed): %w", safefile.ErrUnsafe)
	for _, tc := range []struct {
		name            string
		err             error
		paused, planted string
	}{
		{"full disk", full, full.Error() + "; free disk space, then cadre resume continues", ""},
		{"planted link", link, "", link.Error()},
	} {
		t.Run(tc.name+"/declarative", func(t *testing.T) {
			f := &fakeSteps{workflow: "simple", agent: func(context.Context, AgentInput) (flow.Outcome, error) {
				return flow.Outcome{}, stepFailure(tc.err, nil)
			}}
			runItem(t, newEnv(t, f), input)
			want := []string{"begin r1/t1", "agent t1/work/executor#1 visit 1", "end"}
			if diff := cmp.Diff(want, f.calls); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
			if end := f.ends[0]; end.Paused != tc.paused || end.Planted != tc.planted || end.Tampered != "" || end.Budget {
				t.Errorf("ending %+v, want paused %q, planted %q", end, tc.paused, tc.planted)
			}
		})
		t.Run(tc.name+"/pipeline", func(t *testing.T) {
			f := runnerSteps(flow.StageCode, 0)
			f.items = []string{"t1", "t2"}
			tries := 0
			f.staged = func(context.Context, StageInput) (executor.Staged, error) {
				tries++
				return executor.Staged{}, stepFailure(tc.err, nil)
			}
			env := newEnv(t, f)
			var s signals
			s.mock(t, env)
			runItem(t, env, input)
			if tries != 1 {
				t.Errorf("the stage ran %d times, want once", tries)
			}
			if end := f.ends[0]; end.Paused != tc.paused || end.Planted != tc.planted || end.Budget {
				t.Errorf("ending %+v, want paused %q, planted %q", end, tc.paused, tc.planted)
			}
			if end := lastPipeline(t, f); end.Decision.Kind == flow.HardStop {
				t.Errorf("decision %+v: the run halts", end.Decision)
			}
			if len(s.sent) != 0 {
				t.Errorf("halt signals %+v, want none", s.sent)
			}
		})
	}
}
