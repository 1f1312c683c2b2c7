// Package qwen runs Qwen Code headless: `qwen --output-format stream-json
// --approval-mode yolo` with the prompt on stdin, in the item's working tree, with its tool
// calls approved so the agent can edit files and run commands there (unless
// the settings' Args choose another approval mode).
//
// Qwen Code speaks the OpenAI Chat Completions API (among others); the
// runner's URL becomes OPENAI_BASE_URL with --auth-type openai. Its stream
// is JSON lines shaped like Claude Code's: a system init event with the
// session id, assistant messages (text and tool_use blocks: the progress),
// and a closing result event with the reply and the usage summed over the
// run. Qwen Code reports no cost, so it is estimated from the price table.
// A result marked is_error is returned as a *runner.Error.
package qwen

import (
	"context"
	"io"
	"strings"

	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/runner"
	"github.com/cadre-dev/cadre/internal/runner/cliutil"
)

// Type describes the qwen runner type: the CLI and how to install it, the
// variables passed through when the settings list none (the
// OpenAI-compatible endpoint Qwen Code reads, and the other providers'
// keys), and, under a sandbox, the step's fresh home gets Qwen Code's
// settings and its Qwen OAuth login (~/.qwen/settings.json,
// ~/.qwen/oauth_creds.json), not its history or extensions, while
// model-only lets it reach DashScope and the Qwen OAuth service (another
// OpenAI-compatible server: runners.NAME.url or sandbox.allow_hosts).
var Type = runner.Descriptor{
	Type: "qwen", Kind: runner.TypeCLI,
	Caps:    runner.Caps{EditsFiles: true, ModelChoice: true, Streams: true},
	Program: "qwen", Install: "npm install -g @qwen-code/qwen-code",
	Env: []string{
		"OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_MODEL", "DASHSCOPE_API_KEY",
		"ANTHROPIC_API_KEY", "GEMINI_API_KEY",
	},
	URLExample:  "http://host:port/v1",
	SandboxHome: []string{".qwen/settings.json", ".qwen/oauth_creds.json"},
	ModelHosts:  []string{"https://dashscope.aliyuncs.com", "https://dashscope-intl.aliyuncs.com", "https://chat.qwen.ai", "https://portal.qwen.ai"},
}

// Runner runs one Qwen Code process per step.
type Runner struct{ cliutil.Agent }

// New builds a qwen runner. Command defaults to "qwen"; Env lists the
// variables passed through (default: OpenAI-compatible and other provider
// keys); URL, when set, becomes OPENAI_BASE_URL (an OpenAI-compatible
// server's /v1); Model is the default --model; Args are added after
// cadre's own flags. Qwen Code edits files, takes a model per step and
// streams its events; its cost is estimated from Prices.
func New(s runner.Settings) (runner.Runner, error) { return cliutil.New[Runner](Type)(s) }

// Run runs Qwen Code on inv.Prompt in inv.Dir.
func (r *Runner) Run(ctx context.Context, inv runner.Invocation) (runner.Result, error) {
	args, stdin := r.argv(inv)
	p := &parser{progress: inv.Progress}
	var set map[string]string
	if r.URL != "" {
		set = map[string]string{"OPENAI_BASE_URL": r.URL}
	}
	return r.Step(ctx, inv, cliutil.Call{Args: args, Stdin: stdin, Set: set, OnLine: cliutil.Events(p.event),
		Result: func([]byte, int) (runner.Result, *runner.Error) {
			out := runner.Result{Output: p.reply(), SessionID: p.sessionID, Model: r.ModelFor(inv)}
			if out.Model == "" {
				out.Model = p.model
			}
			out.Usage = cliutil.Estimate(r.Prices, out.Model, p.usage)
			return out, p.failure
		}})
}

