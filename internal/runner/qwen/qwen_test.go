package qwen

import (
	"io"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/runner"
	"github.com/cadre-dev/cadre/internal/runner/cliutil/clitest"
	"github.com/cadre-dev/cadre/internal/runner/runnertest"
	"github.com/google/go-cmp/cmp"
)

// real-write.jsonl was recorded from Qwen Code 0.24.4 against cadre
// modelsim (internal/modelsim TestRealCLIQwen): one write_file call, then
// the final text. rate-limit.jsonl is built from the documented result
// event (Qwen Code retries a 429 for about a minute before it gives up,
// too slow to record in the tests).
func TestParseTranscripts(t *testing.T) {
	parse := func(t *testing.T, tt clitest.Transcript) (runner.Result, *runner.Error, []string) {
		p := &parser{}
		notes := clitest.FeedEvents(t, tt.File, &p.progress, p.event)
		return runner.Result{Output: p.reply(), Usage: p.usage, SessionID: p.sessionID, Model: p.model}, p.failure, notes
	}
	clitest.Transcripts(t, "d76d9248-e870-4cbe-9154-9b08255858e8", parse,
		clitest.Transcript{File: "real-write.jsonl", Output: "Created hello.txt with the greeting.\n\n### SIGNAL BLOCK\n",
			Usage: event.Usage{InputTokens: 2500, OutputTokens: 100, CacheReadTokens: 100}, Model: "modelsim",
			Notes: []string{"write_file /tmp/TestRealCLIQwenwrite1067543839/001/repo/hello.txt"}},
		clitest.Transcript{File: "rate-limit.jsonl", Kind: runner.KindRateLimit, Msg: "429 Rate limit reached", Retry: 20 * time.Second},
	)
}

func TestClassify(t *testing.T) {
	for _, tt := range []struct {
		sub, msg string
		want     runner.Kind
	}{
		{"error_max_turns", "", runner.KindTurnLimit},
		{"error_during_execution", "401 Incorrect API key provided", runner.KindAuth},
		{"error_during_execution", "You exceeded your current quota", runner.KindQuota},
		{"error_during_execution", "socket hang up", runner.KindBackend},
	} {
		if got := classify(tt.sub, tt.msg); got != tt.want {
			t.Errorf("classify(%q, %q) = %s, want %s", tt.sub, tt.msg, got, tt.want)
		}
	}
}

func result(text string, u event.Usage) map[string]any {
	return map[string]any{"type": "result", "subtype": "success", "session_id": "fake", "is_error": false, "result": text,
		"usage": map[string]int64{"input_tokens": u.InputTokens, "output_tokens": u.OutputTokens}}
}

// cli builds the runners of the tests around fake CLIs.
var cli = clitest.CLI{Name: "qwen", Factory: New}

func TestConformance(t *testing.T) {
	reply := func(text string, u event.Usage) string { return clitest.Cat(clitest.JSONL(result(text, u))) }
	say := func(v string) string {
		return `printf '{"type":"assistant","message":{"content":[{"type":"text","text":"%s"}]}}\n' "` + v + `"` + "\n"
	}
	cli.Conformance(t, clitest.Fakes(reply, say), true)
}

func TestArgv(t *testing.T) {
	inv := clitest.Invocation(t)
	r, _ := New(runner.Settings{Name: "q", URL: "http://127.0.0.1:1/v1", Model: "qwen3-coder-plus"})
	inv.Untrusted, inv.Session = true, "sess-1"
	args, stdin := r.(*Runner).argv(inv)
	want := []string{"--output-format", "stream-json", "--approval-mode", "yolo", "--auth-type", "openai",
		"--model", "qwen3-coder-plus", "--safe-mode", "--include-directories", filepath.Dir(inv.ContextPath),
		"--include-directories", filepath.Dir(inv.OutputPath), "--resume", "sess-1"}
	if diff := cmp.Diff(want, args); diff != "" {
		t.Errorf("argv mismatch (-want +got):\n%s", diff)
	}
	if b, _ := io.ReadAll(stdin); string(b) != inv.Prompt {
		t.Errorf("stdin = %q, want the prompt", b)
	}
	// The settings' approval mode wins.
	r, _ = New(runner.Settings{Name: "q", Args: []string{"--approval-mode", "auto-edit"}})
	args, _ = r.(*Runner).argv(runner.Invocation{})
	if slices.Contains(args, "yolo") {
		t.Errorf("args %q: want the settings' approval mode only", args)
	}
}

func TestEnvAndEstimate(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-test")
	t.Setenv(runnertest.SecretEnv, "hunter2")
	r := cli.Fake(t, clitest.DumpEnv+"cat <<'EOF'\n"+clitest.JSONL(result("ok", event.Usage{InputTokens: 1000, OutputTokens: 100}))+"EOF\n",
		runner.Settings{URL: "http://127.0.0.1:9/v1", Model: "claude-sonnet-5"})
	inv := clitest.Invocation(t)
	res, err := r.Run(t.Context(), inv)
	if err != nil {
		t.Fatal(err)
	}
	env := clitest.ReadEnv(t, filepath.Join(inv.Dir, "env.out"))
	if diff := cmp.Diff(clitest.WantEnv("OPENAI_API_KEY", "OPENAI_BASE_URL"), clitest.Names(env)); diff != "" {
		t.Errorf("environment keys mismatch (-want +got):\n%s", diff)
	}
	if env["OPENAI_BASE_URL"] != "http://127.0.0.1:9/v1" {
		t.Errorf("OPENAI_BASE_URL = %q", env["OPENAI_BASE_URL"])
	}
	if res.Usage.CostUSD <= 0 || !res.Usage.CostEstimated {
		t.Errorf("usage %+v: want a cost estimated from the price table", res.Usage)
	}
}

// TestSandboxHome: under cadre's sandbox the CLI finds its own settings
// and login in its fresh home, and nothing else of the user's.
func TestSandboxHome(t *testing.T) { cli.SandboxHome(t, Type.SandboxHome) }

func TestNewAndMissingCLI(t *testing.T) {
	clitest.NewAndMissing(t, New, Type, "localhost:1", runner.Caps{EditsFiles: true, ModelChoice: true, Streams: true}, func(r runner.Runner) string { return r.(*Runner).Command })
}
