package opencode

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/runner"
	"github.com/cadre-dev/cadre/internal/runner/cliutil/clitest"
	"github.com/cadre-dev/cadre/internal/runner/runnertest"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// feed runs the parser over a recorded transcript, line by line, as proc
// would hand it over.
func feed(t *testing.T, name string) (*parser, []string) {
	return clitest.FeedParser(t, name, func(progress func(string)) (*parser, func(string, string)) {
		p := &parser{progress: progress}
		return p, p.line
	})
}

func TestParseTranscripts(t *testing.T) {
	const sid = "ses_494719016ffe85dkDMj0FPRbHK"
	tests := []struct {
		file  string
		reply string // prefix
		usage event.Usage
		kind  runner.Kind
		msg   string
		retry time.Duration
		notes []string
	}{
		{
			file:  "success.jsonl",
			reply: "Created hello.txt and ran the tests.",
			usage: event.Usage{InputTokens: 9, OutputTokens: 96 + 180 + 64, CacheReadTokens: 11520, CacheWriteTokens: 11760, CostUSD: 0.0112 + 0.0061},
			notes: []string{"says: I'll create the file and run the tests.", "write /home/dev/proj/.cadre/worktrees/07-sample/hello.txt", "bash go test ./..."},
		},
		{file: "auth.jsonl", kind: runner.KindAuth, msg: "invalid x-api-key"},
		{
			file: "rate-limit.jsonl", kind: runner.KindRateLimit, msg: "rate limit", retry: 27 * time.Second,
			usage: event.Usage{InputTokens: 3, OutputTokens: 40, CacheWriteTokens: 4096, CostUSD: 0.0031},
			notes: []string{"read /home/dev/proj/.cadre/worktrees/07-sample/main.go"},
		},
		{file: "quota.jsonl", kind: runner.KindQuota, msg: "credit balance is too low"},
		{
			file: "turn-limit.jsonl", kind: runner.KindTurnLimit, msg: "prompt is too long",
			usage: event.Usage{InputTokens: 4, OutputTokens: 20, CacheWriteTokens: 190000, CostUSD: 0.0402},
		},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			p, notes := feed(t, tt.file)
			if got := p.reply(); !strings.HasPrefix(got, tt.reply) {
				t.Errorf("reply = %q, want prefix %q", got, tt.reply)
			}
			if diff := cmp.Diff(tt.usage, p.usage, cmpopts.EquateApprox(0, 1e-12)); diff != "" {
				t.Errorf("usage mismatch (-want +got):\n%s", diff)
			}
			if p.sessionID != sid {
				t.Errorf("session = %q, want %q", p.sessionID, sid)
			}
			e := p.failure
			switch {
			case tt.kind == "" && e != nil:
				t.Errorf("failure = %v, want none", e)
			case tt.kind != "" && e == nil:
				t.Errorf("no failure, want kind %s", tt.kind)
			case e != nil && (e.Kind != tt.kind || !strings.Contains(strings.ToLower(e.Msg), tt.msg) || e.RetryAfter != tt.retry):
				t.Errorf("failure = %s %q after %s, want %s containing %q after %s", e.Kind, e.Msg, e.RetryAfter, tt.kind, tt.msg, tt.retry)
			}
			for _, n := range tt.notes {
				if !slices.Contains(notes, n) {
					t.Errorf("notes %q lack %q", notes, n)
				}
			}
		})
	}
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
	p.line("stdout", `{"type":"error","sessionID":"s","error":{"name":"APIError","data":{"message":"Overloaded","statusCode":529}}}`)
	p.line("stdout", `{"type":"step_start","sessionID":"s","part":{"type":"step-start"}}`)
	p.line("stdout", `{"type":"text","sessionID":"s","part":{"type":"text","text":"done"}}`)
	p.line("stdout", `{"type":"step_finish","sessionID":"s","part":{"type":"step-finish","reason":"stop","cost":0.5,"tokens":{"input":1,"output":2,"reasoning":0,"cache":{"read":0,"write":0}}}}`)
	if p.failure != nil || p.reply() != "done" || p.usage.CostUSD != 0.5 {
		t.Errorf("failure = %v, reply = %q, cost = %v; want none, done, 0.5", p.failure, p.reply(), p.usage.CostUSD)
	}
}

