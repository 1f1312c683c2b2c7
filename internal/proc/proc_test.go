package proc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

const shortGrace = 200 * time.Millisecond

// sh returns a Spec running script with /bin/sh and a minimal environment.
func sh(script string) Spec {
	return Spec{
		Path:  "/bin/sh",
		Args:  []string{"-c", script},
		Env:   MinimalEnv(os.LookupEnv, nil, nil),
		Grace: shortGrace,
	}
}

// cancelOnReady returns a context canceled once the process prints "ready",
// so cancellation never races the script's own setup.
func cancelOnReady(t *testing.T, s *Spec) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	s.OnLine = func(stream, line string) {
		if stream == "stdout" && line == "ready" {
			cancel()
		}
	}
	return ctx
}

// running reports whether pid is a live (not zombie) sleep process.
func running(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return false
	}
	fields := strings.Fields(s[end+1:])
	return s[open+1:end] == "sleep" && len(fields) > 0 && fields[0] != "Z" && fields[0] != "X"
}

// assertGone fails unless pid stops running. It polls because a killed
// process closes its pipes (letting Run return) an instant before the
// kernel marks it dead.
func assertGone(t *testing.T, pid int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); running(pid); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			_ = syscallKill(pid)
			t.Fatalf("grandchild %d is still running after Run returned", pid)
		}
	}
}

func syscallKill(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Kill()
}

// firstPid parses the first stdout line as a pid; 0 when there is none.
func firstPid(stdout []byte) int {
	line, _, _ := strings.Cut(string(stdout), "\n")
	pid, _ := strconv.Atoi(strings.TrimSpace(line))
	return pid
}

func TestRunExitCode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		script string
		want   int
	}{
		{"success", "exit 0", 0},
		{"failure", "exit 1", 1},
		{"high", "exit 255", 255},
		{"killed by a signal", "kill -KILL $$", -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res, err := Run(context.Background(), sh(tt.script))
			if err != nil {
				t.Fatalf("Run: %v (a non-zero exit is not an error)", err)
			}
			if res.ExitCode != tt.want {
				t.Errorf("ExitCode = %d, want %d", res.ExitCode, tt.want)
			}
			if res.TimedOut || res.Canceled {
				t.Errorf("TimedOut=%v Canceled=%v, want both false", res.TimedOut, res.Canceled)
			}
		})
	}
}

func TestRunStdout(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		script        string
		max           int64
		want          string
		wantTruncated bool
	}{
		{"default cap", "printf hello", 0, "hello", false},
		{"exactly the cap", "printf hello", 5, "hello", false},
		{"over the cap", "printf hello", 3, "hel", true},
		{"large output keeps head and tail", "head -c 100000 /dev/zero | tr '\\0' a; printf '\\nEND\\n'", 1000,
			strings.Repeat("a", 468) + "\n[… 99533 bytes omitted …]\nEND\n", true},
		{"stderr is not stdout", "printf out; printf err >&2", 0, "out", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := sh(tt.script)
			s.MaxStdout = tt.max
			res, err := Run(context.Background(), s)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if string(res.Stdout) != tt.want {
				t.Errorf("Stdout = %q (len %d), want %q", res.Stdout, len(res.Stdout), tt.want)
			}
			if res.Truncated != tt.wantTruncated {
				t.Errorf("Truncated = %v, want %v", res.Truncated, tt.wantTruncated)
			}
		})
	}
}

