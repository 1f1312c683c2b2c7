package workspace

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// Ahead answers from the refs and the loose commits cadre wrote, and asks
// git only when they do not tell (packed history, a base gone past HEAD),
// with the same answer.
func TestAhead(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	write(t, filepath.Join(r.Dir, "f.txt"), "base\n")
	r.CommitAll(ctx, "base", Mark{})
	gitOK := func(args ...string) {
		t.Helper()
		if _, err := r.Git(ctx, args...); err != nil {
			t.Fatal(err)
		}
	}
	gitOK("checkout", "-q", "-b", "work")
	gitLog := logGit(t)
	check := func(name string, want, asksGit bool) {
		t.Helper()
		gitLog()
		got, err := r.Ahead(ctx, "main")
		if asked := strings.Contains(gitLog(), "rev-list"); err != nil || got != want || asked != asksGit {
			t.Errorf("%s: Ahead = %t, %v (git asked %t); want %t (git asked %t)", name, got, err, asked, want, asksGit)
		}
	}
	check("at the base's tip", false, false)
	write(t, filepath.Join(r.Dir, "g.txt"), "1\n")
	r.CommitAll(ctx, "one", Mark{})
	write(t, filepath.Join(r.Dir, "g.txt"), "2\n")
	r.CommitAll(ctx, "two", Mark{})
	check("two commits on", true, false)
	gitOK("branch", "-f", "main", "work")
	check("the base moved to HEAD", false, false)
	gitOK("checkout", "-q", "main")
	write(t, filepath.Join(r.Dir, "h.txt"), "3\n")
	r.CommitAll(ctx, "three", Mark{})
	gitOK("checkout", "-q", "work")
	check("the base gone past HEAD", false, true)
	gitOK("checkout", "-q", "-b", "packed", "main")
	write(t, filepath.Join(r.Dir, "i.txt"), "4\n")
	r.CommitAll(ctx, "four", Mark{})
	gitOK("gc", "-q")
	check("packed history", true, true)
}
