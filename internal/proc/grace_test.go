package proc

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestRunGraceBeforeKill: a timed-out agent, confined or not, is sent
// SIGTERM and given its grace before SIGKILL: its TERM handler, which
// takes a while, gets to write its file.
func TestRunGraceBeforeKill(t *testing.T) {
	for _, confined := range []bool{false, true} {
		name := map[bool]string{false: "unconfined", true: "confined"}[confined]
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			done := filepath.Join(dir, "term")
			s := sh(`trap 'sleep 0.3; echo term > "$0"; exit 0' TERM; echo ready; while :; do sleep 0.05; done`)
			s.Args = append(s.Args, done)
			s.Timeout, s.Grace = time.Second, 10*time.Second
			if confined {
				sb := needSandbox(t)
				sb.Write = []string{dir}
				s.Sandbox = &sb
			}
			res, err := Run(context.Background(), s)
			if !errors.Is(err, ErrTimeout) || !res.TimedOut {
				t.Fatalf("err = %v, TimedOut = %v; want a timeout", err, res.TimedOut)
			}
			if data, err := os.ReadFile(done); err != nil || string(data) != "term\n" {
				t.Errorf("the agent's TERM handler did not finish (%q, %v): it was not sent SIGTERM, or was killed within its grace", data, err)
			}
			if res.Duration > 5*time.Second {
				t.Errorf("Run took %s: it waited the whole grace for an agent that had exited", res.Duration)
			}
		})
	}
}

// TestRunLeavesNothingRunning: when Run returns, nothing the process
// started in its group (unconfined) or its sandbox (confined) is still
// running: a background writer writes nothing afterwards.
func TestRunLeavesNothingRunning(t *testing.T) {
	for _, confined := range []bool{false, true} {
		name := map[bool]string{false: "unconfined", true: "confined"}[confined]
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			f := filepath.Join(dir, "beat")
			s := sh(`(trap '' TERM; while :; do date +%s%N > "$0.tmp" && mv "$0.tmp" "$0"; done) & while [ ! -e "$0" ]; do sleep 0.01; done`)
			s.Args = append(s.Args, f)
			if confined {
				sb := needSandbox(t)
				sb.Write = []string{dir}
				s.Sandbox = &sb
			}
			if _, err := Run(context.Background(), s); err != nil {
				t.Fatal(err)
			}
			first, _ := os.ReadFile(f)
			time.Sleep(200 * time.Millisecond)
			if again, _ := os.ReadFile(f); !bytes.Equal(first, again) {
				t.Errorf("a process of the run still writes after Run returned: %q then %q", first, again)
			}
		})
	}
}
