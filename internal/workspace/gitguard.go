package workspace

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// maxWatched bounds how much of one watched file a snapshot keeps (one byte
// more is read, so growth past it shows): git configuration and hooks are
// small.
const maxWatched = 1 << 20

// GitState is a snapshot of what makes git run programs for a repository:
// every file its configuration is read from (includes, ~/.gitconfig and the
// system file too), config.worktree, info/attributes, the global attributes
// file, and the hooks directory. Agents must change none of it: a hook or a
// filter driver added there would run the next time cadre, or the user,
// runs git.
type GitState struct {
	root  string               // the main working tree, for naming paths
	files map[string]fileState // by absolute path
}

type fileState struct {
	exists bool
	mode   fs.FileMode
	link   string // a symlink's target
	data   []byte
	key    statKey // the stat it was read under; zero when not cacheable
}

// statKey is what a file's lstat says of its content. Writing a file or
// replacing it changes its ctime (and inode or size or mtime besides);
// ctime cannot be set back by a process short of changing the system
// clock, so an unchanged key means unchanged content, the way git trusts
// its index. A file changed within racyWindow of being looked at gets no
// key: a second change in the same timestamp tick would not show.
type statKey struct {
	ino, size           uint64
	mode                fs.FileMode
	mtime, ctimeS, ctNS int64
}

func keyOf(fi fs.FileInfo, now time.Time) (statKey, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return statKey{}, false
	}
	recent := now.Add(-racyWindow)
	if fi.ModTime().After(recent) || time.Unix(st.Ctim.Sec, st.Ctim.Nsec).After(recent) {
		return statKey{}, false
	}
	return statKey{ino: st.Ino, size: uint64(st.Size), mode: fi.Mode(), mtime: fi.ModTime().UnixNano(),
		ctimeS: st.Ctim.Sec, ctNS: st.Ctim.Nsec}, true
}

// stateCache keeps the watched files as last read, by path, so a snapshot
// before and after every agent step reads only what changed: a repository
// holds a dozen hooks and several configuration files, each opened and
// read twice per step otherwise.
type stateCache struct {
	mu    sync.Mutex
	files map[string]fileState
}

func (c *stateCache) read(p string) fileState {
	fi, err := os.Lstat(p)
	if err != nil {
		return fileState{}
	}
	key, ok := keyOf(fi, time.Now())
	if ok {
		c.mu.Lock()
		st, hit := c.files[p]
		c.mu.Unlock()
		if hit && st.key == key {
			return st
		}
	}
	st := readFrom(p, fi)
	if ok {
		st.key = key
		c.mu.Lock()
		if c.files == nil {
			c.files = map[string]fileState{}
		}
		c.files[p] = st
		c.mu.Unlock()
	}
	return st
}

func (a fileState) equal(b fileState) bool {
	return a.exists == b.exists && a.mode == b.mode && a.link == b.link && bytes.Equal(a.data, b.data)
}

// Snapshot records the repository's git state as seen from r's tree.
func (r *Repo) Snapshot(ctx context.Context) (*GitState, error) {
	common, gitDir, err := r.gitDirs(ctx)
	if err != nil {
		return nil, fmt.Errorf("snapshot git state: %w", err)
	}
	paths := append(baseConfigFiles(common, gitDir), filepath.Join(common, "info", "attributes"))
	// Every file configuration is read from, includes among them (asked
	// of git only when a configuration file changed: see configOrigins).
	c := r.gitCache()
	c.mu.Lock()
	paths = append(paths, r.configOrigins(ctx, c)...)
	c.mu.Unlock()
	hooks := filepath.Join(common, "hooks")
	paths = append(paths, hooks)
	filepath.WalkDir(hooks, func(p string, d fs.DirEntry, err error) error {
		if err == nil && p != hooks {
			paths = append(paths, p)
		}
		return nil
	})
	s := &GitState{root: filepath.Dir(common), files: map[string]fileState{}}
	for _, p := range paths {
		if _, seen := s.files[p]; !seen {
			s.files[p] = c.states.read(p)
		}
	}
	return s, nil
}

