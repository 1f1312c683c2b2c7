package workspace

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// bigRepo makes a repository of n small files in 100 directories.
func bigRepo(b *testing.B, n int) *Repo {
	b.Helper()
	dir := b.TempDir()
	for i := range n {
		d := filepath.Join(dir, fmt.Sprintf("d%02d", i%100))
		if i < 100 {
			os.MkdirAll(d, 0o755)
		}
		os.WriteFile(filepath.Join(d, fmt.Sprintf("f%05d.txt", i)), []byte(fmt.Sprintf("file %d\n", i)), 0o644)
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"config", "user.email", "b@example.com"}, {"config", "user.name", "B"}, {"add", "-A"}, {"commit", "-qm", "big"}} {
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			b.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	r, err := Open(context.Background(), dir)
	if err != nil {
		b.Fatal(err)
	}
	r.ExcludeState(context.Background())
	return r
}

// BenchmarkWorktreeProvision compares cadre's worktree provisioning (name
// checks, reuse detection, creation) with a plain `git worktree add` on a
// repository of 50,000 files, alternating the two so both see the same
// machine state. It reports each one's mean time and their ratio.
func BenchmarkWorktreeProvision(b *testing.B) {
	r := bigRepo(b, 50000)
	ctx := context.Background()
	w := NewWorktrees(r)
	var plain, cadre time.Duration
	for i := 0; i < b.N; i++ {
		runPlain := func() {
			p := filepath.Join(r.Dir, ".cadre", "plain", fmt.Sprint(i))
			start := time.Now()
			if out, err := exec.Command("git", "-C", r.Dir, "worktree", "add", "--quiet", "-b", fmt.Sprintf("plain/%d", i), p, "main").CombinedOutput(); err != nil {
				b.Fatalf("git worktree add: %v %s", err, out)
			}
			plain += time.Since(start)
		}
		runCadre := func() {
			start := time.Now()
			if _, err := w.Ensure(ctx, fmt.Sprintf("item%d", i), BranchName(fmt.Sprintf("item%d", i), "Provision benchmark"), "main", EnsureOptions{}); err != nil {
				b.Fatal(err)
			}
			cadre += time.Since(start)
		}
		// Alternate which goes first, so neither always meets a warmer cache.
		if i%2 == 0 {
			runPlain()
			runCadre()
		} else {
			runCadre()
			runPlain()
		}
	}
	b.ReportMetric(float64(plain.Milliseconds())/float64(b.N), "ms-git-worktree-add")
	b.ReportMetric(float64(cadre.Milliseconds())/float64(b.N), "ms-cadre-ensure")
	b.ReportMetric(float64(cadre)/float64(plain), "ratio")
}

// BenchmarkWorktreePool compares starting an item's worktree with and
// without limits.worktree_pool on a repository of 20,000 files: Ensure
// checking out a new worktree, against Ensure taking a prepared one (a
// branch and a rename). Between items the pool is given the time to
// prepare the next one, as when agents take longer than a checkout; the
// checkout's cost is then paid ahead of need, in the background, so the
// figure is the wait an item sees, not the machine's total work.
func BenchmarkWorktreePool(b *testing.B) {
	r := bigRepo(b, 20000)
	ctx := context.Background()
	w := NewWorktrees(r)
	var plain, pooled time.Duration
	for i := 0; i < b.N; i++ {
		start := time.Now()
		if _, err := w.Ensure(ctx, fmt.Sprintf("plain%d", i), fmt.Sprintf("cadre/plain%d", i), "main", EnsureOptions{Untrusted: true}); err != nil {
			b.Fatal(err)
		}
		plain += time.Since(start)
	}
	if err := w.StartPool(ctx, "main", 1); err != nil {
		b.Fatal(err)
	}
	for i := 0; i < b.N; i++ {
		waitReadyB(w)
		start := time.Now()
		wt, err := w.Ensure(ctx, fmt.Sprintf("pool%d", i), fmt.Sprintf("cadre/pool%d", i), "main", EnsureOptions{Untrusted: true})
		if err != nil {
			b.Fatal(err)
		}
		pooled += time.Since(start)
		if !strings.Contains(wt.Dir, "pool") {
			b.Fatalf("worktree at %s", wt.Dir)
		}
	}
	if err := w.StopPool(ctx); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(plain.Microseconds())/1000/float64(b.N), "ms-ensure-plain")
	b.ReportMetric(float64(pooled.Microseconds())/1000/float64(b.N), "ms-ensure-pool")
	b.ReportMetric(float64(plain)/float64(pooled), "speedup")
}

