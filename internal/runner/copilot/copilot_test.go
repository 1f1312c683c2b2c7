package copilot

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/runner"
	"github.com/cadre-dev/cadre/internal/runner/cliutil/clitest"
	"github.com/google/go-cmp/cmp"
)

// The real-* files were recorded from Copilot CLI 1.0.102 against cadre
// modelsim (internal/modelsim TestRealCLICopilot): its stdout, and for the
// write its session log, where the tokens are.
func TestParseTranscripts(t *testing.T) {
	parse := func(t *testing.T, tt clitest.Transcript) (runner.Result, *runner.Error, []string) {
		p := &parser{}
		notes := clitest.FeedEvents(t, tt.File, &p.progress, p.event)
		return runner.Result{Output: p.reply, SessionID: p.sessionID}, p.failure, notes
	}
	clitest.Transcripts(t, "", parse,
		clitest.Transcript{File: "real-write.jsonl", SessionID: "f7d26e93-5925-43d9-8e26-5cf8f933a96a",
			Output: "Created hello.txt with the greeting.\n\n### SIGNAL BLOCK\n",
			Notes:  []string{"create /tmp/TestRealCLICopilotwrite2764308989/001/repo/hello.txt"}},
		clitest.Transcript{File: "real-rate-limit.jsonl", SessionID: "1eaba6f2-981a-4526-9d2b-9013add2509a",
			Kind: runner.KindRateLimit, Msg: "rate limit reached"},
	)
}

func TestSessionUsage(t *testing.T) {
	dir := t.TempDir()
	events := clitest.Testdata(t, "real-write-events.jsonl")
	if err := os.MkdirAll(filepath.Join(dir, "session-state", "s"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "session-state", "s", "events.jsonl"), events, 0o644); err != nil {
		t.Fatal(err)
	}
	u, model, err := sessionUsage(dir, "s")
	want := event.Usage{InputTokens: 2500, OutputTokens: 100, CacheReadTokens: 100}
	if diff := cmp.Diff(want, u); diff != "" || err != nil || model != "modelsim" {
		t.Errorf("session usage (%v, model %q) mismatch (-want +got):\n%s", err, model, diff)
	}
}

func TestClassify(t *testing.T) {
	for _, tt := range []struct {
		typ    string
		status int
		msg    string
		want   runner.Kind
	}{
		{"authentication", 0, "No authentication information found", runner.KindAuth},
		{"quota", 402, "You have no premium requests left", runner.KindQuota},
		{"context_length", 0, "", runner.KindTurnLimit},
		{"error", 500, "socket hang up", runner.KindBackend},
	} {
		if got := classify(tt.typ, tt.status, tt.msg); got != tt.want {
			t.Errorf("classify(%q, %d, %q) = %s, want %s", tt.typ, tt.status, tt.msg, got, tt.want)
		}
	}
}

// fakeOK prints a reply and a result, and writes the session log the way
// Copilot CLI does, under $COPILOT_HOME.
func fakeOK(reply string, u event.Usage) string {
	return `d="$COPILOT_HOME/session-state/fake-session"; mkdir -p "$d"` + "\n" +
		fmt.Sprintf(`echo '{"type":"session.usage_record","data":{"usage":{"model":"claude-sonnet-5","inputTokens":%d,"outputTokens":%d,"cost":%v}}}' > "$d/events.jsonl"`,
			u.InputTokens, u.OutputTokens, u.CostUSD) + "\n" +
		`cat <<'EOF'` + "\n" + `{"type":"assistant.message","data":{"content":` + strconv.Quote(reply) + `}}` + "\n" +
		`{"type":"result","sessionId":"fake-session","exitCode":0}` + "\nEOF\n"
}

// cli builds the runners of the tests around fake CLIs.
var cli = clitest.CLI{Name: "copilot", Factory: New}

func TestConformance(t *testing.T) {
	t.Setenv("COPILOT_HOME", t.TempDir())
	say := func(v string) string {
		return `printf '{"type":"assistant.message","data":{"content":"%s"}}\n' "` + v + `"` + "\n"
	}
	cli.Conformance(t, clitest.Fakes(fakeOK, say), true)
}

