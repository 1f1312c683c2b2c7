package claude

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/runner"
	"github.com/cadre-dev/cadre/internal/runner/cliutil"
	"github.com/cadre-dev/cadre/internal/runner/cliutil/clitest"
	"github.com/cadre-dev/cadre/internal/runner/runnertest"
	"github.com/google/go-cmp/cmp"
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
	const sid = "4f1c2a9e-7b3d-4e0f-9a51-2c8d6e1b7f30"
	tests := []struct {
		file      string
		sid       string // session id, when not the synthetic transcripts' one
		output    string // prefix of the reply
		usage     event.Usage
		model     string
		kind      runner.Kind
		msg       string   // substring of the error message
		notes     []string // progress notes that must appear
		noteCount int
	}{
		{
			file:   "success.jsonl",
			output: "Added hello.txt with the greeting",
			// The result's totals, not the sum of the assistant messages.
			usage:     event.Usage{InputTokens: 18, OutputTokens: 379, CacheReadTokens: 46550, CacheWriteTokens: 5850, CostUSD: 0.0421337},
			model:     "claude-sonnet-4-5-20250929",
			notes:     []string{"session started (claude-sonnet-4-5-20250929)", "Write /home/dev/proj/.cadre/worktrees/07-sample/hello.txt", "Bash go test ./..."},
			noteCount: 5,
		},
		{
			file:   "auth.jsonl",
			output: "Invalid API key",
			model:  "claude-sonnet-4-5-20250929",
			kind:   runner.KindAuth,
			msg:    "Invalid API key · Please run /login",
		},
		{
			file:   "rate-limit.jsonl",
			output: "API Error: 429",
			model:  "claude-sonnet-4-5-20250929",
			kind:   runner.KindRateLimit,
			msg:    "rate limit",
			notes:  []string{"retrying the API call"},
		},
		{
			file:   "overloaded.jsonl",
			output: "API Error: 529",
			model:  "claude-sonnet-4-5-20250929",
			kind:   runner.KindRateLimit,
			msg:    "Overloaded",
		},
		{
			file:   "quota.jsonl",
			output: "You've hit your session limit",
			model:  "claude-sonnet-4-5-20250929",
			kind:   runner.KindQuota,
			msg:    "resets 4:50pm",
		},
		{
			file:   "credit.jsonl",
			output: "Credit balance is too low",
			model:  "claude-sonnet-4-5-20250929",
			kind:   runner.KindQuota,
		},
		{
			file:  "turn-limit.jsonl",
			usage: event.Usage{InputTokens: 8, OutputTokens: 128, CacheReadTokens: 28096, CacheWriteTokens: 4216, CostUSD: 0.0187},
			model: "claude-sonnet-4-5-20250929",
			kind:  runner.KindTurnLimit,
			msg:   "3 turns",
			notes: []string{"Edit /home/dev/proj/.cadre/worktrees/07-sample/main.go"},
		},
		// Recorded from the real CLI against cadre modelsim.
		{
			file:   "real-write.jsonl",
			sid:    "3bdd7eb4-c6fb-42f1-8102-0da09db58387",
			output: "Created hello.txt with the greeting.",
			usage:  event.Usage{InputTokens: 2500, OutputTokens: 100, CacheReadTokens: 100, CostUSD: 0.01202},
			model:  "claude-opus-5-5",
			notes:  []string{"session started (claude-opus-5-5)", "says: I will create the file.", "Write /tmp/TestRealCLIClaudewrite3829468602/001/repo/hello.txt"},
		},
		{
			file:   "real-rate-limit.jsonl",
			sid:    "36a892d3-18c8-482d-a4fa-67208b99244d",
			output: "API Error: Request rejected (429)",
			model:  "claude-opus-5-5",
			kind:   runner.KindRateLimit,
			msg:    "modelsim: rate limit reached",
		},
		{
			file:   "real-max-turns.jsonl",
			sid:    "29f93281-b44b-43c8-9e68-7e6590e06cf9",
			output: "I will create the file.",
			usage:  event.Usage{InputTokens: 1200, OutputTokens: 40, CacheReadTokens: 100, CostUSD: 0.00562},
			model:  "claude-opus-5-5",
			kind:   runner.KindTurnLimit,
			msg:    "Reached maximum number of turns (1)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			if tt.sid == "" {
				tt.sid = sid
			}
			p, notes := feed(t, tt.file)
			res := p.result()
			if !strings.HasPrefix(res.Output, tt.output) {
				t.Errorf("Output = %q, want prefix %q", res.Output, tt.output)
			}
			if diff := cmp.Diff(tt.usage, res.Usage); diff != "" {
				t.Errorf("Usage mismatch (-want +got):\n%s", diff)
			}
			if res.SessionID != tt.sid {
				t.Errorf("SessionID = %q, want %q", res.SessionID, tt.sid)
			}
			if res.Model != tt.model {
				t.Errorf("Model = %q, want %q", res.Model, tt.model)
			}
			e := p.failure()
			switch {
			case tt.kind == "" && e != nil:
				t.Errorf("failure = %v, want none", e)
			case tt.kind != "" && e == nil:
				t.Errorf("no failure, want kind %s", tt.kind)
			case e != nil && (e.Kind != tt.kind || !strings.Contains(e.Msg, tt.msg)):
				t.Errorf("failure = %s %q, want %s containing %q", e.Kind, e.Msg, tt.kind, tt.msg)
			}
			for _, n := range tt.notes {
				if !slices.Contains(notes, n) {
					t.Errorf("notes %q lack %q", notes, n)
				}
			}
			if tt.noteCount > 0 && len(notes) != tt.noteCount {
				t.Errorf("%d notes %q, want %d", len(notes), notes, tt.noteCount)
			}
		})
	}
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

