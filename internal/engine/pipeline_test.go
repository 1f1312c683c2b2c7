package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cadre-dev/cadre/internal/executor"
	"github.com/cadre-dev/cadre/internal/runner"
	"github.com/cadre-dev/cadre/internal/runspec"
	"github.com/cadre-dev/cadre/internal/runstop"
	"github.com/cadre-dev/cadre/internal/store"
	"github.com/cadre-dev/cadre/internal/workflow"
)

// twoWorkers is an executor.Driver that runs the stage pipeline as the Temporal
// item workflow does (workflow.Next deciding, Begin, Stage and End acting)
// with its steps alternating between two "workers": each keeps the items
// it opened, as a worker process does, so a step finds what it last did
// for the item outdated by the other worker's steps since.
type twoWorkers struct {
	e      *Engine
	mu     sync.Mutex
	runs   [2]*RunSteps
	items  [2]map[string]*ItemSteps
	halted []string // the run's halt as each item's driving began
}

func (w *twoWorkers) open(ctx context.Context, t *testing.T, i int, run, item string) *ItemSteps {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.runs[i] == nil {
		rs, err := w.e.OpenRun(ctx, run)
		if err != nil {
			t.Fatal(err)
		}
		w.runs[i], w.items[i] = rs, map[string]*ItemSteps{}
	}
	if s := w.items[i][item]; s != nil {
		return s
	}
	s, err := w.runs[i].OpenItem(ctx, item)
	if err != nil {
		t.Fatal(err)
	}
	w.items[i][item] = s
	return s
}

func (w *twoWorkers) drive(t *testing.T) executor.Driver {
	return func(ctx context.Context, run string, it store.Item) error {
		w.mu.Lock()
		w.halted = append(w.halted, w.e.haltReason(run))
		w.mu.Unlock()
		n := 0
		b, err := w.open(ctx, t, n, run, it.ID).Begin(ctx)
		if err != nil || b.Status != "" {
			return err
		}
		lim := workflow.Limits{AuditPassRating: b.Limits.AuditPassRating, MaxAttempts: b.Limits.MaxAttempts, EscalateBelowConfidence: b.Limits.EscalateBelowConfidence}
		halted := b.Halted
		next := func(s workflow.State, ev workflow.Event) (workflow.State, workflow.Decision) {
			if halted && !s.Stopping {
				s, _ = workflow.Next(lim, s, workflow.Event{Kind: workflow.Stop})
			}
			return workflow.Next(lim, s, ev)
		}
		s, d := next(workflow.Initial(it.ID, b.Stage, b.Attempts), workflow.Event{Kind: workflow.Start})
		end := executor.Ending{}
		for d.Kind == workflow.RunStep {
			n++
			got, err := w.open(ctx, t, n%2, run, it.ID).Stage(ctx, s, d)
			if errors.Is(err, workflow.ErrPaused) {
				end.Paused = pauseReason(err) // a quota, the budget
				end.Budget = errors.As(err, new(*executor.BudgetPause))
				break
			}
			if err != nil {
				return err
			}
			halted = halted || got.Halted
			s, d = next(s, got.Event)
		}
		// The end runs where the last stage did: that worker last wrote
		// the stage the item ends in, before the other's step since.
		st := w.open(ctx, t, n%2, run, it.ID)
		end.Pipeline = &executor.PipelineEnding{State: s, Decision: d}
		ended, err := st.End(ctx, end)
		if err != nil {
			return err
		}
		for i := range w.items {
			if s := w.items[i][it.ID]; s != nil {
				if err := s.Close(); err != nil {
					return err
				}
			}
		}
		if ended.Halt == store.RunFailed || ended.Halt == store.RunPaused {
			return &executor.RunHalt{Status: ended.Halt, Reason: ended.HaltReason}
		}
		return nil
	}
}

