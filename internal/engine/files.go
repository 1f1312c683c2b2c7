package engine

import (
	"fmt"
	"strings"

	"github.com/cadre-dev/cadre/internal/safefile"
)

// writeStepFile writes one of cadre's own step files (context, output)
// under root, the item's step directory, never through a link an agent
// planted there (cadre's write would land wherever the link points).
// No temp file, rename or fsync: the file is rewritten whenever its step
// runs again, and the journal, not this file, says whether the step
// completed, so a torn write after a crash is never read as a result.
func writeStepFile(root, path string, data []byte) error {
	if err := safefile.WriteMaking(root, path, data); err != nil {
		return fmt.Errorf("write step file: %w", err)
	}
	return nil
}

// plantedLink is the reason an item fails when cadre would have followed a
// link, or left its directory, to read or write one of its files: an
// agent of the item planted it, so the item fails, not the run (its other
// items and every resume go on).
func plantedLink(err error) string {
	return fmt.Sprintf("%v (an agent planted a link among the item's files; cadre follows none)", err)
}

// planted is the error a step of another process reported as msg (its
// text) when it found a planted link, wrapping safefile.ErrUnsafe again.
func planted(msg string) error {
	return fmt.Errorf("%s: %w", strings.TrimSuffix(msg, ": "+safefile.ErrUnsafe.Error()), safefile.ErrUnsafe)
}
