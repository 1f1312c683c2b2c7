package clitest

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/runner"
	"github.com/cadre-dev/cadre/internal/runner/cliutil"
	"github.com/cadre-dev/cadre/internal/runner/runnertest"
)

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
