package proc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Defaults for the zero values of Spec.
const (
	DefaultMaxLog    = 8 << 20
	DefaultMaxStdout = 4 << 20
	DefaultGrace     = 5 * time.Second
)

// drainWait bounds how long Run keeps reading once the process group is
// gone: a process that left the group (setsid) may hold the pipes open
// forever, and Run must still return.
const drainWait = 2 * time.Second

// ErrTimeout is wrapped by the error Run returns when Spec.Timeout expires.
var ErrTimeout = errors.New("timed out")

// Spec describes one process to run.
type Spec struct {
	// Path is the program. A bare name is looked up in the PATH of Env (or
	// of this process when Env has none); a path with a slash is used as is,
	// relative to Dir.
	Path string
	// Args is the argv after the program name; never a shell string.
	Args []string
	// Dir is the working directory; empty means the current one.
	Dir string
	// Env is the complete environment, usually built with MinimalEnv. Nil
	// means an empty environment, not the inherited one.
	Env []string
	// Stdin feeds the process; nil means no input.
	Stdin io.Reader
	// Log, if set, receives stdout and stderr as they arrive, up to MaxLog
	// bytes, then a final "[output truncated after N bytes]" line.
	Log io.Writer
	// MaxLog caps Log; 0 or less means DefaultMaxLog.
	MaxLog int64
	// MaxStdout caps Result.Stdout; beyond it Result.Truncated is set and
	// Stdout keeps the first and the last bytes, about half the cap each,
	// with a "[… N bytes omitted …]" line between them, so the end of a
	// reply (its SIGNAL BLOCK) survives a flood. A cap under 256 bytes keeps
	// only the first bytes. 0 or less means DefaultMaxStdout.
	MaxStdout int64
	// Timeout bounds the run; 0 or less means none.
	Timeout time.Duration
	// Grace is the delay between SIGTERM and SIGKILL; 0 or less means
	// DefaultGrace.
	Grace time.Duration
	// OnLine, if set, is called with "stdout" or "stderr" and each line
	// (without its line ending) as it arrives, for progress reporting. Calls
	// are serialized; a slow OnLine slows reading. Lines longer than 1 MiB
	// are cut to their first 1 MiB.
	OnLine func(stream, line string)
	// OnStart, if set, is called with the pid of the started process, which
	// is also its process group id, before Run waits for it; the process
	// stays unreaped (so its pid is not reused) until after Run returns.
	// Callers journal it (see GroupOf) to kill an orphaned group on resume.
	OnStart func(pid int)
	// Sandbox, when set, runs the program inside bubblewrap (see Sandbox);
	// the pid OnStart sees is then bubblewrap's.
	Sandbox *Sandbox

	drainWait time.Duration // overrides drainWait in tests
}

// Result is what Run observed.
type Result struct {
	ExitCode   int    // -1 when killed by a signal or never started
	Stdout     []byte // at most Spec.MaxStdout bytes: its head and tail when Truncated
	StderrTail string // last ~2 KiB of stderr, for error messages
	TimedOut   bool
	Canceled   bool // ctx was done
	Truncated  bool // stdout went past Spec.MaxStdout
	Duration   time.Duration
}

