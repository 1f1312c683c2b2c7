package codex

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/runner"
	"github.com/cadre-dev/cadre/internal/runner/cliutil/clitest"
	"github.com/cadre-dev/cadre/internal/runner/price"
	"github.com/cadre-dev/cadre/internal/sandbox"
)

func TestParseTranscripts(t *testing.T) {
	const tid = "0199a213-81c0-7800-8aa1-bbab2a035a53"
	parse := func(t *testing.T, tt clitest.Transcript) (runner.Result, *runner.Error, []string) {
		p := &parser{}
		notes := clitest.FeedEvents(t, tt.File, &p.progress, p.event)
		return runner.Result{Output: p.lastMessage, Usage: p.usage, SessionID: p.threadID}, p.failure(), notes
	}
	clitest.Transcripts(t, tid, parse,
		clitest.Transcript{
			File:   "success.jsonl",
			Output: "Created hello.txt and ran the tests.",
			Usage:  event.Usage{InputTokens: 315, CacheReadTokens: 24448, OutputTokens: 1222},
			Notes: []string{"thread started", "run bash -lc ls", "edit /home/dev/proj/.cadre/worktrees/07-sample/hello.txt",
				"run bash -lc 'go test ./...'", "says: Created hello.txt and ran the tests."},
		},
		clitest.Transcript{File: "reconnect.jsonl", Output: "All done.", Usage: event.Usage{InputTokens: 11200, OutputTokens: 310}},
		clitest.Transcript{File: "auth.jsonl", Kind: runner.KindAuth, Msg: "Incorrect API key provided"},
		clitest.Transcript{File: "rate-limit.jsonl", Kind: runner.KindRateLimit, Msg: "Rate limit reached", Retry: 4450 * time.Millisecond,
			Notes: []string{"run bash -lc 'rg TODO'"}},
		clitest.Transcript{File: "quota.jsonl", Kind: runner.KindQuota, Msg: "usage limit"},
		clitest.Transcript{File: "turn-limit.jsonl", Kind: runner.KindTurnLimit, Msg: "context window"},
		// Recorded from the real CLI against cadre modelsim.
		clitest.Transcript{
			File: "real-write.jsonl", SessionID: "01a205e7-eae2-7a41-8d18-693cb4fa0955",
			Output: "Created hello.txt with the greeting.",
			Usage:  event.Usage{InputTokens: 2400, CacheReadTokens: 100, OutputTokens: 100},
			Notes: []string{"thread started", "warning: Model metadata for `modelsim` not found. Defaulting to fallback metadata; this can degrade performance and cau…",
				"says: I will create the file.", "edit /tmp/TestRealCLICodexwrite2076679194/001/repo/hello.txt"},
		},
		clitest.Transcript{
			File: "real-code-mode.jsonl", SessionID: "01a205e7-f7f8-7543-8e5b-ff09d2ee71ba",
			Output: "Created hello.txt with the greeting.",
			Usage:  event.Usage{InputTokens: 2400, CacheReadTokens: 100, OutputTokens: 100},
		},
		clitest.Transcript{File: "real-rate-limit.jsonl", SessionID: "01a205e7-f174-7c31-893d-e8f8aeb59cc1",
			Kind: runner.KindRateLimit, Msg: "429 Too Many Requests"},
	)
}

func TestClassify(t *testing.T) {
	tests := []struct {
		msg  string
		want runner.Kind
	}{
		{"Missing environment variable: `OPENAI_API_KEY`.", runner.KindAuth},
		{"unexpected status 401 Unauthorized: ", runner.KindAuth},
		{"Quota exceeded. Check your plan and billing details.", runner.KindQuota},
		{"exceeded retry limit, last status: 429 Too Many Requests, request id: abc", runner.KindRateLimit},
		{"Your input exceeds the context window of this model.", runner.KindTurnLimit},
		{"unexpected status 500 Internal Server Error", runner.KindBackend},
	}
	for _, tt := range tests {
		if got := classify(tt.msg); got != tt.want {
			t.Errorf("classify(%q) = %s, want %s", tt.msg, got, tt.want)
		}
	}
}

