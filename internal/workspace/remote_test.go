package workspace

import (
	"context"
	"errors"
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
