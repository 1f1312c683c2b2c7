package cliutil

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/redact"
	"github.com/cadre-dev/cadre/internal/runner"
	"github.com/cadre-dev/cadre/internal/runner/price"
	"github.com/google/go-cmp/cmp"
)

func TestNewAgent(t *testing.T) {
	defEnv := []string{"AGENT_KEY"}
	tests := []struct {
		name     string
		s        runner.Settings
		wantCmd  string
		wantPass []string
		wantErr  string
	}{
		{name: "defaults", s: runner.Settings{Name: "a"}, wantCmd: "agent", wantPass: defEnv},
		{name: "blank command is the default", s: runner.Settings{Name: "a", Command: "  "}, wantCmd: "agent", wantPass: defEnv},
		{name: "bare name left to PATH", s: runner.Settings{Name: "a", Command: " my-agent ", BaseDir: "/repo"}, wantCmd: "my-agent", wantPass: defEnv},
		{name: "relative path from the base dir", s: runner.Settings{Name: "a", Command: "./bin/agent", BaseDir: "/repo"}, wantCmd: "/repo/bin/agent", wantPass: defEnv},
		{name: "absolute path kept", s: runner.Settings{Name: "a", Command: "/opt/agent", BaseDir: "/repo"}, wantCmd: "/opt/agent", wantPass: defEnv},
		{name: "listed variables replace the defaults", s: runner.Settings{Name: "a", Env: []string{"MINE"}}, wantCmd: "agent", wantPass: []string{"MINE"}},
		{name: "good URL", s: runner.Settings{Name: "a", URL: "http://127.0.0.1:8080/v1"}, wantCmd: "agent", wantPass: defEnv},
		{name: "URL without scheme", s: runner.Settings{Name: "a", URL: "127.0.0.1:8080"},
			wantErr: `runners.a.url "127.0.0.1:8080" is not an http(s) URL: set it like https://host:port/v1`},
		{name: "URL of another scheme", s: runner.Settings{Name: "b", URL: "ftp://host"}, wantErr: "runners.b.url"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := runner.Descriptor{Program: "agent", Install: "get agent", Env: defEnv, URLExample: "https://host:port/v1",
				SandboxHome: []string{".agent"}, ModelHosts: []string{"https://api.example.com"}}
			a, err := NewAgent(tt.s, d)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if a.Command != tt.wantCmd || !cmp.Equal(a.Pass, tt.wantPass) {
				t.Errorf("NewAgent: command %q, pass %q; want %q %q", a.Command, a.Pass, tt.wantCmd, tt.wantPass)
			}
			if a.Name() != tt.s.Name || a.URL != tt.s.URL || a.Lookup == nil {
				t.Errorf("NewAgent: name %q, URL %q, lookup set %v; want the settings' and os.LookupEnv", a.Name(), a.URL, a.Lookup != nil)
			}
			if a.Install != d.Install || !cmp.Equal(a.Home, d.SandboxHome) || !cmp.Equal(a.Hosts, d.ModelHosts) {
				t.Errorf("NewAgent: install %q, home %q, hosts %q; want the descriptor's", a.Install, a.Home, a.Hosts)
			}
		})
	}
}

func TestOpenLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "logs", "step.log")
	for _, line := range []string{"first\n", "re-ask\n"} {
		f, err := OpenLog(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(f, line)
		f.Close()
	}
	if got, _ := os.ReadFile(path); string(got) != "first\nre-ask\n" {
		t.Errorf("log %q, want both runs appended", got)
	}
	f, err := OpenLog("", nil)
	if err != nil {
		t.Fatalf("no log path: %v", err)
	}
	defer f.Close()
	if n, ok := f.(interface{ Name() string }); !ok || n.Name() != os.DevNull {
		t.Errorf("no log path opened %v, want %s", f, os.DevNull)
	}
	blocker := filepath.Join(t.TempDir(), "file")
	os.WriteFile(blocker, nil, 0o644)
	if _, err := OpenLog(filepath.Join(blocker, "step.log"), nil); err == nil || !strings.Contains(err.Error(), "create log dir") {
		t.Errorf("log under a file: %v, want a create log dir error", err)
	}
}

