// Package clitest holds the fixtures the tests of the agent-CLI runners
// share: a fake CLI written as a shell script, a step whose files lie
// outside its working tree, replaying a recorded transcript, and reading the
// environment a fake CLI started with. What each CLI prints and how its
// runner reads it stays in that runner's tests.
package clitest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cadre-dev/cadre/internal/runner"
	"github.com/cadre-dev/cadre/internal/runner/runnertest"
	"github.com/cadre-dev/cadre/internal/sandbox"
	"github.com/google/go-cmp/cmp"
)

// Script bodies of a fake CLI that behaves as the conformance suite's
// Crash, Hang and Flood ask, whatever the CLI's output format.
var (
	CrashBody = "echo " + runnertest.CrashStderr + " >&2\nexit " + strconv.Itoa(runnertest.CrashExit) + "\n"
	HangBody  = "sleep 1000 &\necho $! > pid.tmp && mv pid.tmp " + runnertest.ChildPIDFile + "\nwait\n"
	FloodBody = fmt.Sprintf("yes 0123456789abcdef0123456789abcdef | head -c %d\n", runnertest.FloodSize)
)

// Script writes an executable /bin/sh script called name, running body, in
// a fresh temporary directory and returns its path.
func Script(t testing.TB, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// Invocation is a coder step whose context and output files are outside its
// working tree, as in worktree mode; the tree exists, the files do not.
func Invocation(t testing.TB) runner.Invocation {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, "tree")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return runner.Invocation{
		Role: "coder", Item: "07-sample", Step: "07-sample/code/coder#1", Attempt: 1,
		Prompt:      "Do the work.\n",
		Dir:         dir,
		ContextPath: filepath.Join(root, "run", "contexts", "s.json"),
		OutputPath:  filepath.Join(root, "run", "outputs", "s.md"),
		LogPath:     filepath.Join(root, "run", "logs", "s.log"),
	}
}

// Feed hands each line of the file at path to line as a line of stdout, the
// way proc hands over a CLI's output.
func Feed(t testing.TB, path string, line func(stream, line string)) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line("stdout", sc.Text())
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
}

// DumpEnv is a script body that writes the environment the shell started
// with, one NAME=value a line, to env.out in its working directory.
const DumpEnv = "tr '\\0' '\\n' < /proc/$$/environ > env.out\n"

// ReadEnv reads the NAME=value lines DumpEnv wrote.
func ReadEnv(t testing.TB, path string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			env[k] = v
		}
	}
	return env
}

// WantEnv is the sorted names of the minimal environment an agent CLI
// should start with: PATH, HOME, LANG and TERM where this process has them,
// the CADRE_* variables, and keys.
func WantEnv(keys ...string) []string {
	want := []string{"CADRE_ATTEMPT", "CADRE_CONTEXT", "CADRE_ITEM", "CADRE_OUTPUT", "CADRE_ROLE", "CADRE_STEP", "CADRE_WORKTREE"}
	want = append(want, keys...)
	for _, k := range []string{"PATH", "HOME", "LANG", "TERM"} {
		if _, ok := os.LookupEnv(k); ok {
			want = append(want, k)
		}
	}
	slices.Sort(want)
	return want
}