func TestRunLog(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		script  string
		max     int64
		want    string   // exact log, when set
		has     []string // substrings of the log
		hasNot  []string
		wantOut string
	}{
		{
			name:    "both streams",
			script:  "echo to-out; echo to-err >&2",
			has:     []string{"to-out\n", "to-err\n"},
			hasNot:  []string{"truncated"},
			wantOut: "to-out\n",
		},
		{
			name:    "capped mid-line",
			script:  "printf abcdefghij",
			max:     4,
			want:    "abcd\n[output truncated after 4 bytes]\n",
			wantOut: "abcdefghij",
		},
		{
			name:    "capped at a line end",
			script:  "printf 'abc\\ndefg'",
			max:     4,
			want:    "abc\n[output truncated after 4 bytes]\n",
			wantOut: "abc\ndefg",
		},
		{
			name:    "exactly the cap",
			script:  "printf abcd",
			max:     4,
			want:    "abcd",
			wantOut: "abcd",
		},
		{
			name:    "stderr counts toward the cap",
			script:  "head -c 5000 /dev/zero | tr '\\0' e >&2",
			max:     100,
			want:    strings.Repeat("e", 100) + "\n[output truncated after 100 bytes]\n",
			wantOut: "",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var log bytes.Buffer
			s := sh(tt.script)
			s.Log, s.MaxLog = &log, tt.max
			res, err := Run(context.Background(), s)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			got := log.String()
			if tt.want != "" && got != tt.want {
				t.Errorf("log = %q, want %q", got, tt.want)
			}
			for _, h := range tt.has {
				if !strings.Contains(got, h) {
					t.Errorf("log %q lacks %q", got, h)
				}
			}
			for _, h := range tt.hasNot {
				if strings.Contains(got, h) {
					t.Errorf("log %q has %q", got, h)
				}
			}
			if string(res.Stdout) != tt.wantOut {
				t.Errorf("Stdout = %q, want %q (the log cap must not cut stdout)", res.Stdout, tt.wantOut)
			}
		})
	}
}

