package workspace

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// Hidden files are out of the tree while hidden, never committed as
// deleted, and back afterwards; a file written at a hidden path meanwhile
// is what the tree keeps.
func TestHideAndUnhide(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	files := map[string]string{
		".claude/settings.json": `{"hooks":{}}`, ".mcp.json": `{"mcpServers":{}}`, ".gemini/settings.json": "{}",
		".gemini/extensions/x/gemini-extension.json": "{}", ".envrc": "touch x\n", "keep.txt": "k\n",
		".claude/CLAUDE.md": "notes\n",
	}
	for p, c := range files {
		write(t, filepath.Join(r.Dir, p), c)
	}
	if err := r.ExcludeState(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := r.CommitAll(ctx, "m", Mark{}); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(r.Dir, ".codex", "config.toml"), "untracked\n")
	stash := filepath.Join(r.Dir, ".cadre", "hidden", "a")
	if err := r.Hide(ctx, stash); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{".claude/settings.json", ".mcp.json", ".gemini/settings.json", ".gemini/extensions/x/gemini-extension.json", ".envrc", ".codex/config.toml"} {
		if _, err := os.Lstat(filepath.Join(r.Dir, p)); err == nil {
			t.Errorf("%s is still in the tree", p)
		}
	}
	for _, p := range []string{"keep.txt", ".claude/CLAUDE.md"} {
		if _, err := os.Lstat(filepath.Join(r.Dir, p)); err != nil {
			t.Errorf("%s was hidden: %v", p, err)
		}
	}
	if dirty, _ := r.Dirty(ctx); len(dirty) != 0 {
		t.Errorf("git status shows %v while hidden", dirty)
	}
	// The agent writes its own .mcp.json; a commit meanwhile deletes nothing.
	write(t, filepath.Join(r.Dir, ".mcp.json"), `{"mcpServers":{"mine":{}}}`)
	write(t, filepath.Join(r.Dir, "work.txt"), "w\n")
	sha, err := r.CommitAll(ctx, "work", Mark{})
	if err != nil {
		t.Fatal(err)
	}
	if out, _ := r.Git(ctx, "diff", "--name-status", "HEAD~1", sha); out != "A\twork.txt\n" {
		t.Errorf("commit while hidden changed %q", out)
	}
	if err := r.Unhide(ctx, stash); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stash); err == nil {
		t.Error("the stash is left behind")
	}
	for p, c := range files {
		if p == ".mcp.json" {
			c = `{"mcpServers":{"mine":{}}}`
		}
		if got, _ := os.ReadFile(filepath.Join(r.Dir, p)); string(got) != c {
			t.Errorf("%s = %q after Unhide, want %q", p, got, c)
		}
	}
	if got, _ := os.ReadFile(filepath.Join(r.Dir, ".codex", "config.toml")); string(got) != "untracked\n" {
		t.Errorf(".codex/config.toml = %q", got)
	}
	dirty, _ := r.Dirty(ctx)
	slices.Sort(dirty)
	if want := []string{".codex/config.toml", ".mcp.json"}; !slices.Equal(dirty, want) {
		t.Errorf("dirty after Unhide = %v, want %v (the agent's .mcp.json shows as its change)", dirty, want)
	}
	if err := r.Unhide(ctx, stash); err != nil { // nothing hidden: a no-op
		t.Fatal(err)
	}
}

// A link on the way to a hidden path is hidden itself, and a link planted
// there meanwhile is never written through: the files outside the tree
// stay where they are.
func TestHideLinks(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	outside := t.TempDir()
	write(t, filepath.Join(outside, "settings.json"), "theirs\n")
	if err := os.Symlink(outside, filepath.Join(r.Dir, ".claude")); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(r.Dir, ".gemini", "settings.json"), "{}")
	stash := filepath.Join(t.TempDir(), "a")
	if err := r.Hide(ctx, stash); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(outside, "settings.json")); string(got) != "theirs\n" {
		t.Errorf("the file behind the link = %q while hidden", got)
	}
	if _, err := os.Lstat(filepath.Join(r.Dir, ".claude")); err == nil {
		t.Error(".claude is still in the tree")
	}
	// The agent turns .gemini into a link while it is hidden.
	if err := os.RemoveAll(filepath.Join(r.Dir, ".gemini")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(r.Dir, ".gemini")); err != nil {
		t.Fatal(err)
	}
	if err := r.Unhide(ctx, stash); err != nil {
		t.Fatal(err)
	}
	if target, err := os.Readlink(filepath.Join(r.Dir, ".claude")); err != nil || target != outside {
		t.Errorf(".claude after Unhide: %q, %v", target, err)
	}
	entries, _ := os.ReadDir(outside)
	if len(entries) != 1 {
		t.Errorf("outside the tree after Unhide: %v", entries)
	}
}
