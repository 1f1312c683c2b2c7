// Package runnertest is the conformance suite every runner backend passes:
// the context file reaches the agent, the reply (or the output file) comes
// back, usage is reported, a timeout or cancellation takes down the agent's
// whole process group, a crash surfaces its exit code and stderr, the agent's
// environment is minimal, and a flood of output stays bounded.
//
// A backend's test builds a runner that behaves in each named way (see
// Behavior) and calls Run:
//
//	func TestConformance(t *testing.T) {
//		runnertest.Run(t, runnertest.Harness{New: newFake})
//	}
//
// Run sets environment variables with t.Setenv, so the calling test must not
// be parallel.
package runnertest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/proc"
	"github.com/cadre-dev/cadre/internal/redact"
	"github.com/cadre-dev/cadre/internal/runner"
	"github.com/cadre-dev/cadre/internal/signal"
)

// Behavior names a way the runner under test is built to behave.
type Behavior string

// The behaviours the suite asks for. A backend that cannot produce one calls
// t.Skip in Harness.New with the reason.
const (
	// OK writes WorkFile in inv.Dir and replies with OKReply (or another
	// reply whose SIGNAL BLOCK has Result SUCCESS), reporting OKUsage when the
	// backend reports usage.
	OK Behavior = "ok"
	// WriteOutput writes a reply with a SUCCESS SIGNAL BLOCK to inv.OutputPath
	// itself.
	WriteOutput Behavior = "write-output"
	// Crash writes CrashStderr to stderr and exits with CrashExit.
	Crash Behavior = "crash"
	// Hang runs until stopped. A backend that runs agent processes starts a
	// child process that also sleeps, writes the child's pid to ChildPIDFile
	// in inv.Dir, and then waits.
	Hang Behavior = "hang"
	// Flood writes FloodSize bytes to stdout and exits 0.
	Flood Behavior = "flood"
	// Env replies with the names of its environment variables, one a line.
	Env Behavior = "env"
	// Context replies with the taskId field of the JSON context file at
	// inv.ContextPath.
	Context Behavior = "context"
)

// What the behaviours produce, so every backend's fake agrees with the suite.
const (
	WorkFile     = "work.txt"
	ChildPIDFile = "child.pid"
	CrashExit    = 3
	CrashStderr  = "boom"
	FloodSize    = 20 << 20
	// SecretEnv is set in the test process while Env runs; the agent must
	// not see it.
	SecretEnv = "CADRE_TEST_SECRET"
)

// OKReply is a reply ending in a SIGNAL BLOCK with Result SUCCESS, for fakes
// that print a fixed text.
const OKReply = `Wrote work.txt.

### SIGNAL BLOCK
- Agent: coder
- Result: SUCCESS
- Loop Summary: wrote work.txt
- Confidence: 9
- Next: auditor
`

// OKUsage is the usage the OK behaviour reports. Cost is checked only for a
// runner whose Capabilities say it reports cost.
var OKUsage = event.Usage{InputTokens: 1200, OutputTokens: 340, CostUSD: 0.0123}

// Harness describes the backend under test.
type Harness struct {
	// New returns a runner that behaves as b. It may call t.Skip when the
	// backend cannot behave that way, and t.Fatal when it cannot be built.
	New func(t *testing.T, b Behavior) runner.Runner
	// Usage says the backend reports token usage, so OK must report OKUsage.
	Usage bool
	// InProcess says the backend runs no agent process (the script runner):
	// Hang then starts no child, and the timeout and cancel checks look only
	// at how Run ends.
	InProcess bool
	// MaxOutput caps Result.Output; 0 means proc.DefaultMaxStdout.
	MaxOutput int64
	// MaxLog caps the log file, apart from the lines the runner adds around
	// the agent's own output; 0 means proc.DefaultMaxLog.
	MaxLog int64
}

// logSlack allows for what a runner writes to the log besides the capped
// agent output: a command line at the top, a truncation note at the end.
const logSlack = 64 << 10