func TestArgvAndEnv(t *testing.T) {
	home := t.TempDir()
	t.Setenv("COPILOT_HOME", home)
	t.Setenv("GITHUB_TOKEN", "cadre-own-token")
	r := cli.Fake(t, clitest.DumpEnv+fakeOK("ok", event.Usage{InputTokens: 1000, OutputTokens: 100}),
		runner.Settings{URL: "http://127.0.0.1:9/v1", Model: "claude-sonnet-5"})
	inv := clitest.Invocation(t)
	inv.Session = "s-1"
	args, stdin := r.(*Runner).argv(inv)
	want := []string{"--output-format", "json", "--allow-all-tools", "--no-color", "--model", "claude-sonnet-5",
		"--add-dir", filepath.Dir(inv.ContextPath), "--add-dir", filepath.Dir(inv.OutputPath), "--resume", "s-1", "-p", inv.Prompt}
	if diff := cmp.Diff(want, args); diff != "" || stdin != nil {
		t.Errorf("argv mismatch (-want +got):\n%s", diff)
	}
	res, err := r.Run(t.Context(), inv)
	if err != nil {
		t.Fatal(err)
	}
	env := clitest.ReadEnv(t, filepath.Join(inv.Dir, "env.out"))
	if diff := cmp.Diff(clitest.WantEnv("COPILOT_HOME", "COPILOT_AUTO_UPDATE", "COPILOT_OFFLINE", "COPILOT_PROVIDER_BASE_URL"), clitest.Names(env)); diff != "" {
		t.Errorf("environment keys mismatch (-want +got):\n%s", diff)
	}
	if env["COPILOT_PROVIDER_BASE_URL"] != "http://127.0.0.1:9/v1" || env["COPILOT_OFFLINE"] != "true" {
		t.Errorf("provider env = %q, offline %q", env["COPILOT_PROVIDER_BASE_URL"], env["COPILOT_OFFLINE"])
	}
	if res.SessionID != "fake-session" || res.Usage.InputTokens != 1000 || res.Usage.CostUSD <= 0 || !res.Usage.CostEstimated {
		t.Errorf("result %+v: want the session log's tokens and an estimated cost", res)
	}
	// A prompt too long for one argument goes on stdin.
	args, stdin = r.(*Runner).argv(runner.Invocation{Prompt: strings.Repeat("x", 200<<10)})
	if b, _ := io.ReadAll(stdin); slices.Contains(args, "-p") || len(b) != 200<<10 {
		t.Errorf("long prompt: args %q, %d bytes on stdin", args, len(b))
	}
}

// A run whose session log is missing still returns its reply, with no usage.
func TestMissingSessionLog(t *testing.T) {
	t.Setenv("COPILOT_HOME", t.TempDir())
	r := cli.Fake(t, `echo '{"type":"assistant.message","data":{"content":"hi"}}'; echo '{"type":"result","sessionId":"gone","exitCode":0}'`+"\n", runner.Settings{})
	res, err := r.Run(t.Context(), clitest.Invocation(t))
	if err != nil || res.Output != "hi" || res.Usage != (event.Usage{}) {
		t.Errorf("res %+v, err %v: want the reply and no usage", res, err)
	}
	r, _ = New(runner.Settings{Name: "cp", Command: "cadre-no-such-copilot"})
	_, err = r.Run(t.Context(), clitest.Invocation(t))
	if err == nil || !strings.Contains(err.Error(), Type.Install) {
		t.Errorf("missing CLI: %v, want the install hint", err)
	}
}

// A session log the agent replaced with a link is not read through: the
// run keeps its reply and reports no usage.
func TestSessionLogLinkRefused(t *testing.T) {
	t.Setenv("COPILOT_HOME", t.TempDir())
	elsewhere := filepath.Join(t.TempDir(), "events.jsonl")
	if err := os.WriteFile(elsewhere, []byte(`{"type":"session.usage_record","data":{"usage":{"model":"m","inputTokens":7}}}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := cli.Fake(t, `d="$COPILOT_HOME/session-state/linked"; mkdir -p "$d"; ln -s '`+elsewhere+`' "$d/events.jsonl"`+"\n"+
		`echo '{"type":"assistant.message","data":{"content":"hi"}}'; echo '{"type":"result","sessionId":"linked","exitCode":0}'`+"\n", runner.Settings{})
	res, err := r.Run(t.Context(), clitest.Invocation(t))
	if err != nil || res.Output != "hi" || res.Usage != (event.Usage{}) {
		t.Errorf("res %+v, err %v: want the reply and no usage", res, err)
	}
}

// TestSandboxHome: under cadre's sandbox the CLI finds its own settings
// and login in its fresh home, and nothing else of the user's; the usage
// in the session log it wrote there is read before the home is removed.
func TestSandboxHome(t *testing.T) {
	inv := clitest.Invocation(t)
	clitest.Sandboxed(t, &inv, append(slices.Clone(Type.SandboxHome), ".bash_history", ".copilot/mcp-config.json"))
	t.Setenv("COPILOT_HOME", "")
	os.Unsetenv("COPILOT_HOME") // the default: ~/.copilot
	r := cli.Fake(t, clitest.ListHome+`COPILOT_HOME=$HOME/.copilot`+"\n"+fakeOK("ok", event.Usage{InputTokens: 1000, OutputTokens: 100}), runner.Settings{})
	res, err := r.Run(t.Context(), inv)
	clitest.CheckHome(t, inv.Dir, Type.SandboxHome)
	if err != nil || res.Usage.InputTokens != 1000 || res.Usage.OutputTokens != 100 {
		t.Errorf("res %+v, err %v: want the usage of the session log written in the sandbox's home", res, err)
	}
}

func TestNewAndMissingCLI(t *testing.T) {
	clitest.NewAndMissing(t, New, Type, "localhost:1", runner.Caps{EditsFiles: true, ModelChoice: true, Streams: true}, func(r runner.Runner) string { return r.(*Runner).Command })
}