// fakes are /bin/sh stand-ins for the CLI, one per conformance behaviour.
var fakes = map[runnertest.Behavior]string{
	runnertest.OK: "echo done > " + runnertest.WorkFile + "\ncat <<'EOF'\n" + initLine + "\n" +
		resultLine(runnertest.OKReply, runnertest.OKUsage) + "\nEOF\n",
	runnertest.WriteOutput: "cat > \"$CADRE_OUTPUT\" <<'EOF'\n" + runnertest.OKReply + "EOF\n" +
		"echo '" + resultLine("wrote the output file", event.Usage{}) + "'\n",
	runnertest.Crash: clitest.CrashBody,
	runnertest.Hang:  clitest.HangBody,
	runnertest.Flood: clitest.FloodBody,
	runnertest.Env: "names=$(env | cut -d= -f1 | tr '\\n' ' ')\n" +
		`printf '{"type":"result","subtype":"success","is_error":false,"result":"%s"}\n' "$names"` + "\n",
	runnertest.Context: `id=$(sed -n 's/.*"taskId": *"\([^"]*\)".*/\1/p' "$CADRE_CONTEXT")` + "\n" +
		`printf '{"type":"result","subtype":"success","is_error":false,"result":"%s"}\n' "$id"` + "\n",
}

func newFake(t *testing.T, body string, s runner.Settings) runner.Runner {
	t.Helper()
	return clitest.Fake(t, New, "claude", body, s)
}

func TestConformance(t *testing.T) {
	clitest.Conformance(t, "claude", fakes, true, func(t *testing.T, body string) runner.Runner { return newFake(t, body, runner.Settings{}) })
}

