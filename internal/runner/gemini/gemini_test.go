package gemini

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/runner"
	"github.com/cadre-dev/cadre/internal/runner/cliutil"
	"github.com/cadre-dev/cadre/internal/runner/cliutil/clitest"
	"github.com/cadre-dev/cadre/internal/runner/price"
	"github.com/cadre-dev/cadre/internal/runner/runnertest"
	"github.com/google/go-cmp/cmp"
)

func readTestdata(t *testing.T, name string) []byte {
	t.Helper()
	if name == "" {
		return nil
	}
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestParseTranscripts(t *testing.T) {
	const sid = "b5e2c1d4-0a7f-4c39-8e61-3d9f2a7b8c15"
	tests := []struct {
		name   string
		sid    string // session id, when not the synthetic transcripts' one
		stdout string
		stderr string
		exit   int
		reply  string // prefix
		models map[string]event.Usage
		main   string
		kind   runner.Kind
		msg    string
		retry  time.Duration
	}{
		{
			name: "success", stdout: "success.stdout",
			reply: "Created hello.txt and ran the tests.",
			models: map[string]event.Usage{
				"gemini-2.5-flash-lite": {InputTokens: 1306, OutputTokens: 9 + 41},
				"gemini-2.5-pro":        {InputTokens: 4512, CacheReadTokens: 34400, OutputTokens: 402 + 1873},
			},
			main: "gemini-2.5-pro",
		},
		{name: "auth", stderr: "auth.stderr", exit: 1, kind: runner.KindAuth, msg: "API key not valid"},
		{name: "auth missing", stderr: "auth-missing.stderr", exit: 41, kind: runner.KindAuth, msg: "GEMINI_API_KEY"},
		{name: "rate limit", stderr: "rate-limit.stderr", exit: 1, kind: runner.KindRateLimit, msg: "generate_content_paid_tier_input_token_count", retry: 21400 * time.Millisecond},
		{name: "daily quota", stderr: "quota.stderr", exit: 1, kind: runner.KindQuota, msg: "PerDay"},
		{name: "turn limit", stderr: "turn-limit.stderr", exit: 53, kind: runner.KindTurnLimit, msg: "max session turns"},
		// Recorded from the real CLI against cadre modelsim.
		{
			name: "real write", sid: "d3916a8e-a63e-4166-b8ca-21cff80a4b6b", stdout: "real-write.stdout",
			reply: "Created hello.txt with the greeting.",
			models: map[string]event.Usage{
				"gemini-3.5-flash-lite": {InputTokens: 900, OutputTokens: 12},
				"gemini-3.8-flash":      {InputTokens: 2400, CacheReadTokens: 100, OutputTokens: 100},
			},
			main: "gemini-3.8-flash",
		},
		{
			name: "real rate limit", sid: "ebad8cb1-e02a-4269-843c-8d8ca5cdffd5", stderr: "real-rate-limit.stderr", exit: 1,
			kind: runner.KindRateLimit, msg: "modelsim: rate limit reached",
		},
		{
			name: "real max turns", sid: "1b431744-38ea-4920-9d62-20c40531a46b", stderr: "real-max-turns.stderr", exit: 53,
			kind: runner.KindTurnLimit, msg: "Reached max session turns",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.sid == "" {
				tt.sid = sid
			}
			p := parse(readTestdata(t, tt.stdout), readTestdata(t, tt.stderr), tt.exit)
			if !strings.HasPrefix(p.reply, tt.reply) {
				t.Errorf("reply = %q, want prefix %q", p.reply, tt.reply)
			}
			if p.sessionID != tt.sid {
				t.Errorf("session = %q, want %q", p.sessionID, tt.sid)
			}
			if diff := cmp.Diff(tt.models, p.models); diff != "" {
				t.Errorf("models mismatch (-want +got):\n%s", diff)
			}
			if got := p.mainModel(); got != tt.main {
				t.Errorf("main model = %q, want %q", got, tt.main)
			}
			e := p.failure
			switch {
			case tt.kind == "" && e != nil:
				t.Errorf("failure = %v, want none", e)
			case tt.kind != "" && e == nil:
				t.Errorf("no failure, want kind %s", tt.kind)
			case e != nil && (e.Kind != tt.kind || !strings.Contains(e.Msg, tt.msg) || e.RetryAfter != tt.retry):
				t.Errorf("failure = %s %q after %s, want %s containing %q after %s", e.Kind, e.Msg, e.RetryAfter, tt.kind, tt.msg, tt.retry)
			}
		})
	}
}

