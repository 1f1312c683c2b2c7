package workspace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// RevertTo makes the tree's files (but .cadre/ and ignored ones) those of
// tree, a TreeOfChanges taken earlier, and returns the paths it put back:
// modified and deleted files get tree's content again, files added since
// are removed. The index is left alone.
func (r *Repo) RevertTo(ctx context.Context, tree string) ([]string, error) {
	if !isObjectID(tree) {
		return nil, fmt.Errorf("revert: %q is not a tree id", tree)
	}
	now, err := r.TreeOfChanges(ctx)
	if err != nil || now == tree {
		return nil, err
	}
	out, err := r.Git(ctx, "diff-tree", "-r", "-z", "--no-renames", "--name-status", tree, now)
	if err != nil {
		return nil, fmt.Errorf("revert: %w", err)
	}
	var paths, restore []string
	fields := strings.Split(strings.TrimSuffix(out, "\x00"), "\x00")
	for i := 0; i+1 < len(fields); i += 2 {
		status, p := fields[i], fields[i+1]
		paths = append(paths, p)
		if status != "A" {
			restore = append(restore, ":(top,literal)"+p)
			continue
		}
		// Git never records a path beyond a symbolic link, so p names
		// a file in the tree, not one a planted link leads to.
		if err := os.Remove(filepath.Join(r.Dir, filepath.FromSlash(p))); err != nil && !errors.Is(err, os.ErrNotExist) {
			return paths, fmt.Errorf("revert: %w", err)
		}
	}
	if len(restore) > 0 {
		args := append([]string{"restore", "--source=" + tree, "--worktree", "--"}, restore...)
		if _, err := r.Git(ctx, args...); err != nil {
			return paths, fmt.Errorf("revert: %w", err)
		}
	}
	return paths, nil
}