// globalFiles are the user-wide files git reads configuration and
// attributes from, whether or not they exist yet.
func globalFiles() []string {
	var out []string
	home, _ := os.UserHomeDir()
	xdg := os.Getenv("XDG_CONFIG_HOME")
	if xdg == "" && home != "" {
		xdg = filepath.Join(home, ".config")
	}
	if home != "" {
		out = append(out, filepath.Join(home, ".gitconfig"))
	}
	if xdg != "" {
		out = append(out, filepath.Join(xdg, "git", "config"), filepath.Join(xdg, "git", "attributes"))
	}
	return out
}

func readState(p string) fileState {
	fi, err := os.Lstat(p)
	if err != nil {
		return fileState{}
	}
	return readFrom(p, fi)
}

// readFrom reads the file p whose lstat is fi.
func readFrom(p string, fi fs.FileInfo) fileState {
	st := fileState{exists: true, mode: fi.Mode()}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		st.link, _ = os.Readlink(p)
	case fi.Mode().IsRegular():
		if f, err := os.Open(p); err == nil {
			st.data, _ = io.ReadAll(io.LimitReader(f, maxWatched+1))
			f.Close()
		}
	}
	return st
}

// Changed lists, by display name, what differs between s and a snapshot
// taken now: watched files changed, created or removed, and new files in
// the hooks directory.
func (s *GitState) Changed(ctx context.Context, r *Repo) ([]string, error) {
	now, err := r.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	var changed []string
	for p, st := range now.files {
		if before, ok := s.files[p]; ok && before.equal(st) {
			continue
		} else if !ok && !st.exists {
			continue
		}
		changed = append(changed, p)
	}
	for p, st := range s.files {
		if _, ok := now.files[p]; !ok && st.exists && !readState(p).equal(st) {
			changed = append(changed, p)
		}
	}
	slices.Sort(changed)
	return changed, nil
}

// Name is how a watched path is shown: relative to the main working tree
// (.git/config, .git/hooks/pre-commit), under ~ for the user's files, else
// absolute.
func (s *GitState) Name(p string) string {
	if rel, err := filepath.Rel(s.root, p); err == nil && !strings.HasPrefix(rel, "..") {
		return rel
	}
	if home, err := os.UserHomeDir(); err == nil && home != "" {
		if rel, err := filepath.Rel(home, p); err == nil && !strings.HasPrefix(rel, "..") {
			return "~/" + rel
		}
	}
	return p
}

// Restore puts the paths back as s recorded them: a file that did not
// exist is removed, one that did gets its content, mode or link target
// back. Directories are left in place (their new files are restored one by
// one). It returns the first error and goes on with the rest.
func (s *GitState) Restore(paths []string) error {
	var first error
	keep := func(err error) {
		if first == nil && err != nil {
			first = err
		}
	}
	// A directory replaced (by a link to elsewhere, say) is made again
	// first, so the files restored below land in it, not through the link.
	for _, p := range paths {
		if st, ok := s.files[p]; ok && st.exists && st.mode.IsDir() {
			if cur, err := os.Lstat(p); err == nil && !cur.IsDir() {
				keep(os.Remove(p))
			}
			keep(os.MkdirAll(p, st.mode.Perm()))
		}
	}
	// Deepest first, so a new directory's files go before the directory.
	slices.SortFunc(paths, func(a, b string) int { return len(b) - len(a) })
	for _, p := range paths {
		st, ok := s.files[p]
		cur, _ := os.Lstat(p)
		if cur != nil && cur.IsDir() && (!ok || !st.exists) {
			keep(os.RemoveAll(p))
			continue
		}
		if cur != nil && cur.IsDir() {
			continue
		}
		if !ok || !st.exists {
			if cur != nil {
				keep(os.Remove(p))
			}
			continue
		}
		if cur != nil {
			keep(os.Remove(p))
		}
		switch {
		case st.mode&fs.ModeSymlink != 0:
			keep(os.Symlink(st.link, p))
		case st.mode.IsRegular():
			keep(os.MkdirAll(filepath.Dir(p), 0o755))
			keep(os.WriteFile(p, st.data, st.mode.Perm()))
			keep(os.Chmod(p, st.mode.Perm()))
		}
	}
	if first != nil {
		return fmt.Errorf("restore git state: %w", first)
	}
	return nil
}
