package opencode

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/runner"
	"github.com/cadre-dev/cadre/internal/runner/cliutil/clitest"
)

func TestParseTranscripts(t *testing.T) {
	parse := func(t *testing.T, tt clitest.Transcript) (runner.Result, *runner.Error, []string) {
		p := &parser{}
		notes := clitest.FeedEvents(t, tt.File, &p.progress, p.event)
		return runner.Result{Output: p.reply(), Usage: p.usage, SessionID: p.sessionID}, p.failure, notes
	}
	clitest.Transcripts(t, "ses_494719016ffe85dkDMj0FPRbHK", parse,
		clitest.Transcript{
			File:   "success.jsonl",
			Output: "Created hello.txt and ran the tests.",
			Usage:  event.Usage{InputTokens: 9, OutputTokens: 96 + 180 + 64, CacheReadTokens: 11520, CacheWriteTokens: 11760, CostUSD: 0.0112 + 0.0061},
			Notes:  []string{"says: I'll create the file and run the tests.", "write /home/dev/proj/.cadre/worktrees/07-sample/hello.txt", "bash go test ./..."},
		},
		clitest.Transcript{File: "auth.jsonl", Kind: runner.KindAuth, Msg: "invalid x-api-key"},
		clitest.Transcript{
			File: "rate-limit.jsonl", Kind: runner.KindRateLimit, Msg: "rate limit", Retry: 27 * time.Second,
			Usage: event.Usage{InputTokens: 3, OutputTokens: 40, CacheWriteTokens: 4096, CostUSD: 0.0031},
			Notes: []string{"read /home/dev/proj/.cadre/worktrees/07-sample/main.go"},
		},
		clitest.Transcript{File: "quota.jsonl", Kind: runner.KindQuota, Msg: "credit balance is too low"},
		clitest.Transcript{
			File: "turn-limit.jsonl", Kind: runner.KindTurnLimit, Msg: "prompt is too long",
			Usage: event.Usage{InputTokens: 4, OutputTokens: 20, CacheWriteTokens: 190000, CostUSD: 0.0402},
		},
	)
}

func TestClassify(t *testing.T) {
	tests := []struct {
		name   string
		status int
		text   string
		want   runner.Kind
	}{
		{"ProviderAuthError", 0, "No API key found for anthropic", runner.KindAuth},
		{"APIError", 429, "You exceeded your current quota, please check your plan and billing details.", runner.KindQuota},
		{"APIError", 529, "Overloaded", runner.KindRateLimit},
		{"MessageOutputLengthError", 0, "", runner.KindTurnLimit},
		{"UnknownError", 0, "socket hang up", runner.KindBackend},
	}
	for _, tt := range tests {
		if got := classify(tt.name, tt.status, tt.text); got != tt.want {
			t.Errorf("classify(%q, %d, %q) = %s, want %s", tt.name, tt.status, tt.text, got, tt.want)
		}
	}
	if got := retryAfter(map[string]string{"Retry-After-Ms": "1500"}, ""); got != 1500*time.Millisecond {
		t.Errorf("retry-after-ms header: %s, want 1.5s", got)
	}
	if got := retryAfter(map[string]string{"retry-after": "Wed, 21 Oct 2026 07:28:00 GMT"}, "please try again in 2s"); got != 2*time.Second {
		t.Errorf("date header with a wait in the message: %s, want 2s", got)
	}
}

// An error followed by a finished step did not end the run.
func TestErrorThenStepFinish(t *testing.T) {
	p := &parser{}
	for _, line := range []string{
		`{"type":"error","sessionID":"s","error":{"name":"APIError","data":{"message":"Overloaded","statusCode":529}}}`,
		`{"type":"step_start","sessionID":"s","part":{"type":"step-start"}}`,
		`{"type":"text","sessionID":"s","part":{"type":"text","text":"done"}}`,
		`{"type":"step_finish","sessionID":"s","part":{"type":"step-finish","reason":"stop","cost":0.5,"tokens":{"input":1,"output":2,"reasoning":0,"cache":{"read":0,"write":0}}}}`,
	} {
		var ev runEvent
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatal(err)
		}
		p.event(ev)
	}
	if p.failure != nil || p.reply() != "done" || p.usage.CostUSD != 0.5 {
		t.Errorf("failure = %v, reply = %q, cost = %v; want none, done, 0.5", p.failure, p.reply(), p.usage.CostUSD)
	}
}

func text(s string) map[string]any {
	return map[string]any{"type": "text", "sessionID": "fake-session", "part": map[string]any{"type": "text", "text": s}}
}

func finish(u event.Usage) map[string]any {
	return map[string]any{"type": "step_finish", "sessionID": "fake-session", "part": map[string]any{
		"type": "step-finish", "reason": "stop", "cost": u.CostUSD,
		"tokens": map[string]any{"input": u.InputTokens, "output": u.OutputTokens, "reasoning": 0, "cache": map[string]int64{"read": 0, "write": 0}},
	}}
}

// cli builds the runners of the tests around fake CLIs.
var cli = clitest.CLI{Name: "opencode", Factory: New}

func TestConformance(t *testing.T) {
	reply := func(s string, u event.Usage) string { return clitest.Cat(clitest.JSONL(text(s), finish(u))) }
	say := func(v string) string {
		return `printf '{"type":"text","part":{"type":"text","text":"%s"}}\n' "` + v + `"` + "\n"
	}
	cli.Conformance(t, clitest.Fakes(reply, say), true)
}

