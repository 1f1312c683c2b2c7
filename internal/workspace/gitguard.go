package workspace

import (
	"bytes"
	"context"
	"fmt"
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
	root   string      // the main working tree, for naming paths
	paths  []string    // watched, absolute; read-only, shared by snapshots while the list holds
	states []fileState // paths[i]'s
}

// state is what s recorded of p, if it watched p.
func (s *GitState) state(p string) (fileState, bool) {
	if i := slices.Index(s.paths, p); i >= 0 {
		return s.states[i], true
	}
	return fileState{}, false
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

func keyOf(st *syscall.Stat_t, now time.Time) (statKey, bool) {
	recent := now.Add(-racyWindow).UnixNano()
	if st.Mtim.Nano() > recent || st.Ctim.Nano() > recent {
		return statKey{}, false
	}
	return statKey{ino: st.Ino, size: uint64(st.Size), mode: modeOf(st), mtime: st.Mtim.Nano(),
		ctimeS: st.Ctim.Sec, ctNS: st.Ctim.Nsec}, true
}

// lstat is os.Lstat into st: the guard stats every watched file twice per
// agent step, and os.Lstat's FileInfo is an allocation each.
func lstat(p string, st *syscall.Stat_t) error {
	for {
		if err := syscall.Lstat(p, st); err != syscall.EINTR {
			return err
		}
	}
}

// modeOf is the fs.FileMode of st, as os.Lstat would give it.
func modeOf(st *syscall.Stat_t) fs.FileMode {
	mode := fs.FileMode(st.Mode & 0o777)
	switch st.Mode & syscall.S_IFMT {
	case syscall.S_IFBLK:
		mode |= fs.ModeDevice
	case syscall.S_IFCHR:
		mode |= fs.ModeDevice | fs.ModeCharDevice
	case syscall.S_IFDIR:
		mode |= fs.ModeDir
	case syscall.S_IFIFO:
		mode |= fs.ModeNamedPipe
	case syscall.S_IFLNK:
		mode |= fs.ModeSymlink
	case syscall.S_IFSOCK:
		mode |= fs.ModeSocket
	}
	if st.Mode&syscall.S_ISGID != 0 {
		mode |= fs.ModeSetgid
	}
	if st.Mode&syscall.S_ISUID != 0 {
		mode |= fs.ModeSetuid
	}
	if st.Mode&syscall.S_ISVTX != 0 {
		mode |= fs.ModeSticky
	}
	return mode
}

// stateCache keeps the watched files as last read, by path, so a snapshot
// before and after every agent step reads only what changed: a repository
// holds a dozen hooks and several configuration files, each opened and
// read twice per step otherwise.
type stateCache struct {
	mu    sync.Mutex
	files map[string]fileState
}

func (c *stateCache) read(p string, now time.Time) fileState {
	var sys syscall.Stat_t
	if lstat(p, &sys) != nil {
		return fileState{}
	}
	key, ok := keyOf(&sys, now)
	c.mu.Lock()
	prev, hit := c.files[p]
	c.mu.Unlock()
	if ok && hit && prev.key == key {
		return prev
	}
	// Read again; content equal to what was kept is shared, not copied,
	// so a file read at every step while racy costs no memory.
	st := readFrom(p, &sys, prev)
	st.key = key // zero when racy: kept for its content, never trusted by stat
	c.mu.Lock()
	if c.files == nil {
		c.files = map[string]fileState{}
	}
	c.files[p] = st
	c.mu.Unlock()
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
	hooks := filepath.Join(common, "hooks")
	now := time.Now()
	// Every file configuration is read from, includes among them (asked
	// of git only when a configuration file changed: see configOrigins),
	// and the hooks. The list is kept while the configuration's stamp and
	// the hooks directory's stat hold: a file added to or removed from the
	// directory changes its stat.
	c := r.gitCache()
	c.mu.Lock()
	origins := r.configOrigins(ctx, c)
	stamp := c.stamp
	var paths []string
	if stamp != "" && stamp == c.watchStamp && c.hooksKey != (statKey{}) {
		var sys syscall.Stat_t
		if lstat(hooks, &sys) == nil {
			if key, ok := keyOf(&sys, now); ok && key == c.hooksKey {
				paths = c.watched
			}
		}
	}
	c.mu.Unlock()
	if paths == nil {
		var hooksKey statKey
		paths, hooksKey = watchList(common, gitDir, origins, hooks, now)
		c.mu.Lock()
		c.watched, c.watchStamp, c.hooksKey = paths, stamp, hooksKey
		c.mu.Unlock()
	}
	s := &GitState{root: filepath.Dir(common), paths: paths, states: make([]fileState, len(paths))}
	for i, p := range paths {
		s.states[i] = c.states.read(p, now)
	}
	return s, nil
}

// watchList is every path a snapshot looks at, each once, and the stat
// key of the hooks directory taken before it was listed (zero when the
// listing cannot be kept: the directory is racy or holds a directory,
// whose own entries would change without the hooks directory's stat).
func watchList(common, gitDir string, origins []string, hooks string, now time.Time) ([]string, statKey) {
	var key statKey
	var sys syscall.Stat_t
	if lstat(hooks, &sys) == nil {
		key, _ = keyOf(&sys, now)
	}
	paths := append(baseConfigFiles(common, gitDir), filepath.Join(common, "info", "attributes"))
	paths = append(paths, origins...)
	paths = append(paths, hooks)
	filepath.WalkDir(hooks, func(p string, d fs.DirEntry, err error) error {
		// git init's samples never run (git runs a hook by its exact
		// name), and one renamed to run changes the directory's stat,
		// which is watched: a dozen fewer stats a check.
		if err == nil && p != hooks && (d.IsDir() || !strings.HasSuffix(d.Name(), ".sample")) {
			paths = append(paths, p)
			if d.IsDir() {
				key = statKey{}
			}
		}
		return nil
	})
	seen := make(map[string]bool, len(paths))
	return slices.DeleteFunc(paths, func(p string) bool {
		dup := seen[p]
		seen[p] = true
		return dup
	}), key
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
	var sys syscall.Stat_t
	if lstat(p, &sys) != nil {
		return fileState{}
	}
	return readFrom(p, &sys, fileState{})
}

// readFrom reads the file p whose lstat is sys. When the content equals
// prev's, prev's bytes are returned rather than a copy.
func readFrom(p string, sys *syscall.Stat_t, prev fileState) fileState {
	st := fileState{exists: true, mode: modeOf(sys)}
	switch {
	case st.mode&fs.ModeSymlink != 0:
		st.link, _ = os.Readlink(p)
	case st.mode.IsRegular():
		buf := scratch.Get().(*[]byte)
		defer scratch.Put(buf)
		data, err := readSmall(p, sys.Size, buf)
		switch {
		case err != nil:
		case prev.exists && prev.mode.IsRegular() && bytes.Equal(data, prev.data):
			st.data = prev.data
		default:
			st.data = bytes.Clone(data)
		}
	}
	return st
}

// scratch holds read buffers for watched files, most of which are read
// only to be found unchanged.
var scratch = sync.Pool{New: func() any { b := make([]byte, 0, 8<<10); return &b }}

// readSmall reads at most maxWatched+1 bytes of p into *buf (grown to the
// size its stat gave, plus one byte so growth shows) and returns them; the
// result is valid until *buf is reused. It reads on a bare descriptor: an
// *os.File costs an allocation and three more system calls, and a
// snapshot may read every hook. Links are not followed and a FIFO put in
// the file's place does not block: a snapshot reads what it statted or
// fails.
func readSmall(p string, size int64, buf *[]byte) ([]byte, error) {
	var fd int
	var err error
	for {
		fd, err = syscall.Open(p, syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: p, Err: err}
	}
	defer syscall.Close(fd)
	want := int(min(size, maxWatched)) + 1
	if cap(*buf) < want {
		*buf = make([]byte, 0, want)
	}
	data := (*buf)[:0]
	for len(data) < maxWatched+1 {
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)]
		}
		n, err := syscall.Read(fd, data[len(data):min(cap(data), maxWatched+1)])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			*buf = data[:0]
			return nil, &os.PathError{Op: "read", Path: p, Err: err}
		}
		if n == 0 {
			break
		}
		data = data[:len(data)+n]
	}
	*buf = data[:0]
	return data, nil
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
	if slices.Equal(s.paths, now.paths) {
		for i, p := range now.paths {
			if !s.states[i].equal(now.states[i]) {
				changed = append(changed, p)
			}
		}
		slices.Sort(changed)
		return changed, nil
	}
	for i, p := range now.paths {
		st := now.states[i]
		if before, ok := s.state(p); ok && before.equal(st) {
			continue
		} else if !ok && !st.exists {
			continue
		}
		changed = append(changed, p)
	}
	for i, p := range s.paths {
		if _, ok := now.state(p); !ok && s.states[i].exists && !readState(p).equal(s.states[i]) {
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
		if st, ok := s.state(p); ok && st.exists && st.mode.IsDir() {
			if cur, err := os.Lstat(p); err == nil && !cur.IsDir() {
				keep(os.Remove(p))
			}
			keep(os.MkdirAll(p, st.mode.Perm()))
		}
	}
	// Deepest first, so a new directory's files go before the directory.
	slices.SortFunc(paths, func(a, b string) int { return len(b) - len(a) })
	for _, p := range paths {
		st, ok := s.state(p)
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
