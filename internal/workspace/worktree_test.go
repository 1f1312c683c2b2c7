package workspace

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestSlugHostileTitles(t *testing.T) {
	tests := []struct{ in, want string }{
		{"Add login page", "add-login-page"},
		{"--upload-pack=x", "upload-pack-x"},
		{"$(id)", "id"},
		{"`rm -rf /`; echo pwned", "rm-rf-echo-pwned"},
		{"../../x", "x"},
		{"HEAD", "head"},
		{"x.lock", "x-lock"},
		{"refs/heads/main", "refs-heads-main"},
		{"a\x00b\x1bc\td", "a-b-c-d"},
		{"evil\u202etxt.exe", "evil-txt-exe"}, // right-to-left override
		{"Café ünïcödé", "caf-n-c-d"},
		{"@{-1}", "1"},
		{"", ""},
		{"!!!", ""},
		{strings.Repeat("word ", 1000), "word-word-word-word-word-word-word-word"},
		{strings.Repeat("x", 5000), strings.Repeat("x", 40)},
	}
	for _, tt := range tests {
		got := Slug(tt.in)
		if got != tt.want {
			t.Errorf("Slug(%.30q) = %q, want %q", tt.in, got, tt.want)
		}
		if len(got) > maxSlug {
			t.Errorf("Slug(%.30q) is %d bytes", tt.in, len(got))
		}
	}
}

func TestBranchNamesPassGit(t *testing.T) {
	titles := []string{"--upload-pack=x", "$(id)", "../../x", "HEAD", "x.lock", "a\x00b", "evil\u202etxt", strings.Repeat("é", 5000), "", "@", "a..b", "-", "/"}
	for _, title := range titles {
		b := BranchName("t-1", title)
		out, err := exec.Command("git", "check-ref-format", "--branch", b).CombinedOutput()
		if err != nil {
			t.Errorf("title %.20q → branch %q rejected by git: %s", title, b, out)
		}
		if !strings.HasPrefix(b, BranchPrefix+"t-1") {
			t.Errorf("branch %q", b)
		}
	}
}

func TestCheckItemID(t *testing.T) {
	for _, ok := range []string{"a", "add-login", "42", "task_1.v2", "A.B"} {
		if err := CheckItemID(ok); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
	// Each refusal names the rule the id breaks, and no rule it keeps: an
	// id ending in ".lock" is not told to use letters and digits.
	rules := []string{"empty", "bytes long", "starts with", "use only letters", `holds ".."`, `ends in ".lock"`}
	for _, tt := range []struct{ id, rule string }{
		{"", "empty"}, {"..", "starts with"}, {".hidden", "starts with"}, {"-x", "starts with"},
		{"a/b", "use only letters"}, {"a b", "use only letters"}, {"é", "use only letters"}, {"a\x00", "use only letters"},
		{"a..b", `holds ".."`}, {"x.lock", `ends in ".lock"`}, {strings.Repeat("x", 101), "bytes long"},
	} {
		err := CheckItemID(tt.id)
		if err == nil {
			t.Errorf("%q accepted", tt.id)
			continue
		}
		for _, r := range rules {
			if got := strings.Contains(err.Error(), r); got != (r == tt.rule) {
				t.Errorf("%q: refusal %q names %q: %v, want %v", tt.id, err, r, got, r == tt.rule)
			}
		}
	}
}

func TestWorktreeEnsureReuseAndDirty(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	write(t, filepath.Join(r.Dir, "f.txt"), "base\n")
	if _, err := r.CommitAll(ctx, "base", Mark{}); err != nil {
		t.Fatal(err)
	}
	r.ExcludeState(ctx)
	w := NewWorktrees(r)
	wt, err := w.Ensure(ctx, "a", "cadre/a-x", "main", EnsureOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if wt.Dir != filepath.Join(r.Dir, ".cadre", "worktrees", "a") {
		t.Errorf("dir %s", wt.Dir)
	}
	if b, _ := wt.Git(ctx, "rev-parse", "--abbrev-ref", "HEAD"); strings.TrimSpace(b) != "cadre/a-x" {
		t.Errorf("branch %q", b)
	}
	// The repository's own tree does not see the worktree as a change.
	if d, _ := r.Dirty(ctx); len(d) != 0 {
		t.Errorf("main tree dirty: %v", d)
	}
	write(t, filepath.Join(wt.Dir, "g.txt"), "work\n")
	if _, err := w.Ensure(ctx, "a", "cadre/a-x", "main", EnsureOptions{}); !errors.Is(err, ErrDirtyWorktree) || !strings.Contains(err.Error(), "g.txt") {
		t.Errorf("dirty reuse: %v", err)
	}
	if _, err := w.Ensure(ctx, "a", "cadre/a-x", "main", EnsureOptions{AllowDirty: true}); err != nil {
		t.Errorf("owned dirty reuse: %v", err)
	}
	if _, err := wt.CommitAll(ctx, "work", Mark{Step: "a/commit", Run: "r"}); err != nil {
		t.Fatal(err)
	}
	// Deleted by hand: recreated on the existing branch, keeping its commit.
	os.RemoveAll(wt.Dir)
	wt2, err := w.Ensure(ctx, "a", "cadre/a-x", "main", EnsureOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sha, _ := wt2.FindStepCommit(ctx, Mark{Step: "a/commit", Run: "r"}); sha == "" {
		t.Error("recreated worktree lost the branch's commit")
	}
	if _, err := w.Ensure(ctx, "a", "cadre/a-other", "main", EnsureOptions{}); err == nil {
		t.Error("reused a worktree that is on another branch")
	}
	if _, err := w.Ensure(ctx, "../x", "cadre/x", "main", EnsureOptions{}); err == nil {
		t.Error("accepted a path-escaping item id")
	}
}

func TestWorktreeListAndRemove(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	write(t, filepath.Join(r.Dir, "f.txt"), "base\n")
	r.CommitAll(ctx, "base", Mark{})
	r.ExcludeState(ctx)
	w := NewWorktrees(r)
	empty, _ := w.Ensure(ctx, "empty", "cadre/empty", "main", EnsureOptions{})
	work, _ := w.Ensure(ctx, "work", "cadre/work", "main", EnsureOptions{})
	write(t, filepath.Join(work.Dir, "g.txt"), "x")
	work.CommitAll(ctx, "work", Mark{})
	list, err := w.List(ctx, "main")
	if err != nil || len(list) != 2 {
		t.Fatalf("list %+v %v", list, err)
	}
	by := map[string]Worktree{}
	for _, l := range list {
		by[l.Item] = l
	}
	if !by["empty"].Merged || by["work"].Merged || by["work"].Ahead != 1 || by["work"].Branch != "cadre/work" {
		t.Errorf("list %+v", list)
	}
	if err := w.Remove(ctx, by["empty"], false, true); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(empty.Dir); !os.IsNotExist(err) {
		t.Error("worktree still there")
	}
	if _, err := r.Git(ctx, "rev-parse", "--verify", "-q", "refs/heads/cadre/empty"); err == nil {
		t.Error("branch not deleted")
	}
}
