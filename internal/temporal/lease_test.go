package temporal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/cadre-dev/cadre/internal/engine"
	"github.com/cadre-dev/cadre/internal/store"
)

// A live worker whose heartbeats stop reaching Temporal loses its step:
// after the heartbeat timeout the step's second attempt starts it again
// in the journal. When the first attempt's agent then exits, its step's
// context reads as cancelled (the engine's check as an agent exits) and
// the journal refuses its completion (the write asks the same context):
// the late finisher lands nothing, and the step ends as the attempt
// holding it finished it.
func testLostStepLandsNothing(t *testing.T, c client.Client) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "cadre.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.CreateRun(ctx, store.Run{ID: "r1"}, store.Item{RunID: "r1", ID: "t1", Title: "T"}); err != nil {
		t.Fatal(err)
	}
	ref := ItemRef{Run: "r1", Item: "t1"}
	a := &Activities{Home: "h", ID: "w1", Queue: "q1", items: map[ItemRef]*engine.ItemSteps{ref: {}}}
	// The first attempt's heartbeats never arrive; the second's do.
	a.beat = func(ctx context.Context, details string) error {
		if activity.GetInfo(ctx).Attempt == 1 {
			<-ctx.Done()
			return ctx.Err()
		}
		return activity.GetClient(ctx).RecordActivityHeartbeat(ctx, activity.GetInfo(ctx).TaskToken, details)
	}

	const id = "t1/work/coder#1"
	exited := make(chan struct{})       // the first attempt's agent exits
	tried := make(chan struct{})        // the first attempt tried to land its step
	var stepErr, cause, finishErr error // the first attempt's, once tried is closed
	step := func(ctx context.Context) (int, error) {
		n := int(activity.GetInfo(ctx).Attempt)
		ctx, _, sp, err := a.begin(ctx, ref, id)
		if err != nil {
			return 0, err
		}
		rec := store.Step{RunID: "r1", ItemID: "t1", ID: id, Kind: "agent"}
		if err := st.StartStep(ctx, rec); err != nil {
			_, err = sp.end(ctx, err)
			return n, err
		}
		if n == 1 {
			<-exited
		} else {
			// The step is this attempt's now: the first one's agent
			// exits, and tries to land its step before this one does.
			close(exited)
			<-tried
		}
		rec.Status, rec.Result = store.StepCompleted, json.RawMessage(fmt.Sprintf(`{"attempt":%d}`, n))
		err = st.FinishStep(ctx, rec)
		if n == 1 {
			stepErr, cause, finishErr = ctx.Err(), context.Cause(ctx), err
			close(tried)
		}
		// The span ends without the step's error: a failure Temporal
		// retries is journaled as a warning, which this item, with no
		// engine behind it, cannot take.
		if _, eerr := sp.end(ctx, nil); eerr != nil {
			return n, eerr
		}
		return n, err
	}
	item := func(ctx workflow.Context) (int, error) {
		ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute, HeartbeatTimeout: 2 * time.Second,
			RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, MaximumAttempts: 2}})
		var n int
		err := workflow.ExecuteActivity(ctx, "lease-step").Get(ctx, &n)
		return n, err
	}
	w := worker.New(c, "lease", worker.Options{})
	w.RegisterWorkflowWithOptions(item, workflow.RegisterOptions{Name: "lease-item"})
	w.RegisterActivityWithOptions(step, activity.RegisterOptions{Name: "lease-step"})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)

	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "lease-lost", TaskQueue: "lease"}, "lease-item")
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := run.Get(ctx, &n); err != nil || n != 2 {
		t.Fatalf("the item's step: attempt %d, %v; want the second attempt's", n, err)
	}
	<-tried
	if !errors.Is(stepErr, context.Canceled) || !errors.Is(cause, errLapsed) {
		t.Errorf("the first attempt's step context after it lost the step: %v (%v), want cancelled, its lease lapsed", stepErr, cause)
	}
	if finishErr == nil {
		t.Errorf("the journal took the first attempt's completion after the step went to the second")
	}
	got, err := st.GetStep(ctx, "r1", id)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != store.StepCompleted || string(got.Result) != `{"attempt":2}` || got.Tries != 2 {
		t.Errorf("journaled step %s: %s %s, started %d times; want completed by the second attempt, started twice", id, got.Status, got.Result, got.Tries)
	}
}
