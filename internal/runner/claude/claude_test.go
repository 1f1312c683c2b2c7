package claude

import (
	"encoding/json"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/runner"
	"github.com/cadre-dev/cadre/internal/runner/cliutil/clitest"
)

func TestParseTranscripts(t *testing.T) {
	const sid = "4f1c2a9e-7b3d-4e0f-9a51-2c8d6e1b7f30"
	parse := func(t *testing.T, tt clitest.Transcript) (runner.Result, *runner.Error, []string) {
		p := &parser{}
		notes := clitest.FeedEvents(t, tt.File, &p.progress, p.event)
		return p.result(), p.failure(), notes
	}
	clitest.Transcripts(t, sid, parse,
		clitest.Transcript{
			File:   "success.jsonl",
			Output: "Added hello.txt with the greeting",
			// The result's totals, not the sum of the assistant messages.
			Usage:     event.Usage{InputTokens: 18, OutputTokens: 379, CacheReadTokens: 46550, CacheWriteTokens: 5850, CostUSD: 0.0421337},
			Model:     "claude-sonnet-4-5-20250929",
			Notes:     []string{"session started (claude-sonnet-4-5-20250929)", "Write /home/dev/proj/.cadre/worktrees/07-sample/hello.txt", "Bash go test ./..."},
			NoteCount: 5,
		},
		clitest.Transcript{File: "auth.jsonl", Output: "Invalid API key", Model: "claude-sonnet-4-5-20250929",
			Kind: runner.KindAuth, Msg: "Invalid API key · Please run /login"},
		clitest.Transcript{File: "rate-limit.jsonl", Output: "API Error: 429", Model: "claude-sonnet-4-5-20250929",
			Kind: runner.KindRateLimit, Msg: "rate limit", Notes: []string{"retrying the API call"}},
		clitest.Transcript{File: "overloaded.jsonl", Output: "API Error: 529", Model: "claude-sonnet-4-5-20250929",
			Kind: runner.KindRateLimit, Msg: "Overloaded"},
		clitest.Transcript{File: "quota.jsonl", Output: "You've hit your session limit", Model: "claude-sonnet-4-5-20250929",
			Kind: runner.KindQuota, Msg: "resets 4:50pm"},
		clitest.Transcript{File: "credit.jsonl", Output: "Credit balance is too low", Model: "claude-sonnet-4-5-20250929",
			Kind: runner.KindQuota},
		clitest.Transcript{
			File:  "turn-limit.jsonl",
			Usage: event.Usage{InputTokens: 8, OutputTokens: 128, CacheReadTokens: 28096, CacheWriteTokens: 4216, CostUSD: 0.0187},
			Model: "claude-sonnet-4-5-20250929",
			Kind:  runner.KindTurnLimit, Msg: "3 turns",
			Notes: []string{"Edit /home/dev/proj/.cadre/worktrees/07-sample/main.go"},
		},
		// Recorded from the real CLI against cadre modelsim.
		clitest.Transcript{
			File: "real-write.jsonl", SessionID: "3bdd7eb4-c6fb-42f1-8102-0da09db58387",
			Output: "Created hello.txt with the greeting.",
			Usage:  event.Usage{InputTokens: 2500, OutputTokens: 100, CacheReadTokens: 100, CostUSD: 0.01202},
			Model:  "claude-opus-5-5",
			Notes:  []string{"session started (claude-opus-5-5)", "says: I will create the file.", "Write /tmp/TestRealCLIClaudewrite3829468602/001/repo/hello.txt"},
		},
		// real-write.jsonl cut before its result, as a run interrupted then:
		// each message's usage once (msg_modelsim_1 streamed twice).
		clitest.Transcript{
			File: "real-interrupted.jsonl", SessionID: "3bdd7eb4-c6fb-42f1-8102-0da09db58387",
			Output: "Created hello.txt with the greeting.",
			Usage:  event.Usage{InputTokens: 2500, OutputTokens: 2, CacheReadTokens: 100},
			Model:  "claude-opus-5-5",
		},
		clitest.Transcript{File: "real-rate-limit.jsonl", SessionID: "36a892d3-18c8-482d-a4fa-67208b99244d",
			Output: "API Error: Request rejected (429)", Model: "claude-opus-5-5",
			Kind: runner.KindRateLimit, Msg: "modelsim: rate limit reached"},
		clitest.Transcript{
			File: "real-max-turns.jsonl", SessionID: "29f93281-b44b-43c8-9e68-7e6590e06cf9",
			Output: "I will create the file.",
			Usage:  event.Usage{InputTokens: 1200, OutputTokens: 40, CacheReadTokens: 100, CostUSD: 0.00562},
			Model:  "claude-opus-5-5",
			Kind:   runner.KindTurnLimit, Msg: "Reached maximum number of turns (1)",
		},
	)
}

