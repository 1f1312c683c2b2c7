package engine

import (
	"fmt"
	"os"
	"path/filepath"
)

// outsideLinks refuses a commit whose changes hold a symbolic link
// pointing outside the item's tree. git commits a link, not what it points
// at, but the link travels in the branch and the pull request: whoever
// checks it out (a reviewer, CI, the next agent, cadre reading a file back)
// reads the host file it names. The changes are what the commit adds and
// what the item's branch made since the base (an agent may commit itself):
// workspace.Repo.Commit lists both in one diff and hands them here.
func outsideLinks(ir *itemRun) func(paths []string) error {
	return func(paths []string) error {
		for _, p := range paths {
			if target, bad := outsideLink(ir.dir, p); bad {
				return fmt.Errorf("commit refused: %s is a symbolic link to %s, outside the worktree (remove it or point it inside)", p, target)
			}
		}
		return nil
	}
}

// outsideLink reports whether rel (relative to root) is a symbolic link
// whose target leaves root, lexically (an absolute or climbing target) or
// once resolved (a link to a link that leaves).
func outsideLink(root, rel string) (string, bool) {
	path := filepath.Join(root, rel)
	fi, err := os.Lstat(path)
	if err != nil || fi.Mode()&os.ModeSymlink == 0 {
		return "", false
	}
	target, err := os.Readlink(path)
	if err != nil {
		return "(unreadable)", true
	}
	abs := target
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(filepath.Dir(path), target)
	}
	if !within(root, abs) {
		return target, true
	}
	// A dangling link stays inside by its text; a resolvable one must
	// resolve inside the tree as resolved itself.
	if real, err := filepath.EvalSymlinks(path); err == nil {
		if rroot, err := filepath.EvalSymlinks(root); err == nil && !within(rroot, real) {
			return target, true
		}
	}
	return "", false
}

// within reports whether path is root or under it (both cleaned).
func within(root, path string) bool {
	rel, err := filepath.Rel(root, path)
	return err == nil && filepath.IsLocal(rel) // "." is local too
}
