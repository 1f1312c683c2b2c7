package sandbox

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// maxHomeCopy bounds what one step copies from the user's home: a CLI's
// settings and credentials are small, its history and caches are not
// wanted.
const maxHomeCopy = 64 << 20

// copyHome copies the files and directories named in files (relative to
// from) into to. A missing one is skipped: the CLI may not have been set
// up. Symbolic links are not followed (a link could name any host file)
// and special files are skipped.
func copyHome(from, to string, files []string) error {
	if from == "" || len(files) == 0 {
		return nil
	}
	budget := int64(maxHomeCopy)
	for _, rel := range files {
		rel = filepath.Clean(rel)
		if filepath.IsAbs(rel) || rel == ".." || strings.HasPrefix(rel, "../") {
			return fmt.Errorf("sandbox: home file %q is not inside the home", rel)
		}
		src := filepath.Join(from, rel)
		// The CLI's own directory exists in the step's home whenever it
		// does in the user's, even with none of the listed files in it:
		// a CLI may refuse a configured home directory that is missing.
		if parent := filepath.Dir(rel); parent != "." {
			if fi, err := os.Lstat(filepath.Join(from, parent)); err == nil && fi.IsDir() {
				if err := os.MkdirAll(filepath.Join(to, parent), 0o700); err != nil {
					return fmt.Errorf("sandbox: home directory %s: %w", parent, err)
				}
			}
		}
		err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
					return nil
				}
				return err
			}
			r, _ := filepath.Rel(from, p)
			dst := filepath.Join(to, r)
			switch {
			case d.IsDir():
				return os.MkdirAll(dst, 0o700)
			case !d.Type().IsRegular():
				return nil
			}
			n, err := copyFile(p, dst, budget)
			budget -= n
			return err
		})
		if err != nil {
			return fmt.Errorf("sandbox: copy %s into the step's home: %w", rel, err)
		}
	}
	return nil
}

func copyFile(src, dst string, budget int64) (int64, error) {
	in, err := os.Open(src)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return 0, err
	}
	if fi.Size() > budget {
		return 0, fmt.Errorf("%s: over %d MiB copied into the home; list fewer files", src, maxHomeCopy>>20)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return 0, err
	}
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_EXCL, fi.Mode().Perm()|0o600)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return n, err
}