// A stage-pipeline item that finds the budget spent pauses the run, as
// on the embedded engine: its end reports the run's halt, which its
// driver returns, and an item stopped by that halt (the executor told it)
// ends with it too. The run pauses with the budget's reason whichever
// item's end it reads, not with the reason of one item's pause.
func TestItemStepsBudgetPauseHaltsTheRun(t *testing.T) {
	e := newEnv(t, passAll, [2]string{"a", "code"}, [2]string{"b", "code"})
	w := &twoWorkers{e: e.eng}
	drive := w.drive(t)
	aEnded := make(chan *executor.RunHalt, 1)
	sum, err := e.eng.StartWith(context.Background(), Options{BudgetUSD: 0.005}, func(ctx context.Context, run string, it store.Item) error {
		if it.ID == "a" {
			err := drive(ctx, run, it)
			h, _ := err.(*executor.RunHalt)
			aEnded <- h
			return err
		}
		h := <-aEnded
		if h == nil || h.Status != store.RunPaused || !strings.HasPrefix(h.Reason, "budget reached: spent $0.0100 of $0.0050") {
			return fmt.Errorf("a's driver returned %+v, want the run paused by the budget", h)
		}
		st, err := openItem(ctx, e.eng, run, it.ID)
		if err != nil {
			return err
		}
		defer st.Close()
		b, err := st.Begin(ctx)
		if err != nil {
			return err
		}
		if strings.Join(b.Items, " ") != "a b" {
			t.Errorf("executor.Begun.Items %q, want the run's items a b", b.Items)
		}
		lim := workflow.Limits{AuditPassRating: 8, MaxAttempts: 2}
		s0, _ := workflow.Next(lim, workflow.Initial(it.ID, b.Stage, b.Attempts), workflow.Event{Kind: workflow.Stop})
		s1, d := workflow.Next(lim, s0, workflow.Event{Kind: workflow.Start})
		ended, err := st.End(ctx, executor.Ending{Pipeline: &executor.PipelineEnding{State: s1, Decision: d}, Halted: h})
		if err != nil {
			return err
		}
		if ended.Status != store.ItemStopped || ended.Halt != store.RunPaused || ended.HaltReason != h.Reason {
			t.Errorf("b ended %+v, want stopped with the run's pause", ended)
		}
		return &executor.RunHalt{Status: ended.Halt, Reason: ended.HaltReason}
	})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Status != store.RunPaused || !strings.HasPrefix(sum.Reason, "budget reached:") {
		t.Errorf("run %s: %s, want paused by the budget", sum.Status, sum.Reason)
	}
	for id, want := range map[string]string{"a": store.ItemPaused, "b": store.ItemStopped} {
		if it, err := e.st.GetItem(context.Background(), sum.Run, id); err != nil || it.Status != want {
			t.Errorf("%s: %+v, %v: want %s", id, it, err, want)
		}
	}
	if runstop.Halted(e.eng.StateDir(), sum.Run) {
		t.Error("the budget's pause wrote the run's halt file, which says a hard stop failed the run")
	}
}

// The stage pipeline's effects through ItemSteps, each step in the other
// worker than the one before: the task files end as on the embedded
// engine (stage, attempts, the review), each task is committed once on its
// branch, and the run completes.
func TestItemStepsRunTheStagePipelineAcrossWorkers(t *testing.T) {
	e := newEnv(t, func(inv runner.Invocation) runner.Result {
		if inv.Role == "auditor" && inv.Item == "b" && inv.Attempt == 1 {
			return runner.Result{Output: signalText("auditor", "INSUFFICIENT", 3)}
		}
		return passAll(inv)
	}, [2]string{"a", "code"}, [2]string{"b", "code"}, [2]string{"c", "plan"})
	w := &twoWorkers{e: e.eng}
	sum, err := e.eng.StartWith(context.Background(), Options{}, w.drive(t))
	if err != nil {
		t.Fatal(err)
	}
	if sum.Status != store.RunCompleted {
		t.Fatalf("run %s: %s", sum.Status, sum.Reason)
	}
	for id, attempts := range map[string]int{"a": 0, "b": 1, "c": 0} {
		tk := e.task(id)
		if tk.Stage != workflow.StageCompleted || tk.Attempts != attempts {
			t.Errorf("%s: frontmatter %s/%d, want completed/%d", id, tk.Stage, tk.Attempts, attempts)
		}
		if !strings.Contains(tk.Body, "**Verdict: ACCEPTED**") {
			t.Errorf("%s: accepted review not written:\n%s", id, tk.Body)
		}
	}
	log := git(t, e.root, "log", "--all", "--format=%s")
	for _, id := range []string{"a", "b", "c"} {
		if n := strings.Count("\n"+log, "\nTask "+id+"\n"); n != 1 {
			t.Errorf("%d commits of %s, want 1:\n%s", n, id, log)
		}
	}
	want := []string{"b/code/coder#1", "b/audit/auditor#1", "b/code/coder#2", "b/audit/auditor#2"}
	var got []string
	for _, c := range e.fake.calls {
		if strings.HasPrefix(c, "b/") {
			got = append(got, c)
		}
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("b's agent steps %q, want %q", got, want)
	}
}

