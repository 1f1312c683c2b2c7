package crush

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/runner"
	"github.com/cadre-dev/cadre/internal/runner/cliutil/clitest"
	"github.com/google/go-cmp/cmp"
)

// cli builds the runners of the tests around fake CLIs.
var cli = clitest.CLI{Name: "crush", Factory: New}

func TestConformance(t *testing.T) {
	// The fakes read the prompt crush is given on stdin.
	fakes := clitest.Fakes(func(text string, _ event.Usage) string { return "cat > /dev/null\n" + clitest.Cat(text) }, clitest.Say)
	cli.Conformance(t, fakes, false)
}

// The fixtures are built from Crush's documented output (see the package
// comment): the answer on stdout, one "Error: …" line on stderr.
func TestFixtures(t *testing.T) {
	check := func(t *testing.T, rp clitest.Replay, res runner.Result, _ []string, _ runner.Invocation) {
		if rp.Kind == "" && (!strings.HasPrefix(res.Output, "I created hello.txt") || !strings.HasSuffix(res.Output, "- Next: auditor")) {
			t.Errorf("output %q: want the answer, trimmed", res.Output)
		}
	}
	cli.Replays(t, runner.Settings{Model: "anthropic/claude-sonnet-5"}, check,
		clitest.Replay{File: "success.stdout"},
		clitest.Replay{File: "rate-limit.stderr", Stderr: true, Exit: 1, Kind: runner.KindRateLimit, Retry: 30 * time.Second},
		clitest.Replay{File: "no-provider.stderr", Stderr: true, Exit: 1, Kind: runner.KindAuth},
	)
}

func TestArgvAndURL(t *testing.T) {
	r, _ := New(runner.Settings{Name: "c", Model: "openai/gpt-5", Args: []string{"--verbose"}})
	args, stdin := r.(*Runner).argv(runner.Invocation{Prompt: "-do it", Session: "s1"})
	if diff := cmp.Diff([]string{"run", "--quiet", "--model", "openai/gpt-5", "--session", "s1", "--verbose"}, args); diff != "" {
		t.Errorf("argv mismatch (-want +got):\n%s", diff)
	}
	if b, _ := io.ReadAll(stdin); string(b) != "-do it" {
		t.Errorf("stdin %q, want the prompt", b)
	}
	if _, err := New(runner.Settings{Name: "c", URL: "http://127.0.0.1:1/v1"}); err == nil || !strings.Contains(err.Error(), "crush.json") {
		t.Errorf("New with a url: %v, want an error pointing at crush.json", err)
	}
}

// TestSandboxHome: under cadre's sandbox the CLI finds its own settings
// and login in its fresh home, and nothing else of the user's.
func TestSandboxHome(t *testing.T) { cli.SandboxHome(t, Type.SandboxHome) }

func TestNewAndMissingCLI(t *testing.T) {
	clitest.NewAndMissing(t, New, Type, "https://any.example", runner.Caps{EditsFiles: true, ModelChoice: true}, func(r runner.Runner) string { return r.(*Runner).Command })
}