func TestParseWithoutDocument(t *testing.T) {
	tests := []struct {
		name   string
		stdout string
		stderr string
		exit   int
		kind   runner.Kind
	}{
		{"crash", "", "TypeError: cannot read properties of undefined\n", 1, ""},
		{"documented auth exit", "", "", exitAuth, runner.KindAuth},
		{"documented turn-limit exit", "", "", exitTurnLimit, runner.KindTurnLimit},
		{"not an output document", `{"hello": "world"}` + "\n", "", 0, ""},
		{"truncated document", "{\n  \"response\": \"half", "", 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := parse([]byte(tt.stdout), []byte(tt.stderr), tt.exit)
			var kind runner.Kind
			if p.failure != nil {
				kind = p.failure.Kind
			}
			if kind != tt.kind || p.reply != "" {
				t.Errorf("kind = %q, reply = %q; want %q and no reply", kind, p.reply, tt.kind)
			}
		})
	}
}

// outputDoc renders the CLI's JSON output for a reply and usage.
func outputDoc(reply string, u event.Usage) string {
	b, err := json.MarshalIndent(map[string]any{
		"session_id": "fake-session",
		"response":   reply,
		"stats": map[string]any{"models": map[string]any{"gemini-2.5-pro": map[string]any{
			"tokens": map[string]int64{"prompt": u.InputTokens, "candidates": u.OutputTokens, "cached": 0, "thoughts": 0, "tool": 0},
		}}},
	}, "", "  ")
	if err != nil {
		panic(err)
	}
	return string(b) + "\n"
}

// fakes are /bin/sh stand-ins for the CLI, one per conformance behaviour.
var fakes = map[runnertest.Behavior]string{
	runnertest.OK: "echo done > " + runnertest.WorkFile + "\ncat <<'EOF'\n" +
		outputDoc(runnertest.OKReply, runnertest.OKUsage) + "EOF\n",
	runnertest.WriteOutput: "cat > \"$CADRE_OUTPUT\" <<'EOF'\n" + runnertest.OKReply + "EOF\ncat <<'EOF'\n" +
		outputDoc("wrote the output file", event.Usage{}) + "EOF\n",
	runnertest.Crash: clitest.CrashBody,
	runnertest.Hang:  clitest.HangBody,
	runnertest.Flood: clitest.FloodBody,
	runnertest.Env: "names=$(env | cut -d= -f1 | tr '\\n' ' ')\n" +
		`printf '{\n  "response": "%s"\n}\n' "$names"` + "\n",
	runnertest.Context: `id=$(sed -n 's/.*"taskId": *"\([^"]*\)".*/\1/p' "$CADRE_CONTEXT")` + "\n" +
		`printf '{\n  "response": "%s"\n}\n' "$id"` + "\n",
}

func newFake(t *testing.T, body string, s runner.Settings, prices *price.Table) runner.Runner {
	t.Helper()
	return clitest.Fake(t, WithPrices(prices), "gemini", body, s)
}

func TestConformance(t *testing.T) {
	clitest.Conformance(t, "gemini", fakes, true, func(t *testing.T, body string) runner.Runner { return newFake(t, body, runner.Settings{}, nil) })
}

