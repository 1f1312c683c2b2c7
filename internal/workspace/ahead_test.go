package workspace

import (
	"context"
	"os/exec"
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

// looseParents reads a commit's parents from its loose object: one, two
// (a merge), and those of a commit whose signature and message are longer
// than what it inflates.
func TestLooseParents(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	write(t, filepath.Join(r.Dir, "f.txt"), "base\n")
	r.CommitAll(ctx, "base", Mark{})
	git := func(stdin string, args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", r.Dir}, args...)...)
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("git %v: %v", args, err)
		}
		return strings.TrimSpace(string(out))
	}
	common, _, err := r.gitDirs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tree := git("", "rev-parse", "HEAD^{tree}")
	a := git("", "rev-parse", "HEAD")
	b := git("b\n", "commit-tree", tree, "-p", a)
	merge := git("merge\n", "commit-tree", tree, "-p", a, "-p", b)
	sig := "gpgsig -----BEGIN PGP SIGNATURE-----\n" + strings.Repeat(" "+strings.Repeat("A", 64)+"\n", 100) + " -----END PGP SIGNATURE-----\n"
	signed := git("tree "+tree+"\nparent "+merge+"\nauthor A <a@x> 1 +0000\ncommitter A <a@x> 1 +0000\n"+sig+"\n"+strings.Repeat("long message\n", 1000),
		"hash-object", "-t", "commit", "-w", "--stdin")
	for _, tt := range []struct {
		id   string
		want []string
	}{
		{b, []string{a}},
		{merge, []string{a, b}},
		{signed, []string{merge}},
	} {
		got, ok := looseParents(common, tt.id)
		if !ok || strings.Join(got, " ") != strings.Join(tt.want, " ") {
			t.Errorf("looseParents(%.7s) = %v, %v; want %v", tt.id, got, ok, tt.want)
		}
	}
	if _, ok := looseParents(common, tree); ok {
		t.Error("a tree read as a commit")
	}
}
