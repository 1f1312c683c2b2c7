package workspace

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// poolRepo is a repository with one commit on main and its worktrees.
func poolRepo(t *testing.T) (*Repo, *Worktrees) {
	t.Helper()
	r := newRepo(t)
	write(t, filepath.Join(r.Dir, "src", "f.go"), "package src\n")
	if _, err := r.CommitAll(context.Background(), "init", Mark{}); err != nil {
		t.Fatal(err)
	}
	if err := r.ExcludeState(context.Background()); err != nil {
		t.Fatal(err)
	}
	return r, NewWorktrees(r)
}

// waitReady waits until the pool holds n prepared worktrees (the test's
// own deadline bounds it) and returns their directories.
func waitReady(t *testing.T, w *Worktrees, n int) []string {
	t.Helper()
	for {
		w.poolMu.Lock()
		p := w.pool
		w.poolMu.Unlock()
		p.mu.Lock()
		ready := append([]string(nil), p.ready...)
		p.mu.Unlock()
		if len(ready) >= n {
			return ready
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// worktreeList is git worktree list --porcelain's worktree paths.
func worktreeList(t *testing.T, r *Repo) []string {
	t.Helper()
	out, err := r.Git(context.Background(), "worktree", "list", "--porcelain")
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, l := range strings.Split(out, "\n") {
		if p, ok := strings.CutPrefix(l, "worktree "); ok {
			paths = append(paths, p)
		}
	}
	return paths
}

func noPoolLeft(t *testing.T, r *Repo, w *Worktrees) {
	t.Helper()
	for _, p := range worktreeList(t, r) {
		if strings.Contains(p, string(filepath.Separator)+poolDir+string(filepath.Separator)) {
			t.Errorf("git worktree list still holds a prepared worktree: %s", p)
		}
	}
	if _, err := os.Stat(filepath.Join(w.dir, poolDir)); !os.IsNotExist(err) {
		t.Errorf("%s is left: %v", poolDir, err)
	}
}

// Items get prepared worktrees: on their own branch from the base, at the
// item's path, clean, registered there; the pool prepares the next, and
// stopping it leaves no prepared worktree registered or on disk.
func TestPoolHandsOutPreparedWorktrees(t *testing.T) {
	ctx := context.Background()
	r, w := poolRepo(t)
	if err := w.StartPool(ctx, "main", 2); err != nil {
		t.Fatal(err)
	}
	ready := waitReady(t, w, 2)
	wt, err := w.Ensure(ctx, "a", "cadre/a", "main", EnsureOptions{Untrusted: true})
	if err != nil {
		t.Fatal(err)
	}
	if wt.Dir != w.Path("a") {
		t.Fatalf("worktree at %s, want %s", wt.Dir, w.Path("a"))
	}
	if _, err := os.Stat(ready[0]); !os.IsNotExist(err) {
		t.Errorf("the first prepared worktree %s was not the one handed over: %v", ready[0], err)
	}
	if b, err := wt.Branch(ctx); err != nil || b != "cadre/a" {
		t.Errorf("branch %q, %v; want cadre/a", b, err)
	}
	if out, _ := git(ctx, wt.Dir, "rev-parse", "--abbrev-ref", "HEAD"); strings.TrimSpace(out) != "cadre/a" {
		t.Errorf("git says the worktree is on %q", out)
	}
	if dirty, err := wt.Dirty(ctx); err != nil || len(dirty) != 0 {
		t.Errorf("handed-over worktree dirty: %v %v", dirty, err)
	}
	if data, err := os.ReadFile(filepath.Join(wt.Dir, "src", "f.go")); err != nil || string(data) != "package src\n" {
		t.Errorf("checked-out file: %q %v", data, err)
	}
	found := false
	for _, p := range worktreeList(t, r) {
		found = found || p == wt.Dir
	}
	if !found {
		t.Errorf("git does not list %s: %v", wt.Dir, worktreeList(t, r))
	}
	// The worktree works as any other: a commit, and Ensure finds it again.
	write(t, filepath.Join(wt.Dir, "a.txt"), "a\n")
	if _, err := wt.CommitAll(ctx, "a", Mark{}); err != nil {
		t.Fatal(err)
	}
	if again, err := w.Ensure(ctx, "a", "cadre/a", "main", EnsureOptions{}); err != nil || again.Dir != wt.Dir {
		t.Fatalf("Ensure again: %v %v", again, err)
	}
	waitReady(t, w, 2) // refilled
	if err := w.StopPool(ctx); err != nil {
		t.Fatal(err)
	}
	noPoolLeft(t, r, w)
	if _, err := os.Stat(filepath.Join(wt.Dir, "a.txt")); err != nil {
		t.Errorf("the item's worktree suffered from the pool's removal: %v", err)
	}
}

// What a killed run left of its pool (a prepared worktree an agent never
// saw but that is dirty now, one cut short mid hand-over, a directory git
// never registered) is removed when the next pool starts, and never
// handed to an item.
func TestPoolAfterKillRemovesLeftovers(t *testing.T) {
	ctx := context.Background()
	r, w := poolRepo(t)
	if err := w.StartPool(ctx, "main", 2); err != nil {
		t.Fatal(err)
	}
	ready := waitReady(t, w, 2)
	// The kill: the pool goroutine is stopped without its cleanup.
	w.poolMu.Lock()
	p := w.pool
	w.pool = nil
	w.poolMu.Unlock()
	p.mu.Lock()
	p.stopped = true
	p.mu.Unlock()
	p.poke()
	<-p.done
	write(t, filepath.Join(ready[0], "src", "f.go"), "dirty\n")
	write(t, filepath.Join(ready[0], "stray.txt"), "x\n")
	admin, _ := linkedGitDir(ready[1])
	write(t, filepath.Join(admin, "gitdir"), filepath.Join(w.Path("b"), ".git")+"\n") // cut short after the registration moved
	write(t, filepath.Join(w.dir, poolDir, "99", "half"), "x")

	if err := w.StartPool(ctx, "main", 1); err != nil {
		t.Fatal(err)
	}
	for _, d := range ready {
		if _, err := os.Stat(d); err == nil {
			// Names are reused from 0: a directory there now is a fresh one.
			if data, _ := os.ReadFile(filepath.Join(d, "src", "f.go")); string(data) == "dirty\n" {
				t.Errorf("dirty leftover %s kept", d)
			}
		}
	}
	waitReady(t, w, 1)
	wt, err := w.Ensure(ctx, "b", "cadre/b", "main", EnsureOptions{Untrusted: true})
	if err != nil {
		t.Fatal(err)
	}
	if dirty, _ := wt.Dirty(ctx); len(dirty) != 0 {
		t.Errorf("item got a dirty worktree: %v", dirty)
	}
	if err := w.StopPool(ctx); err != nil {
		t.Fatal(err)
	}
	noPoolLeft(t, r, w)
	if got := len(worktreeList(t, r)); got != 2 {
		t.Errorf("git lists %d worktrees, want 2 (main and b): %v", got, worktreeList(t, r))
	}
}

// A trusted item gets no prepared worktree while a filter driver is
// defined (the pool checks out with filters off); it gets a plain one.
func TestPoolNotForTrustedItemsWithFilters(t *testing.T) {
	ctx := context.Background()
	r, w := poolRepo(t)
	if _, err := r.Git(ctx, "config", "filter.lfs.smudge", "cat"); err != nil {
		t.Fatal(err)
	}
	if err := w.StartPool(ctx, "main", 1); err != nil {
		t.Fatal(err)
	}
	ready := waitReady(t, w, 1)
	wt, err := w.Ensure(ctx, "c", "cadre/c", "main", EnsureOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(ready[0]); err != nil {
		t.Errorf("the prepared worktree was handed to a trusted item: %v", err)
	}
	if b, _ := wt.Branch(ctx); b != "cadre/c" {
		t.Errorf("branch %q", b)
	}
	if err := w.StopPool(ctx); err != nil {
		t.Fatal(err)
	}
	noPoolLeft(t, r, w)
}

// A preparation killed mid-checkout leaves its registration locked, which
// git worktree prune keeps; stopping the pool still leaves none.
func TestPoolRemovesLockedLeftover(t *testing.T) {
	ctx := context.Background()
	r, w := poolRepo(t)
	if err := w.StartPool(ctx, "main", 1); err != nil {
		t.Fatal(err)
	}
	ready := waitReady(t, w, 1)
	admin, ok := linkedGitDir(ready[0])
	if !ok {
		t.Fatal("no registration for the prepared worktree")
	}
	write(t, filepath.Join(admin, "locked"), "initializing\n")
	if err := os.RemoveAll(ready[0]); err != nil {
		t.Fatal(err)
	}
	if err := w.StopPool(ctx); err != nil {
		t.Fatal(err)
	}
	noPoolLeft(t, r, w)
	if got := worktreeList(t, r); len(got) != 1 {
		t.Errorf("git lists %v, want the main worktree only", got)
	}
}
