package workspace

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Merge makes a merge commit with the step's trailers; a conflict leaves
// the merge in progress, naming the files, for Commit to conclude.
func TestMerge(t *testing.T) {
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
	write(t, filepath.Join(r.Dir, "a.txt"), "a\n")
	r.CommitAll(ctx, "a", Mark{})
	main := git("rev-parse", "--abbrev-ref", "HEAD")
	git("checkout", "-q", "-b", "topic")
	write(t, filepath.Join(r.Dir, "b.txt"), "topic\n")
	r.CommitAll(ctx, "topic b", Mark{})
	git("checkout", "-q", main)
	write(t, filepath.Join(r.Dir, "c.txt"), "c\n")
	r.CommitAll(ctx, "main c", Mark{})
	clean := git("rev-parse", "HEAD")
	git("checkout", "-q", "topic")

	files, err := r.Merge(ctx, clean, "Merge main", Mark{Step: "7/follow/conflict#1/merge", Run: "r1"})
	if err != nil || len(files) != 0 {
		t.Fatalf("clean merge: %v, %v", files, err)
	}
	if n := git("rev-list", "--count", "--merges", "HEAD"); n != "1" {
		t.Fatalf("%s merge commits, want 1", n)
	}
	if msg := git("log", "-1", "--format=%B"); !strings.Contains(msg, TrailerKey+": 7/follow/conflict#1/merge") {
		t.Errorf("merge commit message lacks the step's trailer:\n%s", msg)
	}

	git("checkout", "-q", main)
	write(t, filepath.Join(r.Dir, "b.txt"), "main\n")
	r.CommitAll(ctx, "main b", Mark{})
	clash := git("rev-parse", "HEAD")
	git("checkout", "-q", "topic")
	topic := git("rev-parse", "HEAD")
	if ok, err := r.MergesCleanly(ctx, topic, clash); err != nil || ok {
		t.Errorf("MergesCleanly of a conflict = %v, %v; want false", ok, err)
	}
	if ok, err := r.MergesCleanly(ctx, topic, clean); err != nil || !ok {
		t.Errorf("MergesCleanly of a clean merge = %v, %v; want true", ok, err)
	}
	files, err = r.Merge(ctx, clash, "Merge main", Mark{})
	if err != nil || len(files) != 1 || files[0] != "b.txt" {
		t.Fatalf("conflicting merge: %v, %v; want b.txt conflicted", files, err)
	}
	if !r.Merging(ctx) {
		t.Fatal("the conflicted merge is not in progress")
	}
	write(t, filepath.Join(r.Dir, "b.txt"), "both\n")
	sha, err := r.Commit(ctx, "resolved", Mark{}, CommitOptions{})
	if err != nil || sha == "" || r.Merging(ctx) {
		t.Fatalf("concluding the merge: %q, %v, merging %v", sha, err, r.Merging(ctx))
	}
	if parents := strings.Fields(git("log", "-1", "--format=%P")); len(parents) != 2 {
		t.Errorf("the concluding commit has parents %v, want two", parents)
	}
	if _, err := r.Merge(ctx, "--help", "m", Mark{}); err == nil {
		t.Error("a merge of something not a commit id was made")
	}
}

// TreeState reuses its snapshot while the tree is the same, and takes a
// new one once a file changed.
func TestTreeStateReusedWhileUnchanged(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	write(t, filepath.Join(r.Dir, "a.txt"), "a\n")
	r.CommitAll(ctx, "a", Mark{})
	write(t, filepath.Join(r.Dir, "b.txt"), "wip\n")
	tree1, print1, err := r.TreeState(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tree2, print2, err := r.TreeState(ctx)
	if err != nil || tree2 != tree1 || print2 != print1 {
		t.Fatalf("unchanged tree: %s %d, %v; want %s %d", tree2, print2, err, tree1, print1)
	}
	write(t, filepath.Join(r.Dir, "b.txt"), "more wip\n")
	tree3, print3, err := r.TreeState(ctx)
	if err != nil || tree3 == tree1 || print3 == print1 {
		t.Fatalf("changed tree kept its snapshot: %s %d, %v", tree3, print3, err)
	}
	got, err := r.snapshotTree(ctx, tree3)
	if want, werr := r.TreeOfChanges(ctx); err != nil || werr != nil || want != got {
		t.Errorf("snapshot %s holds %s (%v), want git's %s (%v)", tree3, got, err, want, werr)
	}
}

// A commit after a snapshot of the same tree takes the snapshot's staging
// instead of a git add; once a file changed since, git stages it again.
func TestCommitStagesFromSnapshot(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	write(t, filepath.Join(r.Dir, "a.txt"), "a\n")
	r.CommitAll(ctx, "a", Mark{})
	gitLog := logGit(t)
	adds := func() int { return strings.Count(gitLog(), " add -A ") }
	for _, tt := range []struct {
		name      string
		change    bool // a file changes after the snapshot
		wantAdds  int  // git add -A of the commit (the snapshot's own aside)
		wantFiles string
	}{
		{"unchanged since the snapshot", false, 0, "a.txt\nb.txt\nsub/c.txt"},
		{"changed since the snapshot", true, 1, "a.txt\nb.txt\nd.txt\nsub/c.txt"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			write(t, filepath.Join(r.Dir, "b.txt"), "b "+tt.name+"\n")
			write(t, filepath.Join(r.Dir, "sub", "c.txt"), "c\n")
			if _, _, err := r.TreeState(ctx); err != nil {
				t.Fatal(err)
			}
			adds()
			if tt.change {
				write(t, filepath.Join(r.Dir, "d.txt"), "d\n")
			}
			if _, err := r.Commit(ctx, tt.name, Mark{}, CommitOptions{}); err != nil {
				t.Fatal(err)
			}
			if n := adds(); n != tt.wantAdds {
				t.Errorf("%d git add -A, want %d", n, tt.wantAdds)
			}
			files, _ := r.Git(ctx, "ls-tree", "-r", "--name-only", "HEAD")
			if strings.TrimSpace(files) != tt.wantFiles {
				t.Errorf("committed %q, want %q", files, tt.wantFiles)
			}
			if st, _ := r.Git(ctx, "status", "--porcelain"); st != "" {
				t.Errorf("left uncommitted: %q", st)
			}
		})
	}
	if left, _ := filepath.Glob(filepath.Join(r.Dir, ".git", "cadre-wip-index-*")); len(left) != 0 {
		t.Errorf("snapshot indexes left: %v", left)
	}
}

