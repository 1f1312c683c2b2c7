package engine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/cadre-dev/cadre/internal/safefile"
)

// writeFileAtomic writes path through a synced temp file and a rename, for
// files people keep (archives): a crash leaves the old or the new content.
func writeFileAtomic(path string, data []byte) error {
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

// writeStepFile writes one of cadre's own step files (context, output)
// under root, the item's step directory, never through a link an agent
// planted there (cadre's write would land wherever the link points).
// No temp file, rename or fsync: the file is rewritten whenever its step
// runs again, and the journal, not this file, says whether the step
// completed, so a torn write after a crash is never read as a result.
func writeStepFile(root, path string, data []byte) error {
	err := safefile.WriteFile(root, path, data, 0o644)
	if errors.Is(err, os.ErrNotExist) {
		// The root is made on first use only: a MkdirAll before every
		// write would stat it at every step.
		if err := os.MkdirAll(root, 0o755); err != nil {
			return fmt.Errorf("create %s: %w", root, err)
		}
		err = safefile.WriteFile(root, path, data, 0o644)
	}
	if err != nil {
		return fmt.Errorf("write step file: %w", err)
	}
	return nil
}