func message(text string) map[string]any {
	return map[string]any{"type": "item.completed", "item": map[string]any{"id": "item_9", "type": "agent_message", "text": text}}
}

var started = map[string]any{"type": "thread.started", "thread_id": "fake-thread"}

// cli builds the runners of the tests around fake CLIs, pricing from the
// built-in table.
var cli = clitest.CLI{Name: "codex", Factory: New}

func TestConformance(t *testing.T) {
	reply := func(text string, u event.Usage) string {
		return clitest.Cat(clitest.JSONL(started, message(text), map[string]any{"type": "turn.completed", "usage": map[string]int64{
			"input_tokens": u.InputTokens, "cached_input_tokens": 0, "output_tokens": u.OutputTokens}}))
	}
	say := func(v string) string {
		return `printf '{"type":"item.completed","item":{"type":"agent_message","text":"%s"}}\n' "` + v + `"` + "\n"
	}
	cli.Conformance(t, clitest.Fakes(reply, say), true)
}

func TestArgv(t *testing.T) {
	base := []string{"exec", "--json", "--skip-git-repo-check", "--sandbox", "workspace-write"}
	dirs := []string{"--add-dir", "/w/run/contexts", "--add-dir", "/w/run/outputs"}
	noFiles := func(inv *runner.Invocation) { inv.ContextPath, inv.OutputPath = "", "" }
	cat := func(parts ...[]string) []string { return slices.Concat(parts...) }
	cli.Argvs(t, clitest.Argv((*Runner).argv),
		clitest.ArgvCase{Name: "defaults", Want: cat(base, dirs, []string{"--", "Fix it."})},
		clitest.ArgvCase{Name: "untrusted tree: no project rules", Edit: func(inv *runner.Invocation) { inv.Untrusted = true },
			Want: cat(base, []string{"--ignore-rules"}, dirs, []string{"--", "Fix it."})},
		clitest.ArgvCase{Name: "settings model", S: runner.Settings{Model: "gpt-5-codex"},
			Want: cat(base, []string{"--model", "gpt-5-codex"}, dirs, []string{"--", "Fix it."})},
		clitest.ArgvCase{
			Name: "step model, url provider, extra args, resumed thread",
			S:    runner.Settings{Model: "gpt-5-codex", URL: "http://127.0.0.1:9/v1", Args: []string{"-c", `model_reasoning_effort="high"`}},
			Edit: func(inv *runner.Invocation) { inv.Model = "gpt-5"; inv.Session = "thread-1" },
			Want: cat(base, []string{"--model", "gpt-5"}, dirs, []string{
				"-c", `model_provider="cadre"`,
				"-c", `model_providers.cadre.name="cadre"`,
				"-c", `model_providers.cadre.base_url="http://127.0.0.1:9/v1"`,
				"-c", `model_providers.cadre.wire_api="responses"`,
				"-c", `model_providers.cadre.env_key="OPENAI_API_KEY"`,
				"-c", `model_reasoning_effort="high"`,
				"resume", "thread-1", "--", "Fix it."}),
		},
		clitest.ArgvCase{Name: "inside cadre's sandbox: Codex's own off",
			Edit: func(inv *runner.Invocation) { inv.Sandbox = &sandbox.Policy{Network: sandbox.NetDeny} },
			Want: cat([]string{"exec", "--json", "--skip-git-repo-check", "--sandbox", "danger-full-access"}, dirs, []string{"--", "Fix it."})},
		clitest.ArgvCase{Name: "a sandbox in the args replaces cadre's", S: runner.Settings{Args: []string{"--dangerously-bypass-approvals-and-sandbox"}},
			Edit: noFiles, Want: []string{"exec", "--json", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox", "--", "Fix it."}},
		clitest.ArgvCase{Name: "files inside the tree",
			Edit: func(inv *runner.Invocation) { inv.ContextPath, inv.OutputPath = "/w/tree/c.json", "/w/tree/sub/o.md" },
			Want: cat(base, []string{"--", "Fix it."})},
		clitest.ArgvCase{Name: "long prompt on stdin", Edit: func(inv *runner.Invocation) { noFiles(inv); inv.Prompt = clitest.LongPrompt },
			Want: cat(base, []string{"-"}), WantStdin: clitest.LongPrompt},
	)
}

// TestEnv checks the exact environment the CLI starts with.
func TestEnv(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "key-from-parent")
	t.Setenv("CODEX_HOME", "/codex-home")
	cli.Envs(t, nil, clitest.EnvCase{Name: "default pass-through", Keys: []string{"CODEX_HOME", "OPENAI_API_KEY"},
		Vals: map[string]string{"OPENAI_API_KEY": "key-from-parent", "CODEX_HOME": "/codex-home"}})
}

// TestRunEstimatesCost replays the recorded success and checks the cost is
// estimated from the price table, the project's prices winning.
func TestRunEstimatesCost(t *testing.T) {
	usage := event.Usage{InputTokens: 315, CacheReadTokens: 24448, OutputTokens: 1222}
	builtin, _ := price.Estimate("gpt-5-codex", usage)
	tests := []struct {
		name      string
		model     string
		prices    *price.Table
		want      float64
		estimated bool
	}{
		{"built-in price", "gpt-5-codex", nil, builtin, true},
		{"project price", "gpt-5-codex", price.New(map[string]price.Price{"gpt-5-codex": {InputPerMTok: 1e6, OutputPerMTok: 1e6, CacheReadPerMTok: 1e6}}), 315 + 24448 + 1222, true},
		{"unknown model", "mystery-model", nil, 0, false},
		{"no model", "", nil, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := cli.Fake(t, clitest.CatTestdata(t, "success.jsonl"), runner.Settings{Model: tt.model, Prices: tt.prices})
			res, err := r.Run(t.Context(), clitest.Invocation(t))
			if err != nil {
				t.Fatal(err)
			}
			if res.Usage.CostEstimated != tt.estimated || math.Abs(res.Usage.CostUSD-tt.want) > 1e-9 {
				t.Errorf("cost = %v (estimated %v), want %v (estimated %v)", res.Usage.CostUSD, res.Usage.CostEstimated, tt.want, tt.estimated)
			}
			if res.Model != tt.model || res.SessionID != "0199a213-81c0-7800-8aa1-bbab2a035a53" {
				t.Errorf("Model = %q, SessionID = %q", res.Model, res.SessionID)
			}
			if !strings.HasPrefix(res.Output, "Created hello.txt") {
				t.Errorf("Output = %q", res.Output)
			}
		})
	}
}