func TestArgv(t *testing.T) {
	base := []string{"run", "--format", "json"}
	// The prompt is never an argument.
	argv := func(_ *testing.T, r runner.Runner, inv runner.Invocation) ([]string, io.Reader) {
		return r.(*Runner).argv(inv), nil
	}
	cli.Argvs(t, argv,
		clitest.ArgvCase{Name: "defaults", Want: base},
		clitest.ArgvCase{Name: "settings model", S: runner.Settings{Model: "anthropic/claude-sonnet-4-5"},
			Want: slices.Concat(base, []string{"--model", "anthropic/claude-sonnet-4-5"})},
		clitest.ArgvCase{Name: "step model, session, extra args", S: runner.Settings{Model: "anthropic/claude-sonnet-4-5", Args: []string{"--agent", "build"}},
			Edit: func(inv *runner.Invocation) { inv.Model, inv.Session = "openai/gpt-5", "ses_1" },
			Want: slices.Concat(base, []string{"--model", "openai/gpt-5", "--session", "ses_1", "--agent", "build"})},
	)
}

// TestPromptOnStdin checks the prompt reaches the CLI unchanged.
func TestPromptOnStdin(t *testing.T) {
	r := cli.Fake(t, "cat > prompt.out\n", runner.Settings{})
	inv := clitest.Invocation(t)
	inv.Prompt = "Do the work, \"quoted\" and all.\n"
	if _, err := r.Run(t.Context(), inv); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(inv.Dir, "prompt.out"))
	if err != nil || string(got) != inv.Prompt {
		t.Errorf("stdin = %q (%v), want the prompt %q", got, err, inv.Prompt)
	}
}

// TestEnv checks the exact environment the CLI starts with.
func TestEnv(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "key-from-parent")
	cli.Envs(t, []string{"OPENCODE_PERMISSION", "PWD"},
		clitest.EnvCase{Name: "default pass-through", Keys: []string{"ANTHROPIC_API_KEY"}, Vals: map[string]string{"OPENCODE_PERMISSION": permission}},
		clitest.EnvCase{Name: "url configures the model's provider", S: runner.Settings{URL: "http://127.0.0.1:8080/v1", Model: "anthropic/claude-sonnet-4-5"},
			Keys: []string{"ANTHROPIC_API_KEY", "OPENCODE_CONFIG_CONTENT"},
			Vals: map[string]string{"OPENCODE_CONFIG_CONTENT": `{"provider":{"anthropic":{"options":{"baseURL":"http://127.0.0.1:8080/v1"}}}}`}},
	)
	// OpenCode takes its project from PWD.
	env, inv := clitest.RunEnv(t, cli.Fake(t, clitest.DumpEnv, runner.Settings{}), "ANTHROPIC_API_KEY", "OPENCODE_PERMISSION", "PWD")
	if env["PWD"] != inv.Dir {
		t.Errorf("PWD = %q, want the working tree %q", env["PWD"], inv.Dir)
	}
}

func TestRunReportsErrors(t *testing.T) {
	check := func(t *testing.T, rp clitest.Replay, res runner.Result, _ []string, _ runner.Invocation) {
		if res.SessionID != "ses_494719016ffe85dkDMj0FPRbHK" || res.Model != "anthropic/claude-sonnet-4-5" {
			t.Errorf("SessionID = %q, Model = %q", res.SessionID, res.Model)
		}
		if rp.Kind == "" && (!strings.HasPrefix(res.Output, "Created hello.txt") || res.Usage.CostUSD == 0 || res.Usage.CostEstimated) {
			t.Errorf("Output = %q, Usage = %+v; want the reply and a reported cost", res.Output, res.Usage)
		}
	}
	cli.Replays(t, runner.Settings{Model: "anthropic/claude-sonnet-4-5"}, check,
		clitest.Replay{File: "auth.jsonl", Exit: 1, Kind: runner.KindAuth},
		clitest.Replay{File: "rate-limit.jsonl", Exit: 1, Kind: runner.KindRateLimit, Retry: 27 * time.Second},
		clitest.Replay{File: "quota.jsonl", Exit: 1, Kind: runner.KindQuota},
		clitest.Replay{File: "turn-limit.jsonl", Exit: 1, Kind: runner.KindTurnLimit},
		clitest.Replay{File: "success.jsonl"},
	)
}

func TestNewAndMissingCLI(t *testing.T) {
	bad := []struct {
		s    runner.Settings
		want string
	}{
		{runner.Settings{Name: "oc", URL: "not a url"}, "runners.oc.url"},
		{runner.Settings{Name: "oc", URL: "http://127.0.0.1:1/v1", Model: "claude-sonnet-4-5"}, "runners.oc.model written provider/model"},
		{runner.Settings{Name: "oc", URL: "http://127.0.0.1:1/v1"}, "runners.oc.model written provider/model"},
	}
	for _, tt := range bad {
		if _, err := New(tt.s); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("New(%+v) = %v, want an error containing %q", tt.s, err, tt.want)
		}
	}
	clitest.NewAndMissing(t, New, Type, "not a url", runner.Caps{EditsFiles: true, ReportsCost: true, ModelChoice: true, Streams: true}, func(r runner.Runner) string { return r.(*Runner).Command })
}
