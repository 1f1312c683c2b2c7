package gemini

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/runner"
	"github.com/cadre-dev/cadre/internal/runner/cliutil/clitest"
	"github.com/cadre-dev/cadre/internal/runner/price"
	"github.com/google/go-cmp/cmp"
)

func TestParseTranscripts(t *testing.T) {
	const sid = "b5e2c1d4-0a7f-4c39-8e61-3d9f2a7b8c15"
	// The tokens of each model of a run; none for a failed one.
	models := map[string]map[string]event.Usage{
		"success.stdout": {
			"gemini-2.5-flash-lite": {InputTokens: 1306, OutputTokens: 9 + 41},
			"gemini-2.5-pro":        {InputTokens: 4512, CacheReadTokens: 34400, OutputTokens: 402 + 1873},
		},
		"real-write.stdout": {
			"gemini-3.5-flash-lite": {InputTokens: 900, OutputTokens: 12},
			"gemini-3.8-flash":      {InputTokens: 2400, CacheReadTokens: 100, OutputTokens: 100},
		},
	}
	// A transcript is the CLI's stdout, or its stderr when it failed.
	read := func(t *testing.T, tt clitest.Transcript) (runner.Result, *runner.Error, []string) {
		data := clitest.Testdata(t, tt.File)
		stdout, stderr := data, []byte(nil)
		if strings.HasSuffix(tt.File, ".stderr") {
			stdout, stderr = nil, data
		}
		p := parse(stdout, stderr, tt.Exit)
		if diff := cmp.Diff(models[tt.File], p.models); diff != "" {
			t.Errorf("models mismatch (-want +got):\n%s", diff)
		}
		return runner.Result{Output: p.reply, SessionID: p.sessionID, Model: p.mainModel()}, p.failure, nil
	}
	clitest.Transcripts(t, sid, read,
		clitest.Transcript{File: "success.stdout", Output: "Created hello.txt and ran the tests.", Model: "gemini-2.5-pro"},
		clitest.Transcript{File: "auth.stderr", Exit: 1, Kind: runner.KindAuth, Msg: "API key not valid"},
		clitest.Transcript{File: "auth-missing.stderr", Exit: 41, Kind: runner.KindAuth, Msg: "GEMINI_API_KEY"},
		clitest.Transcript{File: "rate-limit.stderr", Exit: 1, Kind: runner.KindRateLimit, Msg: "generate_content_paid_tier_input_token_count",
			Retry: 21400 * time.Millisecond},
		clitest.Transcript{File: "quota.stderr", Exit: 1, Kind: runner.KindQuota, Msg: "PerDay"},
		clitest.Transcript{File: "turn-limit.stderr", Exit: 53, Kind: runner.KindTurnLimit, Msg: "max session turns"},
		// Recorded from the real CLI against cadre modelsim.
		clitest.Transcript{File: "real-write.stdout", SessionID: "d3916a8e-a63e-4166-b8ca-21cff80a4b6b",
			Output: "Created hello.txt with the greeting.", Model: "gemini-3.8-flash"},
		clitest.Transcript{File: "real-rate-limit.stderr", SessionID: "ebad8cb1-e02a-4269-843c-8d8ca5cdffd5", Exit: 1,
			Kind: runner.KindRateLimit, Msg: "modelsim: rate limit reached"},
		clitest.Transcript{File: "real-max-turns.stderr", SessionID: "1b431744-38ea-4920-9d62-20c40531a46b", Exit: 53,
			Kind: runner.KindTurnLimit, Msg: "Reached max session turns"},
	)
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

// cli builds the runners of the tests around fake CLIs.
var cli = clitest.CLI{Name: "gemini", Factory: New}

func TestConformance(t *testing.T) {
	reply := func(text string, u event.Usage) string { return clitest.Cat(outputDoc(text, u)) }
	say := func(v string) string { return `printf '{\n  "response": "%s"\n}\n' "` + v + `"` + "\n" }
	cli.Conformance(t, clitest.Fakes(reply, say), true)
}

func TestArgv(t *testing.T) {
	base := []string{"--output-format", "json", "--approval-mode", "yolo"}
	dirs := []string{"--include-directories=/w/run/contexts", "--include-directories=/w/run/outputs"}
	noFiles := func(inv *runner.Invocation) { inv.ContextPath, inv.OutputPath = "", "" }
	cli.Argvs(t, clitest.Argv((*Runner).argv),
		clitest.ArgvCase{Name: "defaults", Want: slices.Concat(base, dirs, []string{"--prompt=Fix it."})},
		clitest.ArgvCase{Name: "settings model", S: runner.Settings{Model: "gemini-2.5-pro"},
			Want: slices.Concat(base, []string{"--model", "gemini-2.5-pro"}, dirs, []string{"--prompt=Fix it."})},
		clitest.ArgvCase{
			Name: "step model, resumed session, extra args; the URL is not an argument",
			S:    runner.Settings{Model: "gemini-2.5-pro", URL: "http://127.0.0.1:9", Args: []string{"--sandbox"}},
			Edit: func(inv *runner.Invocation) { inv.Model = "gemini-2.5-flash"; inv.Session = "sess-1" },
			Want: slices.Concat(base, []string{"--model", "gemini-2.5-flash", "--resume", "sess-1"}, dirs, []string{"--sandbox", "--prompt=Fix it."}),
		},
		clitest.ArgvCase{Name: "an approval mode in the args replaces cadre's", S: runner.Settings{Args: []string{"--approval-mode=auto_edit"}},
			Edit: noFiles, Want: []string{"--output-format", "json", "--approval-mode=auto_edit", "--prompt=Fix it."}},
		clitest.ArgvCase{Name: "a prompt like an option stays the prompt", Edit: func(inv *runner.Invocation) { noFiles(inv); inv.Prompt = "-y" },
			Want: slices.Concat(base, []string{"--prompt=-y"})},
		clitest.ArgvCase{Name: "long prompt on stdin", Edit: func(inv *runner.Invocation) { noFiles(inv); inv.Prompt = clitest.LongPrompt },
			Want: base, WantStdin: clitest.LongPrompt},
	)
}

// TestEnv checks the exact environment the CLI starts with.
func TestEnv(t *testing.T) {
	t.Setenv("GEMINI_API_KEY", "key-from-parent")
	cli.Envs(t, []string{"GEMINI_CLI_TRUST_WORKSPACE"},
		clitest.EnvCase{Name: "default pass-through", Keys: []string{"GEMINI_API_KEY"}, Vals: map[string]string{"GEMINI_API_KEY": "key-from-parent"}},
		clitest.EnvCase{Name: "url sets the base URL", S: runner.Settings{URL: "http://127.0.0.1:8080"}, Keys: []string{"GEMINI_API_KEY", "GOOGLE_GEMINI_BASE_URL"},
			Vals: map[string]string{"GOOGLE_GEMINI_BASE_URL": "http://127.0.0.1:8080", "GEMINI_CLI_TRUST_WORKSPACE": "true"}},
	)
}

// TestRunEstimatesCost replays the recorded success: each model is priced at
// its own rate, the project's prices winning.
func TestRunEstimatesCost(t *testing.T) {
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
			r := cli.Fake(t, clitest.CatTestdata(t, "success.stdout"), runner.Settings{Prices: tt.prices})
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
	check := func(t *testing.T, _ clitest.Replay, res runner.Result, _ []string, _ runner.Invocation) {
		if res.SessionID == "" || res.Model != "gemini-2.5-pro" {
			t.Errorf("SessionID = %q, Model = %q; want the session and gemini-2.5-pro", res.SessionID, res.Model)
		}
	}
	cli.Replays(t, runner.Settings{Model: "gemini-2.5-pro"}, check,
		clitest.Replay{File: "auth.stderr", Stderr: true, Exit: 1, Kind: runner.KindAuth},
		clitest.Replay{File: "rate-limit.stderr", Stderr: true, Exit: 1, Kind: runner.KindRateLimit, Retry: 21400 * time.Millisecond},
		clitest.Replay{File: "quota.stderr", Stderr: true, Exit: 1, Kind: runner.KindQuota},
		clitest.Replay{File: "turn-limit.stderr", Stderr: true, Exit: 53, Kind: runner.KindTurnLimit},
	)
}

func TestNewAndMissingCLI(t *testing.T) {
	clitest.NewAndMissing(t, New, Type, "ftp://x", runner.Caps{EditsFiles: true, ModelChoice: true}, func(r runner.Runner) string { return r.(*Runner).Command })
}