func TestArgv(t *testing.T) {
	base := []string{"-p", "--output-format", "stream-json", "--verbose", "--permission-mode", "acceptEdits", "--allowedTools", "Bash"}
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
			want: append(slices.Clone(base), "--add-dir", "/w/run/contexts", "--add-dir", "/w/run/outputs", "--", "Fix it."),
		},
		{
			name: "settings model",
			s:    runner.Settings{Model: "sonnet"},
			want: append(slices.Clone(base), "--model", "sonnet", "--add-dir", "/w/run/contexts", "--add-dir", "/w/run/outputs", "--", "Fix it."),
		},
		{
			name: "step model wins, session resumed, extra args last",
			s:    runner.Settings{Model: "sonnet", Args: []string{"--max-turns", "30"}, URL: "http://127.0.0.1:9"},
			edit: func(inv *runner.Invocation) { inv.Model = "opus"; inv.Session = "sess-1" },
			want: append(slices.Clone(base), "--model", "opus", "--resume", "sess-1",
				"--add-dir", "/w/run/contexts", "--add-dir", "/w/run/outputs", "--max-turns", "30", "--", "Fix it."),
		},
		{
			name: "untrusted tree: no project settings or MCP servers",
			edit: func(inv *runner.Invocation) { inv.Untrusted = true },
			want: append(slices.Clone(base), "--setting-sources", "user", "--strict-mcp-config",
				"--add-dir", "/w/run/contexts", "--add-dir", "/w/run/outputs", "--", "Fix it."),
		},
		{
			name: "files inside the tree need no extra dirs",
			edit: func(inv *runner.Invocation) {
				inv.ContextPath = "/w/tree/.cadre/c.json"
				inv.OutputPath = "/w/tree/.cadre/o.md"
			},
			want: append(slices.Clone(base), "--", "Fix it."),
		},
		{
			name: "role instructions once, as the system prompt",
			edit: func(inv *runner.Invocation) { inv.Instructions = "Review the diff.\nEnd with the SIGNAL BLOCK." },
			want: append(slices.Clone(base), "--add-dir", "/w/run/contexts", "--add-dir", "/w/run/outputs",
				"--append-system-prompt", "Review the diff.\nEnd with the SIGNAL BLOCK.", "--", "Fix it."),
		},
		{
			name: "a re-ask into the session sends only its note",
			edit: func(inv *runner.Invocation) {
				inv.Instructions, inv.Session, inv.Followup = "Review the diff.", "sess-1", "\n\nNo SIGNAL BLOCK: reply again."
			},
			want: append(slices.Clone(base), "--resume", "sess-1", "--add-dir", "/w/run/contexts", "--add-dir", "/w/run/outputs",
				"--append-system-prompt", "Review the diff.", "--", "\n\nNo SIGNAL BLOCK: reply again."),
		},
		{
			name: "a re-ask without a session repeats the prompt, then the note",
			edit: func(inv *runner.Invocation) { inv.Instructions, inv.Followup = "Review the diff.", "\n\nReply again." },
			want: append(slices.Clone(base), "--add-dir", "/w/run/contexts", "--add-dir", "/w/run/outputs",
				"--append-system-prompt", "Review the diff.", "--", "Fix it.\n\nReply again."),
		},
		{
			name: "a prompt like an option stays the prompt",
			edit: func(inv *runner.Invocation) { inv.Prompt = "--help"; inv.ContextPath, inv.OutputPath = "", "" },
			want: append(slices.Clone(base), "--", "--help"),
		},
		{
			name:      "long prompt on stdin",
			edit:      func(inv *runner.Invocation) { inv.Prompt = long; inv.ContextPath, inv.OutputPath = "", "" },
			want:      slices.Clone(base),
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
			if n := strings.Count(strings.Join(args, "\x00"), "--append-system-prompt"); in.Instructions != "" && n != 1 {
				t.Errorf("--append-system-prompt given %d times, want once", n)
			}
			clitest.CheckArgv(t, args, stdin, tt.want, tt.wantStdin)
		})
	}
}

