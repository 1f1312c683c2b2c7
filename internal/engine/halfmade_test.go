package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cadre-dev/cadre/internal/executor"
	"github.com/cadre-dev/cadre/internal/runspec"
	"github.com/cadre-dev/cadre/internal/store"
	"github.com/cadre-dev/cadre/internal/workflow"
)

// slowCheckout makes the checkout of e's item worktrees wait, the first
// time, until the test cancelled it: the smudge filter of slow.txt touches
// started, waits for resume, then fails. It returns cut, which waits for
// the checkout to start, cancels it, and lets it go.
func slowCheckout(t *testing.T, e *env) (cut func(cancel context.CancelFunc)) {
	t.Helper()
	aux := t.TempDir()
	started, resume := filepath.Join(aux, "started"), filepath.Join(aux, "resume")
	smudge := fmt.Sprintf(`if [ -e %[2]s ]; then cat; exit 0; fi; cat >/dev/null; touch %[1]s; while [ ! -e %[2]s ]; do sleep 0.02; done; exit 1`, started, resume)
	git(t, e.root, "config", "filter.slow.clean", "cat")
	git(t, e.root, "config", "filter.slow.smudge", smudge)
	git(t, e.root, "config", "filter.slow.required", "true")
	os.WriteFile(filepath.Join(e.root, ".gitattributes"), []byte("slow.txt filter=slow\n"), 0o644)
	os.WriteFile(filepath.Join(e.root, "slow.txt"), []byte("slow\n"), 0o644)
	git(t, e.root, "add", "-A")
	git(t, e.root, "commit", "-qm", "slow checkout")
	return func(cancel context.CancelFunc) {
		deadline := time.Now().Add(30 * time.Second)
		for {
			if _, err := os.Stat(started); err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Error("the worktree's checkout never started")
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
		os.WriteFile(resume, nil, 0o644)
	}
}

// A run stopped while an item's worktree was being made (Ctrl-C in the
// embedded engine; cadre stop --now cancelling an executor's Begin)
// resumes: the half-made worktree is made again and the item completes.
func TestWorktreeCutOffWhileMadeResumes(t *testing.T) {
	t.Run("embedded", func(t *testing.T) {
		e := newEnv(t, passAll, [2]string{"a", "code"})
		cut := slowCheckout(t, e)
		ctx, cancel := context.WithCancel(context.Background())
		go cut(cancel)
		sum, _ := e.eng.Start(ctx, Options{})
		if sum.Run == "" {
			sum.Run = lastRun(t, e.st)
		}
		if sum.Status == store.RunCompleted {
			t.Fatal("the run completed: the cut did not land")
		}
		if _, err := os.Stat(filepath.Join(e.root, ".cadre", "worktrees", "a", ".git")); err != nil {
			t.Fatalf("no half-made worktree left (%v): the test reproduces nothing", err)
		}
		sum, err := e.eng.Resume(context.Background(), sum.Run)
		if err != nil {
			t.Fatal(err)
		}
		if sum.Status != store.RunCompleted || sum.Items[0].Status != store.ItemCompleted {
			t.Errorf("resumed: run %s (%s), items %+v: want completed", sum.Status, sum.Reason, sum.Items)
		}
	})
	t.Run("executor", func(t *testing.T) {
		e := newEnv(t, passAll, [2]string{"a", "code"})
		cut := slowCheckout(t, e)
		sum, err := e.eng.StartWith(context.Background(), Options{}, func(ctx context.Context, run string, it store.Item) error {
			s, err := openItem(ctx, e.eng, run, it.ID)
			if err != nil {
				return err
			}
			defer s.Close()
			// The item's tree is made by Begin, or for the stage pipeline
			// by its first stage: either is cut off making it.
			bctx, cancel := context.WithCancel(ctx)
			go cut(cancel)
			b, err := s.Begin(bctx)
			if err == nil && b.Workflow == workflow.PipelineWorkflow {
				lim := workflow.Limits{AuditPassRating: b.Limits.AuditPassRating, MaxAttempts: b.Limits.MaxAttempts, EscalateBelowConfidence: b.Limits.EscalateBelowConfidence}
				st, d := workflow.Next(lim, workflow.Initial(it.ID, b.Stage, b.Attempts), workflow.Event{Kind: workflow.Start})
				_, err = s.Stage(bctx, st, d)
			}
			if err == nil {
				t.Error("a step cut off making the worktree succeeded")
			}
			_, err = s.End(ctx, executor.Ending{Stopped: true})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if sum.Status != store.RunStopped {
			t.Fatalf("run %s (%s), want stopped", sum.Status, sum.Reason)
		}
		if _, err := os.Stat(filepath.Join(e.root, ".cadre", "worktrees", "a", ".git")); err != nil {
			t.Fatalf("no half-made worktree left (%v): the test reproduces nothing", err)
		}
		w := &twoWorkers{e: e.eng}
		sum, err = e.eng.ResumeDriven(context.Background(), sum.Run, runspec.Overrides{}, w.drive(t))
		if err != nil {
			t.Fatal(err)
		}
		if sum.Status != store.RunCompleted || sum.Items[0].Status != store.ItemCompleted {
			t.Errorf("resumed: run %s (%s), items %+v: want completed", sum.Status, sum.Reason, sum.Items)
		}
	})
}
