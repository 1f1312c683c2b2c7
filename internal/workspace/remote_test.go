package workspace

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// bareOrigin makes a bare repository with r's main pushed to it, added to
// r as origin.
func bareOrigin(t *testing.T, r *Repo) string {
	t.Helper()
	ctx := context.Background()
	bare := filepath.Join(t.TempDir(), "origin.git")
	if out, err := exec.Command("git", "init", "-q", "--bare", bare).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	if _, err := r.Git(ctx, "remote", "add", "origin", bare); err != nil {
		t.Fatal(err)
	}
	if err := r.Push(ctx, "origin", "main", ""); err != nil {
		t.Fatal(err)
	}
	return bare
}

func bareHead(t *testing.T, bare, branch string) string {
	t.Helper()
	out, _ := exec.Command("git", "-C", bare, "rev-parse", "-q", "--verify", "refs/heads/"+branch).Output()
	return strings.TrimSpace(string(out))
}

// A branch travels through a bare remote: fetched (a missing one is no
// error), pushed only under the lease of the head last seen, and brought
// forward only by a fast-forward.
func TestBranchThroughRemote(t *testing.T) {
	ctx := context.Background()
	a := newRepo(t)
	write(t, filepath.Join(a.Dir, "f"), "x")
	base, err := a.CommitAll(ctx, "base", Mark{})
	if err != nil {
		t.Fatal(err)
	}
	bare := bareOrigin(t, a)

	heads, err := a.FetchBranches(ctx, "origin", "", "origin", "main", "cadre/x")
	if err != nil {
		t.Fatal(err)
	}
	if heads["main"] != base || heads["cadre/x"] != "" || len(heads) != 2 {
		t.Fatalf("heads %v, want main at %s and no cadre/x", heads, base)
	}
	if _, err := a.FetchBranches(ctx, "origin", "", "origin", "-x"); err == nil {
		t.Error("an option-like branch was fetched")
	}
	if _, err := a.FetchBranches(ctx, filepath.Join(t.TempDir(), "nowhere"), "", "origin", "main"); err == nil {
		t.Error("a fetch from no repository succeeded")
	}

	// A new branch goes with an empty lease, once.
	a.Git(ctx, "checkout", "-q", "-b", "cadre/x")
	write(t, filepath.Join(a.Dir, "g"), "1")
	one, _ := a.CommitAll(ctx, "one", Mark{})
	if err := a.PushLease(ctx, "origin", "cadre/x", "", ""); err != nil {
		t.Fatal(err)
	}
	if got := bareHead(t, bare, "cadre/x"); got != one {
		t.Fatalf("origin's cadre/x = %q, want %s", got, one)
	}
	write(t, filepath.Join(a.Dir, "g"), "2")
	two, _ := a.CommitAll(ctx, "two", Mark{})
	if err := a.PushLease(ctx, "origin", "cadre/x", "", ""); !errors.Is(err, ErrRemoteMoved) {
		t.Fatalf("push expecting no branch over an existing one: %v, want ErrRemoteMoved", err)
	}
	if err := a.PushLease(ctx, "origin", "cadre/x", "", base); !errors.Is(err, ErrRemoteMoved) {
		t.Fatalf("push under a stale lease: %v, want ErrRemoteMoved", err)
	}
	if got := bareHead(t, bare, "cadre/x"); got != one {
		t.Fatalf("a refused push moved origin's cadre/x to %q", got)
	}
	if err := a.PushLease(ctx, "origin", "cadre/x", "", one); err != nil {
		t.Fatal(err)
	}
	if got := bareHead(t, bare, "cadre/x"); got != two {
		t.Fatalf("origin's cadre/x = %q, want %s", got, two)
	}

	// Another clone fetches the branch, fast-forwards to it, and cannot
	// fast-forward once it has a commit of its own.
	b := newRepo(t)
	if _, err := b.Git(ctx, "remote", "add", "origin", bare); err != nil {
		t.Fatal(err)
	}
	heads, err = b.FetchBranches(ctx, "origin", "", "origin", "cadre/x")
	if err != nil || heads["cadre/x"] != two {
		t.Fatalf("heads %v, %v: want cadre/x at %s", heads, err, two)
	}
	if got, err := b.RefCommit(ctx, TrackingRef("origin", "cadre/x")); err != nil || got != two {
		t.Fatalf("tracking ref %q, %v", got, err)
	}
	b.Git(ctx, "checkout", "-q", "-b", "cadre/x", base)
	if err := b.FastForward(ctx, one); err != nil {
		t.Fatal(err)
	}
	if h, _ := b.Head(ctx); h != one {
		t.Fatalf("head %s, want %s", h, one)
	}
	if err := b.FastForward(ctx, base); err != nil {
		t.Fatalf("fast-forward to an ancestor: %v", err)
	}
	if h, _ := b.Head(ctx); h != one {
		t.Fatalf("fast-forward to an ancestor moved the head back to %s", h)
	}
	write(t, filepath.Join(b.Dir, "h"), "mine")
	if _, err := b.CommitAll(ctx, "mine", Mark{}); err != nil {
		t.Fatal(err)
	}
	if err := b.FastForward(ctx, two); !errors.Is(err, ErrNotFastForward) {
		t.Fatalf("fast-forward over a commit of its own: %v, want ErrNotFastForward", err)
	}

	// Changes put aside leave the tree clean and stay in the stash.
	write(t, filepath.Join(b.Dir, "h"), "dirty")
	write(t, filepath.Join(b.Dir, "new"), "untracked")
	if err := b.SaveChanges(ctx, "cadre: saved"); err != nil {
		t.Fatal(err)
	}
	if d, _ := b.Dirty(ctx); len(d) != 0 {
		t.Errorf("dirty after SaveChanges: %v", d)
	}
	if out, _ := b.Git(ctx, "stash", "list"); !strings.Contains(out, "cadre: saved") {
		t.Errorf("stash list %q", out)
	}
}

