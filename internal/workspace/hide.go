package workspace

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// ExecConfig lists the files and directories (relative to a tree's root)
// that make a tool run programs as soon as it starts in the tree: agent CLI
// hooks, MCP servers, plugins and lint/test commands, and direnv's .envrc.
var ExecConfig = []string{
	".claude/settings.json", ".claude/settings.local.json", ".mcp.json",
	".codex", ".gemini", ".opencode", "opencode.json", "opencode.jsonc",
	".aider.conf.yml", ".envrc",
	".qwen", ".github/copilot", ".github/mcp.json", "crush.json", ".crush.json",
}

// hiddenManifest records what Hide moved, so Unhide can put it back after
// a crash as well as after the step.
const hiddenManifest = "hidden.json"

type manifest struct {
	Paths   []string `json:"paths"`   // moved files, relative to the tree
	Tracked []string `json:"tracked"` // those git tracks: skip-worktree set
}

// Hide moves the tree's ExecConfig files into stash (a directory outside
// the tree) so no tool started in the tree finds them. Tracked ones get
// git's skip-worktree bit: a commit made while they are away records them
// unchanged, not deleted, and git status shows nothing. Unhide undoes it.
func (r *Repo) Hide(ctx context.Context, stash string) error {
	if err := r.Unhide(ctx, stash); err != nil { // a crash's leftovers first
		return err
	}
	var m manifest
	seen := map[string]bool{}
	add := func(rel string) {
		if !seen[rel] {
			seen[rel] = true
			m.Paths = append(m.Paths, rel)
		}
	}
	for _, top := range ExecConfig {
		// A link on the way (.claude -> elsewhere) is hidden itself: the
		// files it leads to are not the tree's to move.
		if link := linkOnPath(r.Dir, top); link != "" {
			add(link)
			continue
		}
		// Most trees have none of these: a stat that allocates nothing
		// says so before a walk that would.
		var st syscall.Stat_t
		if lstat(filepath.Join(r.Dir, top), &st) == syscall.ENOENT {
			continue
		}
		filepath.WalkDir(filepath.Join(r.Dir, top), func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				rel, _ := filepath.Rel(r.Dir, p)
				add(filepath.ToSlash(rel))
			}
			return nil
		})
	}
	if len(m.Paths) == 0 {
		return nil
	}
	specs := []string{"ls-files", "-z", "--"}
	for _, p := range m.Paths {
		specs = append(specs, ":(literal)"+p) // a file name is never pathspec magic
	}
	out, err := r.Git(ctx, specs...)
	if err != nil {
		return fmt.Errorf("hide repository configuration: %w", err)
	}
	for _, p := range strings.Split(out, "\x00") {
		if p != "" {
			m.Tracked = append(m.Tracked, p)
		}
	}
	if err := os.MkdirAll(stash, 0o700); err != nil {
		return fmt.Errorf("hide repository configuration: %w", err)
	}
	data, _ := json.Marshal(m)
	// The manifest is written before anything moves, so a crash at any
	// point leaves Unhide what it needs.
	if err := os.WriteFile(filepath.Join(stash, hiddenManifest), data, 0o600); err != nil {
		return fmt.Errorf("hide repository configuration: %w", err)
	}
	if len(m.Tracked) > 0 {
		if _, err := r.Git(ctx, append([]string{"update-index", "--skip-worktree", "--"}, m.Tracked...)...); err != nil {
			return fmt.Errorf("hide repository configuration: %w", err)
		}
	}
	for _, p := range m.Paths {
		dst := filepath.Join(stash, "files", filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
			return fmt.Errorf("hide %s: %w", p, err)
		}
		if err := os.Rename(filepath.Join(r.Dir, filepath.FromSlash(p)), dst); err != nil {
			return fmt.Errorf("hide %s: %w", p, err)
		}
	}
	return nil
}

// Unhide puts back what Hide moved into stash. A file written meanwhile at
// one of its paths (an agent's own work) is kept, and the hidden one is
// dropped: the tree, and so the commit, holds what the agent wrote. No
// manifest in stash means nothing is hidden.
func (r *Repo) Unhide(ctx context.Context, stash string) error {
	var st syscall.Stat_t
	if lstat(stash, &st) == syscall.ENOENT {
		return nil // nothing hidden: the usual case, asked at every step
	}
	data, err := os.ReadFile(filepath.Join(stash, hiddenManifest))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("put back repository configuration: %w", err)
	}
	var m manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return fmt.Errorf("put back repository configuration: %s: %w", filepath.Join(stash, hiddenManifest), err)
	}
	for _, p := range m.Paths {
		src := filepath.Join(stash, "files", filepath.FromSlash(p))
		dst := filepath.Join(r.Dir, filepath.FromSlash(p))
		if _, err := os.Lstat(src); err != nil {
			continue // put back before a crash
		}
		if linkOnPath(r.Dir, p) != "" {
			continue // a link planted on the way: never put back through it
		}
		if _, err := os.Lstat(dst); err == nil {
			continue // the agent's own file stays
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return fmt.Errorf("put back %s: %w", p, err)
		}
		if err := os.Rename(src, dst); err != nil {
			return fmt.Errorf("put back %s: %w", p, err)
		}
	}
	if len(m.Tracked) > 0 {
		if _, err := r.Git(ctx, append([]string{"update-index", "--no-skip-worktree", "--"}, m.Tracked...)...); err != nil {
			return fmt.Errorf("put back repository configuration: %w", err)
		}
	}
	if err := os.RemoveAll(stash); err != nil {
		return fmt.Errorf("put back repository configuration: %w", err)
	}
	return nil
}

// linkOnPath returns the first directory on the way to rel (slash-separated,
// relative to root) that is a symbolic link, or "" when there is none.
func linkOnPath(root, rel string) string {
	for i := 0; i < len(rel); i++ {
		if rel[i] != '/' {
			continue
		}
		dir := rel[:i]
		var st syscall.Stat_t
		if lstat(filepath.Join(root, filepath.FromSlash(dir)), &st) != nil {
			return ""
		}
		if st.Mode&syscall.S_IFMT == syscall.S_IFLNK {
			return dir
		}
	}
	return ""
}
