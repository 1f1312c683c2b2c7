package workspace

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// ConflictMarkers finds the marker lines a commit added, whichever file
// and however committed, and only those: a marker the merged-in base
// itself has, a "=======" rule outside a conflict, or a line that merely
// mentions a marker is not one.
func TestConflictMarkers(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	git := func(args ...string) string {
		t.Helper()
		out, err := r.Git(ctx, args...)
		if err != nil {
			t.Fatalf("git %v: %v", args, err)
		}
		return strings.TrimSpace(out)
	}
	write(t, filepath.Join(r.Dir, "a.go"), "package a\n\nfunc A() int { return 1 }\n")
	write(t, filepath.Join(r.Dir, "README.md"), "# Title\n=======\n\nText.\n")
	r.CommitAll(ctx, "start", Mark{})
	start := git("rev-parse", "HEAD")
	git("checkout", "-q", "-b", "base")
	write(t, filepath.Join(r.Dir, "testdata", "conflict.txt"), "<<<<<<< ours\nx\n=======\ny\n>>>>>>> theirs\n")
	r.CommitAll(ctx, "a fixture with markers, on purpose", Mark{})
	base := git("rev-parse", "HEAD")
	git("checkout", "-q", "-")

	// Nothing added: nothing found.
	if got, err := r.ConflictMarkers(ctx, start, start); err != nil || len(got) != 0 {
		t.Fatalf("no change: %v, %v", got, err)
	}
	// A merge of the base whose conflict was committed as it stood.
	write(t, filepath.Join(r.Dir, "a.go"), "package a\n\n<<<<<<< HEAD\nfunc A() int { return 1 }\n=======\nfunc A() int { return 2 }\n>>>>>>> main\n")
	write(t, filepath.Join(r.Dir, "README.md"), "# Title\n=======\n\nText about <<<<<<< markers.\n")
	git("merge", "-q", "--no-commit", base)
	r.Commit(ctx, "merged, markers left", Mark{}, CommitOptions{})
	bad := git("rev-parse", "HEAD")
	got, err := r.ConflictMarkers(ctx, start, bad, base)
	want := []string{"a.go:3: <<<<<<< HEAD", "a.go:5: =======", "a.go:7: >>>>>>> main"}
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("markers left in a.go: %q, %v; want %q", got, err, want)
	}
	// Without the base to compare with, its fixture counts too.
	if got, _ := r.ConflictMarkers(ctx, start, bad); len(got) != 6 {
		t.Errorf("without the base: %q, want a.go's three and the fixture's three", got)
	}
	// Resolved: nothing.
	write(t, filepath.Join(r.Dir, "a.go"), "package a\n\nfunc A() int { return 2 }\n")
	r.CommitAll(ctx, "resolved", Mark{})
	if got, err := r.ConflictMarkers(ctx, start, git("rev-parse", "HEAD"), base); err != nil || len(got) != 0 {
		t.Errorf("resolved: %q, %v; want none", got, err)
	}
	if _, err := r.ConflictMarkers(ctx, "--output=/tmp/x", bad); err == nil {
		t.Error("an option for a commit was taken")
	}
}
