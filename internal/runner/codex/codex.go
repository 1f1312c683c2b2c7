// Package codex runs the OpenAI Codex CLI headless: `codex exec --json`, in
// the item's working tree, sandboxed to write only there (`--sandbox
// workspace-write`, unless the settings' Args choose another sandbox, or
// cadre's own sandbox confines it), and
// `codex exec resume` to continue a thread.
//
// The prompt is the last argument (after "--"), or stdin ("-") when it is too
// long for one argument. Progress comes from the item events; the reply is
// the last agent message; tokens are the sum of the turn.completed usage
// (Codex reports no cost, so it is estimated from the price table and marked
// so); the thread id is the session to resume. A failed turn is returned as
// a *runner.Error of the matching kind.
package codex

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/runner"
	"github.com/cadre-dev/cadre/internal/runner/cliutil"
)

// provider names the model provider cadre defines when a URL is set.
const provider = "cadre"

// Type describes the codex runner type: the CLI and how to install it, the
// variables passed through when the settings list none (the credentials
// and endpoint Codex reads, and its home directory), and, under a sandbox,
// the step's fresh home gets Codex's configuration and login
// (~/.codex/config.toml, ~/.codex/auth.json), not its sessions, while
// model-only lets it reach the OpenAI API and the ChatGPT backend a
// ChatGPT login uses.
var Type = runner.Descriptor{
	Type: "codex", Kind: runner.TypeCLI,
	Caps:    runner.Caps{EditsFiles: true, ModelChoice: true, Streams: true},
	Program: "codex", Install: "npm install -g @openai/codex",
	Env:         []string{"OPENAI_API_KEY", "OPENAI_BASE_URL", "CODEX_API_KEY", "CODEX_HOME"},
	URLExample:  "https://host:port/v1",
	SandboxHome: []string{".codex/config.toml", ".codex/auth.json"},
	ModelHosts:  []string{"https://api.openai.com", "https://chatgpt.com"},
}

// Runner runs one Codex process per step.
type Runner struct{ cliutil.Agent }

// New builds a codex runner. Command defaults to "codex"; a relative path
// is resolved against BaseDir. Env lists the variables passed through
// (default: OpenAI credentials, CODEX_HOME); URL, when set, becomes the
// base URL of a model provider defined on the command line (Responses API,
// key in OPENAI_API_KEY); Model is the default --model; Args are added
// after cadre's own flags. Codex edits files, takes a model per step and
// streams its events; its cost is estimated from Prices, not reported.
func New(s runner.Settings) (runner.Runner, error) { return cliutil.New[Runner](Type)(s) }

// Run runs Codex on inv.Prompt in inv.Dir.
func (r *Runner) Run(ctx context.Context, inv runner.Invocation) (runner.Result, error) {
	args, stdin := r.argv(inv)
	p := &parser{progress: inv.Progress}
	return r.Step(ctx, inv, cliutil.Call{Args: args, Stdin: stdin, OnLine: cliutil.Events(p.event),
		Result: func([]byte, int) (runner.Result, *runner.Error) {
			model := r.ModelFor(inv)
			return runner.Result{Output: p.lastMessage, Usage: cliutil.Estimate(r.Prices, model, p.usage),
				SessionID: p.threadID, Model: model}, p.failure()
		}})
}

// argv builds the CLI's arguments and, for a long prompt, its stdin. The
// options come before `resume`, which takes only the thread id and prompt.
func (r *Runner) argv(inv runner.Invocation) ([]string, io.Reader) {
	args := []string{"exec", "--json", "--skip-git-repo-check"}
	// Codex refuses an option given twice, so a sandbox chosen in the
	// settings' args replaces cadre's.
	// Inside cadre's sandbox Codex's own cannot work (it writes nothing
	// once nested), and cadre's confines it as much: the worktree and
	// output directory writable, .git read-only, the network as set.
	if !cliutil.HasFlag(r.Args, "--sandbox", "-s", "--full-auto", "--dangerously-bypass-approvals-and-sandbox") {
		mode := "workspace-write"
		if inv.Sandbox != nil {
			mode = "danger-full-access"
		}
		args = append(args, "--sandbox", mode)
	}
	args = append(args, cliutil.Flag("--model", r.ModelFor(inv))...)
	// An untrusted tree's execpolicy .rules must not widen what Codex runs.
	// Its .codex/config.toml (hooks, MCP servers) is read only for projects
	// the user marked trusted, and cadre never passes --trust.
	if inv.Untrusted {
		args = append(args, "--ignore-rules")
	}
	// The output file lives outside the working tree: make it writable.
	args = append(args, cliutil.Flag("--add-dir", cliutil.OutsideDirs(inv)...)...)
	if r.URL != "" {
		p := "model_providers." + provider
		args = append(args,
			"-c", "model_provider="+strconv.Quote(provider),
			"-c", p+".name="+strconv.Quote(provider),
			"-c", p+".base_url="+strconv.Quote(r.URL),
			"-c", p+".wire_api="+strconv.Quote("responses"),
			"-c", p+".env_key="+strconv.Quote("OPENAI_API_KEY"))
	}
	// The role's instructions go once, as developer instructions (a TOML
	// string), not into the message.
	if inv.Instructions != "" {
		args = append(args, "-c", "developer_instructions="+tomlString(inv.Instructions))
	}
	args = append(args, r.Args...)
	args = append(args, cliutil.Flag("resume", inv.Session)...)
	prompt := inv.UserText()
	if len(prompt) > cliutil.MaxArgPrompt {
		return append(args, "-"), strings.NewReader(prompt)
	}
	// "--" makes a prompt starting with "-" the prompt, not an option.
	return append(args, "--", prompt), nil
}

