package exec_test

import (
	"errors"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/runner"
	"github.com/cadre-dev/cadre/internal/runner/cliutil/clitest"
	"github.com/cadre-dev/cadre/internal/runner/exec"
)

// cli builds exec runners of fake agents, /bin/sh scripts.
var cli = clitest.CLI{Name: "agent", Factory: exec.New}

// writeAgent writes an executable /bin/sh script under dir and returns its
// path.
func writeAgent(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestConformance(t *testing.T) {
	// The child of a hanging agent keeps the inherited stdout, as a real
	// tool would; its pid file is renamed into place so it is never read
	// half written.
	plain := func(text string, _ event.Usage) string { return clitest.Cat(text) }
	cli.Conformance(t, clitest.Fakes(plain, clitest.Say), false)
}

// invocation is an auditor's second attempt at a step, asking a model, in
// a fresh working tree.
func invocation(t *testing.T) runner.Invocation {
	inv := clitest.Invocation(t)
	inv.Role, inv.Item, inv.Step, inv.Attempt = "auditor", "02-farewell", "02-farewell/audit/auditor#2", 2
	inv.Prompt, inv.Model = "Review the change.\nEnd with a SIGNAL BLOCK.\n", "model-x"
	return inv
}

// run runs the fake agent body on inv.
func run(t *testing.T, body string, s runner.Settings, inv runner.Invocation) runner.Result {
	t.Helper()
	res, err := cli.Fake(t, body, s).Run(t.Context(), inv)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestPromptOnStdin(t *testing.T) {
	inv := invocation(t)
	res := run(t, "cat\n", runner.Settings{}, inv)
	if res.Output != inv.Prompt {
		t.Errorf("the agent read %q from stdin, want the prompt %q", res.Output, inv.Prompt)
	}
}

func TestCadreVariables(t *testing.T) {
	// Set in the test process to show the runner's values win.
	t.Setenv("CADRE_ROLE", "wrong")
	inv := invocation(t)
	inv.Reask = true
	res := run(t, "env\n", runner.Settings{}, inv)
	env := parseEnv(res.Output)
	tests := []struct{ key, want string }{
		{"CADRE_CONTEXT", inv.ContextPath},
		{"CADRE_OUTPUT", inv.OutputPath},
		{"CADRE_ROLE", inv.Role},
		{"CADRE_ITEM", inv.Item},
		{"CADRE_STEP", inv.Step},
		{"CADRE_ATTEMPT", "2"},
		{"CADRE_WORKTREE", inv.Dir},
		{"CADRE_REASK", "true"},
		{"CADRE_MODEL", inv.Model},
	}
	for _, tt := range tests {
		got, ok := env[tt.key]
		if !ok {
			t.Errorf("%s not set", tt.key)
		} else if got != tt.want {
			t.Errorf("%s = %q, want %q", tt.key, got, tt.want)
		}
	}
}

func TestWorksInWorktree(t *testing.T) {
	inv := invocation(t)
	res := run(t, "pwd -P\n", runner.Settings{}, inv)
	want, err := filepath.EvalSymlinks(inv.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(res.Output); got != want {
		t.Errorf("agent ran in %q, want the working tree %q", got, want)
	}
}

func TestEnvPassThrough(t *testing.T) {
	t.Setenv("CADRE_TEST_LISTED", "listed-value")
	t.Setenv("CADRE_TEST_UNLISTED", "unlisted-value")
	tests := []struct {
		name  string
		pass  []string
		key   string
		want  string
		isSet bool
	}{
		{"listed key passes", []string{"CADRE_TEST_LISTED"}, "CADRE_TEST_LISTED", "listed-value", true},
		{"unlisted key stays out", []string{"CADRE_TEST_LISTED"}, "CADRE_TEST_UNLISTED", "", false},
		{"nothing listed", nil, "CADRE_TEST_LISTED", "", false},
		{"listed but unset", []string{"CADRE_TEST_NEVER_SET"}, "CADRE_TEST_NEVER_SET", "", false},
		{"base PATH always", nil, "PATH", os.Getenv("PATH"), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := run(t, "env\n", runner.Settings{Env: tt.pass}, invocation(t))
			got, ok := parseEnv(res.Output)[tt.key]
			if ok != tt.isSet || got != tt.want {
				t.Errorf("%s = %q (set %v), want %q (set %v)", tt.key, got, ok, tt.want, tt.isSet)
			}
		})
	}
}

// parseEnv reads `env` output; values here hold no newlines.
func parseEnv(out string) map[string]string {
	env := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			env[k] = v
		}
	}
	return env
}

