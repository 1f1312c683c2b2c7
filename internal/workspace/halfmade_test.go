package workspace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// slowRepo is a repository whose checkout of slow.txt waits, the first
// time, until the test has cancelled the checkout's context: its smudge
// filter touches started, waits for resume, then fails (the filter is
// required), as git does when killed midway. Later checkouts pass.
func slowRepo(t *testing.T) (r *Repo, started, resume string) {
	t.Helper()
	ctx := context.Background()
	r = newRepo(t)
	aux := t.TempDir()
	started, resume = filepath.Join(aux, "started"), filepath.Join(aux, "resume")
	smudge := fmt.Sprintf(`if [ -e %[2]s ]; then cat; exit 0; fi; cat >/dev/null; touch %[1]s; while [ ! -e %[2]s ]; do sleep 0.02; done; exit 1`, started, resume)
	for _, kv := range [][2]string{{"filter.slow.clean", "cat"}, {"filter.slow.smudge", smudge}, {"filter.slow.required", "true"}} {
		if _, err := r.Git(ctx, "config", kv[0], kv[1]); err != nil {
			t.Fatal(err)
		}
	}
	write(t, filepath.Join(r.Dir, ".gitattributes"), "slow.txt filter=slow\n")
	write(t, filepath.Join(r.Dir, "a.txt"), "a\n")
	write(t, filepath.Join(r.Dir, "slow.txt"), "slow\n")
	write(t, filepath.Join(r.Dir, "z.txt"), "z\n")
	if _, err := r.CommitAll(ctx, "base", Mark{}); err != nil {
		t.Fatal(err)
	}
	r.ExcludeState(ctx)
	return r, started, resume
}

// killedEnsure cancels an Ensure of item midway through its checkout, as
// cadre stop --now (a cancelled Begin) or Ctrl-C does, and returns once
// it has returned.
func killedEnsure(t *testing.T, w *Worktrees, item, started, resume string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := w.Ensure(ctx, item, "cadre/"+item, "main", EnsureOptions{})
		done <- err
	}()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := os.Stat(started); err == nil {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("Ensure returned before its checkout started: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the checkout never started")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	write(t, resume, "")
	if err := <-done; err == nil {
		t.Fatal("a cancelled Ensure succeeded")
	}
}

// A worktree whose creation was cancelled midway is made again by the
// next Ensure, whole, on its branch: no agent ever worked in it.
func TestWorktreeHalfMadeIsRemade(t *testing.T) {
	ctx := context.Background()
	r, started, resume := slowRepo(t)
	w := NewWorktrees(r)
	killedEnsure(t, w, "a", started, resume)
	path := w.Path("a")
	if _, err := os.Stat(filepath.Join(path, ".git")); err != nil {
		t.Fatalf("the cancelled creation left no worktree behind (%v): the test does not reproduce a half-made one", err)
	}
	wt, err := w.Ensure(ctx, "a", "cadre/a", "main", EnsureOptions{})
	if err != nil {
		t.Fatalf("Ensure after a cancelled creation: %v", err)
	}
	if d, err := wt.Dirty(ctx); err != nil || len(d) != 0 {
		t.Errorf("remade worktree dirty: %v %v", d, err)
	}
	for _, f := range []string{"a.txt", "slow.txt", "z.txt"} {
		if _, err := os.Stat(filepath.Join(path, f)); err != nil {
			t.Errorf("remade worktree lacks %s: %v", f, err)
		}
	}
	if b, _ := wt.Branch(ctx); strings.TrimSpace(b) != "cadre/a" {
		t.Errorf("remade worktree on %q", b)
	}
	// Made whole, it is an ordinary worktree again: work in it is kept.
	write(t, filepath.Join(path, "work.txt"), "work\n")
	if _, err := w.Ensure(ctx, "a", "cadre/a", "main", EnsureOptions{}); !errors.Is(err, ErrDirtyWorktree) {
		t.Errorf("Ensure of a finished worktree holding work: %v, want it refused", err)
	}
	if _, err := os.Stat(filepath.Join(path, "work.txt")); err != nil {
		t.Errorf("the work was discarded: %v", err)
	}
	list, err := w.List(ctx, "main")
	if err != nil || len(list) != 1 || list[0].Item != "a" {
		t.Errorf("worktrees %+v %v, want a alone", list, err)
	}
}

// What Ensure did not make is never cleared as half-made: a worktree left
// with uncommitted work is refused as before, a directory of someone
// else's where the worktree goes is kept, and a worktree another live
// process is making is left to it.
func TestWorktreeNotHalfMadeIsKept(t *testing.T) {
	ctx := context.Background()
	r, _, resume := slowRepo(t)
	write(t, resume, "") // checkouts pass
	w := NewWorktrees(r)

	wt, err := w.Ensure(ctx, "work", "cadre/work", "main", EnsureOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Work as a killed run leaves it: files changed, the index gone.
	write(t, filepath.Join(wt.Dir, "a.txt"), "changed\n")
	admin, _ := linkedGitDir(wt.Dir)
	if err := os.Remove(filepath.Join(admin, "index")); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Ensure(ctx, "work", "cadre/work", "main", EnsureOptions{}); !errors.Is(err, ErrDirtyWorktree) {
		t.Errorf("Ensure of a worktree holding work: %v, want ErrDirtyWorktree", err)
	}
	if b, err := os.ReadFile(filepath.Join(wt.Dir, "a.txt")); err != nil || string(b) != "changed\n" {
		t.Errorf("work in a.txt: %q %v, want it kept", b, err)
	}

	other := filepath.Join(w.Path("mine"), "notes.txt")
	write(t, other, "mine\n")
	for range 2 {
		if _, err := w.Ensure(ctx, "mine", "cadre/mine", "main", EnsureOptions{}); err == nil {
			t.Fatal("Ensure made a worktree over a directory of someone else's")
		}
		if b, err := os.ReadFile(other); err != nil || string(b) != "mine\n" {
			t.Fatalf("someone else's file: %q %v, want it kept", b, err)
		}
	}

	// A worktree another process is making (its mark names a live pid).
	write(t, filepath.Join(w.Path("busy"), "partial.txt"), "x")
	write(t, w.making("busy"), fmt.Sprintf("%d\n", os.Getppid()))
	if _, err := w.Ensure(ctx, "busy", "cadre/busy", "main", EnsureOptions{}); err == nil || !strings.Contains(err.Error(), "is making it") {
		t.Errorf("Ensure under another live process's creation: %v, want a refusal naming it", err)
	}
	if _, err := os.Stat(filepath.Join(w.Path("busy"), "partial.txt")); err != nil {
		t.Errorf("another process's worktree in the making was cleared: %v", err)
	}
}
