package workspace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/cadre-dev/cadre/internal/safefile"
)

// RevertTo makes the tree's files (but .cadre/ and ignored ones) those of
// snap, a TreeState snapshot or a TreeOfChanges taken earlier, and returns
// the paths it put back: modified and deleted files get snap's content
// again, files added since are removed. The index is left alone.
func (r *Repo) RevertTo(ctx context.Context, snap string) ([]string, error) {
	tree, err := r.snapshotTree(ctx, snap)
	if err != nil {
		return nil, err
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

// ReviewMark is a file noting the tree a reviewing agent works on, and
// its role, for as long as it runs: found after a crash, it says what to
// put the tree back to (RevertTo). Path lies under Root, cadre's state,
// and is never read or written through a link.
type ReviewMark struct{ Root, Path string }

// Note records tree and role.
func (m ReviewMark) Note(tree, role string) error {
	if err := safefile.WriteMaking(m.Root, m.Path, []byte(tree+" "+role+"\n")); err != nil {
		return fmt.Errorf("note the reviewed tree: %w", err)
	}
	return nil
}

// Read returns the noted tree and role; "" when nothing is noted.
func (m ReviewMark) Read() (tree, role string, err error) {
	data, err := safefile.ReadFile(m.Root, m.Path)
	if errors.Is(err, os.ErrNotExist) {
		return "", "", nil
	}
	if err != nil {
		return "", "", fmt.Errorf("read the reviewed tree: %w", err)
	}
	tree, role, _ = strings.Cut(strings.TrimSpace(string(data)), " ")
	return tree, role, nil
}

// Clear empties the note. The file stays for the next note to write over:
// a file made and removed at every reviewing step makes every file made
// after it slower on some file systems (ext4 without a journal looks at
// each inode freed in the last minute).
func (m ReviewMark) Clear() error {
	data, err := safefile.ReadFile(m.Root, m.Path)
	if errors.Is(err, os.ErrNotExist) || (err == nil && len(data) == 0) {
		return nil
	}
	if err == nil {
		err = safefile.WriteFile(m.Root, m.Path, nil, 0o644)
	}
	if err != nil {
		return fmt.Errorf("clear the reviewed tree: %w", err)
	}
	return nil
}

// snapPrefix names the staged indexes snapshots keep in a tree's git
// directory.
const snapPrefix = "cadre-wip-index-"

// TreeState snapshots the tree for a step that holds it alone (nothing
// else writes it meanwhile) and returns the snapshot, for RevertTo, and the
// tree's Fingerprint. The snapshot is the tree's files staged in an index
// kept in the worktree's git directory, its tree written only if RevertTo
// needs it: one git process. (A tree run in place writes its tree at once
// and keeps no index: the repository's own git directory is the user's.)
// A tree whose fingerprint is that of the last snapshot of it is the same
// tree: its snapshot is reused, without a git process (the reviewing steps
// of an item's analysis and planning see one tree).
func (r *Repo) TreeState(ctx context.Context) (snap string, print uint64, err error) {
	if print, err = r.fingerprint(); err != nil {
		return "", 0, err
	}
	c := r.gitCache()
	c.mu.Lock()
	if c.snapPrint == print {
		snap = c.snap
		if c.snapIndex != "" {
			if _, err := os.Lstat(c.snapIndex); err != nil {
				snap = ""
			}
		}
	}
	c.mu.Unlock()
	if snap != "" {
		return snap, print, nil
	}
	staged, err := r.stageTree(ctx)
	if err != nil {
		return "", 0, err
	}
	snap = filepath.Base(staged)
	if _, err := os.Lstat(filepath.Join(r.Dir, StateDir)); err == nil {
		snap, err = r.writeTree(ctx, staged)
		os.Remove(staged)
		if err != nil {
			return "", 0, err
		}
		staged = ""
	}
	c.mu.Lock()
	old := c.snapIndex
	c.snap, c.snapPrint, c.snapIndex = snap, print, staged
	c.mu.Unlock()
	if old != "" {
		os.Remove(old)
	}
	return snap, print, nil
}

// snapshotTree is the tree id of snap, a TreeState snapshot or a tree id.
func (r *Repo) snapshotTree(ctx context.Context, snap string) (string, error) {
	if isObjectID(snap) {
		return snap, nil
	}
	if !strings.HasPrefix(snap, snapPrefix) || strings.ContainsAny(snap, `/\`) {
		return "", fmt.Errorf("revert: %q is not a snapshot", snap)
	}
	_, gitDir, err := r.gitDirs(ctx)
	if err != nil {
		return "", err
	}
	staged := filepath.Join(gitDir, snap)
	if _, err := os.Lstat(staged); err != nil {
		return "", fmt.Errorf("revert: snapshot %s: %w", snap, err)
	}
	tree, err := r.writeTree(ctx, staged)
	if err != nil {
		return "", fmt.Errorf("revert: %w", err)
	}
	return tree, nil
}

// stageSnapshot makes the index the one the last snapshot (TreeState)
// staged the tree in, when the tree is still the one it snapshot: what
// git add -A would make it, without a git process (a reviewed change is
// committed as the reviewer found it). It reports whether it did; the
// snapshot is used up either way.
func (r *Repo) stageSnapshot(ctx context.Context) bool {
	c := r.gitCache()
	c.mu.Lock()
	staged, print := c.snapIndex, c.snapPrint
	if staged != "" {
		c.snap, c.snapIndex = "", ""
	}
	c.mu.Unlock()
	if staged == "" {
		return false
	}
	defer os.Remove(staged)
	if now, err := r.fingerprint(); err != nil || now != print {
		return false
	}
	index := filepath.Join(filepath.Dir(staged), "index")
	// A snapshot that staged nothing new is still a link to the index
	// (stageTree): the index is the snapshot already. (A rename between
	// two links of one file does nothing, which would leave the lock.)
	if a, err := os.Stat(staged); err == nil {
		if b, err := os.Stat(index); err == nil && os.SameFile(a, b) {
			return true
		}
	}
	// Git's own lock: while a git process writes the index this gives
	// way, and no git process can write it until the rename is done.
	lock := index + ".lock"
	if err := os.Link(staged, lock); err != nil {
		return false
	}
	if err := os.Rename(lock, index); err != nil {
		os.Remove(lock)
		return false
	}
	return true
}