// argv builds the CLI's arguments and its stdin. The prompt goes on stdin,
// which headless Qwen Code reads as the prompt: as an argument after "--"
// it is not taken as the prompt, and the --prompt flag is deprecated.
func (r *Runner) argv(inv runner.Invocation) ([]string, io.Reader) {
	args := []string{"--output-format", "stream-json"}
	if !cliutil.HasFlag(r.Args, "--approval-mode", "--yolo", "-y") {
		args = append(args, "--approval-mode", "yolo")
	}
	if r.URL != "" && !cliutil.HasFlag(r.Args, "--auth-type") {
		args = append(args, "--auth-type", "openai")
	}
	args = append(args, cliutil.Flag("--model", r.ModelFor(inv))...)
	// An untrusted tree's context files, hooks, extensions, skills and MCP
	// servers must not run: safe mode loads none of them.
	if inv.Untrusted {
		args = append(args, "--safe-mode")
	}
	// The output file lives outside the working tree: let the agent write it.
	args = append(args, cliutil.Flag("--include-directories", cliutil.OutsideDirs(inv)...)...)
	args = append(args, cliutil.Flag("--resume", inv.Session)...)
	// The role's instructions go once, into the system prompt.
	if inv.Instructions != "" {
		args = append(args, "--append-system-prompt", inv.Instructions)
	}
	return append(args, r.Args...), strings.NewReader(inv.UserText())
}

// parser reads the stream-json events as they arrive.
type parser struct {
	progress  func(string)
	sessionID string
	model     string
	lastText  string // text of the last assistant message that had any
	result    string
	done      bool // a result event arrived
	usage     event.Usage
	failure   *runner.Error
}

type streamEvent struct {
	Type      string   `json:"type"`
	Subtype   string   `json:"subtype"`
	SessionID string   `json:"session_id"`
	Message   *message `json:"message"`
	IsError   bool     `json:"is_error"`
	Result    string   `json:"result"`
	Error     *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
	Usage *usage `json:"usage"`
}

type message struct {
	Model   string          `json:"model"`
	Content []cliutil.Block `json:"content"`
}

type usage struct {
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
	CacheRead    int64 `json:"cache_read_input_tokens"`
	CacheWrite   int64 `json:"cache_creation_input_tokens"`
}

// event handles one event of the stream.
func (p *parser) event(ev streamEvent) {
	if ev.SessionID != "" {
		p.sessionID = ev.SessionID
	}
	switch ev.Type {
	case "assistant":
		if ev.Message != nil {
			p.assistant(ev.Message)
		}
	case "result":
		p.done, p.result = true, ev.Result
		if u := ev.Usage; u != nil {
			p.usage = event.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens,
				CacheReadTokens: u.CacheRead, CacheWriteTokens: u.CacheWrite}
		}
		if ev.IsError {
			msg := ev.Result
			if ev.Error != nil && ev.Error.Message != "" {
				msg = ev.Error.Message
			}
			if msg == "" {
				msg = ev.Subtype
			}
			p.failure = &runner.Error{Kind: classify(ev.Subtype, msg), Msg: cliutil.Short(msg, cliutil.MsgMax),
				RetryAfter: cliutil.RetryAfter(msg)}
		}
	}
}

func (p *parser) assistant(m *message) {
	if m.Model != "" {
		p.model = m.Model
	}
	if text := cliutil.Said(p.progress, m.Content, "file_path", "command", "pattern", "path", "url"); text != "" {
		p.lastText = text
	}
}

// reply is the result's text, else the last text the model wrote.
func (p *parser) reply() string {
	if p.done && p.result != "" {
		return p.result
	}
	return p.lastText
}

// classify maps a failed result to an error kind by its subtype and the
// words of its message.
func classify(subtype, msg string) runner.Kind {
	m := strings.ToLower(msg)
	switch {
	case strings.Contains(subtype, "max_turns") || strings.Contains(subtype, "max_session_turns") ||
		cliutil.ContainsAny(m, "maximum session turns", "context length", "context window", "maximum context", "prompt is too long"):
		return runner.KindTurnLimit
	case cliutil.ContainsAny(m, "401", "403", "invalid api key", "incorrect api key", "unauthorized", "authentication"):
		return runner.KindAuth
	case cliutil.ContainsAny(m, "insufficient_quota", "exceeded your current quota", "quota exceeded", "billing", "arrearage"):
		return runner.KindQuota
	case cliutil.ContainsAny(m, "429", "rate limit", "rate_limit", "too many requests", "overloaded", "503"):
		return runner.KindRateLimit
	}
	return runner.KindBackend
}
