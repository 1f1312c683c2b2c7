// Package clitest holds the fixtures and table checks the tests of the
// agent-CLI runners share: a fake CLI written as a shell script and the
// conformance fakes built on it, a step whose files lie outside its working
// tree, replaying a recorded transcript, and the checks every CLI runner
// passes alike (what its parser reads of a transcript, its command line,
// its environment, a replayed failure, its sandbox home, a missing CLI).
// What each CLI prints and how its runner reads it stays in that runner's
// tests.
package clitest

import (
	"bufio"
	"bytes"
	"encoding/json"
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
	"time"

	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/runner"
	"github.com/cadre-dev/cadre/internal/runner/cliutil"
	"github.com/cadre-dev/cadre/internal/runner/runnertest"
	"github.com/cadre-dev/cadre/internal/sandbox"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
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

// Testdata reads testdata/name, a recorded transcript.
func Testdata(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// CatTestdata is a script body printing testdata/name, a recorded
// transcript, as the CLI printed it.
func CatTestdata(t testing.TB, name string) string {
	t.Helper()
	return Cat(string(Testdata(t, name)))
}

// Feed hands each line of the recorded transcript testdata/name, as proc
// would, to line, a parser's line handler, with the parser's progress (at
// *progress) set to collect the notes it gives, and returns those notes.
func Feed(t testing.TB, name string, progress *func(string), line func(stream, line string)) []string {
	t.Helper()
	var notes []string
	*progress = func(n string) { notes = append(notes, n) }
	sc := bufio.NewScanner(bytes.NewReader(Testdata(t, name)))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line("stdout", sc.Text())
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return notes
}

// FeedEvents is Feed for a parser of a JSON event stream: each line holding
// an event is decoded and handed to event (see cliutil.Events).
func FeedEvents[T any](t testing.TB, name string, progress *func(string), event func(T)) []string {
	t.Helper()
	return Feed(t, name, progress, cliutil.Events(event))
}

// CheckFailure fails unless got, the failure a parser read, is none when
// kind is empty, else of kind, its message containing msg, retried after
// retry.
func CheckFailure(t testing.TB, got *runner.Error, kind runner.Kind, msg string, retry time.Duration) {
	t.Helper()
	switch {
	case kind == "" && got != nil:
		t.Errorf("failure = %v, want none", got)
	case kind != "" && got == nil:
		t.Errorf("no failure, want kind %s", kind)
	case got != nil && (got.Kind != kind || !strings.Contains(got.Msg, msg) || got.RetryAfter != retry):
		t.Errorf("failure = %s %q after %s, want %s containing %q after %s", got.Kind, got.Msg, got.RetryAfter, kind, msg, retry)
	}
}

// CheckNotes fails unless notes hold each of want.
func CheckNotes(t testing.TB, notes []string, want ...string) {
	t.Helper()
	for _, n := range want {
		if !slices.Contains(notes, n) {
			t.Errorf("notes %q lack %q", notes, n)
		}
	}
}

// Transcript is a recorded transcript, testdata/File, and what a runner's
// parser must read of it: a reply starting with Output, the usage Usage,
// the session SessionID, the model Model, progress notes holding Notes
// (exactly NoteCount of them, when it is not 0), and a failure of Kind
// whose message contains Msg, retried after Retry, or none when Kind is
// empty. Exit is the code the CLI exited with, for a parser that reads it.
type Transcript struct {
	File      string
	Exit      int
	Output    string
	Usage     event.Usage
	SessionID string
	Model     string
	Kind      runner.Kind
	Msg       string
	Retry     time.Duration
	Notes     []string
	NoteCount int
}

// Parse reads the transcript tt names as a runner's parser does, and
// returns the result it makes of it (the fields the parser fills), the
// failure it read and the progress notes it gave.
type Parse func(t *testing.T, tt Transcript) (res runner.Result, failure *runner.Error, notes []string)

// Transcripts checks what parse reads of each transcript; one that names
// no session wants sid, the session of the synthetic transcripts.
func Transcripts(t *testing.T, sid string, parse Parse, transcripts ...Transcript) {
	for _, tt := range transcripts {
		t.Run(tt.File, func(t *testing.T) {
			if tt.SessionID == "" {
				tt.SessionID = sid
			}
			res, failure, notes := parse(t, tt)
			tt.check(t, res, failure, notes)
		})
	}
}

// check fails unless res, failure and notes are what want says.
func (want Transcript) check(t *testing.T, res runner.Result, failure *runner.Error, notes []string) {
	t.Helper()
	if !strings.HasPrefix(res.Output, want.Output) {
		t.Errorf("Output = %q, want prefix %q", res.Output, want.Output)
	}
	// A cost summed over a run's messages may differ from the written sum
	// in its last bits.
	if diff := cmp.Diff(want.Usage, res.Usage, cmpopts.EquateApprox(0, 1e-12)); diff != "" {
		t.Errorf("Usage mismatch (-want +got):\n%s", diff)
	}
	if res.SessionID != want.SessionID {
		t.Errorf("SessionID = %q, want %q", res.SessionID, want.SessionID)
	}
	if res.Model != want.Model {
		t.Errorf("Model = %q, want %q", res.Model, want.Model)
	}
	CheckFailure(t, failure, want.Kind, want.Msg, want.Retry)
	CheckNotes(t, notes, want.Notes...)
	if want.NoteCount > 0 && len(notes) != want.NoteCount {
		t.Errorf("%d notes %q, want %d", len(notes), notes, want.NoteCount)
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

// CLI is the agent CLI of a runner's tests: its fakes are scripts called
// Name, run by the runners Factory builds.
type CLI struct {
	Name    string // the CLI's program
	Factory runner.Factory
}

// Fake builds a runner whose command is a fake CLI running body (see
// Script); s.Name defaults to the CLI's name.
func (c CLI) Fake(t testing.TB, body string, s runner.Settings) runner.Runner {
	t.Helper()
	if s.Name == "" {
		s.Name = c.Name
	}
	s.Command = Script(t, c.Name, body)
	r, err := c.Factory(s)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return r
}

// Conformance runs the conformance suite on fakes, one script body per
// behaviour (a behaviour with none is skipped). usage says the CLI reports
// token usage.
func (c CLI) Conformance(t *testing.T, fakes map[runnertest.Behavior]string, usage bool) {
	runnertest.Run(t, runnertest.Harness{
		Usage: usage,
		New: func(t *testing.T, b runnertest.Behavior) runner.Runner {
			body, ok := fakes[b]
			if !ok {
				t.Skipf("no fake %s for behaviour %q", c.Name, b)
			}
			return c.Fake(t, body, runner.Settings{})
		},
	})
}

// Fakes are the script bodies of a fake CLI for each behaviour of the
// conformance suite. reply(text, u) is a body printing a reply of text and
// usage u as the CLI does; say(v) one printing the value of the shell
// variable v (written "$v") as the CLI's reply.
func Fakes(reply func(text string, u event.Usage) string, say func(v string) string) map[runnertest.Behavior]string {
	return map[runnertest.Behavior]string{
		runnertest.OK: "echo done > " + runnertest.WorkFile + "\n" + reply(runnertest.OKReply, runnertest.OKUsage),
		runnertest.WriteOutput: "cat > \"$CADRE_OUTPUT\" <<'EOF'\n" + runnertest.OKReply + "EOF\n" +
			reply("wrote the output file", event.Usage{}),
		runnertest.Crash:   CrashBody,
		runnertest.Hang:    HangBody,
		runnertest.Flood:   FloodBody,
		runnertest.Env:     "names=$(env | cut -d= -f1 | tr '\\n' ' ')\n" + say("$names"),
		runnertest.Context: `id=$(sed -n 's/.*"taskId": *"\([^"]*\)".*/\1/p' "$CADRE_CONTEXT")` + "\n" + say("$id"),
	}
}

// Cat is a script body printing text, ended by a newline.
func Cat(text string) string {
	if !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	return "cat <<'EOF'\n" + text + "EOF\n"
}

// JSONL renders events as JSON lines, each ended by a newline.
func JSONL(events ...any) string {
	var b strings.Builder
	for _, e := range events {
		j, err := json.Marshal(e)
		if err != nil {
			panic(err)
		}
		b.Write(j)
		b.WriteByte('\n')
	}
	return b.String()
}

// Say is the say of Fakes for a CLI whose reply is its plain stdout.
func Say(v string) string { return `echo "` + v + `"` + "\n" }

// Step is the step of an ArgvCase before its Edit: the prompt "Fix it."
// in the tree /w/tree, its context and output files outside it.
var Step = runner.Invocation{
	Prompt: "Fix it.", Dir: "/w/tree",
	ContextPath: "/w/run/contexts/s.json", OutputPath: "/w/run/outputs/s.md",
}

// LongPrompt is too long to be one argument.
var LongPrompt = strings.Repeat("x", cliutil.MaxArgPrompt+1)

// ArgvCase is a command line a runner must build: the runner built from S,
// given the step Edit makes of Step, starts its CLI with the arguments
// Want, and WantStdin on its stdin.
type ArgvCase struct {
	Name      string
	S         runner.Settings
	Edit      func(*runner.Invocation)
	Want      []string
	WantStdin string
}

// Argvs checks each case's command line; argv reads the arguments and
// stdin (nil for none) a runner builds for a step.
func (c CLI) Argvs(t *testing.T, argv func(t *testing.T, r runner.Runner, inv runner.Invocation) ([]string, io.Reader), cases ...ArgvCase) {
	for _, tt := range cases {
		t.Run(tt.Name, func(t *testing.T) {
			r, err := c.Factory(tt.S)
			if err != nil {
				t.Fatal(err)
			}
			inv := Step
			if tt.Edit != nil {
				tt.Edit(&inv)
			}
			args, stdin := argv(t, r, inv)
			CheckArgv(t, args, stdin, tt.Want, tt.WantStdin)
		})
	}
}

// Argv is the argv of Argvs for runners of type R, whose method argv
// builds the arguments and stdin of a step.
func Argv[R runner.Runner](argv func(R, runner.Invocation) ([]string, io.Reader)) func(*testing.T, runner.Runner, runner.Invocation) ([]string, io.Reader) {
	return func(_ *testing.T, r runner.Runner, inv runner.Invocation) ([]string, io.Reader) {
		return argv(r.(R), inv)
	}
}

// EnvCase is an environment a runner built from S must start its CLI
// with: the names of WantEnv, Envs' always names and Keys, and the values
// Vals.
type EnvCase struct {
	Name string
	S    runner.Settings
	Keys []string
	Vals map[string]string
}

// Envs checks the exact environment each case's runner starts its CLI
// with (a fake running DumpEnv), which must also hold the names always and
// the step's CADRE_* paths, and never a secret of this process. A first
// case checks that the variables the settings list replace the CLI's.
func (c CLI) Envs(t *testing.T, always []string, cases ...EnvCase) {
	t.Setenv("CADRE_TEST_MINE", "mine")
	t.Setenv(runnertest.SecretEnv, "hunter2")
	mine := EnvCase{Name: "declared keys replace the defaults", S: runner.Settings{Env: []string{"CADRE_TEST_MINE"}},
		Keys: []string{"CADRE_TEST_MINE"}, Vals: map[string]string{"CADRE_TEST_MINE": "mine"}}
	for _, tt := range append([]EnvCase{mine}, cases...) {
		t.Run(tt.Name, func(t *testing.T) {
			env, inv := RunEnv(t, c.Fake(t, DumpEnv, tt.S), append(slices.Clone(always), tt.Keys...)...)
			for k, v := range tt.Vals {
				if env[k] != v {
					t.Errorf("%s = %q, want %q", k, env[k], v)
				}
			}
			if env["CADRE_CONTEXT"] != inv.ContextPath || env["CADRE_WORKTREE"] != inv.Dir {
				t.Errorf("CADRE_CONTEXT/CADRE_WORKTREE = %q/%q, want %q/%q", env["CADRE_CONTEXT"], env["CADRE_WORKTREE"], inv.ContextPath, inv.Dir)
			}
		})
	}
}

// Replay is a recorded transcript, testdata/File, that a fake CLI prints
// (on stderr when Stderr) before it exits with Exit, and how the step must
// end: with a *runner.Error of Kind retried after Retry, or with no error
// when Kind is empty.
type Replay struct {
	File   string
	Stderr bool
	Exit   int
	Kind   runner.Kind
	Retry  time.Duration
}

// Replays runs each replay's fake CLI under a runner of the settings s
// (named "my-" and the CLI's name unless s names it) and checks the step's
// exit code and error, which must name that runner; then check, when set,
// checks the result, the progress notes of the step and the step itself.
func (c CLI) Replays(t *testing.T, s runner.Settings, check func(t *testing.T, rp Replay, res runner.Result, notes []string, inv runner.Invocation), replays ...Replay) {
	if s.Name == "" {
		s.Name = "my-" + c.Name
	}
	for _, rp := range replays {
		t.Run(rp.File, func(t *testing.T) {
			abs, err := filepath.Abs(filepath.Join("testdata", rp.File))
			if err != nil {
				t.Fatal(err)
			}
			to := ""
			if rp.Stderr {
				to = " >&2"
			}
			// The fake reads its stdin, where a prompt may come, first.
			r := c.Fake(t, fmt.Sprintf("cat > /dev/null\ncat %q%s\nexit %d\n", abs, to, rp.Exit), s)
			var notes []string
			inv := Invocation(t)
			inv.Progress = func(n string) { notes = append(notes, n) }
			res, err := r.Run(t.Context(), inv)
			if res.ExitCode != rp.Exit {
				t.Errorf("ExitCode = %d, want %d", res.ExitCode, rp.Exit)
			}
			var re *runner.Error
			switch {
			case rp.Kind == "" && err != nil:
				t.Fatalf("Run: %v", err)
			case rp.Kind != "" && (!errors.As(err, &re) || re.Kind != rp.Kind || re.Runner != s.Name || re.RetryAfter != rp.Retry):
				t.Fatalf("err = %v, want a *runner.Error of kind %s from runner %s, retried after %s", err, rp.Kind, s.Name, rp.Retry)
			}
			if check != nil {
				check(t, rp, res, notes, inv)
			}
		})
	}
}

// SandboxHome checks that under cadre's sandbox the CLI finds home, its
// own settings and login, in its fresh home, and nothing else of the
// user's.
func (c CLI) SandboxHome(t *testing.T, home []string) {
	inv := Invocation(t)
	Sandboxed(t, &inv, append(slices.Clone(home), ".bash_history"))
	c.Fake(t, ListHome, runner.Settings{}).Run(t.Context(), inv)
	CheckHome(t, inv.Dir, home)
}

// LogHas fails unless the step's log holds each of want.
func LogHas(t testing.TB, inv runner.Invocation, want ...string) {
	t.Helper()
	log, err := os.ReadFile(inv.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range want {
		if !strings.Contains(string(log), w) {
			t.Errorf("log lacks %q:\n%.300s", w, log)
		}
	}
}
