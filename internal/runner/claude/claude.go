// Package claude runs Claude Code headless: `claude -p --output-format
// stream-json --verbose`, in the item's working tree, with edits accepted and
// the Bash tool allowed so the agent can run the project's commands.
//
// The prompt is the last argument (after "--"), or stdin when it is too long
// for one argument. Progress comes from the stream's assistant events; the
// reply, the token usage, the cost (total_cost_usd, reported by the CLI) and
// the session id come from the final result event, never from summing
// per-message usage, when it came. A run interrupted before it (Ctrl-C,
// cadre stop --now, a timeout) reports the sum of its messages' usage, each
// message counted once, at its cost from the price table. A result that
// says the run failed is returned as a *runner.Error of the matching kind.
package claude

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/runner"
	"github.com/cadre-dev/cadre/internal/runner/cliutil"
)

// Type describes the claude runner type: the CLI and how to install it,
// the variables passed through when the settings list none (the
// credentials and endpoint Claude Code reads, and its config directory),
// and, under a sandbox, the step's fresh home gets Claude Code's settings
// and login (~/.claude.json, ~/.claude/settings.json,
// ~/.claude/.credentials.json), not its history, while model-only lets it
// reach the Anthropic API.
var Type = runner.Descriptor{
	Type: "claude", Kind: runner.TypeCLI,
	Caps:    runner.Caps{EditsFiles: true, ReportsCost: true, ModelChoice: true, Streams: true},
	Program: "claude", Install: "npm install -g @anthropic-ai/claude-code",
	Env: []string{
		"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL",
		"CLAUDE_CODE_OAUTH_TOKEN", "CLAUDE_CONFIG_DIR",
	},
	URLExample:  "https://host:port",
	SandboxHome: []string{".claude.json", ".claude/settings.json", ".claude/.credentials.json"},
	ModelHosts:  []string{"https://api.anthropic.com"},
}

// Runner runs one Claude Code process per step.
type Runner struct{ cliutil.Agent }

// New builds a claude runner. Command defaults to "claude"; a relative path
// is resolved against BaseDir. Env lists the variables passed through
// (default: Anthropic credentials and base URL); URL, when set, becomes
// ANTHROPIC_BASE_URL; Model is the default --model; Args are appended to the
// CLI's own flags. Claude Code edits files, reports its cost, takes a
// model per step and streams its events.
func New(s runner.Settings) (runner.Runner, error) { return cliutil.New[Runner](Type)(s) }

// Run runs Claude Code on inv.Prompt in inv.Dir.
func (r *Runner) Run(ctx context.Context, inv runner.Invocation) (runner.Result, error) {
	args, stdin := r.argv(inv)
	p := &parser{progress: inv.Progress}
	return r.Step(ctx, inv, cliutil.Call{Args: args, Stdin: stdin, Set: r.vars(), OnLine: cliutil.Events(p.event),
		Result: func([]byte, int) (runner.Result, *runner.Error) {
			out := p.result()
			if out.Model == "" {
				out.Model = r.ModelFor(inv)
			}
			if p.final == nil {
				out.Usage = cliutil.Estimate(r.Prices, out.Model, out.Usage)
			}
			return out, p.failure()
		}})
}

