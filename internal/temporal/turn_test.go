package temporal

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/testsuite"

	"github.com/cadre-dev/cadre/internal/engine"
)

// freshReplica is a replica every item is fresh in: no step hydrates.
// Steps of several items call it at once.
type freshReplica struct {
	mu    sync.Mutex
	takes int
}

func (r *freshReplica) Hydrate(ctx context.Context, snap json.RawMessage) error {
	return fmt.Errorf("unexpected hydration from %s", snap)
}

func (r *freshReplica) Take(ctx context.Context, _ *engine.ItemSteps) (json.RawMessage, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.takes++
	return json.RawMessage(`{}`), nil
}

func (r *freshReplica) Seq(ctx context.Context, run, item string) (int64, error) { return 1, nil }

// A worker sent two steps of one remote item at once runs them one after
// the other (the second waits for the first's end, batch taken), while a
// step of another item runs beside them.
func TestRemoteItemTakesTurns(t *testing.T) {
	rep := &freshReplica{}
	a := &Activities{Home: "me:/y", ID: "w1", Queue: "q1", Replica: rep, Origin: true,
		items: map[ItemRef]*engine.ItemSteps{
			{Run: "r1", Item: "t1"}: {},
			{Run: "r1", Item: "t2"}: {},
		}}
	ref := func(item string) ItemRef {
		return ItemRef{Run: "r1", Item: item, Sync: &Sync{Home: "home:/x", Fresh: []string{"w1"}, Seq: 1}}
	}

	var mu sync.Mutex
	var log []string
	note := func(s string) { mu.Lock(); log = append(log, s); mu.Unlock() }
	started := map[string]chan struct{}{}
	release := map[string]chan struct{}{}
	for _, s := range []string{"t1/a", "t1/b", "t2/a"} {
		started[s], release[s] = make(chan struct{}), make(chan struct{})
	}
	// step is an activity on the item between the worker's begin and end,
	// held until released.
	step := func(ctx context.Context, item, name string) error {
		_, _, sp, err := a.begin(ctx, ref(item), name)
		if err != nil {
			return err
		}
		key := item + "/" + name
		note("start " + key)
		close(started[key])
		<-release[key]
		note("end " + key)
		_, err = sp.end(ctx, nil)
		return err
	}
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	run := func(item, name string) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var ts testsuite.WorkflowTestSuite
			env := ts.NewTestActivityEnvironment()
			env.RegisterActivity(step)
			if _, err := env.ExecuteActivity(step, item, name); err != nil {
				errs <- fmt.Errorf("%s/%s: %w", item, name, err)
			}
		}()
	}
	waitFor := func(key string) {
		t.Helper()
		select {
		case <-started[key]:
		case <-time.After(10 * time.Second):
			mu.Lock()
			defer mu.Unlock()
			t.Fatalf("%s never started; log %q", key, log)
		}
	}

	run("t1", "a")
	waitFor("t1/a")
	run("t1", "b")
	run("t2", "a")
	waitFor("t2/a") // another item's step does not wait for t1's
	// Without the turn t1's second step starts at once: give it the time
	// to show it does not.
	select {
	case <-started["t1/b"]:
		t.Fatal("t1's second step started while its first still ran")
	case <-time.After(200 * time.Millisecond):
	}
	close(release["t2/a"])
	close(release["t1/a"])
	waitFor("t1/b")
	close(release["t1/b"])
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	mu.Lock()
	defer mu.Unlock()
	var a1End, b1Start int = -1, -1
	for i, s := range log {
		switch s {
		case "end t1/a":
			a1End = i
		case "start t1/b":
			b1Start = i
		}
	}
	if a1End < 0 || b1Start < a1End {
		t.Errorf("log %q: want t1/b started after t1/a ended", log)
	}
	if rep.takes != 3 {
		t.Errorf("%d batches taken, want one per step", rep.takes)
	}
}
