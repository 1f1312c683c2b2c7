package proc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Sandbox confines one process with bubblewrap: the host's root read-only,
// fresh /proc, /dev and /tmp (and Tmpfs), new PID, IPC, UTS (and, unless
// Net is set, net) namespaces, and only the listed directories writable. Run wraps the
// command in it, so every runner that starts a process through Run gets
// the same confinement from one place.
type Sandbox struct {
	// Bwrap is the bubblewrap program (an absolute path, see FindBwrap).
	Bwrap string
	// Write are host directories the process may write, bound at the same
	// paths: the working tree and the step's directory.
	Write []string
	// ReadOnly are paths bound read-only after Write, so they stay
	// read-only inside a writable directory: a worktree's .git file and
	// the repository's git directory.
	ReadOnly []string
	// Expose are host paths made visible read-only where the fresh /tmp
	// or home would hide them: the program itself, PATH entries, a helper.
	// A path that does not exist is skipped.
	Expose []string
	// Home is a host directory mounted writable as the home directory,
	// at HomePath (its own path when HomePath is empty). It hides the
	// real home, and so the user's keys and tokens. With HomePath and no
	// Home, the home is an empty file system of the sandbox's own, gone
	// with it: nothing to make or remove on the host.
	Home     string
	HomePath string
	// Binds are host directories bound at other paths, after Write (so
	// one may lie inside a writable directory) and before ReadOnly: the
	// build caches kept for the step and sandbox.caches.
	Binds []Bind
	// Net shares the host's network namespace; without it the process
	// has only a loopback interface of its own.
	Net bool
	// Tmpfs are more host directories covered, as /tmp is, with an empty
	// file system of the sandbox's own before anything is bound: for an
	// untrusted item, /run, where the host keeps its Unix sockets. What
	// Expose, Write, Binds and ReadOnly name inside one is bound back.
	Tmpfs []string
	// Wrap, when set, is put between bwrap and the command: a helper that
	// prepares the namespace (the network bridge) and then runs the
	// command given after its own arguments and a "--".
	Wrap []string
}

// Bind is a host directory, Src, seen at Dest inside the sandbox.
type Bind struct {
	Src, Dest string
	ReadOnly  bool
}

// bwrapArgs is the bubblewrap argv (after the program name) that runs
// path with args in dir. Later mounts cover earlier ones, so the order is:
// the read-only root, the fresh file systems, the home, the writable
// directories, the binds, then the read-only paths inside them.
func (sb *Sandbox) bwrapArgs(path string, args []string, dir string) []string {
	a := []string{
		"--ro-bind", "/", "/",
		"--dev", "/dev",
		"--proc", "/proc",
		"--tmpfs", "/tmp",
		"--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
		// A session of its own: no ioctl on cadre's terminal can push
		// keystrokes into the user's shell.
		"--new-session",
		"--die-with-parent",
	}
	if !sb.Net {
		a = append(a, "--unshare-net")
	}
	for _, d := range sb.Tmpfs {
		a = append(a, "--tmpfs", d)
	}
	if sb.Home != "" {
		home := sb.HomePath
		if home == "" {
			home = sb.Home
		}
		a = append(a, "--bind", sb.Home, home)
	} else if sb.HomePath != "" {
		a = append(a, "--tmpfs", sb.HomePath)
	}
	for _, p := range exposed(sb.Expose) {
		a = append(a, "--ro-bind", p, p)
	}
	for _, d := range sb.Write {
		a = append(a, "--bind", d, d)
	}
	for _, b := range sb.Binds {
		op := "--bind"
		if b.ReadOnly {
			op = "--ro-bind"
		}
		a = append(a, op, b.Src, b.Dest)
	}
	for _, p := range sb.ReadOnly {
		a = append(a, "--ro-bind", p, p)
	}
	if dir != "" {
		a = append(a, "--chdir", dir)
	}
	a = append(a, "--")
	a = append(a, sb.Wrap...)
	if len(sb.Wrap) > 0 {
		a = append(a, "--")
	}
	a = append(a, path)
	return append(a, args...)
}