// argv builds the CLI's arguments and, for a long prompt, its stdin.
func (r *Runner) argv(inv runner.Invocation) ([]string, io.Reader) {
	args := []string{"-p", "--output-format", "stream-json", "--verbose",
		"--permission-mode", "acceptEdits", "--allowedTools", "Bash"}
	args = append(args, cliutil.Flag("--model", r.ModelFor(inv))...)
	args = append(args, cliutil.Flag("--resume", inv.Session)...)
	// An untrusted tree's .claude/settings*.json (hooks, apiKeyHelper…) and
	// .mcp.json must not make the CLI run programs: user settings only, and
	// MCP servers from --mcp-config only (none).
	if inv.Untrusted {
		args = append(args, "--setting-sources", "user", "--strict-mcp-config")
	}
	// The context and output files live outside the working tree.
	args = append(args, cliutil.Flag("--add-dir", cliutil.OutsideDirs(inv)...)...)
	// The role's instructions go once, into the system prompt, not into
	// the message (a re-ask into the session sends only its note).
	if inv.Instructions != "" {
		args = append(args, "--append-system-prompt", inv.Instructions)
	}
	args = append(args, r.Args...)
	prompt := inv.UserText()
	if len(prompt) > cliutil.MaxArgPrompt {
		return args, strings.NewReader(prompt)
	}
	// "--" ends the options, so neither a variadic flag above nor a prompt
	// starting with "-" can swallow or be mistaken for an option.
	return append(args, "--", prompt), nil
}

// vars are the variables set for the CLI: the base URL when set.
func (r *Runner) vars() map[string]string {
	if r.URL == "" {
		return nil
	}
	// No telemetry or update checks against a custom endpoint.
	return map[string]string{"ANTHROPIC_BASE_URL": r.URL, "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}
}

// parser reads the stream-json events as they arrive.
type parser struct {
	progress  func(string)
	sessionID string
	model     string
	lastText  string // the last assistant text: the reply if no result came
	lastError string // the error code of the last assistant message
	final     *streamEvent
	// used is each message's usage by its id, as last streamed (a
	// message streams once per content block, repeating its usage):
	// what a run without a result had spent.
	used  map[string]usage
	order []string
}

// streamEvent holds the fields cadre reads from any event. Fields whose type
// varies between CLI versions are kept raw so one odd field never loses the
// whole event.
type streamEvent struct {
	Type           string                `json:"type"`
	Subtype        string                `json:"subtype"`
	SessionID      string                `json:"session_id"`
	Model          string                `json:"model"`
	Message        *message              `json:"message"`
	Error          json.RawMessage       `json:"error"`
	IsError        bool                  `json:"is_error"`
	Result         string                `json:"result"`
	TotalCostUSD   float64               `json:"total_cost_usd"`
	Usage          *usage                `json:"usage"`
	ModelUsage     map[string]modelUsage `json:"modelUsage"`
	NumTurns       int                   `json:"num_turns"`
	APIErrorStatus json.RawMessage       `json:"api_error_status"`
	Errors         json.RawMessage       `json:"errors"`
}

type message struct {
	ID      string          `json:"id"`
	Usage   *usage          `json:"usage"`
	Model   string          `json:"model"`
	Content json.RawMessage `json:"content"` // an array of blocks, or a string
}

type usage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
}

func (u usage) event() event.Usage {
	return event.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens,
		CacheReadTokens: u.CacheReadInputTokens, CacheWriteTokens: u.CacheCreationInputTokens}
}

type modelUsage struct {
	CostUSD float64 `json:"costUSD"`
}

// event handles one event of the stream.
func (p *parser) event(ev streamEvent) {
	if ev.SessionID != "" {
		p.sessionID = ev.SessionID
	}
	switch ev.Type {
	case "system":
		switch ev.Subtype {
		case "init":
			p.model = ev.Model
			p.note("session started" + parens(ev.Model))
		case "api_retry":
			p.note("retrying the API call")
		}
	case "assistant":
		p.assistant(ev)
	case "result":
		final := ev
		p.final = &final
	}
}

func (p *parser) assistant(ev streamEvent) {
	if code := rawString(ev.Error); code != "" {
		p.lastError = code
	}
	if ev.Message == nil {
		return
	}
	if m := ev.Message; m.ID != "" && m.Usage != nil {
		if p.used == nil {
			p.used = map[string]usage{}
		}
		if _, seen := p.used[m.ID]; !seen {
			p.order = append(p.order, m.ID)
		}
		p.used[m.ID] = *m.Usage
	}
	var blocks []cliutil.Block
	if json.Unmarshal(ev.Message.Content, &blocks) != nil {
		return
	}
	if text := cliutil.Said(p.progress, blocks, "file_path", "path", "command", "pattern", "url", "description"); text != "" {
		p.lastText = text
	}
}

