package temporal

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.temporal.io/sdk/temporal"

	"github.com/cadre-dev/cadre/internal/executor"
	"github.com/cadre-dev/cadre/internal/signal"
	flow "github.com/cadre-dev/cadre/internal/workflow"
)

func runnerSteps(stage string, attempts int) *fakeSteps {
	return &fakeSteps{workflow: flow.PipelineWorkflow, stage: stage, attempts: attempts}
}

// lastPipeline is the stage pipeline's last decision, as End got it.
func lastPipeline(t *testing.T, f *fakeSteps) executor.PipelineEnding {
	t.Helper()
	if len(f.ends) != 1 || f.ends[0].Pipeline == nil {
		t.Fatalf("endings %+v, want one of the runner workflow", f.ends)
	}
	return *f.ends[0].Pipeline
}

// The stage pipeline on Temporal is workflow.Next's: a task starting at
// plan goes planner → coder → auditor, a rejected audit sends the coder
// back with the auditor's review, the next audit passes, and the item's
// end is the Complete decision (its commit) with the attempt counted.
func TestPipelineRunsTheStages(t *testing.T) {
	f := runnerSteps(flow.StagePlan, 0)
	f.staged = runnerStage(5, 9)
	env := newEnv(t, f)
	ended := runItem(t, env, input)
	want := []string{"begin r1/t1",
		`stage t1/plan/planner#1 review ""`,
		`stage t1/code/coder#1 review ""`,
		`stage t1/audit/auditor#1 review ""`,
		`stage t1/code/coder#2 review "out/t1/audit/auditor#1"`,
		`stage t1/audit/auditor#2 review ""`,
		"end"}
	if diff := cmp.Diff(want, f.calls); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	end := lastPipeline(t, f)
	if end.Decision.Kind != flow.Complete || end.State.Stage != flow.StageCompleted || end.State.Attempts != 1 {
		t.Errorf("ending %+v, want complete after one failed attempt", end)
	}
	// Each stage is asked in the state workflow.Next left: the second
	// coder with the attempt counted, for the task file's frontmatter.
	if got := f.states[3]; got.Stage != flow.StageCode || got.Attempts != 1 {
		t.Errorf("second coder's state %+v, want code with 1 attempt", got)
	}
	if ended.Status != "completed" {
		t.Errorf("result %+v: want completed", ended)
	}
}

// The same decisions as the embedded engine's item loop: every stage's
// step and the final decision equal what workflow.Next gives for the same
// events, so the two executors cannot drift apart.
func TestPipelineDecidesAsNext(t *testing.T) {
	f := runnerSteps(flow.StageCode, 0)
	f.staged = runnerStage(3)
	env := newEnv(t, f)
	runItem(t, env, input)
	lim := flow.Limits{AuditPassRating: 8, MaxAttempts: 2, EscalateBelowConfidence: 5}
	s, d := flow.Next(lim, flow.Initial("t1", flow.StageCode, 0), flow.Event{Kind: flow.Start})
	var want []string
	for d.Kind == flow.RunStep {
		want = append(want, d.Step.ID)
		got, _ := runnerStage(3)(context.Background(), StageInput{State: s, Decision: d})
		s, d = flow.Next(lim, s, got.Event)
	}
	var got []string
	for _, c := range f.calls {
		if id, ok := strings.CutPrefix(c, "stage "); ok {
			got = append(got, strings.Fields(id)[0])
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("stages (-embedded +temporal):\n%s", diff)
	}
	end := lastPipeline(t, f)
	if diff := cmp.Diff(d, end.Decision); diff != "" {
		t.Errorf("final decision (-embedded +temporal):\n%s", diff)
	}
	// The second failed audit is the hard stop.
	if end.Decision.Kind != flow.HardStop || !strings.Contains(end.Decision.Reason, "2 of 2 attempts used") || end.State.Attempts != 2 {
		t.Errorf("ending %+v, want a hard stop after 2 attempts", end)
	}
}

// Another item's hard stop (or cadre stop), as a stage reports it: the
// running step's outcome is kept, no new stage starts, the item ends
// stopped.
func TestRunnerHaltFromAnotherItemStopsBeforeTheNextStage(t *testing.T) {
	f := runnerSteps(flow.StageCode, 0)
	f.staged = func(ctx context.Context, in StageInput) (executor.Staged, error) {
		got, err := runnerStage(9)(ctx, in)
		got.Halted = true
		return got, err
	}
	env := newEnv(t, f)
	runItem(t, env, input)
	want := []string{"begin r1/t1", `stage t1/code/coder#1 review ""`, "end"}
	if diff := cmp.Diff(want, f.calls); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	if end := lastPipeline(t, f); end.Decision.Kind != flow.Stopped || !end.State.Stopping {
		t.Errorf("ending %+v, want stopped", end)
	}
}

// A run halted before the item began: no stage runs at all.
func TestRunnerHaltedBeforeBeginRunsNothing(t *testing.T) {
	f := runnerSteps(flow.StageAudit, 0)
	f.halted = true
	env := newEnv(t, f)
	runItem(t, env, input)
	if diff := cmp.Diff([]string{"begin r1/t1", "end"}, f.calls); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	if end := lastPipeline(t, f); end.Decision.Kind != flow.Stopped {
		t.Errorf("ending %+v, want stopped", end)
	}
}

// cadre stop is the stop signal: the running stage finishes and no new
// one starts.
func TestRunnerStopSignalLetsTheStageFinish(t *testing.T) {
	f := runnerSteps(flow.StageCode, 0)
	finished := false
	f.staged = func(ctx context.Context, in StageInput) (executor.Staged, error) {
		for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); {
			if ctx.Err() != nil {
				return executor.Staged{}, ctx.Err()
			}
			activityHeartbeat(ctx)
			time.Sleep(10 * time.Millisecond)
		}
		finished = true
		return runnerStage(9)(ctx, in)
	}
	env := newEnv(t, f)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(SignalStop, nil) }, time.Second)
	runItem(t, env, input)
	if !finished {
		t.Error("the running stage did not finish")
	}
	want := []string{"begin r1/t1", `stage t1/code/coder#1 review ""`, "end"}
	if diff := cmp.Diff(want, f.calls); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	if end := lastPipeline(t, f); end.Decision.Kind != flow.Stopped {
		t.Errorf("ending %+v, want stopped", end)
	}
}