func TestClassify(t *testing.T) {
	tests := []struct {
		status int
		code   string
		msg    string
		want   runner.Kind
	}{
		{401, "", "API Error: 401", runner.KindAuth},
		{0, "authentication_failed", "", runner.KindAuth},
		{0, "", "OAuth token has expired. Please obtain a new token", runner.KindAuth},
		{429, "rate_limit", "Claude AI usage limit reached|1793720400", runner.KindQuota},
		{0, "", "You've hit your limit · resets 3pm", runner.KindQuota},
		{402, "", "", runner.KindQuota},
		{429, "", "API Error: 429", runner.KindRateLimit},
		{0, "", "API Error: 529 Overloaded", runner.KindRateLimit},
		{400, "", "API Error: 400 prompt is too long: 210000 tokens > 200000 maximum", runner.KindTurnLimit},
		{500, "", "API Error: 500 Internal server error", runner.KindBackend},
	}
	for _, tt := range tests {
		if got := classify(tt.status, tt.code, tt.msg); got != tt.want {
			t.Errorf("classify(%d, %q, %q) = %s, want %s", tt.status, tt.code, tt.msg, got, tt.want)
		}
	}
}

// resultLine is a result event carrying text and usage.
func resultLine(text string, u event.Usage) string {
	b, err := json.Marshal(map[string]any{
		"type": "result", "subtype": "success", "is_error": false, "num_turns": 2,
		"result": text, "session_id": "fake-session", "total_cost_usd": u.CostUSD,
		"usage": map[string]int64{"input_tokens": u.InputTokens, "output_tokens": u.OutputTokens},
	})
	if err != nil {
		panic(err)
	}
	return string(b)
}

const initLine = `{"type":"system","subtype":"init","session_id":"fake-session","model":"claude-fake-1"}`

// cli builds the runners of the tests around fake CLIs.
var cli = clitest.CLI{Name: "claude", Factory: New}

func TestConformance(t *testing.T) {
	say := func(v string) string {
		return `printf '{"type":"result","subtype":"success","is_error":false,"result":"%s"}\n' "` + v + `"` + "\n"
	}
	reply := func(text string, u event.Usage) string {
		return clitest.Cat(initLine + "\n" + resultLine(text, u) + "\n")
	}
	cli.Conformance(t, clitest.Fakes(reply, say), true)
}