func TestArgv(t *testing.T) {
	base := []string{"--output-format", "json", "--approval-mode", "yolo"}
	dirs := []string{"--include-directories=/w/run/contexts", "--include-directories=/w/run/outputs"}
	inv := runner.Invocation{
		Prompt: "Fix it.", Dir: "/w/tree",
		ContextPath: "/w/run/contexts/s.json", OutputPath: "/w/run/outputs/s.md",
	}
	long := strings.Repeat("x", cliutil.MaxArgPrompt+1)
	tests := []struct {
		name      string
		s         runner.Settings
		edit      func(*runner.Invocation)
		want      []string
		wantStdin string
	}{
		{
			name: "defaults",
			want: slices.Concat(base, dirs, []string{"--prompt=Fix it."}),
		},
		{
			name: "settings model",
			s:    runner.Settings{Model: "gemini-2.5-pro"},
			want: slices.Concat(base, []string{"--model", "gemini-2.5-pro"}, dirs, []string{"--prompt=Fix it."}),
		},
		{
			name: "step model, resumed session, extra args; the URL is not an argument",
			s:    runner.Settings{Model: "gemini-2.5-pro", URL: "http://127.0.0.1:9", Args: []string{"--sandbox"}},
			edit: func(inv *runner.Invocation) { inv.Model = "gemini-2.5-flash"; inv.Session = "sess-1" },
			want: slices.Concat(base, []string{"--model", "gemini-2.5-flash", "--resume", "sess-1"}, dirs, []string{"--sandbox", "--prompt=Fix it."}),
		},
		{
			name: "an approval mode in the args replaces cadre's",
			s:    runner.Settings{Args: []string{"--approval-mode=auto_edit"}},
			edit: func(inv *runner.Invocation) { inv.ContextPath, inv.OutputPath = "", "" },
			want: []string{"--output-format", "json", "--approval-mode=auto_edit", "--prompt=Fix it."},
		},
		{
			name: "a prompt like an option stays the prompt",
			edit: func(inv *runner.Invocation) { inv.Prompt = "-y"; inv.ContextPath, inv.OutputPath = "", "" },
			want: slices.Concat(base, []string{"--prompt=-y"}),
		},
		{
			name:      "long prompt on stdin",
			edit:      func(inv *runner.Invocation) { inv.Prompt = long; inv.ContextPath, inv.OutputPath = "", "" },
			want:      base,
			wantStdin: long,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := New(tt.s)
			if err != nil {
				t.Fatal(err)
			}
			in := inv
			if tt.edit != nil {
				tt.edit(&in)
			}
			args, stdin := r.(*Runner).argv(in)
			clitest.CheckArgv(t, args, stdin, tt.want, tt.wantStdin)
		})
	}
}

// TestEnv checks the exact environment the CLI starts with.
func TestEnv(t *testing.T) {
	t.Setenv("GEMINI_API_KEY", "key-from-parent")
	t.Setenv("CADRE_TEST_MINE", "mine")
	t.Setenv(runnertest.SecretEnv, "hunter2")
	tests := []struct {
		name string
		s    runner.Settings
		keys []string
		vals map[string]string
	}{
		{"default pass-through", runner.Settings{}, []string{"GEMINI_API_KEY"}, map[string]string{"GEMINI_API_KEY": "key-from-parent"}},
		{"declared keys replace the defaults", runner.Settings{Env: []string{"CADRE_TEST_MINE"}}, []string{"CADRE_TEST_MINE"}, nil},
		{"url sets the base URL", runner.Settings{URL: "http://127.0.0.1:8080"}, []string{"GEMINI_API_KEY", "GOOGLE_GEMINI_BASE_URL"},
			map[string]string{"GOOGLE_GEMINI_BASE_URL": "http://127.0.0.1:8080", "GEMINI_CLI_TRUST_WORKSPACE": "true"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newFake(t, clitest.DumpEnv, tt.s, nil)
			inv := clitest.Invocation(t)
			if _, err := r.Run(t.Context(), inv); err != nil {
				t.Fatal(err)
			}
			env := clitest.ReadEnv(t, filepath.Join(inv.Dir, "env.out"))
			want := clitest.WantEnv(append(tt.keys, "GEMINI_CLI_TRUST_WORKSPACE")...)
			if diff := cmp.Diff(want, clitest.Names(env)); diff != "" {
				t.Errorf("environment keys mismatch (-want +got):\n%s", diff)
			}
			for k, v := range tt.vals {
				if env[k] != v {
					t.Errorf("%s = %q, want %q", k, env[k], v)
				}
			}
		})
	}
}

