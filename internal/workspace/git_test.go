package workspace

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func newRepo(t *testing.T) *Repo {
	t.Helper()
	dir := t.TempDir()
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"config", "user.email", "t@example.com"}, {"config", "user.name", "T"}} {
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	r, err := Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// logGit puts first on PATH a git that logs each command line and runs
// the real one, and returns what it logged since the last call.
func logGit(t *testing.T) func() string {
	t.Helper()
	real, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	logPath := filepath.Join(bin, "log")
	write(t, filepath.Join(bin, "git"), "#!/bin/sh\necho \"$*\" >> '"+logPath+"'\nexec '"+real+"' \"$@\"\n")
	os.Chmod(filepath.Join(bin, "git"), 0o755)
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	return func() string {
		log, _ := os.ReadFile(logPath)
		os.Remove(logPath)
		return string(log)
	}
}

func write(t *testing.T, path, s string) {
	t.Helper()
	os.MkdirAll(filepath.Dir(path), 0o755)
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestOpenNotRepo(t *testing.T) {
	_, err := Open(context.Background(), t.TempDir())
	if !errors.Is(err, ErrNotRepo) {
		t.Errorf("err = %v", err)
	}
}

func TestDirtyAndExclude(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	write(t, filepath.Join(r.Dir, ".cadre", "cadre.db"), "x")
	write(t, filepath.Join(r.Dir, "a b.txt"), "x")
	write(t, filepath.Join(r.Dir, "sub", "c.txt"), "x")
	if err := r.ExcludeState(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r.ExcludeState(ctx); err != nil { // idempotent
		t.Fatal(err)
	}
	got, err := r.Dirty(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a b.txt", "sub/c.txt"}, got); diff != "" {
		t.Error(diff)
	}
	ex, _ := os.ReadFile(filepath.Join(r.Dir, ".git", "info", "exclude"))
	if strings.Count(string(ex), "/.cadre/") != 1 {
		t.Errorf("exclude = %q", ex)
	}
}

func TestCommitAllIsFoundByTrailer(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	mark := Mark{Step: "t/commit", Run: "r1"}
	if sha, err := r.FindStepCommit(ctx, mark); err != nil || sha != "" {
		t.Fatalf("empty repo: %q %v", sha, err)
	}
	r.ExcludeState(ctx)
	write(t, filepath.Join(r.Dir, "f.txt"), "1")
	write(t, filepath.Join(r.Dir, ".cadre", "x"), "state")
	sha, err := r.CommitAll(ctx, "cadre: task t", mark)
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(r.Dir, "g.txt"), "2")
	if _, err := r.CommitAll(ctx, "cadre: task t2", Mark{Step: "t/commit2", Run: "r1"}); err != nil {
		t.Fatal(err)
	}
	if got, _ := r.FindStepCommit(ctx, mark); got != sha {
		t.Errorf("FindStepCommit = %q, want %q", got, sha)
	}
	if got, _ := r.FindStepCommit(ctx, Mark{Step: "t/comm", Run: "r1"}); got != "" {
		t.Errorf("prefix matched commit %q", got)
	}
	// The same step in a later run is a new effect.
	if got, _ := r.FindStepCommit(ctx, Mark{Step: "t/commit", Run: "r2"}); got != "" {
		t.Errorf("another run's commit matched: %q", got)
	}
	body, _ := r.Git(ctx, "log", "-1", "--format=%B", sha)
	if !strings.Contains(body, "Cadre-Step: t/commit\nCadre-Run: r1") {
		t.Errorf("trailers: %q", body)
	}
	files, _ := r.Git(ctx, "ls-tree", "-r", "--name-only", "HEAD")
	if strings.Contains(files, ".cadre") {
		t.Errorf("state committed: %s", files)
	}
	if d, _ := r.Dirty(ctx); len(d) != 0 {
		t.Errorf("dirty after commit: %v", d)
	}
}

// Nothing to commit makes no commit: neither in a tree without changes
// nor on a branch whose changes were all committed before (the paths the
// branch changed since its base are not news), and "" says so.
func TestCommitNothing(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	write(t, filepath.Join(r.Dir, "f.txt"), "1")
	base, err := r.CommitAll(ctx, "base", Mark{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Git(ctx, "branch", "base"); err != nil {
		t.Fatal(err)
	}
	if sha, err := r.Commit(ctx, "empty", Mark{Step: "t/commit#1", Run: "r1"}, CommitOptions{Base: "base"}); err != nil || sha != "" {
		t.Errorf("clean tree: Commit = %q, %v; want no commit", sha, err)
	}
	write(t, filepath.Join(r.Dir, "f.txt"), "2")
	work, err := r.Commit(ctx, "work", Mark{}, CommitOptions{Base: "base"})
	if err != nil || work == "" {
		t.Fatalf("Commit of a change = %q, %v", work, err)
	}
	if sha, err := r.Commit(ctx, "again", Mark{Step: "t/commit#2", Run: "r1"}, CommitOptions{Base: "base"}); err != nil || sha != "" {
		t.Errorf("branch with its changes committed: Commit = %q, %v; want no commit", sha, err)
	}
	if n, _ := r.Git(ctx, "rev-list", "--count", base+"..HEAD"); strings.TrimSpace(n) != "1" {
		t.Errorf("%s commits past the base, want the one with a change", strings.TrimSpace(n))
	}
}

func TestCommitRefusesStagedState(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t) // no ExcludeState: .cadre would be staged
	write(t, filepath.Join(r.Dir, ".cadre", "cadre.db"), "x")
	if _, err := r.CommitAll(ctx, "m", Mark{Step: "s", Run: "r"}); !errors.Is(err, ErrStateStaged) {
		t.Errorf("err = %v", err)
	}
}

func TestHooksDoNotRun(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	marker := filepath.Join(t.TempDir(), "hook-ran")
	write(t, filepath.Join(r.Dir, ".git", "hooks", "pre-commit"), "#!/bin/sh\ntouch "+marker+"\n")
	os.Chmod(filepath.Join(r.Dir, ".git", "hooks", "pre-commit"), 0o755)
	write(t, filepath.Join(r.Dir, "f"), "x")
	if _, err := r.CommitAll(ctx, "m", Mark{Step: "s", Run: "r"}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("repository hook ran")
	}
}

func TestGitEnvScrubbed(t *testing.T) {
	r := newRepo(t)
	t.Setenv("GIT_DIR", "/nonexistent")
	if _, err := Open(context.Background(), r.Dir); err != nil {
		t.Errorf("GIT_DIR leaked into cadre's git: %v", err)
	}
	if _, err := r.Dirty(context.Background()); err != nil {
		t.Errorf("GIT_DIR leaked into cadre's git: %v", err)
	}
}

func TestPushToBareRemote(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	bare := t.TempDir()
	if out, err := exec.Command("git", "init", "-q", "--bare", bare).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	write(t, filepath.Join(r.Dir, "f"), "x")
	sha, err := r.CommitAll(ctx, "m", Mark{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Git(ctx, "remote", "add", "origin", bare); err != nil {
		t.Fatal(err)
	}
	for range 2 { // pushing again is a no-op
		if err := r.Push(ctx, "origin", "main", "Authorization: Basic c2VjcmV0LXRva2Vu"); err != nil {
			t.Fatal(err)
		}
	}
	out, _ := exec.Command("git", "-C", bare, "rev-parse", "refs/heads/main").Output()
	if strings.TrimSpace(string(out)) != sha {
		t.Errorf("remote main = %s, want %s", out, sha)
	}
	cfg, _ := os.ReadFile(filepath.Join(r.Dir, ".git", "config"))
	if strings.Contains(string(cfg), "c2VjcmV0") {
		t.Error("the auth header reached the repository's config")
	}
}

// CommitOptions.Only commits the paths given and nothing else, new files
// included; with no change in them there is no commit.
func TestCommitOnly(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	r, err := Init(ctx, dir, "main")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "task.md"), []byte("stage: code\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "other.txt"), []byte("x\n"), 0o644)
	if _, err := r.Commit(ctx, "init", Mark{}, CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "task.md"), []byte("stage: completed\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "other.txt"), []byte("changed\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "new.md"), []byte("new\n"), 0o644)
	sha, err := r.Commit(ctx, "complete", Mark{Step: "t/complete", Run: "r1"}, CommitOptions{Only: []string{"task.md", "new.md"}})
	if err != nil || sha == "" {
		t.Fatalf("commit: %q %v", sha, err)
	}
	files, _ := r.Git(ctx, "show", "--name-only", "--format=", "HEAD")
	if got := strings.Fields(files); strings.Join(got, ",") != "new.md,task.md" {
		t.Errorf("committed %v, want new.md and task.md only", got)
	}
	if msg, _ := r.Git(ctx, "log", "-1", "--format=%B"); !strings.Contains(msg, TrailerKey+": t/complete") {
		t.Errorf("message %q lacks the trailer", msg)
	}
	if st, _ := r.Git(ctx, "status", "--porcelain"); strings.TrimSpace(st) != "M other.txt" {
		t.Errorf("status %q, want other.txt left modified", st)
	}
	if sha, err := r.Commit(ctx, "again", Mark{}, CommitOptions{Only: []string{"task.md"}}); err != nil || sha != "" {
		t.Errorf("nothing to commit: %q %v, want no commit", sha, err)
	}
}

// Commit's Mask rewrites the files the commit takes, those an earlier
// commit of the branch changed included, in the tree and in the commit;
// files left out (Except), links and deleted files are left alone, and a
// file name is never read as a pattern.
func TestCommitMasks(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	const secret = "SECRET-value"
	mask := func(b []byte) []byte { return []byte(strings.ReplaceAll(string(b), secret, "[M]")) }
	write(t, filepath.Join(r.Dir, "gone.txt"), "old\n")
	write(t, filepath.Join(r.Dir, "*.txt"), "star\n")
	if _, err := r.CommitAll(ctx, "init", Mark{}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Git(ctx, "checkout", "-q", "-b", "work"); err != nil {
		t.Fatal(err)
	}
	// An earlier commit of the branch, cadre's or an agent's, unmasked.
	write(t, filepath.Join(r.Dir, "early.txt"), "token "+secret+"\n")
	if _, err := r.CommitAll(ctx, "agent", Mark{}); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(r.Dir, "dir", "leak.txt"), "key="+secret+"\n")
	write(t, filepath.Join(r.Dir, "[x].txt"), secret)
	write(t, filepath.Join(r.Dir, "other", "theirs.txt"), secret+"\n")
	os.Remove(filepath.Join(r.Dir, "gone.txt"))
	if err := os.Symlink(secret, filepath.Join(r.Dir, "link")); err != nil {
		t.Fatal(err)
	}
	os.Chmod(filepath.Join(r.Dir, "dir", "leak.txt"), 0o755)
	if _, err := r.Commit(ctx, "work", Mark{Step: "s", Run: "r"}, CommitOptions{Base: "main", Except: []string{"other/"}, Mask: mask}); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"early.txt": "token [M]\n", "dir/leak.txt": "key=[M]\n", "[x].txt": "[M]", "*.txt": "star\n"}
	for p, w := range want {
		got, err := r.Git(ctx, "show", "HEAD:"+p)
		if err != nil || got != w {
			t.Errorf("committed %s = %q, %v; want %q", p, got, err, w)
		}
		if tree, _ := os.ReadFile(filepath.Join(r.Dir, p)); string(tree) != w {
			t.Errorf("tree's %s = %q, want %q", p, tree, w)
		}
	}
	if info, _ := os.Stat(filepath.Join(r.Dir, "dir", "leak.txt")); info.Mode().Perm() != 0o755 {
		t.Errorf("mode %v, want 0755 kept", info.Mode().Perm())
	}
	if data, _ := os.ReadFile(filepath.Join(r.Dir, "other", "theirs.txt")); string(data) != secret+"\n" {
		t.Errorf("a file left out was rewritten: %q", data)
	}
	if files, _ := r.Git(ctx, "show", "--name-only", "--format=", "HEAD"); strings.Contains(files, "theirs.txt") {
		t.Errorf("a file left out was committed: %s", files)
	}
	if target, _ := r.Git(ctx, "show", "HEAD:link"); target != secret {
		t.Errorf("the link's target was rewritten: %q", target)
	}
	if st, _ := r.Git(ctx, "status", "--porcelain"); strings.TrimSpace(st) != "?? other/" {
		t.Errorf("status after the commit: %q", st)
	}

	// Only's files are masked too.
	write(t, filepath.Join(r.Dir, "task.md"), "review: "+secret+"\n")
	if _, err := r.Commit(ctx, "task", Mark{}, CommitOptions{Only: []string{"task.md"}, Mask: mask}); err != nil {
		t.Fatal(err)
	}
	if got, _ := r.Git(ctx, "show", "HEAD:task.md"); got != "review: [M]\n" {
		t.Errorf("committed task.md = %q", got)
	}
}

// A commit's body says what that commit changes. The branch's first commit
// (HEAD at the base's tip, its own merge base) takes its paths and its
// changes from one diff; a later one asks for its own changes apart; a
// commit whose secrets were masked counts what is committed.
func TestCommitDescribesItsChanges(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	write(t, filepath.Join(r.Dir, "f.txt"), "one\n")
	if _, err := r.CommitAll(ctx, "base", Mark{}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Git(ctx, "checkout", "-q", "-b", "work"); err != nil {
		t.Fatal(err)
	}
	gitLog := logGit(t)
	commit := func(opt CommitOptions) (body string, diffs int) {
		t.Helper()
		gitLog()
		opt.Base, opt.Describe = "main", true
		if _, err := r.Commit(ctx, "subject", Mark{}, opt); err != nil {
			t.Fatal(err)
		}
		msg, _ := r.Git(ctx, "log", "-1", "--format=%b")
		return strings.TrimSpace(msg), strings.Count(gitLog(), " diff ")
	}

	write(t, filepath.Join(r.Dir, "f.txt"), "one\ntwo\n")
	write(t, filepath.Join(r.Dir, "g.txt"), "a\nb\n")
	body, diffs := commit(CommitOptions{})
	if want := "Changes 2 files (+3 -0):\n- f.txt (+1 -0)\n- g.txt (+2 -0)"; body != want || diffs != 1 {
		t.Errorf("first commit: %d diffs, body\n%s\nwant one diff and\n%s", diffs, body, want)
	}
	write(t, filepath.Join(r.Dir, "g.txt"), "a\n")
	body, diffs = commit(CommitOptions{})
	if want := "Changes 1 file (+0 -1):\n- g.txt (+0 -1)"; body != want || diffs != 2 {
		t.Errorf("second commit: %d diffs, body\n%s\nwant two diffs and\n%s", diffs, body, want)
	}

	if _, err := r.Git(ctx, "checkout", "-q", "-b", "masked", "main"); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(r.Dir, "key.pem"), "BEGIN\nsecret\nsecret\nEND\n")
	mask := func(b []byte) []byte {
		return []byte(strings.ReplaceAll(string(b), "BEGIN\nsecret\nsecret\nEND\n", "***\n"))
	}
	if body, _ := commit(CommitOptions{Mask: mask}); body != "Changes 1 file (+1 -0):\n- key.pem (+1 -0)" {
		t.Errorf("masked commit's body:\n%s\nwant the masked file's one line", body)
	}
}