func TestRunStderrTail(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		script   string
		wantCode int
		check    func(tail string) error
	}{
		{
			name:     "short stderr kept whole",
			script:   "echo oops >&2; exit 2",
			wantCode: 2,
			check: func(tail string) error {
				if tail != "oops\n" {
					return fmt.Errorf("tail = %q, want %q", tail, "oops\n")
				}
				return nil
			},
		},
		{
			name:     "long stderr keeps the end",
			script:   "printf BEGIN >&2; head -c 5000 /dev/zero | tr '\\0' x >&2; printf END >&2; exit 3",
			wantCode: 3,
			check: func(tail string) error {
				if !strings.HasSuffix(tail, "xEND") || strings.Contains(tail, "BEGIN") || len(tail) > tailMax {
					return fmt.Errorf("tail (len %d) should end with xEND, lack BEGIN and hold at most %d bytes", len(tail), tailMax)
				}
				return nil
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res, err := Run(context.Background(), sh(tt.script))
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if res.ExitCode != tt.wantCode {
				t.Errorf("ExitCode = %d, want %d", res.ExitCode, tt.wantCode)
			}
			if err := tt.check(res.StderrTail); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestRunStdinAndLines(t *testing.T) {
	t.Parallel()
	s := sh("cat; echo note >&2; printf 'last\\r\\n'")
	s.Stdin = strings.NewReader("one\ntwo\n")
	got := map[string][]string{}
	s.OnLine = func(stream, line string) { got[stream] = append(got[stream], line) }
	res, err := Run(context.Background(), s)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if want := "one\ntwo\nlast\r\n"; string(res.Stdout) != want {
		t.Errorf("Stdout = %q, want %q", res.Stdout, want)
	}
	want := map[string][]string{"stdout": {"one", "two", "last"}, "stderr": {"note"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("OnLine calls mismatch (-want +got):\n%s", diff)
	}
}

func TestRunTimeoutKillsGroup(t *testing.T) {
	t.Parallel()
	// The grandchild reports its pid; if the timer fires before it could,
	// run again with a longer timeout so the assertion always has a pid.
	for timeout := 200 * time.Millisecond; ; timeout *= 4 {
		s := sh("sleep 100 & echo $!; sleep 100")
		s.Timeout = timeout
		res, err := Run(context.Background(), s)
		if !errors.Is(err, ErrTimeout) {
			t.Fatalf("err = %v, want one wrapping ErrTimeout", err)
		}
		if !strings.Contains(err.Error(), `command "/bin/sh" timed out after`) {
			t.Errorf("err = %q, want it to name the command and the timeout", err)
		}
		if !res.TimedOut || res.Canceled || res.ExitCode != -1 {
			t.Errorf("TimedOut=%v Canceled=%v ExitCode=%d, want true false -1", res.TimedOut, res.Canceled, res.ExitCode)
		}
		pid := firstPid(res.Stdout)
		if pid == 0 {
			if timeout > 10*time.Second {
				t.Fatalf("the script never printed its grandchild's pid; stdout %q", res.Stdout)
			}
			continue
		}
		assertGone(t, pid)
		return
	}
}

func TestRunKillsAfterGrace(t *testing.T) {
	t.Parallel()
	// The shell and its sleep ignore SIGTERM, so only SIGKILL ends them; a
	// signal death (-1) proves SIGKILL followed.
	s := sh("trap '' TERM; sleep 100 & echo $!; echo ready; sleep 100")
	ctx := cancelOnReady(t, &s)
	res, err := Run(ctx, s)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want one wrapping context.Canceled", err)
	}
	if !res.Canceled || res.ExitCode != -1 {
		t.Errorf("Canceled=%v ExitCode=%d, want true -1", res.Canceled, res.ExitCode)
	}
	pid := firstPid(res.Stdout)
	if pid == 0 {
		t.Fatalf("no grandchild pid in stdout %q", res.Stdout)
	}
	assertGone(t, pid)
}

func TestRunCancel(t *testing.T) {
	t.Parallel()
	t.Run("while running", func(t *testing.T) {
		t.Parallel()
		s := sh("echo ready; sleep 100")
		ctx := cancelOnReady(t, &s)
		res, err := Run(ctx, s)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want one wrapping context.Canceled", err)
		}
		if errors.Is(err, ErrTimeout) {
			t.Errorf("err = %v wraps ErrTimeout, want only context.Canceled", err)
		}
		if !res.Canceled || res.TimedOut || res.ExitCode != -1 {
			t.Errorf("Canceled=%v TimedOut=%v ExitCode=%d, want true false -1", res.Canceled, res.TimedOut, res.ExitCode)
		}
		if string(res.Stdout) != "ready\n" {
			t.Errorf("Stdout = %q, want the output up to the cancel", res.Stdout)
		}
	})
	t.Run("before start", func(t *testing.T) {
		t.Parallel()
		marker := filepath.Join(t.TempDir(), "started")
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		res, err := Run(ctx, sh("touch "+marker))
		if !errors.Is(err, context.Canceled) || !res.Canceled {
			t.Fatalf("err = %v, Canceled = %v; want context.Canceled and true", err, res.Canceled)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Error("the process ran although ctx was already canceled")
		}
	})
}

func TestRunLeavesNoOrphan(t *testing.T) {
	t.Parallel()
	// The shell exits at once, leaving a sleep that holds stdout open.
	res, err := Run(context.Background(), sh("sleep 100 & echo $!"))
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.ExitCode != 0 || res.TimedOut || res.Canceled {
		t.Errorf("ExitCode=%d TimedOut=%v Canceled=%v, want 0 false false", res.ExitCode, res.TimedOut, res.Canceled)
	}
	pid := firstPid(res.Stdout)
	if pid == 0 {
		t.Fatalf("no grandchild pid in stdout %q", res.Stdout)
	}
	assertGone(t, pid)
}

// TestRunEnv is not parallel: it sets a variable in this process.
func TestRunEnv(t *testing.T) {
	t.Setenv("CADRE_FAKE_SECRET", "hunter2")
	tests := []struct {
		name string
		env  []string
	}{
		{"minimal", MinimalEnv(os.LookupEnv, nil, map[string]string{"CADRE_ROLE": "coder"})},
		{"passed key", MinimalEnv(os.LookupEnv, []string{"CADRE_FAKE_SECRET"}, nil)},
		{"nil is empty", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// env(1) prints its environment exactly; a shell would add its own.
			res, err := Run(context.Background(), Spec{Path: "env", Env: tt.env})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			got := strings.Fields(string(res.Stdout))
			sort.Strings(got)
			want := append([]string{}, tt.env...)
			sort.Strings(want)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("child environment mismatch (-want +got):\n%s", diff)
			}
		})
	}
	res, err := Run(context.Background(), Spec{Path: "env", Env: MinimalEnv(os.LookupEnv, nil, nil)})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if strings.Contains(string(res.Stdout), "hunter2") {
		t.Errorf("a variable not passed reached the child:\n%s", res.Stdout)
	}
}