// Cancelling (cadre stop --now) cancels the running stage and journals
// the item stopped; the workflow ends cancelled.
func TestRunnerCancelStopsTheRunningStage(t *testing.T) {
	f := runnerSteps(flow.StageCode, 0)
	f.staged = func(ctx context.Context, in StageInput) (executor.Staged, error) {
		for ctx.Err() == nil {
			activityHeartbeat(ctx)
			time.Sleep(10 * time.Millisecond)
		}
		return executor.Staged{}, ctx.Err()
	}
	env := newEnv(t, f)
	env.RegisterDelayedCallback(env.CancelWorkflow, time.Second)
	env.ExecuteWorkflow(WorkflowName, input)
	if err := env.GetWorkflowError(); !temporal.IsCanceledError(err) {
		t.Fatalf("workflow error %v, want cancelled", err)
	}
	if len(f.ends) != 1 || !f.ends[0].Stopped || f.ends[0].Pipeline == nil {
		t.Errorf("endings %+v, want one stopped runner ending", f.ends)
	}
}

// A low-confidence coder asks a human: the approve signal answers it, the
// answer is journaled, and the audit follows with the human's note.
func TestRunnerApproveSignalAnswersAnEscalation(t *testing.T) {
	f := runnerSteps(flow.StageCode, 0)
	f.staged = func(ctx context.Context, in StageInput) (executor.Staged, error) {
		got, err := runnerStage(9)(ctx, in)
		if in.Decision.Step.Role == flow.RoleCoder {
			c := 1
			got.Event.Signal = signal.Signal{Agent: "coder", Result: signal.Success, Confidence: &c}
		}
		return got, err
	}
	env := newEnv(t, f)
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(SignalApprove, Approval{Approved: true, Note: "fine"})
	}, time.Hour)
	runItem(t, env, input)
	want := []string{"begin r1/t1", `stage t1/code/coder#1 review ""`, "ask t1/code/coder#1/human",
		"answer t1/code/coder#1/human", `stage t1/audit/auditor#1 review ""`, "end"}
	if diff := cmp.Diff(want, f.calls); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	if end := lastPipeline(t, f); end.Decision.Kind != flow.Complete {
		t.Errorf("ending %+v, want complete", end)
	}
}

// A quota pauses the item without a retry; a step failing past its
// retries is a hard stop saying why.
func TestRunnerStageFailures(t *testing.T) {
	f := runnerSteps(flow.StageCode, 0)
	f.staged = func(context.Context, StageInput) (executor.Staged, error) {
		return executor.Staged{}, stepFailure(fmt.Errorf("runner claude hit a quota: %w", flow.ErrPaused), nil)
	}
	env := newEnv(t, f)
	runItem(t, env, input)
	if diff := cmp.Diff([]string{"begin r1/t1", `stage t1/code/coder#1 review ""`, "end"}, f.calls); diff != "" {
		t.Errorf("quota calls (-want +got):\n%s", diff)
	}
	if !strings.Contains(f.ends[0].Paused, "quota") {
		t.Errorf("ending %+v, want paused by the quota", f.ends[0])
	}

	f = runnerSteps(flow.StageCode, 0)
	env = newEnv(t, f)
	env.OnActivity(ActStage, mockAny, mockAny).Return(StageResult{}, temporal.NewApplicationError("journal unreachable", "io"))
	runItem(t, env, input)
	if end := lastPipeline(t, f); end.Decision.Kind != flow.HardStop || !strings.Contains(end.Decision.Reason, "journal unreachable") {
		t.Errorf("ending %+v, want a hard stop saying why", end)
	}
}

// A stage refused because cadre stop (its stop file) or another item's
// hard stop (the halt file) came after the last stage reported none:
// the item ends stopped, resumable, not failed by a hard stop.
func TestRunnerRefusedStageStopsTheItem(t *testing.T) {
	f := runnerSteps(flow.StageCode, 0)
	f.staged = func(ctx context.Context, in StageInput) (executor.Staged, error) {
		if in.Decision.Step.Role == flow.RoleAuditor {
			return executor.Staged{}, stepFailure(executor.ErrStopping, nil)
		}
		return runnerStage(9)(ctx, in)
	}
	env := newEnv(t, f)
	runItem(t, env, input)
	want := []string{"begin r1/t1", `stage t1/code/coder#1 review ""`, `stage t1/audit/auditor#1 review ""`, "end"}
	if diff := cmp.Diff(want, f.calls); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	end := f.ends[len(f.ends)-1]
	if end.Pipeline == nil || end.Pipeline.Decision.Kind != flow.Stopped || end.Paused != "" || end.Stopped {
		t.Errorf("ending %+v, want the runner's stopped decision", end)
	}
}