// wrap returns the spec with its program run inside the sandbox. The
// program's own path (resolved on the host) is exposed, so a command kept
// under the host's /tmp or home still runs.
func (sb *Sandbox) wrap(path string, s Spec) (string, []string) {
	cp := *sb
	cp.Expose = append(slices.Clip(cp.Expose), path)
	if real, err := filepath.EvalSymlinks(path); err == nil && real != path {
		cp.Expose = append(cp.Expose, real)
		// An npm CLI (node_modules/.bin/claude -> ../pkg/cli.js) needs its
		// package's files beside it, and its dependencies.
		if i := strings.LastIndex(real, "/node_modules/"); i >= 0 {
			cp.Expose = append(cp.Expose, real[:i+len("/node_modules")])
		}
	}
	dir := s.Dir
	if dir != "" && !filepath.IsAbs(dir) {
		if abs, err := filepath.Abs(dir); err == nil {
			dir = abs
		}
	}
	return sb.Bwrap, cp.bwrapArgs(path, s.Args, dir)
}

// ErrNoSandbox is wrapped by the errors of FindBwrap and ProbeSandbox: the
// sandbox was asked for and cannot work here.
var ErrNoSandbox = errors.New("sandbox unavailable")

// FindBwrap finds the bubblewrap program on pathList (this process's PATH
// when empty).
func FindBwrap(pathList string) (string, error) {
	if pathList == "" {
		pathList = os.Getenv("PATH")
	}
	if p, ok := lookPath("bwrap", pathList); ok {
		return p, nil
	}
	return "", fmt.Errorf("%w: bwrap (bubblewrap) not found in PATH: install it (Debian: apt-get install bubblewrap) or set sandbox.mode: none", ErrNoSandbox)
}

// ProbeSandbox runs `true` in sb once, so a run that asked for the sandbox
// learns before its first step whether the kernel lets bubblewrap create
// its namespaces. The error quotes bubblewrap's own complaint.
func ProbeSandbox(ctx context.Context, sb Sandbox) error {
	truePath, ok := lookPath("true", "/usr/bin:/bin")
	if !ok {
		return fmt.Errorf("probe sandbox: no true program in /usr/bin or /bin")
	}
	sb.Wrap = nil
	res, err := Run(ctx, Spec{Path: truePath, Env: []string{"PATH=/usr/bin:/bin"}, Sandbox: &sb})
	if err != nil {
		return fmt.Errorf("%w: %w", ErrNoSandbox, err)
	}
	if res.ExitCode != 0 {
		msg := strings.TrimSpace(res.StderrTail)
		if msg == "" {
			msg = fmt.Sprintf("exit status %d", res.ExitCode)
		}
		return fmt.Errorf("%w: bubblewrap cannot run here (%s): the kernel may forbid unprivileged namespaces; set sandbox.mode: none", ErrNoSandbox, firstLine(msg))
	}
	return nil
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// exposed orders the paths to expose so that a directory is bound before
// anything inside it, and leaves out what an exposed directory already
// shows: bubblewrap cannot create the mount point of a file whose parent
// does not exist yet in the fresh /tmp or home. Missing paths are left out.
// A path is bound where its links lead: bubblewrap cannot create a mount
// point through a link (a tools directory linked from a checkout), and the
// links themselves stay visible on the read-only root.
func exposed(paths []string) []string {
	sorted := make([]string, 0, len(paths))
	for _, p := range paths {
		real, err := filepath.EvalSymlinks(p)
		if err != nil || real == p {
			sorted = append(sorted, p)
			continue
		}
		sorted = append(sorted, real)
		// The link itself too, where bubblewrap can make its mount point
		// (no link above it): it may lie in the fresh /tmp or home.
		if dir := filepath.Dir(p); evalsTo(dir, dir) {
			sorted = append(sorted, p)
		}
	}
	slices.SortFunc(sorted, func(a, b string) int { return len(a) - len(b) })
	var out, dirs []string
	for _, p := range sorted {
		fi, err := os.Stat(p)
		if err != nil || slices.Contains(out, p) {
			continue
		}
		if slices.ContainsFunc(dirs, func(d string) bool { return strings.HasPrefix(p, d+"/") }) {
			continue
		}
		out = append(out, p)
		if fi.IsDir() {
			dirs = append(dirs, p)
		}
	}
	return out
}

func evalsTo(path, want string) bool {
	real, err := filepath.EvalSymlinks(path)
	return err == nil && real == want
}
