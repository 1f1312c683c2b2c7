package workspace

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cadre-dev/cadre/internal/safefile"
)

// A reviewer's edits on top of uncommitted work are undone, and the work
// it reviewed is as it was: modified, deleted and added files alike. The
// work is named by a tree id or by a TreeState snapshot, which a cadre
// started again (a resume after a crash) reads as well.
func TestRevertTo(t *testing.T) {
	for _, kind := range []string{"tree id", "snapshot"} {
		t.Run(kind, func(t *testing.T) { testRevertTo(t, kind == "snapshot") })
	}
}

func testRevertTo(t *testing.T, snapshot bool) {
	ctx := context.Background()
	r := newRepo(t)
	write(t, filepath.Join(r.Dir, "kept.txt"), "base\n")
	write(t, filepath.Join(r.Dir, "gone.txt"), "base\n")
	if _, err := r.Git(ctx, "add", "-A"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Git(ctx, "commit", "-qm", "base"); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(r.Dir, "kept.txt"), "work\n") // the work under review
	write(t, filepath.Join(r.Dir, "new.txt"), "work\n")
	write(t, filepath.Join(r.Dir, ".cadre", "state"), "cadre's\n")
	var tree string
	var err error
	if snapshot {
		tree, _, err = r.TreeState(ctx)
		if err == nil {
			r, err = Open(ctx, r.Dir) // as after a restart
		}
	} else {
		tree, err = r.TreeOfChanges(ctx)
	}
	if err != nil {
		t.Fatal(err)
	}
	if got, err := r.RevertTo(ctx, tree); err != nil || got != nil {
		t.Fatalf("RevertTo of an unchanged tree = %v, %v; want nothing", got, err)
	}
	write(t, filepath.Join(r.Dir, "kept.txt"), "reviewer\n") // the reviewer's edits
	os.Remove(filepath.Join(r.Dir, "gone.txt"))
	os.Remove(filepath.Join(r.Dir, "new.txt"))
	write(t, filepath.Join(r.Dir, "sub", "added.txt"), "reviewer\n")
	write(t, filepath.Join(r.Dir, ".cadre", "state"), "cadre's, later\n")

	got, err := r.RevertTo(ctx, tree)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	if d := cmp.Diff([]string{"gone.txt", "kept.txt", "new.txt", "sub/added.txt"}, got); d != "" {
		t.Errorf("paths put back (-want +got):\n%s", d)
	}
	for p, want := range map[string]string{"kept.txt": "work\n", "gone.txt": "base\n", "new.txt": "work\n", ".cadre/state": "cadre's, later\n"} {
		if data, err := os.ReadFile(filepath.Join(r.Dir, p)); err != nil || string(data) != want {
			t.Errorf("%s = %q, %v; want %q", p, data, err, want)
		}
	}
	if _, err := os.Stat(filepath.Join(r.Dir, "sub", "added.txt")); !os.IsNotExist(err) {
		t.Errorf("sub/added.txt still there: %v", err)
	}
	for _, bad := range []string{"not a tree", snapPrefix + "../../config", "../" + snapPrefix + "1", snapPrefix + "missing"} {
		if _, err := r.RevertTo(ctx, bad); err == nil {
			t.Errorf("RevertTo accepted %q", bad)
		}
	}
}