// Run checks the runner built by h against the runner contract.
func Run(t *testing.T, h Harness) {
	t.Helper()
	if h.New == nil {
		t.Fatal("runnertest: Harness.New is nil")
	}
	t.Run("output", func(t *testing.T) { checkOutput(t, h) })
	t.Run("usage", func(t *testing.T) { checkUsage(t, h) })
	t.Run("write-output", func(t *testing.T) { checkWriteOutput(t, h) })
	t.Run("context", func(t *testing.T) { checkContext(t, h) })
	t.Run("crash", func(t *testing.T) { checkCrash(t, h) })
	t.Run("timeout", func(t *testing.T) { checkTimeout(t, h) })
	t.Run("cancel", func(t *testing.T) { checkCancel(t, h) })
	t.Run("env", func(t *testing.T) { checkEnv(t, h) })
	t.Run("flood", func(t *testing.T) { checkFlood(t, h) })
	t.Run("on-start", func(t *testing.T) { checkOnStart(t, h) })
	t.Run("mask", func(t *testing.T) { checkMask(t, h) })
}

// checkMask checks that the step log is masked of Invocation.Mask's
// secrets: a reply the log shows unmasked is not shown once it is a
// secret.
func checkMask(t *testing.T, h Harness) {
	const secret = "wrote work.txt" // OKReply's summary, standing for a key the agent printed
	r := h.New(t, OK)
	f := newFixture(t)
	run(t, r, f.inv)
	if log, _ := os.ReadFile(f.inv.LogPath); !strings.Contains(string(log), secret) {
		t.Skip("the backend's log does not show the reply")
	}
	f = newFixture(t)
	f.inv.Mask = redact.New(secret)
	run(t, r, f.inv)
	log, err := os.ReadFile(f.inv.LogPath)
	if err != nil || strings.Contains(string(log), secret) || !strings.Contains(string(log), redact.Mask) {
		t.Errorf("log with %q as a secret: %v\n%s", secret, err, clip(string(log)))
	}
}

// checkOnStart checks that a runner starting an agent process reports it
// before reaping it, so the engine can journal its process group.
func checkOnStart(t *testing.T, h Harness) {
	if h.InProcess {
		t.Skip("the backend starts no agent process")
	}
	r := h.New(t, OK)
	f := newFixture(t)
	var pids []int
	f.inv.OnStart = func(pid int) {
		// Not reaped yet (a quick agent may already be a zombie), so the
		// pid still names it and its group.
		if err := syscall.Kill(pid, 0); err != nil {
			t.Errorf("OnStart(%d): %v", pid, err)
		}
		pids = append(pids, pid)
	}
	run(t, r, f.inv)
	if len(pids) == 0 {
		t.Error("the runner started an agent without calling Invocation.OnStart")
	}
}

