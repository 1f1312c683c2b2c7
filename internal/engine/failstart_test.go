package engine

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/executor"
	"github.com/cadre-dev/cadre/internal/runspec"
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
		if it.ID != "a" {
			return drive(ctx, id, it)
		}
		run = id // by this item's goroutine alone
		for range 2 {
			ended, err := e.eng.FailStart(ctx, id, it.ID, why)
			if err != nil {
				return err
			}
			if want := (executor.Ended{Status: store.ItemFailed, Reason: why}); ended != want {
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

// An item whose executor was stopped while it began (cadre stop --now on
// Temporal: the workflow ends the item stopped once Begin ended, or
// without one when it had not run) is stopped as the embedded engine's
// item stopped before its first step: the run stops, and resume drives
// the item to its end.
func TestItemStoppedWhileItBeganResumes(t *testing.T) {
	for _, begun := range []bool{false, true} {
		t.Run(fmt.Sprintf("begun %v", begun), func(t *testing.T) {
			e := newEnv(t, passAll, [2]string{"a", "code"})
			ctx := context.Background()
			sum, err := e.eng.StartWith(ctx, Options{}, func(ctx context.Context, run string, it store.Item) error {
				s, err := openItem(ctx, e.eng, run, it.ID)
				if err != nil {
					return err
				}
				defer s.Close()
				if begun {
					if _, err := s.Begin(ctx); err != nil {
						return err
					}
				}
				_, err = s.End(ctx, executor.Ending{Stopped: true})
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			if sum.Status != store.RunStopped || len(sum.Items) != 1 || sum.Items[0].Status != store.ItemStopped {
				t.Fatalf("run %s, items %+v: want it and a stopped", sum.Status, sum.Items)
			}
			w := &twoWorkers{e: e.eng}
			sum, err = e.eng.ResumeDriven(ctx, sum.Run, runspec.Overrides{}, w.drive(t))
			if err != nil {
				t.Fatal(err)
			}
			if sum.Status != store.RunCompleted || sum.Items[0].Status != store.ItemCompleted {
				t.Errorf("resumed: run %s, items %+v: want completed", sum.Status, sum.Items)
			}
		})
	}
}
