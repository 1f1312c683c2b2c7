package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/runner"
	"github.com/cadre-dev/cadre/internal/store"
)

var errDiskFull = errors.New("database or disk is full")

// faultEnv is a repository with two items, one on the stage pipeline
// (plan → code → audit, whose first audit fails) and one on a declarative
// workflow, run one after the other in worktrees.
func faultEnv(t *testing.T) *env {
	t.Helper()
	e := newEnv(t, func(inv runner.Invocation) runner.Result {
		if inv.Step == "a/audit/auditor#1" {
			// By step, not by call: a step run again answers alike.
			return runner.Result{Output: signalText("auditor", "FAIL", 3)}
		}
		if inv.Role == "executor" {
			os.WriteFile(filepath.Join(inv.Dir, "c.txt"), []byte(inv.Step+"\n"), 0o644)
			return runner.Result{Output: signalText("executor", "SUCCESS", -1)}
		}
		return passAll(inv)
	}, [2]string{"a", "plan"}, [2]string{"c", "code"})
	body := "---\nstage: code\nattempts: 0\nworkflow: simple\n---\n# Task c\n\n## Goal\nDo c.\n"
	if err := os.WriteFile(filepath.Join(e.root, "tasks", "c.md"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, e.root, "commit", "-qam", "c runs simple")
	return e
}

// journalState is what the journal holds of a run: each item's status and
// the steps it completed.
type journalState struct {
	items map[string]string
	done  []string
}

func readJournal(t *testing.T, st *store.Store, run string) journalState {
	t.Helper()
	ctx := context.Background()
	v := journalState{items: map[string]string{}}
	items, err := st.Items(ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range items {
		v.items[it.ID] = it.Status
	}
	steps, err := st.Steps(ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range steps {
		if s.Status == store.StepCompleted {
			v.done = append(v.done, s.ID)
		}
	}
	slices.Sort(v.done)
	return v
}

// itemEnds are the item states the events told of, by the event that
// tells each: an event may only tell of a state the journal has.
var itemEnds = map[string]string{
	event.TaskCompleted: store.ItemCompleted,
	event.TaskFailed:    store.ItemFailed,
	event.ItemPaused:    store.ItemPaused,
}

// TestJournalFaults fails the journal's Nth write, for every N a whole
// run makes, then resumes the run with a working journal. Whatever write
// failed: the run stops with an error naming the journal (never reported
// completed), no event tells of an item state or a step the journal does
// not have, no agent step the journal has as completed runs again, and
// the resumed run ends as a run without faults does, every step done.
func TestJournalFaults(t *testing.T) {
	ctx := context.Background()
	clean := faultEnv(t)
	var writes atomic.Int64
	clean.st.SetFault(func(store.OpKind) error { writes.Add(1); return nil })
	sum, err := clean.eng.Start(ctx, Options{Parallel: 1})
	if err != nil || sum.Status != store.RunCompleted {
		t.Fatalf("clean run: %s %s, %v", sum.Status, sum.Reason, err)
	}
	want := readJournal(t, clean.st, sum.Run)
	if n := writes.Load(); n < 30 {
		t.Fatalf("a clean run made %d journal writes; the test expects a whole run's", n)
	}
	for n := int64(1); n <= writes.Load(); n++ {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			e := faultEnv(t)
			var count atomic.Int64
			var failed atomic.Value
			e.st.SetFault(func(k store.OpKind) error {
				if count.Add(1) == n {
					failed.Store(k)
					return errDiskFull
				}
				return nil
			})
			sum, err := e.eng.Start(ctx, Options{Parallel: 1})
			kind, _ := failed.Load().(store.OpKind)
			e.st.SetFault(nil)
			if kind == "" {
				t.Fatalf("write %d never came (the run made %d)", n, count.Load())
			}
			tolerated := kind == store.OpStepGroup || kind == store.OpEvaluations // warnings, no state lost
			switch {
			case tolerated:
				if err != nil {
					t.Fatalf("a refused %s write is a warning, but the run failed: %v", kind, err)
				}
			case err == nil && sum.Status == store.RunCompleted:
				t.Fatalf("the journal refused a %s write, yet the run says completed", kind)
			case err != nil && !errors.Is(err, errDiskFull):
				t.Fatalf("run error %v does not say the journal's cause", err)
			case err != nil && strings.Contains(err.Error(), "\n"):
				t.Fatalf("run error is not one line: %q", err)
			case err != nil && sum.Run != "" && (sum.Status != store.RunStopped || !errors.As(err, new(*FaultStop))):
				t.Fatalf("a refused %s write ended the run %s (%v), not stopped for resume", kind, sum.Status, err)
			}
			run := sum.Run
			if run == "" {
				// The run itself was not recorded: nothing to resume,
				// nothing may have started.
				if len(e.fake.calls) > 0 {
					t.Fatalf("agents ran for a run the journal lacks: %q", e.fake.calls)
				}
				return
			}
			got := readJournal(t, e.st, run)
			checkEventsJournaled(t, e.events, got)
			ranBefore := len(e.fake.calls)
			if sum.Status != store.RunCompleted {
				if sum, err = e.eng.Resume(ctx, run); err != nil || sum.Status != store.RunCompleted {
					t.Fatalf("resume after a refused %s write: %s %s, %v", kind, sum.Status, sum.Reason, err)
				}
			}
			for _, c := range e.fake.calls[ranBefore:] {
				if slices.Contains(got.done, strings.TrimSuffix(c, "+reask")) {
					t.Errorf("step %s ran again after the journal had it completed", c)
				}
			}
			end := readJournal(t, e.st, run)
			if fmt.Sprint(end) != fmt.Sprint(want) {
				t.Errorf("after a refused %s write and resume, the journal has\n%v\nwant\n%v", kind, end, want)
			}
			checkOneCommitPerStep(t, e)
		})
	}
}

// checkEventsJournaled fails when an event told of an item's end or a
// step's completion that the journal does not have.
func checkEventsJournaled(t *testing.T, events []event.Event, j journalState) {
	t.Helper()
	last := map[string]string{}
	for _, ev := range events {
		if st, ok := itemEnds[ev.Type]; ok && ev.Item != "" {
			last[ev.Item] = st
		}
		if ev.Type == event.StepCompleted && ev.Step != "" && !slices.Contains(j.done, ev.Step) {
			t.Errorf("event %s of step %s, which the journal does not have completed", ev.Type, ev.Step)
		}
	}
	for item, st := range last {
		if j.items[item] != st {
			t.Errorf("events last told item %s %s, the journal has it %s", item, st, j.items[item])
		}
	}
}

// checkOneCommitPerStep fails when a step's commit was made twice on an
// item's branch (a crash or refused write between committing and
// journaling it must adopt the commit, not repeat it).
func checkOneCommitPerStep(t *testing.T, e *env) {
	t.Helper()
	out := git(t, e.root, "log", "--all", "--format=%(trailers:key=Cadre-Step,valueonly)")
	seen := map[string]bool{}
	for _, step := range strings.Fields(out) {
		if seen[step] {
			t.Errorf("step %s was committed twice", step)
		}
		seen[step] = true
	}
}
