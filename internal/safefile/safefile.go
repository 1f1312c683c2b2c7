// Package safefile reads and writes files an agent could have tampered
// with (its output, the step files beside it) without ever following a
// symbolic link. A path is resolved one component at a time from a root
// directory cadre trusts, each component opened with O_NOFOLLOW, so a link
// anywhere under the root (the file itself or a directory on the way) is
// refused instead of read through: an agent that turns its output file
// into a link to /etc/passwd or ~/.ssh/id_ed25519 must not get cadre to
// copy that file into the cycle log, an archive, a prompt or a pull
// request, nor get cadre's writes sent somewhere outside the root.
//
// Only regular files with a single link are accepted: a FIFO would hang
// the reader, and a hard link is another way to alias a file outside.
// OutsideLink finds the links in a tree that a commit must not carry.
package safefile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// ErrUnsafe is wrapped by every refusal: a symbolic link, a path leaving
// the root, or something other than a regular file with one link.
var ErrUnsafe = errors.New("not a plain file inside its directory")

// ReadFile reads path, which must lie under root, refusing links.
func ReadFile(root, path string) ([]byte, error) {
	fd, size, err := openFd(root, path, syscall.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer syscall.Close(fd)
	// Read on the descriptor, sized by its fstat: an *os.File would cost
	// three fcntl calls more per file, and cadre reads several per step.
	data := make([]byte, 0, size+1)
	for {
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)]
		}
		n, err := syscall.Read(fd, data[len(data):cap(data)])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", path, err)
		}
		if n == 0 {
			return data, nil
		}
		data = data[:len(data)+n]
	}
}

// WriteFile replaces the content of path, which must lie under root,
// creating it (and the directories on the way) when missing, refusing
// links. The existing file is checked before it is truncated, so a hard
// link to a file elsewhere is never emptied.
func WriteFile(root, path string, data []byte, perm os.FileMode) error {
	fd, size, err := openFd(root, path, syscall.O_WRONLY|syscall.O_CREAT, perm)
	if err != nil {
		return err
	}
	// Written over, then cut to length: ext4 takes a truncation to zero
	// followed by writes as a replacement and flushes the file to disk on
	// close, which a step file does not need.
	werr := pwriteAll(fd, data)
	if werr == nil && size > int64(len(data)) {
		werr = syscall.Ftruncate(fd, int64(len(data)))
	}
	if err := syscall.Close(fd); werr == nil {
		werr = err
	}
	if werr != nil {
		return fmt.Errorf("write %s: %w", path, werr)
	}
	return nil
}

func pwriteAll(fd int, data []byte) error {
	for off := 0; off < len(data); {
		n, err := syscall.Pwrite(fd, data[off:], int64(off))
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		off += n
	}
	return nil
}

