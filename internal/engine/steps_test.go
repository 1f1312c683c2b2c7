package engine

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/executor"
	"github.com/cadre-dev/cadre/internal/runner"
	"github.com/cadre-dev/cadre/internal/runspec"
	"github.com/cadre-dev/cadre/internal/runstop"
	"github.com/cadre-dev/cadre/internal/store"
	"github.com/cadre-dev/cadre/internal/workflow"
)

// flowWorker is the interpreter's Exec as the Temporal item workflow
// gives it: each step through ItemSteps, alternating between the two
// workers of w, visits counted by the caller, a refused step (cadre stop,
// the run's halt) ending the flow like the stop signal.
type flowWorker struct {
	w    *twoWorkers
	t    *testing.T
	run  string
	item string

	mu     sync.Mutex
	n      int
	visits map[string]int
}

func (f *flowWorker) next() *ItemSteps {
	f.mu.Lock()
	f.n++
	n := f.n
	f.mu.Unlock()
	return f.w.open(context.Background(), f.t, n%2, f.run, f.item)
}

func (f *flowWorker) Agent(ctx context.Context, c workflow.AgentCall) (workflow.Outcome, error) {
	f.mu.Lock()
	f.visits[c.Role]++
	v := f.visits[c.Role]
	f.mu.Unlock()
	out, err := f.next().Agent(ctx, c, v)
	return out, flowErr(err)
}

func (f *flowWorker) Action(ctx context.Context, c workflow.ActionCall) (workflow.Outcome, error) {
	out, err := f.next().Action(ctx, c)
	return out, flowErr(err)
}

func (f *flowWorker) Human(ctx context.Context, c workflow.HumanCall) (workflow.Answer, error) {
	ans, ok, err := f.next().Ask(ctx, c)
	if err == nil && !ok {
		err = workflow.ErrPaused
	}
	return ans, err
}

func (f *flowWorker) Warn(string) {}

// flowErr is a refused step as the Temporal workflow takes it: a stop
// that lets running siblings finish.
func flowErr(err error) error {
	if errors.Is(err, executor.ErrStopping) {
		return errors.Join(err, workflow.ErrPaused)
	}
	return err
}

// driveFlow is an executor.Driver running a declarative workflow's items as the
// Temporal item workflow does, their steps alternating between workers.
func (w *twoWorkers) driveFlow(t *testing.T) executor.Driver {
	return func(ctx context.Context, run string, it store.Item) error {
		b, err := w.open(ctx, t, 0, run, it.ID).Begin(ctx)
		if err != nil || b.Status != "" {
			return err
		}
		def, ok := w.e.Workflows().Get(b.Workflow)
		if !ok {
			t.Fatalf("no workflow %s", b.Workflow)
		}
		fw := &flowWorker{w: w, t: t, run: run, item: it.ID, visits: map[string]int{}}
		in := &workflow.Interp{Item: it.ID, Defs: w.e.Workflows(), Exec: fw, Lim: b.Limits, Roles: w.e.RoleExists}
		res, err := in.Run(ctx, def)
		end := executor.Ending{Result: res}
		switch {
		case errors.Is(err, executor.ErrStopping):
			end = executor.Ending{Stopped: true}
		case errors.Is(err, workflow.ErrPaused):
			end.Paused = pauseReason(err)
		case err != nil:
			return err
		}
		if _, err := fw.next().End(ctx, end); err != nil {
			return err
		}
		for i := range w.items {
			if s := w.items[i][it.ID]; s != nil {
				if err := s.Close(); err != nil {
					return err
				}
			}
		}
		return nil
	}
}

