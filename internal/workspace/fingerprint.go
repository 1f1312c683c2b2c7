package workspace

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Fingerprint sums what every file of the working tree (but .git and
// cadre's state) is on disk: its path, inode, size, and modification and
// change times; a directory counts by its path. Equal fingerprints say
// nothing there changed in between, without a git process. The change
// time cannot be set back by a process, so a file rewritten and its times
// restored still shows. Any difference (an ignored file too, or entries
// a directory now lists in another order) says "look closer".
func (r *Repo) Fingerprint() (uint64, error) {
	return r.fingerprint()
}

// fingerprint walks the tree by directory descriptors: each entry is
// read with one fstatat of its own name, not a lookup of its whole path,
// and in the order the directory lists it, unsorted. A reviewing step
// takes it three times, so its cost is paid per review.
func (r *Repo) fingerprint() (uint64, error) {
	// The tree's own path is cadre's, and may pass through a link.
	fd, err := unix.Open(r.Dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, fmt.Errorf("fingerprint the tree: %w", &os.PathError{Op: "open", Path: r.Dir, Err: err})
	}
	w := printWalk{h: fnvOffset, path: []byte(r.Dir)}
	if err := w.dir(fd, true); err != nil {
		return 0, fmt.Errorf("fingerprint the tree: %w", err)
	}
	return w.h, nil
}

// printWalk is one fingerprint's walk: the hash, a buffer for directory
// entries (on the walker's stack), and the path of the directory being
// read.
type printWalk struct {
	h    uint64 // FNV-1a, written out so that the walk stays off the heap
	buf  [4096]byte
	path []byte
}

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

func (w *printWalk) write(p []byte) {
	h := w.h
	for _, c := range p {
		h = (h ^ uint64(c)) * fnvPrime
	}
	w.h = h
}

func (w *printWalk) put(v uint64) {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], v)
	w.write(b[:])
}

// dir hashes the entries of the directory open at fd, recursing into
// subdirectories, and closes fd. At the top (top), .git and cadre's state
// are left out.
func (w *printWalk) dir(fd int, top bool) error {
	defer unix.Close(fd)
	names, err := readNames(fd, w.buf[:])
	if err != nil {
		return &os.PathError{Op: "readdirent", Path: string(w.path), Err: err}
	}
	for _, name := range names {
		if top && (name == ".git" || name == StateDir) {
			continue
		}
		var st unix.Stat_t
		if err := fstatat(fd, name, &st); err != nil {
			return &os.PathError{Op: "lstat", Path: string(w.path) + "/" + name, Err: err}
		}
		n := len(w.path)
		w.path = append(append(w.path, '/'), name...)
		w.path = append(w.path, 0)
		w.write(w.path)
		w.path = w.path[:len(w.path)-1]
		w.put(uint64(st.Mode))
		if st.Mode&unix.S_IFMT == unix.S_IFDIR {
			// Its entries speak for it: its own times move with
			// cadre's state appearing beside them.
			sub, err := openDir(fd, name)
			if err == nil {
				err = w.dir(sub, false)
			} else {
				err = &os.PathError{Op: "open", Path: string(w.path), Err: err}
			}
			w.path = w.path[:n]
			if err != nil {
				return err
			}
			continue
		}
		w.path = w.path[:n]
		w.put(uint64(st.Size))
		w.put(st.Ino)
		w.put(uint64(st.Mtim.Nano()))
		w.put(uint64(st.Ctim.Nano()))
	}
	return nil
}

// readNames lists the directory open at fd (but . and ..), in the order
// it gives them, reading through buf.
func readNames(fd int, buf []byte) ([]string, error) {
	var names []string
	for {
		n, err := unix.ReadDirent(fd, buf)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n <= 0 {
			return names, nil
		}
		_, _, names = unix.ParseDirent(buf[:n], -1, names)
	}
}

// openDir opens the directory name under dirfd, never through a link.
func openDir(dirfd int, name string) (int, error) {
	for {
		fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

func fstatat(dirfd int, name string, st *unix.Stat_t) error {
	for {
		if err := unix.Fstatat(dirfd, name, st, unix.AT_SYMLINK_NOFOLLOW); err != unix.EINTR {
			return err
		}
	}
}