// Run starts the process in its own process group and waits for it. On
// timeout or ctx cancellation it sends SIGTERM to the whole group, then
// SIGKILL after Grace. Whenever the process exits, anything it left running
// in its group is killed, so no orphan survives. Run returns once the process
// has exited and its output is drained.
//
// A non-zero exit is not an error; see Result.ExitCode. The error reports a
// failure to start (wrapping exec.ErrNotFound for a missing program), a
// failure to feed Stdin, or the end of the run by timeout (wrapping
// ErrTimeout) or by ctx (wrapping ctx.Err()); the Result is filled in as far
// as the run got.
func Run(ctx context.Context, s Spec) (Result, error) {
	name := s.Path
	if err := ctx.Err(); err != nil {
		return Result{Canceled: true, ExitCode: -1}, fmt.Errorf("command %q not started: %w", name, err)
	}
	path, err := resolve(s)
	if err != nil {
		return Result{ExitCode: -1}, err
	}
	if err := checkEnv(s.Env); err != nil {
		return Result{ExitCode: -1}, fmt.Errorf("command %q: %w", name, err)
	}

	out := &output{
		log:    s.Log,
		logMax: orDefault(s.MaxLog, DefaultMaxLog),
		onLine: s.OnLine,
		stdout: headTail{max: orDefault(s.MaxStdout, DefaultMaxStdout)},
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return Result{ExitCode: -1}, fmt.Errorf("command %q: stdout pipe: %w", name, err)
	}
	defer outR.Close()
	errR, errW, err := os.Pipe()
	if err != nil {
		outW.Close()
		return Result{ExitCode: -1}, fmt.Errorf("command %q: stderr pipe: %w", name, err)
	}
	defer errR.Close()

	env := s.Env
	if env == nil {
		env = []string{} // exec.Cmd inherits on nil
	}
	argv := append([]string{name}, s.Args...)
	if s.Sandbox != nil {
		var args []string
		path, args = s.Sandbox.wrap(path, s)
		argv = append([]string{path}, args...)
	}
	cmd := &exec.Cmd{
		Path:   path,
		Args:   argv,
		Dir:    s.Dir,
		Env:    env,
		Stdin:  s.Stdin,
		Stdout: outW,
		Stderr: errW,
		// The parent-death signal kills the agent at once if cadre dies,
		// whatever kills it; see startLocked for why it needs a locked
		// thread, and startWatchdog for the rest of the group.
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL},
		// Bounds Wait when a Stdin reader never returns.
		WaitDelay: orDefault(s.drainWait, drainWait),
	}
	start := time.Now()
	release, err := startLocked(cmd)
	// The child has its own copies; ours would keep the pipes open forever.
	outW.Close()
	errW.Close()
	if err != nil {
		return Result{ExitCode: -1}, fmt.Errorf("start command %q: %w", name, err)
	}
	defer release()
	pid := cmd.Process.Pid
	wd, wdErr := startWatchdog(pid)
	if wdErr != nil && s.Log != nil {
		// The agent still dies with cadre, and a resume kills what it
		// left; only its children may outlive a crash for a while.
		fmt.Fprintf(s.Log, "[cadre: %v]\n", wdErr)
	}
	if s.OnStart != nil {
		s.OnStart(pid)
	}

	var readers sync.WaitGroup
	readers.Go(func() { out.read("stdout", outR) })
	readers.Go(func() { out.read("stderr", errR) })
	drained := make(chan struct{})
	go func() { readers.Wait(); close(drained) }()
	// The only goroutine waiting on the process; it does not reap it.
	exited := make(chan struct{})
	go func() { _ = waitExited(pid); close(exited) }()

	var timeout <-chan time.Time
	if s.Timeout > 0 {
		t := time.NewTimer(s.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	res := Result{}
	select {
	case <-exited:
	case <-ctx.Done():
		res.Canceled = true
	case <-timeout:
		res.TimedOut = true
	}
	if res.Canceled || res.TimedOut {
		_ = syscall.Kill(-pid, syscall.SIGTERM)
		g := time.NewTimer(orDefault(s.Grace, DefaultGrace))
		select {
		case <-exited:
		case <-g.C:
			_ = syscall.Kill(-pid, syscall.SIGKILL)
			<-exited
		}
		g.Stop()
	}
	// The leader is a zombie, so pid still names its group: kill whatever
	// it left behind before reaping it.
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	wd.stop()
	waitErr := cmd.Wait()

	select {
	case <-drained:
	case <-time.After(orDefault(s.drainWait, drainWait)):
		// Someone outside the group still holds the pipes; closing our
		// ends ends the reads.
		outR.Close()
		errR.Close()
		<-drained
	}

	res.Duration = time.Since(start)
	res.ExitCode = cmd.ProcessState.ExitCode()
	res.Stdout = out.stdout.bytes()
	res.Truncated = out.stdout.truncated()
	res.StderrTail = out.stderrTail()

	switch {
	case res.TimedOut:
		return res, fmt.Errorf("command %q %w after %s", name, ErrTimeout, s.Timeout)
	case res.Canceled:
		return res, fmt.Errorf("command %q stopped: %w", name, ctx.Err())
	}
	var exitErr *exec.ExitError
	if waitErr != nil && !errors.As(waitErr, &exitErr) && !errors.Is(waitErr, exec.ErrWaitDelay) {
		return res, fmt.Errorf("command %q: %w", name, waitErr)
	}
	return res, nil
}

// NotFoundError reports a program that does not exist. It wraps
// exec.ErrNotFound; callers add what to do about it (which setting to change).
type NotFoundError struct {
	Command string // as given in Spec.Path
	InPath  bool   // looked up in PATH, as opposed to a path that does not exist
}

func (e *NotFoundError) Error() string {
	if e.InPath {
		return fmt.Sprintf("command %q not found in PATH", e.Command)
	}
	return fmt.Sprintf("command %q not found", e.Command)
}

func (e *NotFoundError) Unwrap() error { return exec.ErrNotFound }

// Locate finds the program path names as Run would with env (its PATH):
// a *NotFoundError when there is none, so a caller can refuse a missing
// program before anything starts.
func Locate(path string, env []string) error {
	_, err := resolve(Spec{Path: path, Env: env})
	return err
}

// resolve turns Spec.Path into the file to execute.
func resolve(s Spec) (string, error) {
	if s.Path == "" {
		return "", errors.New("no command given: set the runner's command")
	}
	if s.Dir != "" {
		// Checked here because a failed chdir in the child is reported as
		// a failure to execute the program, which misleads.
		fi, err := os.Stat(s.Dir)
		if err != nil {
			return "", fmt.Errorf("command %q: working directory: %w", s.Path, err)
		}
		if !fi.IsDir() {
			return "", fmt.Errorf("command %q: working directory %s is not a directory", s.Path, s.Dir)
		}
	}
	if strings.Contains(s.Path, "/") {
		p := s.Path
		if !filepath.IsAbs(p) && s.Dir != "" {
			p = filepath.Join(s.Dir, p)
		}
		if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
			return "", &NotFoundError{Command: s.Path}
		}
		return p, nil
	}
	pathList, ok := envValue(s.Env, "PATH")
	if !ok {
		pathList = os.Getenv("PATH")
	}
	if p, ok := lookPath(s.Path, pathList); ok {
		return p, nil
	}
	return "", &NotFoundError{Command: s.Path, InPath: true}
}

// lookPath finds an executable file named name in the directories of
// pathList. Relative directories are skipped: they would resolve against the
// working directory, which an agent may have written to.
func lookPath(name, pathList string) (string, bool) {
	for _, dir := range filepath.SplitList(pathList) {
		if !filepath.IsAbs(dir) {
			continue
		}
		p := filepath.Join(dir, name)
		fi, err := os.Stat(p)
		if err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return p, true
		}
	}
	return "", false
}

// envValue returns the last value of key in env: the one exec.Cmd passes on.
func envValue(env []string, key string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], key+"="); ok {
			return v, true
		}
	}
	return "", false
}

// checkEnv rejects entries the kernel cannot pass or that mean nothing, so
// the mistake is named instead of surfacing as "invalid argument".
func checkEnv(env []string) error {
	for i, e := range env {
		k, _, ok := strings.Cut(e, "=")
		if !ok || k == "" || strings.ContainsRune(e, 0) {
			return fmt.Errorf("environment entry %d %q is not KEY=value", i+1, e)
		}
	}
	return nil
}

func orDefault[T int64 | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}