// TestRunResolve is not parallel: it executes a file it has just written,
// which a concurrent fork could still hold open for writing.
func TestRunResolve(t *testing.T) {
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "hello"), []byte("#!/bin/sh\necho hi\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "plain"), []byte("not executable"), 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(bin, "plain")
	tests := []struct {
		name     string
		spec     Spec
		wantOut  string
		notFound bool
		wantErr  string
	}{
		{
			name:    "bare name in the environment's PATH",
			spec:    Spec{Path: "hello", Env: []string{"PATH=/nonexistent:" + bin}},
			wantOut: "hi\n",
		},
		{
			name:    "relative path against Dir",
			spec:    Spec{Path: "./hello", Dir: bin},
			wantOut: "hi\n",
		},
		{
			name:     "missing bare name",
			spec:     Spec{Path: "cadre-test-no-such-program", Env: []string{"PATH=" + bin}},
			notFound: true,
			wantErr:  `command "cadre-test-no-such-program" not found in PATH`,
		},
		{
			name:     "relative PATH entries are ignored",
			spec:     Spec{Path: "hello", Dir: bin, Env: []string{"PATH=.:"}},
			notFound: true,
			wantErr:  `command "hello" not found in PATH`,
		},
		{
			name:     "non-executable file is not a match",
			spec:     Spec{Path: "plain", Env: []string{"PATH=" + bin}},
			notFound: true,
			wantErr:  `command "plain" not found in PATH`,
		},
		{
			name:     "missing absolute path",
			spec:     Spec{Path: "/nonexistent/cadre-prog"},
			notFound: true,
			wantErr:  `command "/nonexistent/cadre-prog" not found`,
		},
		{
			name:    "unexecutable absolute path",
			spec:    Spec{Path: file},
			wantErr: "permission denied",
		},
		{
			name:    "empty command",
			spec:    Spec{},
			wantErr: "no command given",
		},
		{
			name:    "missing working directory",
			spec:    Spec{Path: "/bin/true", Dir: filepath.Join(bin, "nope")},
			wantErr: "working directory",
		},
		{
			name:    "working directory is a file",
			spec:    Spec{Path: "/bin/true", Dir: file},
			wantErr: "is not a directory",
		},
		{
			name:    "bad environment entry",
			spec:    Spec{Path: "/bin/true", Env: []string{"A=1", "NOEQUALS"}},
			wantErr: `environment entry 2 "NOEQUALS" is not KEY=value`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Run(context.Background(), tt.spec)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Run: %v", err)
				}
				if string(res.Stdout) != tt.wantOut {
					t.Errorf("Stdout = %q, want %q", res.Stdout, tt.wantOut)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
			}
			if got := errors.Is(err, exec.ErrNotFound); got != tt.notFound {
				t.Errorf("errors.Is(err, exec.ErrNotFound) = %v, want %v", got, tt.notFound)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("err %q spans lines, want one line", err)
			}
		})
	}
}

func TestRunEscapedHolderDoesNotHang(t *testing.T) {
	t.Parallel()
	// The inner shell leaves the process group (setsid) and keeps stdout
	// open; the outer one waits until it has left, so the group kill cannot
	// reach it and only the drain bound lets Run return.
	f := filepath.Join(t.TempDir(), "pid")
	s := sh(fmt.Sprintf(`setsid sh -c 'echo $$ > %[1]s; exec sleep 100' &
while [ ! -s %[1]s ]; do sleep 0.01; done
cat %[1]s`, f))
	s.drainWait = 100 * time.Millisecond
	res, err := Run(context.Background(), s)
	pid := firstPid(res.Stdout)
	if pid > 0 {
		t.Cleanup(func() { _ = syscallKill(pid) })
	}
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.ExitCode != 0 || pid == 0 {
		t.Errorf("ExitCode=%d Stdout=%q, want 0 and the escaped pid", res.ExitCode, res.Stdout)
	}
}