// A hard stop halts the run in the other items' "processes" too: a, from
// audit, fails its audits (its task file says audit, whichever worker
// wrote it last); b's running coder finishes, b starts no new stage and
// is stopped, and the run fails with a's reason. Resuming clears the halt.
func TestItemStepsHardStopHaltsTheOtherItems(t *testing.T) {
	var eng *Engine
	var run atomic.Value // the run's id, set by each item's driver
	e := newEnv(t, func(inv runner.Invocation) runner.Result {
		switch {
		case inv.Item == "a" && inv.Role == "auditor":
			return runner.Result{Output: signalText("auditor", "INSUFFICIENT", 3)}
		case inv.Item == "b" && inv.Role == "coder":
			// b's coder is still running when a hard-stops.
			id, _ := run.Load().(string)
			for deadline := time.Now().Add(10 * time.Second); eng.haltReason(id) == "" && time.Now().Before(deadline); {
				time.Sleep(10 * time.Millisecond)
			}
		}
		return passAll(inv)
	}, [2]string{"a", "audit"}, [2]string{"b", "code"})
	eng = e.eng
	w := &twoWorkers{e: e.eng}
	drive := w.drive(t)
	sum, err := e.eng.StartWith(context.Background(), Options{}, func(ctx context.Context, id string, it store.Item) error {
		run.Store(id)
		return drive(ctx, id, it)
	})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Status != store.RunFailed || !strings.HasPrefix(sum.Reason, "a: audit rated 3/10") {
		t.Errorf("run %s: %s, want failed by a's audits", sum.Status, sum.Reason)
	}
	if b, err := e.st.GetItem(context.Background(), sum.Run, "b"); err != nil || b.Status != store.ItemStopped {
		t.Errorf("b: %+v, %v: want stopped", b, err)
	}
	if tk := e.task("b"); tk.Stage != workflow.StageCode {
		t.Errorf("b's stage %s, want code: no audit after the halt", tk.Stage)
	}
	for _, c := range e.fake.calls {
		if strings.HasPrefix(c, "b/audit") {
			t.Errorf("b's auditor ran after the halt: %q", e.fake.calls)
		}
	}
	if tk := e.task("a"); tk.Stage != workflow.StageAudit || tk.Attempts != 2 {
		t.Errorf("a: frontmatter %s/%d, want audit/2", tk.Stage, tk.Attempts)
	}

	w2 := &twoWorkers{e: e.eng}
	if _, err := e.eng.ResumeDriven(context.Background(), sum.Run, runspec.Overrides{}, w2.drive(t)); err != nil {
		t.Fatal(err)
	}
	if len(w2.halted) != 2 {
		t.Errorf("resume drove %d items, want a and b", len(w2.halted))
	}
	for _, h := range w2.halted {
		if h != "" {
			t.Errorf("resumed with the old halt %q", h)
		}
	}
	if !runstop.Halted(e.eng.StateDir(), sum.Run) {
		t.Error("a's hard stop again on resume wrote no halt")
	}
}