// Names is the sorted names of env, to compare with WantEnv.
func Names(env map[string]string) []string {
	names := make([]string, 0, len(env))
	for k := range env {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

// Fake builds a runner with factory f whose command is a fake CLI called
// name, running body (see Script); s.Name defaults to name.
func Fake(t testing.TB, f runner.Factory, name, body string, s runner.Settings) runner.Runner {
	t.Helper()
	if s.Name == "" {
		s.Name = name
	}
	s.Command = Script(t, name, body)
	r, err := f(s)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return r
}

// Sandboxed is inv confined by a network-deny sandbox, with HOME a fresh
// directory holding the files listed (relative to it, each holding its own
// name) and a key the CLI must not see, .ssh/id_ed25519. It skips the test
// where bubblewrap cannot run (.ci/run installs it). It returns the home.
func Sandboxed(t *testing.T, inv *runner.Invocation, files []string) string {
	t.Helper()
	p, err := sandbox.New(t.Context(), sandbox.Settings{Network: sandbox.NetDeny}, os.Getenv)
	if err != nil {
		t.Skipf("sandboxed runner test: %v", err)
	}
	home := t.TempDir()
	for _, f := range append(slices.Clone(files), ".ssh/id_ed25519") {
		p := filepath.Join(home, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(f), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("HOME", home)
	inv.Sandbox = p
	return home
}

// ListHome is a script body that writes, to home.txt in its working
// directory, every file of its home with its content: NAME=CONTENT lines.
const ListHome = `(cd "$HOME" && find . -type f | sort | while read -r f; do echo "${f#./}=$(cat "$f")"; done) > home.txt` + "\n"

// CheckHome fails unless the home.txt that ListHome wrote in dir lists
// exactly the files of want, each with its own name as content (as
// Sandboxed wrote them): the CLI's own files were copied into its fresh
// home, and nothing else of the user's home, the key least of all.
func CheckHome(t *testing.T, dir string, want []string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "home.txt"))
	if err != nil {
		t.Fatalf("the CLI listed no home: %v", err)
	}
	var lines []string
	for _, f := range want {
		lines = append(lines, f+"="+f)
	}
	slices.Sort(lines)
	if got := strings.TrimSpace(string(b)); got != strings.Join(lines, "\n") {
		t.Errorf("the sandboxed CLI's home holds\n%s\nwant\n%s", got, strings.Join(lines, "\n"))
	}
}

// FeedParser hands the recorded transcript testdata/name, as proc would,
// to the parser that start makes, with its line handler, and returns the
// parser and the progress notes it gave.
func FeedParser[P any](t testing.TB, name string, start func(progress func(string)) (P, func(stream, line string))) (P, []string) {
	t.Helper()
	var notes []string
	p, line := start(func(n string) { notes = append(notes, n) })
	Feed(t, filepath.Join("testdata", name), line)
	return p, notes
}

// Conformance runs the conformance suite on the fake CLIs of fakes, one
// script body per behaviour (a behaviour with none is skipped); build
// makes the runner of a body. usage says the CLI reports token usage.
func Conformance(t *testing.T, cli string, fakes map[runnertest.Behavior]string, usage bool, build func(t *testing.T, body string) runner.Runner) {
	runnertest.Run(t, runnertest.Harness{
		Usage: usage,
		New: func(t *testing.T, b runnertest.Behavior) runner.Runner {
			body, ok := fakes[b]
			if !ok {
				t.Skipf("no fake %s for behaviour %q", cli, b)
			}
			return build(t, body)
		},
	})
}

// CheckArgv fails unless args and what stdin holds (none: "") are want and
// wantStdin.
func CheckArgv(t testing.TB, args []string, stdin io.Reader, want []string, wantStdin string) {
	t.Helper()
	if diff := cmp.Diff(want, args); diff != "" {
		t.Errorf("argv mismatch (-want +got):\n%s", diff)
	}
	var got string
	if stdin != nil {
		b, _ := io.ReadAll(stdin)
		got = string(b)
	}
	if got != wantStdin {
		t.Errorf("stdin has %d bytes, want %d", len(got), len(wantStdin))
	}
}

// RunEnv runs r, a fake CLI running DumpEnv, on a step and returns the
// environment the CLI started with and the step; it fails unless that
// environment's names are WantEnv(keys...).
func RunEnv(t testing.TB, r runner.Runner, keys ...string) (map[string]string, runner.Invocation) {
	t.Helper()
	inv := Invocation(t)
	if _, err := r.Run(t.Context(), inv); err != nil {
		t.Fatal(err)
	}
	env := ReadEnv(t, filepath.Join(inv.Dir, "env.out"))
	if diff := cmp.Diff(WantEnv(keys...), Names(env)); diff != "" {
		t.Errorf("environment keys mismatch (-want +got):\n%s", diff)
	}
	return env, inv
}

// NewAndMissing checks what every agent-CLI runner type d does alike, its
// runners built by f: a URL that is no http(s) URL (badURL; "" for a CLI
// that takes none) is refused naming runners.NAME.url; the command is
// d.Program unless set (command reads it from a runner); the runner has
// caps; and a CLI not installed fails its step with the install command.
func NewAndMissing(t *testing.T, f runner.Factory, d runner.Descriptor, badURL string, caps runner.Caps, command func(runner.Runner) string) {
	t.Helper()
	if badURL != "" {
		if _, err := f(runner.Settings{Name: "x", URL: badURL}); err == nil || !strings.Contains(err.Error(), "runners.x.url") {
			t.Errorf("New with a bad URL: %v, want an error naming runners.x.url", err)
		}
	}
	r, err := f(runner.Settings{Name: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if got := command(r); got != d.Program {
		t.Errorf("default command %q, want %s", got, d.Program)
	}
	if c := r.Capabilities(); c != caps {
		t.Errorf("Capabilities = %+v, want %+v", c, caps)
	}
	r, err = f(runner.Settings{Name: "x", Command: "cadre-no-such-" + d.Program})
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Run(t.Context(), Invocation(t))
	if !errors.Is(err, osexec.ErrNotFound) || !strings.Contains(err.Error(), "runners.x.command") || !strings.Contains(err.Error(), d.Install) {
		t.Errorf("missing CLI: %v, want ErrNotFound naming runners.x.command and the install command %q", err, d.Install)
	}
}