// tomlString is s as a TOML basic string: quotes, backslashes and control
// characters escaped.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// parser reads the JSONL events as they arrive.
type parser struct {
	progress    func(string)
	threadID    string
	lastMessage string
	usage       event.Usage
	turns       int    // turns completed
	failed      string // the error of a failed turn
	lastErr     string // the last error event, cleared by a completed turn
}

type threadEvent struct {
	Type     string `json:"type"`
	ThreadID string `json:"thread_id"`
	Message  string `json:"message"`
	Item     *item  `json:"item"`
	Usage    *struct {
		InputTokens           int64 `json:"input_tokens"`
		CachedInputTokens     int64 `json:"cached_input_tokens"`
		CacheWriteInputTokens int64 `json:"cache_write_input_tokens"`
		OutputTokens          int64 `json:"output_tokens"` // reasoning included
	} `json:"usage"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
}

type item struct {
	Type    string `json:"type"`
	Text    string `json:"text"`
	Command string `json:"command"`
	Message string `json:"message"`
	Server  string `json:"server"`
	Tool    string `json:"tool"`
	Query   string `json:"query"`
	Changes []struct {
		Path string `json:"path"`
		Kind string `json:"kind"`
	} `json:"changes"`
}

// event handles one event of the stream.
func (p *parser) event(ev threadEvent) {
	switch ev.Type {
	case "thread.started":
		p.threadID = ev.ThreadID
		p.note("thread started")
	case "item.started":
		if ev.Item != nil && ev.Item.Type == "command_execution" {
			p.note("run " + ev.Item.Command)
		}
	case "item.completed":
		if ev.Item != nil {
			p.completed(*ev.Item)
		}
	case "turn.completed":
		if u := ev.Usage; u != nil {
			// Codex counts cached input inside input_tokens; cadre keeps
			// them apart.
			p.usage.InputTokens += max(u.InputTokens-u.CachedInputTokens-u.CacheWriteInputTokens, 0)
			p.usage.CacheReadTokens += u.CachedInputTokens
			p.usage.CacheWriteTokens += u.CacheWriteInputTokens
			p.usage.OutputTokens += u.OutputTokens
		}
		p.turns++
		p.failed, p.lastErr = "", ""
	case "turn.failed":
		p.failed = "turn failed"
		if ev.Error != nil && ev.Error.Message != "" {
			p.failed = ev.Error.Message
		}
	case "error":
		p.lastErr = ev.Message
	}
}

func (p *parser) completed(it item) {
	switch it.Type {
	case "agent_message":
		p.lastMessage = it.Text
		p.note("says: " + cliutil.FirstLine(it.Text))
	case "file_change":
		paths := make([]string, 0, len(it.Changes))
		for _, c := range it.Changes {
			paths = append(paths, c.Path)
		}
		p.note("edit " + strings.Join(paths, ", "))
	case "mcp_tool_call":
		p.note("tool " + it.Server + "." + it.Tool)
	case "web_search":
		p.note("search " + it.Query)
	case "error":
		p.note("warning: " + it.Message)
	}
}

func (p *parser) note(s string) { cliutil.Note(p.progress, s) }

// failure classifies a failed turn, or an error that ended the run before
// any turn completed; nil otherwise (a crash is told by the exit code).
func (p *parser) failure() *runner.Error {
	msg := p.failed
	if msg == "" && p.turns == 0 {
		msg = p.lastErr
	}
	if msg == "" {
		return nil
	}
	// A retried rate limit says how long to wait in the last error event
	// when the failure itself does not.
	wait := cliutil.RetryAfter(msg)
	if wait == 0 {
		wait = cliutil.RetryAfter(p.lastErr)
	}
	return &runner.Error{Kind: classify(msg), Msg: cliutil.Short(msg, cliutil.MsgMax), RetryAfter: wait}
}

// classify maps a Codex error message to an error kind. Quota comes before
// rate limit because OpenAI reports an exhausted quota as a 429.
func classify(msg string) runner.Kind {
	m := strings.ToLower(msg)
	switch {
	case cliutil.ContainsAny(m, "401 unauthorized", "403 forbidden", "invalid_api_key", "incorrect api key",
		"missing environment variable", "not logged in", "please log in", "authentication"):
		return runner.KindAuth
	case cliutil.ContainsAny(m, "quota", "usage limit", "billing", "purchase more credits", "credit balance"):
		return runner.KindQuota
	case cliutil.ContainsAny(m, "429", "too many requests", "rate limit", "overloaded", "503 service unavailable"):
		return runner.KindRateLimit
	case cliutil.ContainsAny(m, "context window", "context_length_exceeded", "maximum context length"):
		return runner.KindTurnLimit
	}
	return runner.KindBackend
}