func TestArgv(t *testing.T) {
	base := []string{"-p", "--output-format", "stream-json", "--verbose", "--permission-mode", "acceptEdits", "--allowedTools", "Bash"}
	dirs := []string{"--add-dir", "/w/run/contexts", "--add-dir", "/w/run/outputs"}
	noFiles := func(inv *runner.Invocation) { inv.ContextPath, inv.OutputPath = "", "" }
	argv := func(t *testing.T, r runner.Runner, inv runner.Invocation) ([]string, io.Reader) {
		args, stdin := r.(*Runner).argv(inv)
		if n := strings.Count(strings.Join(args, "\x00"), "--append-system-prompt"); inv.Instructions != "" && n != 1 {
			t.Errorf("--append-system-prompt given %d times, want once", n)
		}
		return args, stdin
	}
	cli.Argvs(t, argv,
		clitest.ArgvCase{Name: "defaults", Want: slices.Concat(base, dirs, []string{"--", "Fix it."})},
		clitest.ArgvCase{Name: "settings model", S: runner.Settings{Model: "sonnet"},
			Want: slices.Concat(base, []string{"--model", "sonnet"}, dirs, []string{"--", "Fix it."})},
		clitest.ArgvCase{
			Name: "step model wins, session resumed, extra args last",
			S:    runner.Settings{Model: "sonnet", Args: []string{"--max-turns", "30"}, URL: "http://127.0.0.1:9"},
			Edit: func(inv *runner.Invocation) { inv.Model = "opus"; inv.Session = "sess-1" },
			Want: slices.Concat(base, []string{"--model", "opus", "--resume", "sess-1"}, dirs, []string{"--max-turns", "30", "--", "Fix it."}),
		},
		clitest.ArgvCase{Name: "untrusted tree: no project settings or MCP servers", Edit: func(inv *runner.Invocation) { inv.Untrusted = true },
			Want: slices.Concat(base, []string{"--setting-sources", "user", "--strict-mcp-config"}, dirs, []string{"--", "Fix it."})},
		clitest.ArgvCase{
			Name: "files inside the tree need no extra dirs",
			Edit: func(inv *runner.Invocation) {
				inv.ContextPath, inv.OutputPath = "/w/tree/.cadre/c.json", "/w/tree/.cadre/o.md"
			},
			Want: slices.Concat(base, []string{"--", "Fix it."}),
		},
		clitest.ArgvCase{Name: "role instructions once, as the system prompt",
			Edit: func(inv *runner.Invocation) { inv.Instructions = "Review the diff.\nEnd with the SIGNAL BLOCK." },
			Want: slices.Concat(base, dirs, []string{"--append-system-prompt", "Review the diff.\nEnd with the SIGNAL BLOCK.", "--", "Fix it."})},
		clitest.ArgvCase{
			Name: "a re-ask into the session sends only its note",
			Edit: func(inv *runner.Invocation) {
				inv.Instructions, inv.Session, inv.Followup = "Review the diff.", "sess-1", "\n\nNo SIGNAL BLOCK: reply again."
			},
			Want: slices.Concat(base, []string{"--resume", "sess-1"}, dirs,
				[]string{"--append-system-prompt", "Review the diff.", "--", "\n\nNo SIGNAL BLOCK: reply again."}),
		},
		clitest.ArgvCase{Name: "a re-ask without a session repeats the prompt, then the note",
			Edit: func(inv *runner.Invocation) { inv.Instructions, inv.Followup = "Review the diff.", "\n\nReply again." },
			Want: slices.Concat(base, dirs, []string{"--append-system-prompt", "Review the diff.", "--", "Fix it.\n\nReply again."})},
		clitest.ArgvCase{Name: "a prompt like an option stays the prompt", Edit: func(inv *runner.Invocation) { noFiles(inv); inv.Prompt = "--help" },
			Want: slices.Concat(base, []string{"--", "--help"})},
		clitest.ArgvCase{Name: "long prompt on stdin", Edit: func(inv *runner.Invocation) { noFiles(inv); inv.Prompt = clitest.LongPrompt },
			Want: base, WantStdin: clitest.LongPrompt},
	)
}

// TestEnv checks the exact environment the CLI starts with.
func TestEnv(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "key-from-parent")
	t.Setenv("ANTHROPIC_BASE_URL", "http://parent.invalid")
	cli.Envs(t, nil,
		clitest.EnvCase{Name: "default pass-through", Keys: []string{"ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"},
			Vals: map[string]string{"ANTHROPIC_API_KEY": "key-from-parent", "ANTHROPIC_BASE_URL": "http://parent.invalid"}},
		clitest.EnvCase{Name: "url sets the base URL", S: runner.Settings{URL: "http://127.0.0.1:8080"},
			Keys: []string{"ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"},
			Vals: map[string]string{"ANTHROPIC_BASE_URL": "http://127.0.0.1:8080", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}},
	)
}

// TestRunReportsErrors runs a fake CLI that replays a recorded failure and
// checks the classified error and the partial result reach the caller.
func TestRunReportsErrors(t *testing.T) {
	check := func(t *testing.T, rp clitest.Replay, res runner.Result, notes []string, inv runner.Invocation) {
		if res.SessionID == "" || len(notes) == 0 {
			t.Errorf("SessionID = %q, %d notes; want the session and notes", res.SessionID, len(notes))
		}
		if rp.Kind != "" {
			clitest.LogHas(t, inv, `"type":"result"`, "<prompt, 13 bytes>")
		}
	}
	cli.Replays(t, runner.Settings{}, check,
		clitest.Replay{File: "auth.jsonl", Exit: 1, Kind: runner.KindAuth},
		clitest.Replay{File: "rate-limit.jsonl", Exit: 1, Kind: runner.KindRateLimit},
		clitest.Replay{File: "quota.jsonl", Exit: 1, Kind: runner.KindQuota},
		clitest.Replay{File: "turn-limit.jsonl", Exit: 1, Kind: runner.KindTurnLimit},
		clitest.Replay{File: "success.jsonl"},
	)
}

func TestNewAndMissingCLI(t *testing.T) {
	clitest.NewAndMissing(t, New, Type, "localhost:8080", runner.Caps{EditsFiles: true, ReportsCost: true, ModelChoice: true, Streams: true}, func(r runner.Runner) string { return r.(*Runner).Command })
	r, err := New(runner.Settings{Name: "cc", Command: "bin/claude", BaseDir: "/repo"})
	if err != nil || r.(*Runner).Command != "/repo/bin/claude" {
		t.Errorf("relative command resolved to %q (%v), want /repo/bin/claude", r.(*Runner).Command, err)
	}
}