// Fetch and push of an http remote carry the credential through cadre's
// proxy, as the pull request's push does.
func TestBranchThroughAuthedRemote(t *testing.T) {
	ctx := context.Background()
	a := newRepo(t)
	write(t, filepath.Join(a.Dir, "f"), "x")
	base, _ := a.CommitAll(ctx, "base", Mark{})
	bare := filepath.Join(t.TempDir(), "remote.git")
	if out, err := exec.Command("git", "init", "-q", "--bare", bare).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	exec.Command("git", "-C", bare, "config", "http.receivepack", "true").Run()
	srv, authed := gitServer(t, bare, "Basic secret")
	if _, err := a.Git(ctx, "remote", "add", "origin", srv.URL+"/remote.git"); err != nil {
		t.Fatal(err)
	}
	header := "Authorization: Basic secret"
	if err := a.PushLease(ctx, "origin", "main", "", ""); err == nil {
		t.Fatal("the remote took a push without the credential")
	}
	if err := a.PushLease(ctx, "origin", "main", header, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := a.FetchBranches(ctx, "origin", "", "origin", "main"); err == nil {
		t.Fatal("the remote served a fetch without the credential")
	}
	heads, err := a.FetchBranches(ctx, "origin", header, "origin", "main", "cadre/none")
	if err != nil || heads["main"] != base || heads["cadre/none"] != "" {
		t.Fatalf("heads %v, %v: want main at %s", heads, err, base)
	}
	if authed.Load() == 0 {
		t.Error("no request reached the remote with the credential")
	}
}

// A tree's uncommitted changes (a modified, a deleted and an untracked
// file) go to another clone through a WIP commit off the branch, which
// leaves the tree's branch and index alone and takes neither .cadre/ nor
// ignored files; restored there, they are the same uncommitted changes.
func TestWIPThroughRemote(t *testing.T) {
	ctx := context.Background()
	a := newRepo(t)
	write(t, filepath.Join(a.Dir, "keep"), "one\n")
	write(t, filepath.Join(a.Dir, "gone"), "bye\n")
	write(t, filepath.Join(a.Dir, ".gitignore"), "*.log\n")
	base, err := a.CommitAll(ctx, "base", Mark{})
	if err != nil {
		t.Fatal(err)
	}
	bare := bareOrigin(t, a)
	if w, err := a.TakeWIP(ctx, "clean", nil); err != nil || w != (WIP{}) {
		t.Fatalf("a clean tree's WIP: %+v, %v; want none", w, err)
	}

	write(t, filepath.Join(a.Dir, "keep"), "one\ntwo\n")
	os.Remove(filepath.Join(a.Dir, "gone"))
	write(t, filepath.Join(a.Dir, "dir", "new"), "new\n")
	write(t, filepath.Join(a.Dir, "build.log"), "ignored\n")
	write(t, filepath.Join(a.Dir, StateDir, "state"), "cadre's\n")
	status := func(r *Repo) string {
		out, err := r.Git(ctx, "status", "--porcelain", "--untracked-files=all", "--", ".", ":(exclude)"+StateDir)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	index := func(r *Repo) string {
		out, _ := r.Git(ctx, "ls-files", "--stage")
		return out
	}
	want, idx := status(a), index(a)
	w, err := a.TakeWIP(ctx, "wip", nil)
	if err != nil {
		t.Fatal(err)
	}
	if w.Commit == "" || w.Base != base {
		t.Fatalf("WIP %+v, want a commit on %s", w, base)
	}
	if head, _ := a.Head(ctx); head != base || status(a) != want || index(a) != idx {
		t.Errorf("taking the WIP changed the tree: head %s, status %q, index changed %v", head, status(a), index(a) != idx)
	}
	files, _ := a.Git(ctx, "ls-tree", "-r", "--name-only", w.Commit)
	if files != ".gitignore\ndir/new\nkeep\n" {
		t.Errorf("the WIP commit holds %q, want the tree without gone, build.log and .cadre/", files)
	}
	if tree, _ := a.Git(ctx, "rev-parse", w.Commit+"^{tree}"); strings.TrimSpace(tree) != w.Tree {
		t.Errorf("WIP tree %s, commit's %s", w.Tree, tree)
	}
	if err := a.PushWIP(ctx, "origin", "cadre/x", "", w.Commit); err != nil {
		t.Fatal(err)
	}
	if out, _ := exec.Command("git", "-C", bare, "rev-parse", WIPRef("cadre/x")).Output(); strings.TrimSpace(string(out)) != w.Commit {
		t.Errorf("origin's %s is %q, want %s", WIPRef("cadre/x"), out, w.Commit)
	}
	if bareHead(t, bare, "cadre/x") != "" {
		t.Error("the WIP made a branch on origin")
	}

	bdir := filepath.Join(t.TempDir(), "b")
	if out, err := exec.Command("git", "clone", "-q", "-b", "main", bare, bdir).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	b := &Repo{Dir: bdir}
	// The ref moves on; the WIP is still fetched by its id.
	other := strings.TrimSpace(mustGit(t, a, "commit-tree", "-p", base, "-m", "later", w.Tree))
	if err := a.PushWIP(ctx, "origin", "cadre/x", "", other); err != nil {
		t.Fatal(err)
	}
	if err := b.FetchCommit(ctx, "origin", "", w.Commit); err != nil {
		t.Fatal(err)
	}
	if err := b.RestoreWIP(ctx, w.Commit); err != nil {
		t.Fatal(err)
	}
	if got := status(b); got != want {
		t.Errorf("restored changes\n%s\nwant\n%s", got, want)
	}
	if data, _ := os.ReadFile(filepath.Join(bdir, "keep")); string(data) != "one\ntwo\n" {
		t.Errorf("restored keep %q", data)
	}
	if err := b.DiscardChanges(ctx); err != nil {
		t.Fatal(err)
	}
	if got := status(b); got != "" {
		t.Errorf("after DiscardChanges: %q", got)
	}
	if err := a.PushWIP(ctx, "origin", "cadre/x", "", "-f"); err == nil {
		t.Error("an option was pushed as a commit")
	}
	// Deleted once its item completed; deleting it again is no error.
	for range 2 {
		if err := a.DeleteWIP(ctx, "origin", "cadre/x", ""); err != nil {
			t.Fatal(err)
		}
	}
	if out, _ := exec.Command("git", "-C", bare, "for-each-ref", "refs/cadre/").Output(); len(out) != 0 {
		t.Errorf("origin's refs/cadre after the delete: %s", out)
	}
	if err := a.DeleteWIP(ctx, "origin", "-x", ""); err == nil {
		t.Error("an option was deleted as a branch")
	}
}

func mustGit(t *testing.T, r *Repo, args ...string) string {
	t.Helper()
	out, err := r.Git(context.Background(), args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A step's commit made again on top of the one it repeats (a retry that
// did not know of the first): FindStepCommitIn finds the first among what
// a remote gained since a head, not before it; Unstack drops the repeat,
// keeping uncommitted changes, and refuses to drop more than one commit.
func TestUnstackRepeatedStepCommit(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	write(t, filepath.Join(r.Dir, "f.txt"), "0")
	base, err := r.CommitAll(ctx, "base", Mark{})
	if err != nil {
		t.Fatal(err)
	}
	mark := Mark{Step: "i/p/commit#1", Run: "r1"}
	write(t, filepath.Join(r.Dir, "f.txt"), "1")
	first, err := r.CommitAll(ctx, "first", mark)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := r.FindStepCommitIn(ctx, base, first, mark); err != nil || got != first {
		t.Errorf("FindStepCommitIn(%.7s..%.7s) = %q, %v, want %s", base, first, got, err, first)
	}
	if got, err := r.FindStepCommitIn(ctx, first, first, mark); err != nil || got != "" {
		t.Errorf("FindStepCommitIn(%.7s..%.7s) = %q, %v, want none: the commit is not past from", first, first, got, err)
	}
	if got, err := r.FindStepCommitIn(ctx, "", first, mark); err != nil || got != first {
		t.Errorf("FindStepCommitIn(all of %.7s) = %q, %v, want %s", first, got, err, first)
	}
	if _, err := r.FindStepCommitIn(ctx, "--all", first, mark); err == nil {
		t.Error("FindStepCommitIn took an option for a commit")
	}
	write(t, filepath.Join(r.Dir, "f.txt"), "2") // what the step's second run changed
	repeat, err := r.CommitAll(ctx, "repeat", mark)
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(r.Dir, "wip.txt"), "w")
	if err := r.Unstack(ctx, base); err == nil || !strings.Contains(err.Error(), "2 commits ahead") {
		t.Errorf("Unstack over two commits: %v, want refused", err)
	}
	if err := r.Unstack(ctx, first); err != nil {
		t.Fatal(err)
	}
	if head, _ := r.Head(ctx); head != first {
		t.Errorf("head %s after Unstack, want %s (not the repeat %s)", head, first, repeat)
	}
	if data, err := os.ReadFile(filepath.Join(r.Dir, "wip.txt")); err != nil || string(data) != "w" {
		t.Errorf("uncommitted file after Unstack: %q, %v", data, err)
	}
}

// A WIP taken before a commit that took only some of its changes (one
// that left other files out, and one path changed differently since):
// RestoreWIPAfter brings back, as uncommitted changes, what the commit did
// not take (a modified, a deleted and an untracked file, one with a name
// git would read as a pattern), keeps the head's version of the paths the
// commit changed, and names the one whose WIP change it does not hold.
func TestRestoreWIPAfterCommit(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	for _, f := range []string{"keep", "gone", "mine", "theirs"} {
		write(t, filepath.Join(r.Dir, f), f+"\n")
	}
	if _, err := r.CommitAll(ctx, "base", Mark{}); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(r.Dir, "keep"), "keep\nwip\n")
	os.Remove(filepath.Join(r.Dir, "gone"))
	write(t, filepath.Join(r.Dir, "dir", "new*"), "new\n")
	write(t, filepath.Join(r.Dir, "mine"), "mine\nwip\n")
	write(t, filepath.Join(r.Dir, "theirs"), "theirs\nwip\n")
	w, err := r.TakeWIP(ctx, "wip", nil)
	if err != nil {
		t.Fatal(err)
	}
	// The commit takes mine as the WIP has it and theirs otherwise.
	write(t, filepath.Join(r.Dir, "theirs"), "theirs\nanother\n")
	if _, err := r.Commit(ctx, "part", Mark{}, CommitOptions{Except: []string{"keep", "gone", "dir"}}); err != nil {
		t.Fatal(err)
	}
	if err := r.DiscardChanges(ctx); err != nil {
		t.Fatal(err)
	}
	restored, clashed, err := r.RestoreWIPAfter(ctx, w)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(restored, " "); got != "dir/new* gone keep" {
		t.Errorf("restored %q, want the paths the commit did not take", got)
	}
	if got := strings.Join(clashed, " "); got != "theirs" {
		t.Errorf("clashed %q, want theirs", got)
	}
	if got := mustGit(t, r, "status", "--porcelain", "--untracked-files=all"); got != " D gone\n M keep\n?? dir/new*\n" {
		t.Errorf("status after the restore\n%s", got)
	}
	if data, _ := os.ReadFile(filepath.Join(r.Dir, "theirs")); string(data) != "theirs\nanother\n" {
		t.Errorf("theirs %q, want the head's", data)
	}
	// All taken: nothing to restore.
	if _, err := r.CommitAll(ctx, "rest", Mark{}); err != nil {
		t.Fatal(err)
	}
	restored, clashed, err = r.RestoreWIPAfter(ctx, w)
	if err != nil || len(restored) != 0 || strings.Join(clashed, " ") != "theirs" {
		t.Errorf("after all was committed: restored %q, clashed %q, %v", restored, clashed, err)
	}
	if got := mustGit(t, r, "status", "--porcelain"); got != "" {
		t.Errorf("status %q, want clean", got)
	}
	if _, _, err := r.RestoreWIPAfter(ctx, WIP{Commit: "-x", Base: w.Base}); err == nil {
		t.Error("an option was restored as a commit")
	}
}

// A WIP's files go through the mask before they leave the machine, as a
// commit's do: an agent that wrote a secret into its work pushes it
// masked, in the WIP and in the tree, and files without one are left as
// they are.
func TestWIPMasked(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	write(t, filepath.Join(r.Dir, "keep"), "one\n")
	if _, err := r.CommitAll(ctx, "base", Mark{}); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(r.Dir, "keep"), "one\ntoken s3cr3t-value\n")
	write(t, filepath.Join(r.Dir, "dir", "new"), "s3cr3t-value\n")
	write(t, filepath.Join(r.Dir, "plain"), "nothing to hide\n")
	mask := func(b []byte) []byte { return bytes.ReplaceAll(b, []byte("s3cr3t-value"), []byte("********")) }
	w, err := r.TakeWIP(ctx, "wip", mask)
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]string{"keep": "one\ntoken ********\n", "dir/new": "********\n", "plain": "nothing to hide\n"} {
		got, err := r.Git(ctx, "show", w.Commit+":"+p)
		if err != nil || got != want {
			t.Errorf("WIP's %s = %q, %v; want %q", p, got, err, want)
		}
		if data, _ := os.ReadFile(filepath.Join(r.Dir, p)); string(data) != want {
			t.Errorf("tree's %s = %q, want %q", p, data, want)
		}
	}
	if tree, _ := r.Git(ctx, "rev-parse", w.Commit+"^{tree}"); strings.TrimSpace(tree) != w.Tree {
		t.Errorf("WIP tree %s, commit's %s", w.Tree, tree)
	}
}