// The cycle log of an item whose steps alternate between two workers
// holds every step's entry, each once and in order, iteration by
// iteration, in the file and in its archive, whichever worker wrote it.
func TestItemStepsCycleLogAcrossWorkers(t *testing.T) {
	e := newEnv(t, func(inv runner.Invocation) runner.Result {
		if inv.Role == "auditor" && inv.Attempt == 1 {
			return runner.Result{Output: signalText("auditor", "INSUFFICIENT", 3)}
		}
		return passAll(inv)
	}, [2]string{"b", "code"})
	w := &twoWorkers{e: e.eng}
	sum, err := e.eng.StartWith(context.Background(), Options{}, w.drive(t))
	if err != nil || sum.Status != store.RunCompleted {
		t.Fatalf("run %+v, %v", sum, err)
	}
	cur, err := os.ReadFile(filepath.Join(e.eng.StateDir(), "runs", sum.Run, "items", "b", "current_cycle.md"))
	if err != nil {
		t.Fatal(err)
	}
	arch, err := filepath.Glob(filepath.Join(e.eng.StateDir(), "archive", "*.md"))
	if err != nil || len(arch) != 1 {
		t.Fatalf("archives %q, %v: want one", arch, err)
	}
	archived, err := os.ReadFile(arch[0])
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"## Iteration 0", "## Iteration 1", "<!-- step b/code/coder#1 -->", "<!-- step b/audit/auditor#1 -->",
		"## Iteration 2", "<!-- step b/code/coder#2 -->", "<!-- step b/audit/auditor#2 -->"}
	for name, log := range map[string]string{"current_cycle.md": string(cur), "archive": string(archived)} {
		at := 0
		for _, s := range want {
			if n := strings.Count(log, s); n != 1 {
				t.Errorf("%s: %q %d times, want once:\n%s", name, s, n, log)
				break
			}
			i := strings.Index(log, s)
			if i < at {
				t.Errorf("%s: %q out of order:\n%s", name, s, log)
				break
			}
			at = i
		}
		if !strings.HasPrefix(log, "# Cycle: ") {
			t.Errorf("%s: no header:\n%s", name, log)
		}
	}
}

// A stage asked for once cadre stop came (its stop file), though the
// last stage reported none, is refused before anything runs; the item
// ends stopped at its stage, for resume.
func TestItemStepsStageRefusedAfterStop(t *testing.T) {
	e := newEnv(t, passAll, [2]string{"a", "code"})
	var staged error
	sum, err := e.eng.StartWith(context.Background(), Options{}, func(ctx context.Context, run string, it store.Item) error {
		s, err := openItem(ctx, e.eng, run, it.ID)
		if err != nil {
			return err
		}
		defer s.Close()
		b, err := s.Begin(ctx)
		if err != nil {
			return err
		}
		if err := runstop.Request(e.eng.StateDir(), run); err != nil {
			return err
		}
		st, d := workflow.Next(e.eng.pipelineLimits(), workflow.Initial(it.ID, b.Stage, b.Attempts), workflow.Event{Kind: workflow.Start})
		_, staged = s.Stage(ctx, st, d)
		_, err = s.End(ctx, executor.Ending{Pipeline: &executor.PipelineEnding{State: st, Decision: workflow.Decision{Kind: workflow.Stopped, Reason: "stopped by request"}}})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(staged, executor.ErrStopping) {
		t.Errorf("stage: %v, want refused", staged)
	}
	if len(e.fake.calls) != 0 {
		t.Errorf("agent steps %q after the stop", e.fake.calls)
	}
	if a, err := e.st.GetItem(context.Background(), sum.Run, "a"); err != nil || a.Status != store.ItemStopped || a.Stage != workflow.StageCode {
		t.Errorf("a: %+v, %v: want stopped at code", a, err)
	}
	if sum.Status != store.RunStopped {
		t.Errorf("run %s: %s, want stopped", sum.Status, sum.Reason)
	}
}