// In place the tree holds cadre's state directory, ignored: a snapshot
// leaves it out and still works (git add refuses to exclude an ignored
// path by name).
func TestTreeOfChangesInPlace(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	write(t, filepath.Join(r.Dir, "a.txt"), "a\n")
	if _, err := r.Git(ctx, "add", "-A"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Git(ctx, "commit", "-qm", "base"); err != nil {
		t.Fatal(err)
	}
	if err := r.ExcludeState(ctx); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(r.Dir, ".cadre", "cadre.db"), "state\n")
	write(t, filepath.Join(r.Dir, "a.txt"), "work\n")
	tree, err := r.TreeOfChanges(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got, err := r.Git(ctx, "ls-tree", "-r", "--name-only", tree)
	if err != nil || got != "a.txt\n" {
		t.Errorf("snapshot holds %q, %v; want a.txt alone", got, err)
	}
	if data, _ := r.Git(ctx, "show", tree+":a.txt"); data != "work\n" {
		t.Errorf("snapshot's a.txt = %q, want the work", data)
	}
}

// A review mark holds the tree and role noted until cleared; none noted
// reads as nothing, and clearing twice is no error.
func TestReviewMark(t *testing.T) {
	root := t.TempDir()
	m := ReviewMark{Root: root, Path: filepath.Join(root, "reviewing", "item")}
	if tree, role, err := m.Read(); tree != "" || role != "" || err != nil {
		t.Errorf("unnoted mark reads %q %q %v", tree, role, err)
	}
	if err := m.Note("0123abcd", "critic"); err != nil {
		t.Fatal(err)
	}
	if tree, role, err := m.Read(); tree != "0123abcd" || role != "critic" || err != nil {
		t.Errorf("mark reads %q %q %v, want the tree and role noted", tree, role, err)
	}
	for range 2 {
		if err := m.Clear(); err != nil {
			t.Fatal(err)
		}
	}
	if tree, _, _ := m.Read(); tree != "" {
		t.Errorf("cleared mark reads %q", tree)
	}
	if _, err := os.Stat(m.Path); err != nil {
		t.Errorf("the cleared mark's file is gone (%v): the next note would make it again", err)
	}
	if err := m.Note("89ab", "judge"); err != nil {
		t.Fatal(err)
	}
	if tree, role, _ := m.Read(); tree != "89ab" || role != "judge" {
		t.Errorf("noted over a cleared mark: %q %q", tree, role)
	}
	os.Remove(m.Path)
	if err := m.Clear(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(m.Path); err == nil {
		t.Error("clearing a mark never noted made its file")
	}
	// A link planted at the mark leads nowhere: not read, not written.
	host := filepath.Join(t.TempDir(), "host")
	write(t, host, "0123abcd secret\n")
	if err := os.Symlink(host, m.Path); err != nil {
		t.Fatal(err)
	}
	if tree, _, err := m.Read(); tree != "" || !errors.Is(err, safefile.ErrUnsafe) {
		t.Errorf("a linked mark reads %q, %v; want refused", tree, err)
	}
	if err := m.Note("4567ef", "critic"); !errors.Is(err, safefile.ErrUnsafe) {
		t.Errorf("noting through a link: %v, want refused", err)
	}
	if data, _ := os.ReadFile(host); string(data) != "0123abcd secret\n" {
		t.Errorf("the linked file became %q", data)
	}
}

// A tree's fingerprint stays while nothing changes (cadre's state and
// .git aside), and moves with a new file and with a file rewritten at the
// same size whose times were set back: its change time cannot be.
func TestFingerprint(t *testing.T) {
	r := newRepo(t)
	write(t, filepath.Join(r.Dir, "a.txt"), "one\n")
	print := func() uint64 {
		t.Helper()
		p, err := r.Fingerprint()
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	before := print()
	if print() != before {
		t.Fatal("the fingerprint of an unchanged tree moved")
	}
	write(t, filepath.Join(r.Dir, StateDir, "state"), "cadre's\n")
	if print() != before {
		t.Error("cadre's state moved the fingerprint")
	}
	info, _ := os.Stat(filepath.Join(r.Dir, "a.txt"))
	time.Sleep(10 * time.Millisecond)
	write(t, filepath.Join(r.Dir, "a.txt"), "two\n")
	os.Chtimes(filepath.Join(r.Dir, "a.txt"), info.ModTime(), info.ModTime())
	if print() == before {
		t.Error("a file rewritten with its times set back kept the fingerprint")
	}
	now := print()
	write(t, filepath.Join(r.Dir, "sub", "new.txt"), "x\n")
	if print() == now {
		t.Error("a new file kept the fingerprint")
	}
	// A file moved to another directory under the same name, an empty
	// directory, a link and a .git below the top all count.
	if err := os.Mkdir(filepath.Join(r.Dir, "other"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, change := range []struct {
		what string
		do   func() error
	}{
		{"a file moved between directories", func() error {
			return os.Rename(filepath.Join(r.Dir, "sub", "new.txt"), filepath.Join(r.Dir, "other", "new.txt"))
		}},
		{"an empty directory", func() error { return os.Mkdir(filepath.Join(r.Dir, "sub", "empty"), 0o755) }},
		{"a link", func() error { return os.Symlink("/etc/passwd", filepath.Join(r.Dir, "sub", "link")) }},
		{"a .git file below the top", func() error {
			return os.WriteFile(filepath.Join(r.Dir, "sub", ".git"), []byte("x"), 0o644)
		}},
	} {
		before := print()
		if err := change.do(); err != nil {
			t.Fatal(err)
		}
		if print() == before {
			t.Errorf("%s kept the fingerprint", change.what)
		}
	}
	// A tree reached through a link is walked all the same.
	link := filepath.Join(t.TempDir(), "tree")
	if err := os.Symlink(r.Dir, link); err != nil {
		t.Fatal(err)
	}
	via := &Repo{Dir: link}
	p1, err := via.Fingerprint()
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(r.Dir, "sub", "more.txt"), "x\n")
	if p2, err := via.Fingerprint(); err != nil || p2 == p1 {
		t.Errorf("a tree reached through a link: fingerprint %x then %x (%v)", p1, p2, err)
	}
}
