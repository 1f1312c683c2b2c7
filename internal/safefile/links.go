package safefile

import (
	"os"
	"path/filepath"
)

// OutsideLink reports whether rel (relative to root) is a symbolic link
// whose target leaves root, lexically (an absolute or climbing target) or
// once resolved (a link to a link that leaves), and its target. Such a
// link, committed, makes whoever checks the tree out read the file it
// names.
func OutsideLink(root, rel string) (target string, outside bool) {
	path := filepath.Join(root, rel)
	fi, err := os.Lstat(path)
	if err != nil || fi.Mode()&os.ModeSymlink == 0 {
		return "", false
	}
	target, err = os.Readlink(path)
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
