package workspace

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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