// TestEnv checks the exact environment the CLI starts with.
func TestEnv(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "key-from-parent")
	t.Setenv("ANTHROPIC_BASE_URL", "http://parent.invalid")
	t.Setenv("CADRE_TEST_MINE", "mine")
	t.Setenv(runnertest.SecretEnv, "hunter2")
	tests := []struct {
		name string
		s    runner.Settings
		keys []string          // besides the base and CADRE_* keys
		vals map[string]string // values to check
	}{
		{
			name: "default pass-through",
			keys: []string{"ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"},
			vals: map[string]string{"ANTHROPIC_API_KEY": "key-from-parent", "ANTHROPIC_BASE_URL": "http://parent.invalid"},
		},
		{
			name: "declared keys replace the defaults",
			s:    runner.Settings{Env: []string{"CADRE_TEST_MINE"}},
			keys: []string{"CADRE_TEST_MINE"},
			vals: map[string]string{"CADRE_TEST_MINE": "mine"},
		},
		{
			name: "url sets the base URL",
			s:    runner.Settings{URL: "http://127.0.0.1:8080"},
			keys: []string{"ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"},
			vals: map[string]string{"ANTHROPIC_BASE_URL": "http://127.0.0.1:8080", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The shell's own environment as the CLI received it.
			env, inv := clitest.RunEnv(t, newFake(t, clitest.DumpEnv, tt.s), tt.keys...)
			for k, v := range tt.vals {
				if env[k] != v {
					t.Errorf("%s = %q, want %q", k, env[k], v)
				}
			}
			if env["CADRE_CONTEXT"] != inv.ContextPath || env["CADRE_WORKTREE"] != inv.Dir {
				t.Errorf("CADRE_CONTEXT/CADRE_WORKTREE = %q/%q", env["CADRE_CONTEXT"], env["CADRE_WORKTREE"])
			}
		})
	}
}

// TestRunReportsErrors runs a fake CLI that replays a recorded failure and
// checks the classified error and the partial result reach the caller.
func TestRunReportsErrors(t *testing.T) {
	tests := []struct {
		file string
		exit int
		kind runner.Kind
	}{
		{"auth.jsonl", 1, runner.KindAuth},
		{"rate-limit.jsonl", 1, runner.KindRateLimit},
		{"quota.jsonl", 1, runner.KindQuota},
		{"turn-limit.jsonl", 1, runner.KindTurnLimit},
		{"success.jsonl", 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			abs, err := filepath.Abs(filepath.Join("testdata", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			var notes []string
			r := newFake(t, fmt.Sprintf("cat %q\nexit %d\n", abs, tt.exit), runner.Settings{Name: "cc"})
			inv := clitest.Invocation(t)
			inv.Progress = func(n string) { notes = append(notes, n) }
			res, err := r.Run(t.Context(), inv)
			if res.ExitCode != tt.exit || res.SessionID == "" {
				t.Errorf("ExitCode = %d, SessionID = %q; want %d and the session", res.ExitCode, res.SessionID, tt.exit)
			}
			if len(notes) == 0 {
				t.Error("no progress notes")
			}
			if tt.kind == "" {
				if err != nil {
					t.Fatalf("Run: %v", err)
				}
				return
			}
			var re *runner.Error
			if !errors.As(err, &re) || re.Kind != tt.kind || re.Runner != "cc" {
				t.Fatalf("err = %v, want a *runner.Error of kind %s from runner cc", err, tt.kind)
			}
			log, _ := os.ReadFile(inv.LogPath)
			if !strings.Contains(string(log), `"type":"result"`) || !strings.Contains(string(log), "<prompt, 13 bytes>") {
				t.Errorf("log lacks the transcript or the command line:\n%.300s", log)
			}
		})
	}
}

func TestNewAndMissingCLI(t *testing.T) {
	clitest.NewAndMissing(t, New, Type, "localhost:8080", runner.Caps{EditsFiles: true, ReportsCost: true, ModelChoice: true, Streams: true}, func(r runner.Runner) string { return r.(*Runner).Command })
	r, err := New(runner.Settings{Name: "cc", Command: "bin/claude", BaseDir: "/repo"})
	if err != nil || r.(*Runner).Command != "/repo/bin/claude" {
		t.Errorf("relative command resolved to %q (%v), want /repo/bin/claude", r.(*Runner).Command, err)
	}
}
