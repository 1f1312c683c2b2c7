package crush

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cadre-dev/cadre/internal/runner"
	"github.com/cadre-dev/cadre/internal/runner/cliutil/clitest"
	"github.com/cadre-dev/cadre/internal/runner/runnertest"
	"github.com/google/go-cmp/cmp"
)

var fakes = map[runnertest.Behavior]string{
	runnertest.OK:          "cat > /dev/null\necho done > " + runnertest.WorkFile + "\ncat <<'EOF'\n" + runnertest.OKReply + "EOF\n",
	runnertest.WriteOutput: "cat > \"$CADRE_OUTPUT\" <<'EOF'\n" + runnertest.OKReply + "EOF\necho wrote the output file\n",
	runnertest.Crash:       clitest.CrashBody,
	runnertest.Hang:        clitest.HangBody,
	runnertest.Flood:       clitest.FloodBody,
	runnertest.Env:         "env | cut -d= -f1\n",
	runnertest.Context:     `sed -n 's/.*"taskId": *"\([^"]*\)".*/\1/p' "$CADRE_CONTEXT"` + "\n",
}

func newFake(t *testing.T, body string) runner.Runner {
	t.Helper()
	return clitest.Fake(t, New, "crush", body, runner.Settings{Model: "anthropic/claude-sonnet-5"})
}

func TestConformance(t *testing.T) {
	clitest.Conformance(t, "crush", fakes, false, func(t *testing.T, body string) runner.Runner { return newFake(t, body) })
}

// The fixtures are built from Crush's documented output (see the package
// comment): the answer on stdout, one "Error: …" line on stderr.
func TestFixtures(t *testing.T) {
	tests := []struct {
		file, stream string
		exit         int
		kind         runner.Kind
		retry        time.Duration
	}{
		{"success.stdout", "1", 0, "", 0},
		{"rate-limit.stderr", "2", 1, runner.KindRateLimit, 30 * time.Second},
		{"no-provider.stderr", "2", 1, runner.KindAuth, 0},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			abs, _ := filepath.Abs(filepath.Join("testdata", tt.file))
			r := newFake(t, fmt.Sprintf("cat > /dev/null\ncat %q >&%s\nexit %d\n", abs, tt.stream, tt.exit))
			res, err := r.Run(t.Context(), clitest.Invocation(t))
			if tt.kind == "" {
				if err != nil || !strings.HasPrefix(res.Output, "I created hello.txt") || !strings.HasSuffix(res.Output, "- Next: auditor") {
					t.Errorf("err %v, output %q: want the answer, trimmed", err, res.Output)
				}
				return
			}
			var re *runner.Error
			if !errors.As(err, &re) || re.Kind != tt.kind || re.RetryAfter != tt.retry || re.Runner != "crush" {
				t.Errorf("err = %v, want a %s error retried after %s", err, tt.kind, tt.retry)
			}
		})
	}
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
func TestSandboxHome(t *testing.T) {
	inv := clitest.Invocation(t)
	clitest.Sandboxed(t, &inv, append(slices.Clone(Type.SandboxHome), ".bash_history"))
	r := newFake(t, clitest.ListHome)
	r.Run(t.Context(), inv)
	clitest.CheckHome(t, inv.Dir, Type.SandboxHome)
}

func TestNewAndMissingCLI(t *testing.T) {
	clitest.NewAndMissing(t, New, Type, "https://any.example", runner.Caps{EditsFiles: true, ModelChoice: true}, func(r runner.Runner) string { return r.(*Runner).Command })
}