// A tree run in place (cadre's state inside it) is snapshot as a tree id:
// no index is left in the repository's own git directory.
func TestTreeStateInPlaceKeepsNoIndex(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	write(t, filepath.Join(r.Dir, "a.txt"), "a\n")
	r.CommitAll(ctx, "a", Mark{})
	if err := r.ExcludeState(ctx); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(r.Dir, StateDir, "state"), "x\n")
	write(t, filepath.Join(r.Dir, "b.txt"), "wip\n")
	snap, _, err := r.TreeState(ctx)
	if err != nil || !isObjectID(snap) {
		t.Fatalf("in place: snapshot %q, %v; want a tree id", snap, err)
	}
	if left, _ := filepath.Glob(filepath.Join(r.Dir, ".git", snapPrefix+"*")); len(left) != 0 {
		t.Errorf("indexes left in the repository's git directory: %v", left)
	}
	write(t, filepath.Join(r.Dir, "b.txt"), "reviewer\n")
	if got, err := r.RevertTo(ctx, snap); err != nil || len(got) != 1 || got[0] != "b.txt" {
		t.Errorf("RevertTo = %v, %v; want b.txt put back", got, err)
	}
}

// A snapshot of a tree whose index git add leaves as it is shares the
// index's file; the commit after it then has nothing to install, and
// leaves no lock behind to stop the next git command.
func TestSnapshotOfAnUnchangedIndex(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	write(t, filepath.Join(r.Dir, "a.txt"), "a\n")
	r.CommitAll(ctx, "a", Mark{})
	// An index written after its files' last change holds no racily
	// clean entries, which git add would refresh and write out.
	later := time.Now().Add(2 * time.Second)
	if err := os.Chtimes(filepath.Join(r.Dir, ".git", "index"), later, later); err != nil {
		t.Fatal(err)
	}
	snap, _, err := r.TreeState(ctx)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := os.Stat(filepath.Join(r.Dir, ".git", snap))
	b, _ := os.Stat(filepath.Join(r.Dir, ".git", "index"))
	if a == nil || b == nil || !os.SameFile(a, b) {
		t.Fatalf("the snapshot of an unchanged index is not the index's own file")
	}
	if sha, err := r.Commit(ctx, "nothing", Mark{}, CommitOptions{}); err != nil || sha != "" {
		t.Fatalf("commit of nothing = %q, %v", sha, err)
	}
	if _, err := os.Lstat(filepath.Join(r.Dir, ".git", "index.lock")); err == nil {
		t.Fatal("index.lock left behind")
	}
	write(t, filepath.Join(r.Dir, "b.txt"), "b\n")
	if sha, err := r.Commit(ctx, "b", Mark{}, CommitOptions{}); err != nil || sha == "" {
		t.Fatalf("the next commit = %q, %v", sha, err)
	}
	// A snapshot that staged a change is a file of its own: the index
	// stays as it was until the commit.
	write(t, filepath.Join(r.Dir, "c.txt"), "c\n")
	if _, _, err := r.TreeState(ctx); err != nil {
		t.Fatal(err)
	}
	if staged, _ := r.Git(ctx, "diff", "--cached", "--name-only"); staged != "" {
		t.Errorf("the snapshot staged %q in the tree's index", staged)
	}
}