func (p *parser) note(s string) { cliutil.Note(p.progress, s) }

// result is what the stream said: reply, usage, cost, session, model.
func (p *parser) result() runner.Result {
	out := runner.Result{SessionID: p.sessionID, Model: p.model, Output: p.lastText}
	f := p.final
	if f == nil {
		for _, id := range p.order {
			out.Usage = out.Usage.Add(p.used[id].event())
		}
		return out
	}
	if f.Result != "" {
		out.Output = f.Result
	}
	if f.Usage != nil {
		out.Usage = f.Usage.event()
	}
	out.Usage.CostUSD = f.TotalCostUSD
	if out.Model == "" {
		out.Model = costliest(f.ModelUsage)
	}
	return out
}

// costliest names the model that cost most, the one that did the work.
func costliest(m map[string]modelUsage) string {
	name, best := "", -1.0
	for k, u := range m {
		if u.CostUSD > best || (u.CostUSD == best && k < name) {
			name, best = k, u.CostUSD
		}
	}
	return name
}

// failure classifies a result that reports an error; nil when the run
// succeeded or no result came (a crash is told by the exit code).
func (p *parser) failure() *runner.Error {
	f := p.final
	if f == nil {
		return nil
	}
	var errs []string
	_ = json.Unmarshal(f.Errors, &errs) // absent or not a list: no detail
	if f.Subtype == "error_max_turns" {
		msg := strings.Join(errs, "; ")
		if msg == "" {
			msg = fmt.Sprintf("stopped after %d turns", f.NumTurns)
		}
		return &runner.Error{Kind: runner.KindTurnLimit, Msg: cliutil.Short(msg, cliutil.MsgMax)}
	}
	if !f.IsError && !strings.HasPrefix(f.Subtype, "error") {
		return nil
	}
	msg := f.Result
	if msg == "" {
		msg = strings.Join(errs, "; ")
	}
	if msg == "" {
		msg = f.Subtype
	}
	code := rawString(f.Error)
	if code == "" {
		code = p.lastError
	}
	return &runner.Error{Kind: classify(rawInt(f.APIErrorStatus), code, msg), Msg: cliutil.Short(msg, cliutil.MsgMax)}
}

// classify maps what Claude Code reports to an error kind: the API's HTTP
// status, the assistant error code, then the words of the message. Quota
// comes before rate limit because a subscription's usage limit also arrives
// as a 429.
func classify(status int, code, msg string) runner.Kind {
	m := strings.ToLower(msg)
	switch {
	case status == 401 || status == 403 || code == "authentication_failed" ||
		cliutil.ContainsAny(m, "invalid api key", "/login", "authentication_error", "failed to authenticate", "oauth token", "invalid x-api-key"):
		return runner.KindAuth
	case status == 402 || code == "billing_error" ||
		cliutil.ContainsAny(m, "credit balance", "usage limit", "session limit", "weekly limit", "hit your limit", "spend limit", "spending limit", "billing"):
		return runner.KindQuota
	case status == 429 || status == 529 || code == "rate_limit" ||
		cliutil.ContainsAny(m, "rate limit", "rate_limit", "overloaded", "api error: 429", "api error: 529"):
		return runner.KindRateLimit
	case cliutil.ContainsAny(m, "prompt is too long", "context window", "context length"):
		return runner.KindTurnLimit
	}
	return runner.KindBackend
}

// rawString reads a JSON string, or "" for anything else.
func rawString(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

// rawInt reads a JSON number or numeric string, or 0.
func rawInt(raw json.RawMessage) int {
	n, err := strconv.Atoi(strings.Trim(string(raw), `"`))
	if err != nil {
		return 0
	}
	return n
}

func parens(s string) string {
	if s == "" {
		return ""
	}
	return " (" + s + ")"
}