// A masked log holds no secret, even one split across writes, and what
// the mask held back is written at Close.
func TestOpenLogMasks(t *testing.T) {
	const secret = "ghp_LogSecret0123456789"
	path := filepath.Join(t.TempDir(), "logs", "step.log")
	f, err := OpenLog(path, redact.New(secret))
	if err != nil {
		t.Fatal(err)
	}
	text := "token " + secret + " and " + base64.StdEncoding.EncodeToString([]byte("x-access-token:"+secret)) + " end"
	for i := 0; i < len(text); i += 5 {
		io.WriteString(f, text[i:min(i+5, len(text))])
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	if strings.Contains(string(got), secret) || !strings.HasPrefix(string(got), "token [REDACTED] and ") || !strings.HasSuffix(string(got), " end") {
		t.Errorf("log %q", got)
	}
}

func TestVars(t *testing.T) {
	inv := runner.Invocation{Role: "coder", Item: "07", Step: "07/code/coder#2", Attempt: 2, Dir: "/w/tree",
		ContextPath: "/w/c.json", OutputPath: "/w/o.md", Model: "m", Reask: true}
	want := map[string]string{"CADRE_CONTEXT": "/w/c.json", "CADRE_OUTPUT": "/w/o.md", "CADRE_ROLE": "coder",
		"CADRE_ITEM": "07", "CADRE_STEP": "07/code/coder#2", "CADRE_ATTEMPT": "2", "CADRE_WORKTREE": "/w/tree"}
	if diff := cmp.Diff(want, Vars(inv)); diff != "" {
		t.Errorf("Vars mismatch (-want +got):\n%s", diff)
	}
}

func TestModelFor(t *testing.T) {
	a, err := NewAgent(runner.Settings{Name: "a", Model: "default"}, runner.Descriptor{Program: "agent"})
	if err != nil {
		t.Fatal(err)
	}
	if got := a.ModelFor(runner.Invocation{Model: "step"}); got != "step" {
		t.Errorf("step model: %q", got)
	}
	if got := a.ModelFor(runner.Invocation{}); got != "default" {
		t.Errorf("no step model: %q", got)
	}
}

// TestStep runs a shell script as the agent and checks where it ran, what
// it got and what the log says.
func TestStep(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(t.TempDir(), "agent")
	if err := os.WriteFile(script, []byte("#!/bin/sh\npwd\necho \"$1 $CADRE_ROLE $AGENT_KEY$OTHER_SECRET$MINE\"\ncat\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AGENT_KEY", "k1")
	t.Setenv("OTHER_SECRET", "s1")
	a, err := NewAgent(runner.Settings{Name: "a", Command: script, Env: []string{"AGENT_KEY"}}, runner.Descriptor{Program: "agent"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		call    Call
		wantOut string
		wantLog string
	}{
		{"prompt as an argument", Call{Args: []string{"--prompt=the prompt"}, PromptFlag: "--prompt="},
			"--prompt=the prompt coder k1\n", "$ " + script + " --prompt=<prompt, 10 bytes>\n"},
		{"prompt on stdin, a variable of the runner's", Call{Args: []string{"-"}, Stdin: strings.NewReader("the prompt"), Set: map[string]string{"MINE": "+m"}},
			"- coder k1+m\nthe prompt", "$ " + script + " - < <prompt, 10 bytes>\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inv := runner.Invocation{Role: "coder", Dir: dir, Prompt: "the prompt", LogPath: filepath.Join(t.TempDir(), "logs", "s.log")}
			var lines []string
			tt.call.OnLine = func(stream, line string) { lines = append(lines, line) }
			tt.call.Result = func(stdout []byte, exit int) (runner.Result, *runner.Error) {
				if exit != 0 {
					t.Errorf("Result given exit code %d, want 0", exit)
				}
				return runner.Result{Output: string(stdout), ExitCode: -7}, nil
			}
			res, err := a.Step(t.Context(), inv, tt.call)
			if err != nil {
				t.Fatal(err)
			}
			if want := dir + "\n" + tt.wantOut; res.Output != want || res.ExitCode != 0 {
				t.Errorf("stdout %q (exit %d), want %q and exit 0 (run in inv.Dir, only the passed variable)", res.Output, res.ExitCode, want)
			}
			log, err := os.ReadFile(inv.LogPath)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(string(log), tt.wantLog) || !strings.Contains(string(log), "coder k1") {
				t.Errorf("log %q, want the command line %q then the output", log, tt.wantLog)
			}
			if len(lines) < 2 || lines[0] != dir {
				t.Errorf("lines %q, want each output line handed over", lines)
			}
		})
	}
}

// What the CLI prints reaches the runner's parser, its line handler and
// the stderr tail masked whole, so a message the runner cuts short (a
// failure it reports, a note) cannot keep part of a key.
func TestStepMasksBeforeCutting(t *testing.T) {
	const key = "X81mLp0vQz7RtY2uWc4nBv6sDf8gHj1kLz3xCv5bNm7aQw9eRtUy"
	script := filepath.Join(t.TempDir(), "agent")
	body := "#!/bin/sh\necho '{\"error\": \"bad key '$AGENT_KEY' given\"}'\necho \"$AGENT_KEY$AGENT_KEY\" >&2\nexit 3\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AGENT_KEY", key)
	a, err := NewAgent(runner.Settings{Name: "a", Command: script, Env: []string{"AGENT_KEY"}}, runner.Descriptor{Program: "agent"})
	if err != nil {
		t.Fatal(err)
	}
	inv := runner.Invocation{Role: "coder", Dir: t.TempDir(), Prompt: "p", LogPath: filepath.Join(t.TempDir(), "s.log"), Mask: redact.New(key)}
	var seen []string
	call := Call{Args: []string{"-"},
		OnLine: func(stream, line string) { seen = append(seen, Short(line, 30)) },
		Result: func(stdout []byte, exit int) (runner.Result, *runner.Error) {
			// A parser that keeps the message's end, as tails do.
			msg := string(stdout)
			return runner.Result{}, &runner.Error{Kind: runner.KindBackend, Msg: msg[max(0, len(msg)-40):]}
		}}
	res, err := a.Step(t.Context(), inv, call)
	for _, text := range append(seen, res.StderrTail, fmt.Sprint(err)) {
		for i := 0; i+redact.RunLen <= len(key); i++ {
			if strings.Contains(text, key[i:i+redact.RunLen]) {
				t.Fatalf("%q keeps %q of the key", text, key[i:i+redact.RunLen])
			}
		}
	}
	if !strings.Contains(res.StderrTail, redact.Mask) || err == nil {
		t.Errorf("stderr tail %q, error %v: want the key masked and the failure reported", res.StderrTail, err)
	}
}

func TestStdoutJSON(t *testing.T) {
	type event struct {
		Type string `json:"type"`
	}
	tests := []struct {
		stream, line string
		want         event
		ok           bool
	}{
		{"stdout", `{"type":"result"}`, event{"result"}, true},
		{"stdout", `  {"type":"init"}`, event{"init"}, true},
		{"stderr", `{"type":"result"}`, event{}, false},
		{"stdout", `Loaded cached credentials.`, event{}, false},
		{"stdout", `{"type":`, event{}, false},
	}
	for _, tt := range tests {
		got, ok := StdoutJSON[event](tt.stream, tt.line)
		if got != tt.want || ok != tt.ok {
			t.Errorf("StdoutJSON(%s, %q) = %+v, %v; want %+v, %v", tt.stream, tt.line, got, ok, tt.want, tt.ok)
		}
	}
}

func TestOutsideDirs(t *testing.T) {
	tests := []struct {
		name string
		inv  runner.Invocation
		want []string
	}{
		{"both outside", runner.Invocation{Dir: "/w/tree", ContextPath: "/w/run/c/s.json", OutputPath: "/w/run/o/s.md"},
			[]string{"/w/run/c", "/w/run/o"}},
		{"same directory once", runner.Invocation{Dir: "/w/tree", ContextPath: "/w/run/s.json", OutputPath: "/w/run/s.md"},
			[]string{"/w/run"}},
		{"inside the tree", runner.Invocation{Dir: "/w/tree", ContextPath: "/w/tree/c.json", OutputPath: "/w/tree/sub/o.md"}, nil},
		{"a sibling sharing the prefix is outside", runner.Invocation{Dir: "/w/tree", OutputPath: "/w/tree2/o.md"},
			[]string{"/w/tree2"}},
		{"no working tree", runner.Invocation{OutputPath: "/w/o.md"}, []string{"/w"}},
		{"no files", runner.Invocation{Dir: "/w/tree"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, OutsideDirs(tt.inv)); diff != "" {
				t.Errorf("OutsideDirs mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHasFlag(t *testing.T) {
	tests := []struct {
		args []string
		want bool
	}{
		{[]string{"--sandbox", "read-only"}, true},
		{[]string{"--sandbox=read-only"}, true},
		{[]string{"-s"}, true},
		{[]string{"--sandboxes"}, false},
		{[]string{"-c", "sandbox=x"}, false},
		{nil, false},
	}
	for _, tt := range tests {
		if got := HasFlag(tt.args, "--sandbox", "-s"); got != tt.want {
			t.Errorf("HasFlag(%q) = %v, want %v", tt.args, got, tt.want)
		}
	}
}

func TestCommandLine(t *testing.T) {
	const prompt = "Fix it."
	tests := []struct {
		name    string
		args    []string
		flag    string
		onStdin bool
		want    string
	}{
		{"prompt as the last argument", []string{"-p", "--", prompt}, "", false, "agent -p -- <prompt, 7 bytes>"},
		{"prompt in a flag", []string{"--json", "--prompt=" + prompt}, "--prompt=", false, "agent --json --prompt=<prompt, 7 bytes>"},
		{"prompt on stdin", []string{"run", "--model", "a b"}, "", true, `agent run --model "a b" < <prompt, 7 bytes>`},
		{"only the last argument is the prompt", []string{prompt, "x"}, "", false, `agent "Fix it." x`},
		{"quoting", []string{"", "$HOME", `say "hi"`, "plain"}, "", true, `agent "" "$HOME" "say \"hi\"" plain < <prompt, 7 bytes>`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := CommandLine("agent", tt.args, tt.flag, prompt, tt.onStdin); got != tt.want {
				t.Errorf("CommandLine = %s\nwant           %s", got, tt.want)
			}
		})
	}
}

func TestOutcome(t *testing.T) {
	notFound := &osexec.Error{Name: "agent", Err: osexec.ErrNotFound}
	tests := []struct {
		name     string
		hint     string
		err      error
		failure  *runner.Error
		wantMsg  string // "" means a nil error
		wantKind runner.Kind
	}{
		{name: "success"},
		{name: "missing command with a hint", hint: "npm i agent", err: notFound,
			wantMsg: "runner r: exec: \"agent\": executable file not found in $PATH: install it (npm i agent) or fix runners.r.command"},
		{name: "missing command", err: notFound,
			wantMsg: "runner r: exec: \"agent\": executable file not found in $PATH: install it or fix runners.r.command"},
		{name: "other error wins over a failure", err: errors.New("timed out"), failure: &runner.Error{Kind: runner.KindQuota},
			wantMsg: "runner r: timed out"},
		{name: "the agent's failure", failure: &runner.Error{Kind: runner.KindQuota, Msg: "spent"},
			wantMsg: "runner r: quota: spent", wantKind: runner.KindQuota},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Outcome("r", tt.hint, tt.err, tt.failure)
			if tt.wantMsg == "" {
				if err != nil {
					t.Fatalf("Outcome = %#v, want nil", err)
				}
				return
			}
			if err == nil || err.Error() != tt.wantMsg {
				t.Fatalf("Outcome = %v, want %s", err, tt.wantMsg)
			}
			if tt.err != nil && !errors.Is(err, tt.err) {
				t.Errorf("Outcome = %v, want it to wrap %v", err, tt.err)
			}
			if runner.KindOf(err) != tt.wantKind {
				t.Errorf("kind %q, want %q", runner.KindOf(err), tt.wantKind)
			}
		})
	}
}

func TestEstimate(t *testing.T) {
	u := event.Usage{InputTokens: 1_000_000, OutputTokens: 2_000_000}
	table := price.New(map[string]price.Price{"house-model": {InputPerMTok: 1, OutputPerMTok: 2}})
	if got := Estimate(table, "house-model", u); got.CostUSD != 5 || !got.CostEstimated || got.InputTokens != u.InputTokens {
		t.Errorf("known model: %+v, want a cost of 5 marked estimated", got)
	}
	if got := Estimate(table, "mystery-model", u); got != u {
		t.Errorf("unknown model: %+v, want the usage unchanged", got)
	}
	if want, ok := price.Estimate("gpt-5-codex", u); !ok || Estimate(nil, "gpt-5-codex", u).CostUSD != want {
		t.Errorf("nil table: want the built-in price %v (%v)", want, ok)
	}
}

func TestRetryAfter(t *testing.T) {
	tests := []struct {
		msg  string
		want time.Duration
	}{
		{"Please try again in 3.29s. Visit", 3290 * time.Millisecond},
		{"please try again in 20ms", 20 * time.Millisecond},
		{"Please retry in 21.4 seconds", 21400 * time.Millisecond},
		{"Retry after 2 minutes", 2 * time.Minute},
		{"try again in 4 days 10 hours", 0},
		{"try again at 3:28 PM", 0},
		{"", 0},
	}
	for _, tt := range tests {
		if got := RetryAfter(tt.msg); got != tt.want {
			t.Errorf("RetryAfter(%q) = %s, want %s", tt.msg, got, tt.want)
		}
	}
}

func TestNote(t *testing.T) {
	var got []string
	Note(func(s string) { got = append(got, s) }, "edit\n  "+strings.Repeat("é", 200))
	Note(nil, "nobody listens")
	if len(got) != 1 || len([]rune(got[0])) != NoteMax || !strings.HasPrefix(got[0], "edit é") || !strings.HasSuffix(got[0], "…") {
		t.Errorf("notes %q, want one line of %d characters ending in …", got, NoteMax)
	}
}

func TestShort(t *testing.T) {
	tests := []struct {
		in   string
		n    int
		want string
	}{
		{"one line", 100, "one line"},
		{"  spread\n over\tlines ", 100, "spread over lines"},
		{"abcdefghij", 5, "abcd…"},
		{"ééééé", 5, "ééééé"},
		{"", 5, ""},
	}
	for _, tt := range tests {
		if got := Short(tt.in, tt.n); got != tt.want {
			t.Errorf("Short(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
		}
	}
}

func TestFirstLine(t *testing.T) {
	tests := []struct{ in, want string }{
		{"one line", "one line"},
		{"\n  \nsecond\nthird", "second"},
		{"  \n", ""},
	}
	for _, tt := range tests {
		if got := FirstLine(tt.in); got != tt.want {
			t.Errorf("FirstLine(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestContainsAny(t *testing.T) {
	for _, tt := range []struct {
		s    string
		subs []string
		want bool
	}{
		{"rate limit reached", []string{"quota", "rate limit"}, true},
		{"rate limit reached", []string{"quota"}, false},
		{"anything", nil, false},
	} {
		if got := ContainsAny(tt.s, tt.subs...); got != tt.want {
			t.Errorf("ContainsAny(%q, %q) = %v", tt.s, tt.subs, got)
		}
	}
}

func ExampleCommandLine() {
	fmt.Println(CommandLine("claude", []string{"-p", "--model", "opus", "--", "Do the work."}, "", "Do the work.", false))
	// Output: claude -p --model opus -- <prompt, 12 bytes>
}

// An untrusted tree's git configuration reaches the agent's own git as
// GIT_CONFIG_* variables, which git reads like -c options.
func TestVarsCarryGitConfig(t *testing.T) {
	v := Vars(runner.Invocation{GitConfig: []string{"core.hooksPath=/dev/null", "filter.x.clean="}})
	want := map[string]string{"GIT_CONFIG_COUNT": "2", "GIT_CONFIG_KEY_0": "core.hooksPath", "GIT_CONFIG_VALUE_0": "/dev/null",
		"GIT_CONFIG_KEY_1": "filter.x.clean", "GIT_CONFIG_VALUE_1": ""}
	for k, w := range want {
		if got, ok := v[k]; !ok || got != w {
			t.Errorf("%s = %q (set: %v), want %q", k, got, ok, w)
		}
	}
	if _, ok := Vars(runner.Invocation{})["GIT_CONFIG_COUNT"]; ok {
		t.Error("a trusted tree's agent got GIT_CONFIG_COUNT")
	}
}

func TestEvents(t *testing.T) {
	type event struct {
		Type string `json:"type"`
	}
	var got []string
	line := Events(func(ev event) { got = append(got, ev.Type) })
	for _, l := range []string{`{"type":"init"}`, `not JSON`, `{"type":`, `{"type":"result"}`} {
		line("stdout", l)
	}
	line("stderr", `{"type":"stderr"}`)
	if strings.Join(got, " ") != "init result" {
		t.Errorf("events %q, want the two of stdout", got)
	}
}

func TestFlag(t *testing.T) {
	tests := []struct {
		flag   string
		values []string
		want   []string
	}{
		{"--model", []string{"m1"}, []string{"--model", "m1"}},
		{"--model", []string{""}, nil},
		{"--add-dir", []string{"/a", "", "/b"}, []string{"--add-dir", "/a", "--add-dir", "/b"}},
		{"--include-directories=", []string{"/a", "/b"}, []string{"--include-directories=/a", "--include-directories=/b"}},
		{"resume", nil, nil},
	}
	for _, tt := range tests {
		if got := Flag(tt.flag, tt.values...); !cmp.Equal(got, tt.want) {
			t.Errorf("Flag(%q, %q) = %q, want %q", tt.flag, tt.values, got, tt.want)
		}
	}
}

func TestSaid(t *testing.T) {
	var notes []string
	blocks := []Block{
		{Type: "text", Text: "First.\nMore."},
		{Type: "tool_use", Name: "Write", Input: map[string]any{"file_path": "/w/a.txt"}},
		{Type: "text", Text: "  \n"},
		{Type: "thinking", Text: "hidden"},
	}
	got := Said(func(n string) { notes = append(notes, n) }, blocks, "file_path")
	if got != "First.\nMore." || strings.Join(notes, "|") != "says: First.|Write /w/a.txt" {
		t.Errorf("Said = %q, notes %q; want the last text and a note per text and tool call", got, notes)
	}
}