// A declarative item's steps refuse to start once the run is halted by
// another process's hard stop (its halt file) or cadre stop came through
// the stop file while a step ran: the running step finishes, nothing
// more runs (no commit), and the item ends stopped, not paused; resuming
// completes it without running the finished step again.
func TestItemStepsDeclarativeStopsOnHaltOrStopFile(t *testing.T) {
	for _, file := range []string{"halt", "stop"} {
		t.Run(file, func(t *testing.T) {
			var eng *Engine
			var run string
			e := newEnv(t, func(inv runner.Invocation) runner.Result {
				if inv.Role == "executor" && file == "halt" {
					if err := eng.haltRun(run, "b: audit rated 3/10"); err != nil {
						t.Error(err)
					}
				} else if inv.Role == "executor" {
					if err := runstop.Request(eng.StateDir(), run); err != nil {
						t.Error(err)
					}
				}
				return runner.Result{Output: signalText(inv.Role, "SUCCESS", -1)}
			}, [2]string{"a", "code"})
			eng = e.eng
			w := &twoWorkers{e: e.eng}
			drive := w.driveFlow(t)
			sum, err := e.eng.StartWith(context.Background(), Options{Workflow: "simple"}, func(ctx context.Context, id string, it store.Item) error {
				run = id
				return drive(ctx, id, it)
			})
			if err != nil {
				t.Fatal(err)
			}
			a, err := e.st.GetItem(context.Background(), sum.Run, "a")
			if err != nil || a.Status != store.ItemStopped {
				t.Fatalf("a: %+v, %v: want stopped", a, err)
			}
			if log := git(t, e.root, "log", "--all", "--format=%s"); strings.TrimSpace(log) != "init" {
				t.Errorf("committed after the %s:\n%s", file, log)
			}
			if len(e.fake.calls) != 1 {
				t.Errorf("agent steps %q, want the executor once", e.fake.calls)
			}
			if file == "stop" {
				if sum.Status != store.RunStopped {
					t.Errorf("run %s: %s, want stopped", sum.Status, sum.Reason)
				}
				w2 := &twoWorkers{e: e.eng}
				sum, err := e.eng.ResumeDriven(context.Background(), sum.Run, runspec.Overrides{}, w2.driveFlow(t))
				if err != nil || sum.Status != store.RunCompleted {
					t.Fatalf("resume: %+v, %v", sum, err)
				}
				if len(e.fake.calls) != 1 {
					t.Errorf("agent steps %q, want the executor once: replayed on resume", e.fake.calls)
				}
			}
		})
	}
}

// The budget on an executor's workers: the run's items pause at their
// next agent step or stage once the journal's spending reaches it, the
// run pauses, and cadre resume --budget-usd continues them on the same
// long-lived workers, which must read the raised budget from the journal
// (not their copy of the run's options) and hold no halt of their own
// from the paused attempt.
func TestItemStepsBudgetPausesAndResumesOnTheSameWorkers(t *testing.T) {
	e := newEnv(t, func(inv runner.Invocation) runner.Result {
		if inv.Role == "executor" {
			return runner.Result{Output: signalText("executor", "SUCCESS", -1), Usage: event.Usage{CostUSD: 0.01}}
		}
		return passAll(inv)
	}, [2]string{"a", "code"}, [2]string{"c", "code"})
	body := "---\nstage: code\nattempts: 0\nworkflow: simple\n---\n# Task c\n\n## Goal\nDo c.\n"
	if err := os.WriteFile(filepath.Join(e.root, "tasks", "c.md"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	w := &twoWorkers{e: e.eng}
	drive := func(ctx context.Context, run string, it store.Item) error {
		if it.ID == "c" {
			return w.driveFlow(t)(ctx, run, it)
		}
		return w.drive(t)(ctx, run, it)
	}
	sum, err := e.eng.StartWith(context.Background(), Options{BudgetUSD: 0.005}, drive)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Status != store.RunPaused || !strings.Contains(sum.Reason, "budget reached") {
		t.Fatalf("run %s: %s, want paused by the budget", sum.Status, sum.Reason)
	}
	for _, c := range e.fake.calls {
		if strings.HasPrefix(c, "a/audit") {
			t.Errorf("a's auditor ran past the budget: %q", e.fake.calls)
		}
	}
	// The workers live on; their items ended.
	w.items = [2]map[string]*ItemSteps{{}, {}}
	budget := 1.0
	sum, err = e.eng.ResumeDriven(context.Background(), sum.Run, runspec.Overrides{BudgetUSD: &budget}, drive)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Status != store.RunCompleted {
		t.Fatalf("resumed run %s: %s, want completed", sum.Status, sum.Reason)
	}
	for _, id := range []string{"a", "c"} {
		if it, err := e.st.GetItem(context.Background(), sum.Run, id); err != nil || it.Status != store.ItemCompleted {
			t.Errorf("%s: %+v, %v: want completed", id, it, err)
		}
	}
	seen := map[string]bool{}
	for _, c := range e.fake.calls {
		if seen[c] {
			t.Errorf("agent step %s ran twice: %q", c, e.fake.calls)
		}
		seen[c] = true
	}
}