// OpenAppend opens path (under root) for appending, creating it, refusing
// links: a step's transcript, which a re-ask appends to.
func OpenAppend(root, path string, perm os.FileMode) (*os.File, error) {
	fd, _, err := openFd(root, path, syscall.O_WRONLY|syscall.O_CREAT|syscall.O_APPEND, perm)
	if err != nil {
		return nil, err
	}
	// Back to blocking I/O for an ordinary file, before os.NewFile looks.
	if err := syscall.SetNonblock(fd, false); err != nil {
		syscall.Close(fd)
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return os.NewFile(uintptr(fd), path), nil
}

// Check says whether path (under root) is absent or a plain file; it
// refuses a link the way ReadFile would, without reading.
func Check(root, path string) error {
	fd, _, err := openFd(root, path, syscall.O_RDONLY, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return syscall.Close(fd)
}

// openFd resolves path under root component by component and opens the
// last one with flags, returning its descriptor and size. Missing
// directories are created when flags create. The descriptor is left
// non-blocking, which regular files ignore.
//
// The walk is repeated for every file rather than kept as open directory
// descriptors: it costs about 1.3 µs a file over a kept descriptor
// (BenchmarkWriteStepFile, tmpfs), about 10 µs per agent step,
// against a descriptor lifetime every caller would have to manage.
// Creating the file is what costs, on some file systems far more.
func openFd(root, path string, flags int, perm os.FileMode) (int, int64, error) {
	dir, name, err := openParent(root, path, flags&syscall.O_CREAT != 0)
	if err != nil {
		return -1, 0, err
	}
	// O_NONBLOCK: opening a FIFO an agent planted must not block; it is
	// refused below as not a regular file.
	fd, err := syscall.Openat(dir, name, flags|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, uint32(perm.Perm()))
	syscall.Close(dir)
	if err != nil {
		return -1, 0, refusal(path, err)
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		syscall.Close(fd)
		return -1, 0, fmt.Errorf("stat %s: %w", path, err)
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG || st.Nlink != 1 {
		syscall.Close(fd)
		return -1, 0, fmt.Errorf("%s: not a regular file with one link: %w", path, ErrUnsafe)
	}
	return fd, st.Size, nil
}

// openParent resolves the directories of path under root component by
// component, never through a link, making missing ones when create is
// set, and returns a descriptor of the last one and path's base name.
func openParent(root, path string, create bool) (int, string, error) {
	rel, err := filepath.Rel(root, path)
	if err != nil || !filepath.IsLocal(rel) {
		return -1, "", fmt.Errorf("%s: outside %s: %w", path, root, ErrUnsafe)
	}
	dir, err := syscall.Open(root, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return -1, "", &os.PathError{Op: "open", Path: root, Err: err}
	}
	parts := strings.Split(rel, string(filepath.Separator))
	for _, name := range parts[:len(parts)-1] {
		next, err := syscall.Openat(dir, name, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
		if errors.Is(err, syscall.ENOENT) && create {
			if err = syscall.Mkdirat(dir, name, 0o755); err == nil || errors.Is(err, syscall.EEXIST) {
				next, err = syscall.Openat(dir, name, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
			}
		}
		syscall.Close(dir)
		if err != nil {
			return -1, "", refusal(path, err)
		}
		dir = next
	}
	return dir, parts[len(parts)-1], nil
}

// Remove removes the file at path under root, never through a link on its
// way (a link at path itself is removed, not followed). A missing file or
// directory on the way is no error.
func Remove(root, path string) error {
	dir, name, err := openParent(root, path, false)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer syscall.Close(dir)
	if err := syscall.Unlinkat(dir, name); err != nil && !errors.Is(err, syscall.ENOENT) {
		return &os.PathError{Op: "remove", Path: path, Err: err}
	}
	return nil
}

// refusal names a link met on the way (ELOOP from O_NOFOLLOW) or a file
// where a directory should be as unsafe, and passes other errors through.
func refusal(path string, err error) error {
	switch {
	case errors.Is(err, syscall.ELOOP):
		return fmt.Errorf("%s: a symbolic link is on its path (not followed): %w", path, ErrUnsafe)
	case errors.Is(err, syscall.ENOTDIR):
		return fmt.Errorf("%s: a non-directory is on its path: %w", path, ErrUnsafe)
	}
	return &os.PathError{Op: "open", Path: path, Err: err}
}

// Replace writes path whole through a synced temp file beside it and a
// rename, so a reader never sees it half written and a crash leaves the
// old content or the new. It is for files in cadre's own directories (the
// cycle log, archives, a replica's files), where no agent plants links.
func Replace(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	_, werr := f.Write(data)
	if err := f.Sync(); werr == nil {
		werr = err
	}
	if err := f.Close(); werr == nil {
		werr = err
	}
	if werr == nil {
		werr = os.Rename(f.Name(), path)
	}
	if werr != nil {
		os.Remove(f.Name())
		return fmt.Errorf("write %s: %w", path, werr)
	}
	return nil
}

// WriteMaking is WriteFile (perm 0644) that makes root when it does not
// exist yet: only on first use, as a MkdirAll before every write would
// stat root each time. It is for cadre's own files in a directory agents
// can reach (a step's context and output, the cycle log), rewritten
// whole when their step runs again: no temp file, rename or fsync.
func WriteMaking(root, path string, data []byte) error {
	err := WriteFile(root, path, data, 0o644)
	if errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(root, 0o755); err != nil {
			return fmt.Errorf("create %s: %w", root, err)
		}
		err = WriteFile(root, path, data, 0o644)
	}
	return err
}