// events renders JSONL events.
func events(evs ...map[string]any) string {
	var b strings.Builder
	for _, e := range evs {
		j, err := json.Marshal(e)
		if err != nil {
			panic(err)
		}
		b.Write(j)
		b.WriteByte('\n')
	}
	return b.String()
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

// fakes are /bin/sh stand-ins for the CLI, one per conformance behaviour.
var fakes = map[runnertest.Behavior]string{
	runnertest.OK: "echo done > " + runnertest.WorkFile + "\ncat <<'EOF'\n" +
		events(text(runnertest.OKReply), finish(runnertest.OKUsage)) + "EOF\n",
	runnertest.WriteOutput: "cat > \"$CADRE_OUTPUT\" <<'EOF'\n" + runnertest.OKReply + "EOF\ncat <<'EOF'\n" +
		events(text("wrote the output file"), finish(event.Usage{})) + "EOF\n",
	runnertest.Crash: clitest.CrashBody,
	runnertest.Hang:  clitest.HangBody,
	runnertest.Flood: clitest.FloodBody,
	runnertest.Env: "names=$(env | cut -d= -f1 | tr '\\n' ' ')\n" +
		`printf '{"type":"text","part":{"type":"text","text":"%s"}}\n' "$names"` + "\n",
	runnertest.Context: `id=$(sed -n 's/.*"taskId": *"\([^"]*\)".*/\1/p' "$CADRE_CONTEXT")` + "\n" +
		`printf '{"type":"text","part":{"type":"text","text":"%s"}}\n' "$id"` + "\n",
}

func newFake(t *testing.T, body string, s runner.Settings) runner.Runner {
	t.Helper()
	return clitest.Fake(t, New, "opencode", body, s)
}

func TestConformance(t *testing.T) {
	clitest.Conformance(t, "opencode", fakes, true, func(t *testing.T, body string) runner.Runner { return newFake(t, body, runner.Settings{}) })
}

func invocation(t *testing.T) runner.Invocation {
	inv := clitest.Invocation(t)
	inv.Prompt = "Do the work, \"quoted\" and all.\n"
	return inv
}

func TestArgv(t *testing.T) {
	base := []string{"run", "--format", "json"}
	tests := []struct {
		name string
		s    runner.Settings
		inv  runner.Invocation
		want []string
	}{
		{"defaults", runner.Settings{}, runner.Invocation{}, base},
		{"settings model", runner.Settings{Model: "anthropic/claude-sonnet-4-5"}, runner.Invocation{},
			slices.Concat(base, []string{"--model", "anthropic/claude-sonnet-4-5"})},
		{"step model, session, extra args", runner.Settings{Model: "anthropic/claude-sonnet-4-5", Args: []string{"--agent", "build"}},
			runner.Invocation{Model: "openai/gpt-5", Session: "ses_1"},
			slices.Concat(base, []string{"--model", "openai/gpt-5", "--session", "ses_1", "--agent", "build"})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := New(tt.s)
			if err != nil {
				t.Fatal(err)
			}
			tt.inv.Prompt = "never an argument"
			if diff := cmp.Diff(tt.want, r.(*Runner).argv(tt.inv)); diff != "" {
				t.Errorf("argv mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPromptOnStdin checks the prompt reaches the CLI unchanged.
func TestPromptOnStdin(t *testing.T) {
	r := newFake(t, "cat > prompt.out\n", runner.Settings{})
	inv := invocation(t)
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
	t.Setenv("CADRE_TEST_MINE", "mine")
	t.Setenv(runnertest.SecretEnv, "hunter2")
	tests := []struct {
		name string
		s    runner.Settings
		keys []string
		vals map[string]string
	}{
		{"default pass-through", runner.Settings{}, []string{"ANTHROPIC_API_KEY"}, map[string]string{"OPENCODE_PERMISSION": permission}},
		{"declared keys replace the defaults", runner.Settings{Env: []string{"CADRE_TEST_MINE"}}, []string{"CADRE_TEST_MINE"}, nil},
		{"url configures the model's provider", runner.Settings{URL: "http://127.0.0.1:8080/v1", Model: "anthropic/claude-sonnet-4-5"},
			[]string{"ANTHROPIC_API_KEY", "OPENCODE_CONFIG_CONTENT"},
			map[string]string{"OPENCODE_CONFIG_CONTENT": `{"provider":{"anthropic":{"options":{"baseURL":"http://127.0.0.1:8080/v1"}}}}`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newFake(t, clitest.DumpEnv, tt.s)
			inv := invocation(t)
			if _, err := r.Run(t.Context(), inv); err != nil {
				t.Fatal(err)
			}
			env := clitest.ReadEnv(t, filepath.Join(inv.Dir, "env.out"))
			want := clitest.WantEnv(append(tt.keys, "OPENCODE_PERMISSION", "PWD")...)
			if diff := cmp.Diff(want, clitest.Names(env)); diff != "" {
				t.Errorf("environment keys mismatch (-want +got):\n%s", diff)
			}
			if env["PWD"] != inv.Dir {
				t.Errorf("PWD = %q, want the working tree %q", env["PWD"], inv.Dir)
			}
			for k, v := range tt.vals {
				if env[k] != v {
					t.Errorf("%s = %q, want %q", k, env[k], v)
				}
			}
		})
	}
}

func TestRunReportsErrors(t *testing.T) {
	tests := []struct {
		file string
		kind runner.Kind
	}{
		{"auth.jsonl", runner.KindAuth},
		{"rate-limit.jsonl", runner.KindRateLimit},
		{"quota.jsonl", runner.KindQuota},
		{"turn-limit.jsonl", runner.KindTurnLimit},
		{"success.jsonl", ""},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			abs, err := filepath.Abs(filepath.Join("testdata", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			exit := 1
			if tt.kind == "" {
				exit = 0
			}
			r := newFake(t, fmt.Sprintf("cat > /dev/null\ncat %q\nexit %d\n", abs, exit), runner.Settings{Name: "oc", Model: "anthropic/claude-sonnet-4-5"})
			res, err := r.Run(t.Context(), invocation(t))
			if res.ExitCode != exit || res.SessionID != "ses_494719016ffe85dkDMj0FPRbHK" || res.Model != "anthropic/claude-sonnet-4-5" {
				t.Errorf("ExitCode = %d, SessionID = %q, Model = %q", res.ExitCode, res.SessionID, res.Model)
			}
			if tt.kind == "" {
				if err != nil || !strings.HasPrefix(res.Output, "Created hello.txt") || res.Usage.CostUSD == 0 || res.Usage.CostEstimated {
					t.Errorf("err = %v, Output = %q, Usage = %+v; want the reply and a reported cost", err, res.Output, res.Usage)
				}
				return
			}
			var re *runner.Error
			if !errors.As(err, &re) || re.Kind != tt.kind || re.Runner != "oc" {
				t.Fatalf("err = %v, want a *runner.Error of kind %s from runner oc", err, tt.kind)
			}
		})
	}
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
