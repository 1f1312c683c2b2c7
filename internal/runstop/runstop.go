// Package runstop tells every process working on a run to start no new
// step, through two files under the run's directory in the state
// directory (.cadre/runs/<run>/): stop, written by cadre stop (Request),
// and halt, written when one of the run's items failed it (a hard stop,
// a tampered tree) and holding why (Halt). A running step finishes
// either way; resuming the run removes both (Withdraw, Lift). The files
// reach the processes that share the state directory; an executor tells
// the others itself.
package runstop

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

func path(stateDir, run, name string) string {
	return filepath.Join(stateDir, "runs", run, name)
}

// write writes a run's file name, making the run's directory.
func write(stateDir, run, name string, data []byte) error {
	p := path(stateDir, run, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, data, 0o644)
}

// remove removes a run's file name; one already gone is no error.
func remove(stateDir, run, name string) error {
	if err := os.Remove(path(stateDir, run, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

func exists(stateDir, run, name string) bool {
	_, err := os.Stat(path(stateDir, run, name))
	return err == nil
}

// Request asks run to start no new step; a running step finishes.
func Request(stateDir, run string) error {
	if err := write(stateDir, run, "stop", []byte(time.Now().UTC().Format(time.RFC3339)+"\n")); err != nil {
		return fmt.Errorf("request stop: %w", err)
	}
	return nil
}

// RequestNow asks run to stop at once, its running steps cancelled (cadre
// stop --now of a process that otherwise stops gracefully on a signal).
func RequestNow(stateDir, run string) error {
	if err := write(stateDir, run, "now", []byte(time.Now().UTC().Format(time.RFC3339)+"\n")); err != nil {
		return fmt.Errorf("request stop: %w", err)
	}
	return nil
}

// Wake asks the process holding run (cadre watch) to make a pass now, not
// at its next by the clock: a person answered what it waits on.
func Wake(stateDir, run string) error {
	if err := write(stateDir, run, "wake", []byte(time.Now().UTC().Format(time.RFC3339)+"\n")); err != nil {
		return fmt.Errorf("wake %s: %w", run, err)
	}
	return nil
}

// TakeWake says whether a pass was asked of run's process (Wake), and
// takes the request: it is answered once.
func TakeWake(stateDir, run string) bool {
	return os.Remove(path(stateDir, run, "wake")) == nil
}

// NowRequested says whether cadre stop --now asked run to stop at once.
func NowRequested(stateDir, run string) bool { return exists(stateDir, run, "now") }

// Requested says whether cadre stop asked run to stop.
func Requested(stateDir, run string) bool { return exists(stateDir, run, "stop") }

// Withdraw removes run's stop request, as the run resumes.
func Withdraw(stateDir, run string) error {
	remove(stateDir, run, "now")
	if err := remove(stateDir, run, "stop"); err != nil {
		return fmt.Errorf("withdraw the stop of run %s: %w", run, err)
	}
	return nil
}

// Halt tells the run's items in every process that the run halted, and
// why.
func Halt(stateDir, run, reason string) error {
	if err := write(stateDir, run, "halt", []byte(reason+"\n")); err != nil {
		return fmt.Errorf("halt run %s: %w", run, err)
	}
	return nil
}

// Halted says whether one of run's items halted it.
func Halted(stateDir, run string) bool { return exists(stateDir, run, "halt") }

// HaltReason is why run halted, or "" when it did not.
func HaltReason(stateDir, run string) string {
	data, err := os.ReadFile(path(stateDir, run, "halt"))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
}

// Lift removes run's halt: the halt of the run's last attempt is over,
// its items go on.
func Lift(stateDir, run string) error {
	if err := remove(stateDir, run, "halt"); err != nil {
		return fmt.Errorf("lift the halt of run %s: %w", run, err)
	}
	return nil
}
