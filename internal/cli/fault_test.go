package cli

import (
	"bytes"
	"fmt"
	"strings"
	"syscall"
	"testing"

	"github.com/cadre-dev/cadre/internal/engine"
)

// A run stopped by a full disk is resumable: exit 130, and one line that
// says to free space and resume, not the exit 1 of a failed run.
func TestFaultStopIsResumable(t *testing.T) {
	var errOut bytes.Buffer
	f := &Factory{IO: IOStreams{Out: &bytes.Buffer{}, ErrOut: &errOut}}
	err := &engine.FaultStop{Run: "r1", Err: fmt.Errorf("write step file: x.json: %w", syscall.ENOSPC)}
	if code := exitCode(f, err); code != 130 {
		t.Errorf("exit code %d, want 130", code)
	}
	got := errOut.String()
	if !strings.Contains(got, "no space left on device; free disk space, then cadre resume r1 continues") || strings.Count(got, "\n") != 1 {
		t.Errorf("message %q", got)
	}
}
