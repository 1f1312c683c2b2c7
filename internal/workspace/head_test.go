package workspace

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Every name plainBranch accepts, git accepts too; the names it refuses
// are left to git (some of them valid).
func TestPlainBranchAcceptsOnlyWhatGitAccepts(t *testing.T) {
	names := []string{"cadre/1-add-two-files", "cadre/task.a_b-1", "main", "a/b/c", "x.y",
		"", "HEAD", "-x", "cadre/-x", "a..b", "a/.b", "a.lock", "a/b.lock/c", "a.", "a//b", "a/", "/a",
		"a b", "a~1", "a^", "a:b", "a?", "a*", "a[", "a\\b", "a@{1}", "@", "ünï", "a\x7f"}
	for _, n := range names {
		if !plainBranch(n) {
			continue
		}
		if out, err := exec.Command("git", "check-ref-format", "--branch", n).CombinedOutput(); err != nil {
			t.Errorf("plainBranch(%q) = true, git refuses it: %s", n, out)
		}
	}
	for _, n := range []string{"cadre/1-add-two-files", BranchName("42", "Fix: the (big) bug!")} {
		if !plainBranch(n) {
			t.Errorf("plainBranch(%q) = false: a name cadre makes would cost a git process", n)
		}
	}
}

// Branch and Head read in-process agree with git, on a branch, after a
// commit, on a packed ref, and detached.
func TestBranchAndHeadAgreeWithGit(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	check := func(when string) {
		t.Helper()
		wantBranch, _ := git(ctx, r.Dir, "rev-parse", "--abbrev-ref", "HEAD")
		wantHead, _ := git(ctx, r.Dir, "rev-parse", "HEAD")
		if got, err := r.Branch(ctx); err != nil || got != strings.TrimSpace(wantBranch) {
			t.Errorf("%s: Branch = %q, %v; git says %q", when, got, err, wantBranch)
		}
		if got, err := r.Head(ctx); err != nil || got != strings.TrimSpace(wantHead) {
			t.Errorf("%s: Head = %q, %v; git says %q", when, got, err, wantHead)
		}
	}
	write(t, filepath.Join(r.Dir, "f"), "1")
	sha, err := r.CommitAll(ctx, "one", Mark{})
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := git(ctx, r.Dir, "rev-parse", "HEAD"); sha != strings.TrimSpace(want) {
		t.Errorf("CommitAll = %s, HEAD is %s", sha, want)
	}
	check("after a commit")
	if _, err := git(ctx, r.Dir, "pack-refs", "--all"); err != nil {
		t.Fatal(err)
	}
	check("packed")
	write(t, filepath.Join(r.Dir, "f"), "2")
	if _, err := r.CommitAll(ctx, "two", Mark{}); err != nil {
		t.Fatal(err)
	}
	check("loose over packed")
	if _, err := git(ctx, r.Dir, "checkout", "-q", "--detach"); err != nil {
		t.Fatal(err)
	}
	check("detached")
	if got, _ := r.Branch(ctx); got != "HEAD" {
		t.Errorf("detached Branch = %q, want HEAD", got)
	}
}

// A new worktree takes its git directories and settled configuration from
// the repository instead of asking git, and still sees a change to its own
// configuration files.
func TestWorktreeInheritsSettledConfiguration(t *testing.T) {
	ctx := context.Background()
	r := newIsolatedRepo(t)
	write(t, filepath.Join(r.Dir, "f"), "x")
	if _, err := r.CommitAll(ctx, "m", Mark{}); err != nil {
		t.Fatal(err)
	}
	old := filepath.Join(r.Dir, ".git", "config")
	settle(t, old)
	wt, err := NewWorktrees(r).Ensure(ctx, "a", "cadre/a", "main", EnsureOptions{Untrusted: true})
	if err != nil {
		t.Fatal(err)
	}
	c := wt.gitCache()
	wantCommon, _ := git(ctx, wt.Dir, "rev-parse", "--path-format=absolute", "--git-common-dir", "--git-dir")
	if got := c.common + "\n" + c.gitDir; got != strings.TrimSpace(wantCommon) {
		t.Errorf("inherited dirs %q, git says %q", got, wantCommon)
	}
	if c.stamp == "" || !c.haveFilters {
		t.Fatalf("configuration not inherited: stamp %t filters %t", c.stamp != "", c.haveFilters)
	}
	// A filter driver defined now is switched off in the worktree's next
	// git command, as if it had asked git itself.
	if _, err := r.Git(ctx, "config", "filter.x.clean", "touch ran"); err != nil {
		t.Fatal(err)
	}
	if opts := strings.Join(wt.withFilters(ctx, nil), " "); !strings.Contains(opts, "filter.x.clean=") {
		t.Errorf("new filter not switched off in the worktree: %q", opts)
	}
	// A worktree with configuration of its own asks git.
	settle(t, old)
	if _, err := r.Git(ctx, "config", "extensions.worktreeConfig", "true"); err != nil {
		t.Fatal(err)
	}
	wb, err := NewWorktrees(r).Ensure(ctx, "b", "cadre/b", "main", EnsureOptions{})
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(wb.gitCache().gitDir, "config.worktree"), "[filter \"y\"]\n\tclean = touch ran\n")
	settle(t, old)
	wc := r.child(wb.Dir)
	wc.untrusted = true
	r.inherit(ctx, wc)
	if wc.gitCache().stamp != "" {
		t.Error("a worktree with its own config.worktree inherited the repository's configuration")
	}
	if opts := strings.Join(wc.withFilters(ctx, nil), " "); !strings.Contains(opts, "filter.y.clean=") {
		t.Errorf("the worktree's own filter not switched off: %q", opts)
	}
}

// settle waits until path's last change is older than racyWindow, so
// what is read from it is cached.
func settle(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * racyWindow)
}
