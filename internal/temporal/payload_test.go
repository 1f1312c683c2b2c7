package temporal

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"go.temporal.io/sdk/temporal"

	"github.com/cadre-dev/cadre/internal/executor"
	"github.com/cadre-dev/cadre/internal/signal"
	flow "github.com/cadre-dev/cadre/internal/workflow"
)

// A step whose input would be over the payload limit (here the work a
// reviewer is given: the executor's output of 2 MB) fails the item at
// once, saying which step, how large and what to do, rather than let
// Temporal end the workflow without a word.
func TestOversizedStepInputFailsTheItem(t *testing.T) {
	f := &fakeSteps{workflow: "standard", agent: func(_ context.Context, in AgentInput) (flow.Outcome, error) {
		c, r := 9, 9
		out := flow.Outcome{Output: "out/" + in.Call.ID, Signal: signal.Signal{Result: signal.Pass, Confidence: &c, Rating: &r}}
		if in.Call.Role == "executor" {
			out.Text = strings.Repeat("x", 2<<20)
		}
		return out, nil
	}}
	env := newEnv(t, f)
	runItem(t, env, input)
	if len(f.ends) != 1 {
		t.Fatalf("endings %+v", f.ends)
	}
	got := f.ends[0].Result
	want := "item t1: step t1/work/critic#1: its input is 2.0 MB, over the 1.5 MB a Temporal payload may carry here"
	if got.Status != flow.ResultFailed || !strings.HasPrefix(got.Reason, want) || strings.Contains(got.Reason, "\n") {
		t.Errorf("ending %+v, want failed: %s...", got, want)
	}
	for _, c := range f.calls {
		if strings.Contains(c, "critic") || strings.Contains(c, "commit") {
			t.Errorf("step %q ran", c)
		}
	}
}

// A step's result over the limit is refused by the worker, at once and
// for good, naming the item, the step and the size; one under it passes.
func TestOversizedStepResultIsRefused(t *testing.T) {
	ref := ItemRef{Run: "r1", Item: "t1"}
	small := StepResult{Outcome: flow.Outcome{Text: strings.Repeat("x", 1<<20)}}
	if err := fits(ref, "t1/work/executor#1", small, nil); err != nil {
		t.Errorf("1 MB result: %v", err)
	}
	big := StepResult{Outcome: flow.Outcome{Text: strings.Repeat("x", 1<<20)}, Synced: Synced{Batch: json.RawMessage(`"` + strings.Repeat("y", 1<<20) + `"`)}}
	err := fits(ref, "t1/work/executor#1", big, nil)
	var ae *temporal.ApplicationError
	if !errors.As(err, &ae) || !ae.NonRetryable() || ae.Type() != ErrTypeTooLarge {
		t.Fatalf("2 MB result: %v, want a non-retryable %q failure", err, ErrTypeTooLarge)
	}
	if want := "item t1: step t1/work/executor#1: its result is 2.0 MB"; !strings.HasPrefix(ae.Message(), want) {
		t.Errorf("message %q, want %q...", ae.Message(), want)
	}
	stepErr := errors.New("step failed")
	if err := fits(ref, "s", big, stepErr); err != stepErr {
		t.Errorf("a failed step's error %v, want it as it is", err)
	}
}

// bigJournal's snapshot of any item is n bytes.
type bigJournal struct{ n int }

func (j bigJournal) Export(ctx context.Context, run, item string) (json.RawMessage, error) {
	return json.RawMessage(`"` + strings.Repeat("s", j.n-2) + `"`), nil
}
func (bigJournal) Apply(context.Context, string, string, json.RawMessage) error { return nil }
func (bigJournal) Fail(context.Context, string, string, string) (executor.Ended, error) {
	return executor.Ended{}, nil
}

// A snapshot over the limit is refused by the home for good (its
// activities are retried for ever otherwise), its size in the failure for
// the workflow to name the step it was for.
func TestOversizedSnapshotIsRefused(t *testing.T) {
	h := homeSteps{j: bigJournal{n: 3 << 20}}
	_, err := h.Export(context.Background(), ItemRef{Run: "r1", Item: "t1"})
	var ae *temporal.ApplicationError
	if !errors.As(err, &ae) || !ae.NonRetryable() || ae.Type() != ErrTypeTooLarge {
		t.Fatalf("export: %v, want a non-retryable %q failure", err, ErrTypeTooLarge)
	}
	var n int
	if err := ae.Details(&n); err != nil || n != 3<<20 {
		t.Errorf("details %d %v, want the size", n, err)
	}
	if msg := errTooLarge("t1", "t1/work/critic#1", "snapshot", n).Error(); !strings.Contains(msg, "step t1/work/critic#1: its snapshot is 3.0 MB") {
		t.Errorf("the workflow's failure %q", msg)
	}
	h = homeSteps{j: bigJournal{n: 1 << 20}}
	if _, err := h.Export(context.Background(), ItemRef{Run: "r1", Item: "t1"}); err != nil {
		t.Errorf("1 MB snapshot: %v", err)
	}
}