// TestRunReportsErrors runs a fake CLI that replays a recorded failure and
// checks the classified error and the partial result reach the caller.
func TestRunReportsErrors(t *testing.T) {
	check := func(t *testing.T, _ clitest.Replay, res runner.Result, notes []string, _ runner.Invocation) {
		if res.SessionID == "" || len(notes) == 0 {
			t.Errorf("SessionID = %q, %d notes; want the thread and notes", res.SessionID, len(notes))
		}
	}
	cli.Replays(t, runner.Settings{}, check,
		clitest.Replay{File: "auth.jsonl", Exit: 1, Kind: runner.KindAuth},
		clitest.Replay{File: "rate-limit.jsonl", Exit: 1, Kind: runner.KindRateLimit, Retry: 4450 * time.Millisecond},
		clitest.Replay{File: "quota.jsonl", Exit: 1, Kind: runner.KindQuota},
		clitest.Replay{File: "turn-limit.jsonl", Exit: 1, Kind: runner.KindTurnLimit},
	)
}

func TestNewAndMissingCLI(t *testing.T) {
	clitest.NewAndMissing(t, New, Type, "127.0.0.1:8080/v1", runner.Caps{EditsFiles: true, ModelChoice: true, Streams: true}, func(r runner.Runner) string { return r.(*Runner).Command })
}
