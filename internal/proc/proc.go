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

	"github.com/cadre-dev/cadre/internal/exitwait"
)

// Defaults for the zero values of Spec.
const (
	DefaultMaxLog    = 8 << 20
	DefaultMaxStdout = 4 << 20
	DefaultGrace     = 10 * time.Second
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
	// Grace is the delay between SIGTERM and SIGKILL (limits.kill_grace);
	// 0 or less means DefaultGrace. Under a Sandbox the SIGTERM reaches
	// the processes inside it, not only bubblewrap.
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
// timeout or ctx cancellation it sends SIGTERM to the whole group (inside a
// sandbox, to the processes in it), then SIGKILL after Grace. Whenever the
// process exits, anything it left running in its group (or its sandbox) is
// killed and seen gone, so no orphan survives into a next attempt. Run
// returns once the process has exited and its output is drained.
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
	outR, outW, errR, errW, err := outputPipes()
	if err != nil {
		return Result{ExitCode: -1}, fmt.Errorf("command %q: %w", name, err)
	}
	defer outR.Close()
	defer errR.Close()

	cmd := command(s, path, outW, errW)
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
	wd := guardGroup(s, pid)

	drained := out.drain(outR, errR)
	// The only goroutine waiting on the process; it does not reap it.
	exited := make(chan struct{})
	// It leaves the leader a zombie: its pid, and so its group id, cannot
	// be reused meanwhile, which makes signalling the group safe.
	go func() { _ = exitwait.Exited(pid); close(exited) }()

	res := Result{}
	var st stopped
	res.Canceled, res.TimedOut, st = awaitOrStop(ctx, s, pid, exited)
	// The leader is a zombie, so pid still names its group: kill whatever
	// it left behind, and see it gone, before reaping it.
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	awaitGone(pid, s.Sandbox != nil, st.init, st.found)
	wd.stop()
	waitErr := cmd.Wait()
	awaitDrained(drained, orDefault(s.drainWait, drainWait), outR, errR)

	res.Duration = time.Since(start)
	res.ExitCode = cmd.ProcessState.ExitCode()
	res.Stdout = out.stdout.bytes()
	res.Truncated = out.stdout.truncated()
	res.StderrTail = out.stderrTail()
	return res, runError(ctx, s, res, waitErr)
}

// outputPipes makes the pipes the process writes its stdout and stderr
// to; when one cannot be made, none is left open.
func outputPipes() (outR, outW, errR, errW *os.File, err error) {
	outR, outW, err = os.Pipe()
	if err != nil {
		return nil, nil, nil, nil, fmt.Errorf("stdout pipe: %w", err)
	}
	errR, errW, err = os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return nil, nil, nil, nil, fmt.Errorf("stderr pipe: %w", err)
	}
	return outR, outW, errR, errW, nil
}

// command builds the exec.Cmd for s, the program found at path, writing to
// the pipes outW and errW: in its own process group, killed at once if
// cadre dies, with exactly s's environment (none when s has none), and
// wrapped in bubblewrap when s asks for a sandbox.
func command(s Spec, path string, outW, errW *os.File) *exec.Cmd {
	env := s.Env
	if env == nil {
		env = []string{} // exec.Cmd inherits on nil
	}
	argv := append([]string{s.Path}, s.Args...)
	if s.Sandbox != nil {
		var args []string
		path, args = s.Sandbox.wrap(path, s)
		argv = append([]string{path}, args...)
	}
	return &exec.Cmd{
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
}

// guardGroup starts the watchdog of the started process's group pid and
// then tells s.OnStart the pid. A watchdog that cannot start is noted in
// s.Log, not fatal: the agent still dies with cadre, and a resume kills
// what it left; only its children may outlive a crash for a while. The
// watchdog returned is nil then (stop does nothing).
//
// A sandboxed process needs none: bubblewrap runs it in a PID namespace of
// its own and dies with cadre (its parent-death signal, --die-with-parent),
// and the kernel kills every process of a namespace whose first process
// dies, so nothing of it outlives cadre.
func guardGroup(s Spec, pid int) *watchdog {
	var wd *watchdog
	if s.Sandbox == nil {
		var err error
		if wd, err = startWatchdog(pid); err != nil && s.Log != nil {
			fmt.Fprintf(s.Log, "[cadre: %v]\n", err)
		}
	}
	if s.OnStart != nil {
		s.OnStart(pid)
	}
	return wd
}

// drain reads the process's stdout and stderr until both end; the channel
// returned is closed then.
func (o *output) drain(outR, errR io.Reader) <-chan struct{} {
	var readers sync.WaitGroup
	readers.Go(func() { o.read("stdout", outR) })
	readers.Go(func() { o.read("stderr", errR) })
	drained := make(chan struct{})
	go func() { readers.Wait(); close(drained) }()
	return drained
}

// stopped is what awaitOrStop learned while stopping a sandboxed
// process: the sandbox's init, when found.
type stopped struct {
	init  Group
	found bool
}

// awaitOrStop waits until the process pid exits (exited is closed), ctx is
// done, or s.Timeout expires. In the last two cases it sends SIGTERM to
// the process group, or into the sandbox (see terminate), then SIGKILL to
// the group after s.Grace, and waits for the exit. It reports whether ctx
// or the timeout ended the run.
func awaitOrStop(ctx context.Context, s Spec, pid int, exited <-chan struct{}) (canceled, timedOut bool, st stopped) {
	var timeout <-chan time.Time
	if s.Timeout > 0 {
		t := time.NewTimer(s.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-exited:
		return false, false, st
	case <-ctx.Done():
		canceled = true
	case <-timeout:
		timedOut = true
	}
	st.init, st.found = terminate(pid, s.Sandbox != nil)
	g := time.NewTimer(orDefault(s.Grace, DefaultGrace))
	defer g.Stop()
	select {
	case <-exited:
	case <-g.C:
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		<-exited
	}
	return canceled, timedOut, st
}

// awaitDrained waits for the output to be drained (drained is closed), at
// most wait: past it, someone outside the group still holds the pipes,
// and closing our ends (outR, errR) ends the reads.
func awaitDrained(drained <-chan struct{}, wait time.Duration, outR, errR *os.File) {
	select {
	case <-drained:
	case <-time.After(wait):
		outR.Close()
		errR.Close()
		<-drained
	}
}

// runError is the error Run returns for the finished run res of s: the
// timeout or ctx that ended it, or a failure of the wait other than the
// process's own exit status (such as feeding Stdin); nil otherwise.
func runError(ctx context.Context, s Spec, res Result, waitErr error) error {
	switch {
	case res.TimedOut:
		return fmt.Errorf("command %q %w after %s", s.Path, ErrTimeout, s.Timeout)
	case res.Canceled:
		return fmt.Errorf("command %q stopped: %w", s.Path, ctx.Err())
	}
	var exitErr *exec.ExitError
	if waitErr != nil && !errors.As(waitErr, &exitErr) && !errors.Is(waitErr, exec.ErrWaitDelay) {
		return fmt.Errorf("command %q: %w", s.Path, waitErr)
	}
	return nil
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

// LookPath finds an executable file named name in the directories of
// pathList, as Run does.
func LookPath(name, pathList string) (string, bool) { return lookPath(name, pathList) }

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