func TestRelativeCommand(t *testing.T) {
	base := t.TempDir()
	writeAgent(t, base, "agent.sh", "echo from-agent-sh\n")
	writeAgent(t, base, "scripts/agent.sh", "echo from-scripts\n")
	tests := []struct{ command, want string }{
		{"./agent.sh", "from-agent-sh\n"},
		{"scripts/agent.sh", "from-scripts\n"},
		{filepath.Join(base, "agent.sh"), "from-agent-sh\n"},
	}
	for _, tt := range tests {
		t.Run(tt.command, func(t *testing.T) {
			r, err := exec.New(runner.Settings{Name: "agent", Command: tt.command, BaseDir: base})
			if err != nil {
				t.Fatal(err)
			}
			// The working tree has no agent.sh: only BaseDir does.
			res, err := r.Run(t.Context(), invocation(t))
			if err != nil {
				t.Fatal(err)
			}
			if res.Output != tt.want {
				t.Errorf("output %q, want %q", res.Output, tt.want)
			}
		})
	}
}

func TestEmptyCommand(t *testing.T) {
	for _, cmd := range []string{"", "  "} {
		_, err := exec.New(runner.Settings{Name: "mine", Command: cmd})
		if err == nil || !strings.Contains(err.Error(), "runners.mine.command") {
			t.Errorf("New with command %q: error %v, want one naming runners.mine.command", cmd, err)
		}
	}
}

func TestMissingCommand(t *testing.T) {
	base := t.TempDir()
	tests := []string{"./missing.sh", "scripts/missing.sh", filepath.Join(base, "missing.sh"), "cadre-no-such-program"}
	for _, cmd := range tests {
		t.Run(cmd, func(t *testing.T) {
			r, err := exec.New(runner.Settings{Name: "mine", Command: cmd, BaseDir: base})
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			_, err = r.Run(t.Context(), invocation(t))
			if !errors.Is(err, osexec.ErrNotFound) {
				t.Fatalf("Run: error %v, want one wrapping exec.ErrNotFound", err)
			}
			if !strings.Contains(err.Error(), "missing.sh") && !strings.Contains(err.Error(), "cadre-no-such-program") {
				t.Errorf("error %q does not name the command", err)
			}
			if !strings.Contains(err.Error(), "runners.mine.command") {
				t.Errorf("error %q does not name the setting runners.mine.command to fix", err)
			}
		})
	}
}

func TestExitCodeIsNotAnError(t *testing.T) {
	// A non-zero exit is reported in the result, not as an error.
	res := run(t, "echo partial\necho oops >&2\nexit 7\n", runner.Settings{}, invocation(t))
	if res.ExitCode != 7 || res.Output != "partial\n" || !strings.Contains(res.StderrTail, "oops") {
		t.Errorf("result %+v, want exit 7, output \"partial\\n\", stderr with oops", res)
	}
}

func TestLogHoldsTranscript(t *testing.T) {
	r := cli.Fake(t, "echo to-stdout\necho to-stderr >&2\n", runner.Settings{})
	inv := invocation(t)
	// Two runs of the same step (a re-ask) add to one transcript.
	for range 2 {
		if _, err := r.Run(t.Context(), inv); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(inv.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	log := string(data)
	for _, want := range []string{"to-stdout", "to-stderr"} {
		if n := strings.Count(log, want); n != 2 {
			t.Errorf("log has %q %d times, want 2:\n%s", want, n, log)
		}
	}
}

func TestNameAndCapabilities(t *testing.T) {
	r := cli.Fake(t, "true\n", runner.Settings{Name: "shell-agent"})
	if r.Name() != "shell-agent" {
		t.Errorf("Name = %q", r.Name())
	}
	if c := r.Capabilities(); !c.EditsFiles || c.ReportsCost {
		t.Errorf("Capabilities = %+v, want files edited and no cost", c)
	}
}
