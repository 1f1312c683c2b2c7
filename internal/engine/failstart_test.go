package engine

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/store"
)

// An item an executor could not begin is journaled as the embedded engine
// journals one whose worktree cannot be made: failed, saying why, with
// one taskFailed event; the run's other items go on and the run fails
// without halting. A second call (a retried activity) changes nothing,
// and an item that ended keeps its end.
func TestFailStartFailsTheItemAsAnUnmadeWorktree(t *testing.T) {
	e := newEnv(t, passAll, [2]string{"a", "code"}, [2]string{"b", "code"})
	ctx := context.Background()
	w := &twoWorkers{e: e.eng}
	drive := w.drive(t)
	const why = "could not begin: remote unreachable"
	var run string
	sum, err := e.eng.StartWith(ctx, Options{}, func(ctx context.Context, id string, it store.Item) error {
		run = id
		if it.ID != "a" {
			return drive(ctx, id, it)
		}
		for range 2 {
			ended, err := e.eng.FailStart(ctx, id, it.ID, why)
			if err != nil {
				return err
			}
			if want := (Ended{Status: store.ItemFailed, Reason: why}); ended != want {
				t.Errorf("ended %+v, want %+v", ended, want)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Status != store.RunFailed || !strings.Contains(sum.Reason, why) {
		t.Errorf("run %s (%s), want failed saying why", sum.Status, sum.Reason)
	}
	got := map[string]string{}
	for _, it := range sum.Items {
		got[it.ID] = it.Status + ": " + it.Reason
	}
	want := map[string]string{"a": "failed: " + why, "b": "completed: "}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("items (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{event.TaskFailed}, e.seq("a", event.TaskFailed, event.TaskStarted)); diff != "" {
		t.Errorf("events of a (-want +got):\n%s", diff)
	}
	ended, err := e.eng.FailStart(ctx, run, "b", why)
	if err != nil || ended.Status != store.ItemCompleted {
		t.Errorf("failing completed b: %+v, %v; want it completed still", ended, err)
	}
}
