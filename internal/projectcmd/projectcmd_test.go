package projectcmd

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cadre-dev/cadre/internal/proc"
	"github.com/cadre-dev/cadre/internal/redact"
	"github.com/cadre-dev/cadre/internal/sandbox"
)

// The configured commands run in order in the tree, a blank one not at
// all; their exits and the baseline's go into the summary, and their
// output into the step log with the secrets masked.
func TestBatchRun(t *testing.T) {
	dir := t.TempDir()
	logPath := filepath.Join(t.TempDir(), "logs", "checks.log")
	os.MkdirAll(filepath.Dir(logPath), 0o755)
	b := Batch{Step: "i/checks#1", Dir: dir, Log: logPath, Mask: redact.New("s3cr3t-token"),
		Lines:    map[string]string{"build": "echo built s3cr3t-token > out.txt", "test": "exit 3", "lint": "  "},
		Baseline: map[string]int{"test": 0}}
	exits, sum, err := b.Run(context.Background(), Names)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(map[string]int{"build": 0, "test": 3}, exits); d != "" {
		t.Errorf("exits (-want +got):\n%s", d)
	}
	for _, want := range []string{"# Checks (i/checks#1)", "| `echo built s3cr3t-token > out.txt` (build) | 0 | - |", "| `exit 3` (test) | 3 | 0 |", "Full output: " + logPath} {
		if !strings.Contains(sum, want) {
			t.Errorf("summary lacks %q:\n%s", want, sum)
		}
	}
	if strings.Contains(sum, "lint") {
		t.Errorf("the blank lint command is in the summary:\n%s", sum)
	}
	if data, err := os.ReadFile(filepath.Join(dir, "out.txt")); err != nil || string(data) != "built s3cr3t-token\n" {
		t.Errorf("the build ran elsewhere than the tree: %q, %v", data, err)
	}
	log, _ := os.ReadFile(logPath)
	if !strings.Contains(string(log), "$ exit 3") || strings.Contains(string(log), "s3cr3t-token") {
		t.Errorf("step log %q: want each command, the secret masked", log)
	}
}

// TestBatchSandbox: a confined batch's commands each get a fresh home, and
// their build caches are kept; no home is made in the host's home nor left
// on the host.
func TestBatchSandbox(t *testing.T) {
	bw, err := proc.FindBwrap("")
	if err != nil {
		t.Skipf("needs bubblewrap: %v", err)
	}
	if err := proc.ProbeSandbox(context.Background(), proc.Sandbox{Bwrap: bw}); err != nil {
		t.Skipf("the kernel forbids the sandbox here: %v", err)
	}
	home, tmp := t.TempDir(), t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("TMPDIR", tmp)
	pol := (&sandbox.Policy{Bwrap: bw, Network: sandbox.NetDeny}).ForItem(false, t.TempDir())
	run := func(lines map[string]string) map[string]int {
		t.Helper()
		logPath := filepath.Join(t.TempDir(), "checks.log")
		exits, _, err := Batch{Step: "i/checks#1", Dir: t.TempDir(), Log: logPath, Sandbox: pol, Lines: lines}.Run(context.Background(), Names)
		if err != nil {
			t.Fatal(err)
		}
		if log, _ := os.ReadFile(logPath); !strings.Contains(string(log), "sandboxed by bubblewrap") {
			t.Errorf("the log does not say the commands were confined:\n%s", log)
		}
		return exits
	}
	got := run(map[string]string{"install": `echo x > "$HOME/mark" && mkdir -p "$GOCACHE" && echo y > "$GOCACHE/kept"`,
		"build": `test ! -e "$HOME/mark" && test -f "$GOCACHE/kept"`})
	if d := cmp.Diff(map[string]int{"install": 0, "build": 0}, got); d != "" {
		t.Errorf("exits (-want +got):\n%s", d)
	}
	for _, d := range []string{home, tmp} {
		if entries, _ := os.ReadDir(d); len(entries) != 0 {
			t.Errorf("%s holds %v after the batches", d, entries)
		}
	}
}