// TestRunEstimatesCost replays the recorded success: each model is priced at
// its own rate, the project's prices winning.
func TestRunEstimatesCost(t *testing.T) {
	abs, err := filepath.Abs("testdata/success.stdout")
	if err != nil {
		t.Fatal(err)
	}
	lite := event.Usage{InputTokens: 1306, OutputTokens: 50}
	pro := event.Usage{InputTokens: 4512, CacheReadTokens: 34400, OutputTokens: 2275}
	liteCost, _ := price.Estimate("gemini-2.5-flash-lite", lite)
	proCost, _ := price.Estimate("gemini-2.5-pro", pro)
	tests := []struct {
		name   string
		prices *price.Table
		want   float64
	}{
		{"built-in prices", nil, liteCost + proCost},
		{"project price for one model", price.New(map[string]price.Price{"gemini-2.5-pro": {InputPerMTok: 1e6, OutputPerMTok: 1e6, CacheReadPerMTok: 1e6}}),
			liteCost + 4512 + 34400 + 2275},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newFake(t, fmt.Sprintf("cat %q\n", abs), runner.Settings{}, tt.prices)
			res, err := r.Run(t.Context(), clitest.Invocation(t))
			if err != nil {
				t.Fatal(err)
			}
			want := lite.Add(pro)
			if res.Usage.InputTokens != want.InputTokens || res.Usage.OutputTokens != want.OutputTokens || res.Usage.CacheReadTokens != want.CacheReadTokens {
				t.Errorf("tokens = %+v, want %+v", res.Usage, want)
			}
			if !res.Usage.CostEstimated || math.Abs(res.Usage.CostUSD-tt.want) > 1e-9 {
				t.Errorf("cost = %v (estimated %v), want %v estimated", res.Usage.CostUSD, res.Usage.CostEstimated, tt.want)
			}
			if res.Model != "gemini-2.5-pro" || !strings.HasPrefix(res.Output, "Created hello.txt") {
				t.Errorf("Model = %q, Output = %q", res.Model, res.Output)
			}
		})
	}
}

// TestRunReportsErrors runs a fake CLI that replays a recorded error
// document on stderr and checks the classified error reaches the caller.
func TestRunReportsErrors(t *testing.T) {
	tests := []struct {
		file string
		exit int
		kind runner.Kind
	}{
		{"auth.stderr", 1, runner.KindAuth},
		{"rate-limit.stderr", 1, runner.KindRateLimit},
		{"quota.stderr", 1, runner.KindQuota},
		{"turn-limit.stderr", 53, runner.KindTurnLimit},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			abs, err := filepath.Abs(filepath.Join("testdata", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			r := newFake(t, fmt.Sprintf("cat %q >&2\nexit %d\n", abs, tt.exit), runner.Settings{Name: "gm", Model: "gemini-2.5-pro"}, nil)
			res, err := r.Run(t.Context(), clitest.Invocation(t))
			var re *runner.Error
			if !errors.As(err, &re) || re.Kind != tt.kind || re.Runner != "gm" {
				t.Fatalf("err = %v, want a *runner.Error of kind %s from runner gm", err, tt.kind)
			}
			if res.ExitCode != tt.exit || res.SessionID == "" || res.Model != "gemini-2.5-pro" {
				t.Errorf("ExitCode = %d, SessionID = %q, Model = %q", res.ExitCode, res.SessionID, res.Model)
			}
		})
	}
}

func TestNewAndMissingCLI(t *testing.T) {
	clitest.NewAndMissing(t, New, Type, "ftp://x", runner.Caps{EditsFiles: true, ModelChoice: true}, func(r runner.Runner) string { return r.(*Runner).Command })
}