// waitReadyB waits until the pool holds a prepared worktree.
func waitReadyB(w *Worktrees) {
	for {
		w.poolMu.Lock()
		p := w.pool
		w.poolMu.Unlock()
		p.mu.Lock()
		n := len(p.ready)
		p.mu.Unlock()
		if n > 0 {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// BenchmarkTakeWIP measures saving a tree's uncommitted changes (ten
// changed files, one deleted, one added) as a WIP commit on a repository
// of 20,000 files: TakeWIP, whose add starts from a copy of the tree's
// index, against the same from an index read from HEAD, which has no stat
// data and so hashes every file again; and a clean tree's check alone.
func BenchmarkTakeWIP(b *testing.B) {
	r := bigRepo(b, 20000)
	ctx := context.Background()
	for i := range 10 {
		os.WriteFile(filepath.Join(r.Dir, fmt.Sprintf("d%02d", i), fmt.Sprintf("f%05d.txt", i)), []byte("changed\n"), 0o644)
	}
	os.Remove(filepath.Join(r.Dir, "d50", "f00050.txt"))
	os.WriteFile(filepath.Join(r.Dir, "added.txt"), []byte("new\n"), 0o644)
	r.Dirty(ctx) // refresh the index's stat data once, as the step's status does
	var copied, fresh time.Duration
	for i := 0; i < b.N; i++ {
		start := time.Now()
		w, err := r.TakeWIP(ctx, "wip", nil)
		if err != nil || w.Commit == "" {
			b.Fatalf("%+v %v", w, err)
		}
		copied += time.Since(start)

		start = time.Now()
		idx := filepath.Join(b.TempDir(), "index")
		env := []string{"GIT_INDEX_FILE=" + idx}
		for _, args := range [][]string{{"read-tree", "HEAD"}, append([]string{"add", "-A"}, wipSpec...), {"write-tree"}} {
			if _, err := gitEnv(ctx, r.Dir, env, args...); err != nil {
				b.Fatal(err)
			}
		}
		fresh += time.Since(start)
	}
	clean := bigRepo(b, 20000)
	clean.Dirty(ctx)
	var check time.Duration
	for i := 0; i < b.N; i++ {
		start := time.Now()
		if w, err := clean.TakeWIP(ctx, "wip", nil); err != nil || w.Commit != "" {
			b.Fatalf("%+v %v", w, err)
		}
		check += time.Since(start)
	}
	b.ReportMetric(float64(copied.Microseconds())/1000/float64(b.N), "ms-dirty")
	b.ReportMetric(float64(fresh.Microseconds())/1000/float64(b.N), "ms-fresh-index")
	b.ReportMetric(float64(check.Microseconds())/1000/float64(b.N), "ms-clean")
}

// BenchmarkGitGuard is the git-state check around one agent step: a
// snapshot before and the comparison after, in an item's worktree of a
// repository with git init's sample hooks and user and worktree
// configuration files. "settled": nothing changed in the last racyWindow,
// so what was read before is trusted by its stat; "fresh": every watched
// file was just touched (a repository set up a moment before the run, or
// a run's first moments), so contents are read and compared.
func BenchmarkGitGuard(b *testing.B) {
	ctx := context.Background()
	b.Setenv("HOME", b.TempDir())
	b.Setenv("XDG_CONFIG_HOME", "")
	dir := b.TempDir()
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"config", "user.email", "b@example.com"}, {"config", "user.name", "B"}, {"commit", "-q", "--allow-empty", "-m", "init"}} {
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			b.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	r, err := Open(ctx, dir)
	if err != nil {
		b.Fatal(err)
	}
	wt, err := NewWorktrees(r).Ensure(ctx, "a", "cadre/a", "main", EnsureOptions{})
	if err != nil {
		b.Fatal(err)
	}
	var watched []string
	filepath.WalkDir(filepath.Join(dir, ".git", "hooks"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			watched = append(watched, p)
		}
		return nil
	})
	watched = append(watched, filepath.Join(dir, ".git", "config"))
	step := func(b *testing.B) {
		before, err := wt.Snapshot(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if got, err := before.Changed(ctx, wt); err != nil || len(got) != 0 {
			b.Fatalf("changed %v, %v", got, err)
		}
	}
	b.Run("settled", func(b *testing.B) {
		time.Sleep(2 * racyWindow)
		b.ReportAllocs()
		for b.Loop() {
			step(b)
		}
	})
	b.Run("fresh", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			b.StopTimer()
			now := time.Now()
			for _, p := range watched {
				os.Chtimes(p, now, now)
			}
			b.StartTimer()
			step(b)
		}
	})
}

// BenchmarkHideNothing is an untrusted item's shield around one agent
// step in a tree holding none of the configuration it hides: what every
// step of most repositories pays.
func BenchmarkHideNothing(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	if out, err := exec.Command("git", "-C", dir, "init", "-q", "-b", "main").CombinedOutput(); err != nil {
		b.Fatalf("git init: %v %s", err, out)
	}
	os.MkdirAll(filepath.Join(dir, ".github", "workflows"), 0o755)
	r := &Repo{Dir: dir}
	stash := filepath.Join(b.TempDir(), "hidden")
	b.ReportAllocs()
	for b.Loop() {
		if err := r.Hide(ctx, stash); err != nil {
			b.Fatal(err)
		}
		if err := r.Unhide(ctx, stash); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFingerprint is one fingerprint of a tree of 200 files in 10
// directories: a reviewing step takes three.
func BenchmarkFingerprint(b *testing.B) {
	r := &Repo{Dir: b.TempDir()}
	for d := range 10 {
		for f := range 20 {
			p := filepath.Join(r.Dir, fmt.Sprintf("d%d", d), fmt.Sprintf("f%02d.go", f))
			os.MkdirAll(filepath.Dir(p), 0o755)
			os.WriteFile(p, []byte("package d\n"), 0o644)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Fingerprint(); err != nil {
			b.Fatal(err)
		}
	}
}