// fixture is one invocation's files, laid out as the engine lays them out:
// the working tree apart from the run's contexts, outputs and logs.
type fixture struct {
	inv    runner.Invocation
	taskID string
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, "worktree")
	run := filepath.Join(root, "run")
	for _, d := range []string{dir, filepath.Join(run, "contexts"), filepath.Join(run, "outputs")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// The taskId differs from the item id on purpose: an agent that echoes
	// it has read the context file, not CADRE_ITEM or the prompt.
	taskID := "ctx-" + randomHex(t)
	inv := runner.Invocation{
		Role:        "coder",
		Item:        "07-sample",
		Step:        "07-sample/code/coder#1",
		Attempt:     1,
		Prompt:      "Do the work described in the context file.\n",
		Dir:         dir,
		ContextPath: filepath.Join(run, "contexts", "step.json"),
		OutputPath:  filepath.Join(run, "outputs", "step.md"),
		LogPath:     filepath.Join(run, "logs", "step.log"),
		// A safety net: a check that expects Run to return on its own
		// fails with a timeout error instead of stalling the test binary.
		Timeout: 2 * time.Minute,
	}
	ctxFile := map[string]any{
		"schemaVersion": 2,
		"agent":         inv.Role,
		"issueNumber":   0,
		"projectName":   "runnertest",
		"repository":    "",
		"worktreePath":  dir,
		"phase":         3,
		"phaseName":     "code",
		"taskId":        taskID,
		"config":        map[string]any{"commands": map[string]string{"install": "", "build": "", "test": "", "lint": ""}},
		"inputFiles":    []string{},
		"outputPath":    inv.OutputPath,
		"payload":       map[string]any{},
	}
	data, err := json.MarshalIndent(ctxFile, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(inv.ContextPath, append(data, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	return fixture{inv: inv, taskID: taskID}
}

func randomHex(t *testing.T) string {
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// run runs r and fails the test on an error, which a finished agent must not
// produce whatever its exit code.
func run(t *testing.T, r runner.Runner, inv runner.Invocation) runner.Result {
	t.Helper()
	res, err := r.Run(t.Context(), inv)
	if err != nil {
		t.Fatalf("Run: %v (stderr: %q)", err, res.StderrTail)
	}
	return res
}

// runOK runs the runner that behaves as b on a fresh fixture and fails the
// test unless the agent exited 0.
func runOK(t *testing.T, h Harness, b Behavior) (fixture, runner.Result) {
	t.Helper()
	r := h.New(t, b)
	f := newFixture(t)
	res := run(t, r, f.inv)
	if res.ExitCode != 0 {
		t.Fatalf("exit code %d, want 0 (stderr: %q)", res.ExitCode, res.StderrTail)
	}
	return f, res
}

func checkOutput(t *testing.T, h Harness) {
	f, res := runOK(t, h, OK)
	sig, err := signal.Parse(res.Output)
	if err != nil {
		t.Fatalf("reply %q: %v", clip(res.Output), err)
	}
	if sig.Result != signal.Success {
		t.Errorf("signal result %q, want %q", sig.Result, signal.Success)
	}
	if _, err := os.Stat(filepath.Join(f.inv.Dir, WorkFile)); err != nil {
		t.Errorf("the agent's file is not in the working tree: %v", err)
	}
	if fi, err := os.Stat(f.inv.LogPath); err != nil || fi.Size() == 0 {
		t.Errorf("no transcript at LogPath %s: %v", f.inv.LogPath, err)
	}
}

func checkUsage(t *testing.T, h Harness) {
	if !h.Usage {
		t.Skip("the backend reports no usage")
	}
	r := h.New(t, OK)
	res := run(t, r, newFixture(t).inv)
	u := res.Usage
	if u.InputTokens != OKUsage.InputTokens || u.OutputTokens != OKUsage.OutputTokens {
		t.Errorf("usage in/out = %d/%d, want %d/%d", u.InputTokens, u.OutputTokens, OKUsage.InputTokens, OKUsage.OutputTokens)
	}
	if r.Capabilities().ReportsCost && u.CostUSD != OKUsage.CostUSD {
		t.Errorf("cost = %v, want %v", u.CostUSD, OKUsage.CostUSD)
	}
}

func checkWriteOutput(t *testing.T, h Harness) {
	f, _ := runOK(t, h, WriteOutput)
	data, err := os.ReadFile(f.inv.OutputPath)
	if err != nil {
		t.Fatalf("the agent's output file: %v", err)
	}
	sig, err := signal.Parse(string(data))
	if err != nil {
		t.Fatalf("output file %q: %v", clip(string(data)), err)
	}
	if sig.Result != signal.Success {
		t.Errorf("signal result %q, want %q", sig.Result, signal.Success)
	}
}

func checkContext(t *testing.T, h Harness) {
	r := h.New(t, Context)
	f := newFixture(t)
	res := run(t, r, f.inv)
	if !strings.Contains(res.Output, f.taskID) {
		t.Errorf("reply %q lacks the context file's taskId %q: the context path did not reach the agent", clip(res.Output), f.taskID)
	}
}

func checkCrash(t *testing.T, h Harness) {
	r := h.New(t, Crash)
	res := run(t, r, newFixture(t).inv)
	if res.ExitCode != CrashExit {
		t.Errorf("exit code %d, want %d", res.ExitCode, CrashExit)
	}
	if !strings.Contains(res.StderrTail, CrashStderr) {
		t.Errorf("stderr tail %q lacks %q", res.StderrTail, CrashStderr)
	}
}

// checkTimeout runs the hanging agent with a short Timeout. A process
// backend's agent must have started its child for the check to mean
// anything, and how long that takes is up to the machine; so the timeout
// grows until the child was started before the kill.
func checkTimeout(t *testing.T, h Harness) {
	r := h.New(t, Hang)
	for _, d := range []time.Duration{50 * time.Millisecond, 300 * time.Millisecond, 2 * time.Second, 10 * time.Second} {
		f := newFixture(t)
		f.inv.Timeout = d
		_, err := r.Run(t.Context(), f.inv)
		if err == nil {
			t.Fatalf("Run of a hanging agent with timeout %s returned no error", d)
		}
		if !errors.Is(err, proc.ErrTimeout) && !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("timeout error %q wraps neither proc.ErrTimeout nor context.DeadlineExceeded", err)
		}
		if h.InProcess {
			return
		}
		pid, ok := readPID(t, f.inv.Dir)
		if !ok {
			continue // stopped before it started its child
		}
		assertGone(t, pid)
		return
	}
	t.Fatalf("the hanging agent never wrote %s in its working tree", ChildPIDFile)
}

// checkCancel cancels the context of a hanging agent once its child is
// running (at once for an in-process backend).
func checkCancel(t *testing.T, h Harness) {
	r := h.New(t, Hang)
	f := newFixture(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	if h.InProcess {
		cancel()
	} else {
		defer CancelOnFile(cancel, filepath.Join(f.inv.Dir, ChildPIDFile))()
	}
	_, err := r.Run(ctx, f.inv)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run of a canceled agent returned %v, want an error wrapping context.Canceled", err)
	}
	if h.InProcess {
		return
	}
	ChildGone(t, f.inv.Dir)
}

// ChildGone fails unless the child whose pid a hanging agent wrote to
// ChildPIDFile in dir is dead.
func ChildGone(t *testing.T, dir string) {
	t.Helper()
	pid, ok := readPID(t, dir)
	if !ok {
		t.Fatalf("canceled before the agent wrote %s", ChildPIDFile)
	}
	assertGone(t, pid)
}

func checkEnv(t *testing.T, h Harness) {
	secret := "leaked-" + randomHex(t)
	t.Setenv(SecretEnv, secret)
	r := h.New(t, Env)
	res := run(t, r, newFixture(t).inv)
	names := map[string]bool{}
	for _, n := range strings.Fields(res.Output) {
		names[n] = true
	}
	if !names["PATH"] {
		t.Errorf("PATH missing from the agent's environment %q", clip(res.Output))
	}
	if names[SecretEnv] || strings.Contains(res.Output, secret) {
		t.Errorf("%s leaked into the agent's environment %q", SecretEnv, clip(res.Output))
	}
}

func checkFlood(t *testing.T, h Harness) {
	f, res := runOK(t, h, Flood)
	maxOut := h.MaxOutput
	if maxOut <= 0 {
		maxOut = proc.DefaultMaxStdout
	}
	if n := int64(len(res.Output)); n > maxOut {
		t.Errorf("reply is %d bytes, over the cap of %d", n, maxOut)
	}
	maxLog := h.MaxLog
	if maxLog <= 0 {
		maxLog = proc.DefaultMaxLog
	}
	fi, err := os.Stat(f.inv.LogPath)
	if err != nil {
		t.Fatalf("log: %v", err)
	}
	if fi.Size() > maxLog+logSlack {
		t.Errorf("log is %d bytes, over the cap of %d", fi.Size(), maxLog)
	}
}

// CancelOnFile calls cancel once a file exists at path, as an agent's
// child writes its pid; stop ends the watch, whether or not it did.
func CancelOnFile(cancel context.CancelFunc, path string) (stop func()) {
	done := make(chan struct{})
	go func() {
		for {
			if _, err := os.Stat(path); err == nil {
				cancel()
				return
			}
			select {
			case <-done:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	return func() { close(done) }
}

// readPID reads the pid the hanging agent left in its working tree.
func readPID(t *testing.T, dir string) (int, bool) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, ChildPIDFile))
	if errors.Is(err, os.ErrNotExist) {
		return 0, false
	}
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 0 {
		t.Fatalf("%s holds %q, not a pid", ChildPIDFile, data)
	}
	return pid, true
}

// assertGone fails unless pid is dead (gone or a zombie). SIGKILL completes
// asynchronously in the kernel, so a process killed just before Run returned
// may take a moment to finish dying; the bound only keeps a surviving
// process from stalling the test.
func assertGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			t.Errorf("child process %d survived the end of the run", pid)
			syscall.Kill(pid, syscall.SIGKILL) // do not leak it past the test
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// alive reports whether pid names a running process; a zombie is dead, only
// not yet reaped by its new parent.
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return !errors.Is(err, os.ErrNotExist)
	}
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(fields) == 0 || (fields[0] != "Z" && fields[0] != "X")
}

// clip shortens text for a failure message.
func clip(s string) string {
	const n = 300
	if len(s) <= n {
		return s
	}
	return s[:n] + fmt.Sprintf("… (%d bytes)", len(s))
}
