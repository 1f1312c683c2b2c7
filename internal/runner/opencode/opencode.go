// Package opencode runs OpenCode headless: `opencode run --format json`, in
// the item's working tree, with file edits and shell commands allowed
// (OPENCODE_PERMISSION) so the agent can work there unattended.
//
// The prompt goes on stdin: `opencode run` joins its message arguments and
// quotes those holding spaces, which would change the prompt. Progress comes
// from the tool_use and text events; the reply is the text of the last step;
// tokens and cost are the sums over the step_finish events (the cost is
// OpenCode's own); the session id is the session to continue. An error event
// is returned as a *runner.Error of the matching kind.
package opencode

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/runner"
	"github.com/cadre-dev/cadre/internal/runner/cliutil"
)

// permission lets the agent edit files and run commands without asking: in
// `opencode run` nobody is there to answer, and a question is denied.
const permission = `{"edit":"allow","bash":"allow"}`

// Type describes the opencode runner type: the CLI and how to install it,
// the variables passed through when the settings list none (the provider
// keys OpenCode reads most often, and its config file), and, under a
// sandbox, the step's fresh home gets OpenCode's configuration and login
// (~/.config/opencode, ~/.local/share/opencode/auth.json). Its providers
// are many, so it names no model host: model-only reaches only
// runners.NAME.url and sandbox.allow_hosts.
var Type = runner.Descriptor{
	Type: "opencode", Kind: runner.TypeCLI,
	Caps:    runner.Caps{EditsFiles: true, ReportsCost: true, ModelChoice: true, Streams: true},
	Program: "opencode", Install: "npm install -g opencode-ai",
	Env: []string{
		"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY",
		"GOOGLE_GENERATIVE_AI_API_KEY", "OPENROUTER_API_KEY", "OPENCODE_CONFIG",
	},
	URLExample:  "https://host:port/v1",
	SandboxHome: []string{".config/opencode", ".local/share/opencode/auth.json"},
}

// Runner runs one OpenCode process per step.
type Runner struct{ cliutil.Agent }

// New builds an opencode runner. Command defaults to "opencode"; a relative
// path is resolved against BaseDir. Env lists the variables passed through
// (default: common provider keys); Model is the default --model, written
// provider/model; URL, when set, becomes the base URL of that model's
// provider (so it needs a Model with a provider); Args are added after
// cadre's own flags. OpenCode edits files, reports its cost, takes a
// model per step and streams its events.
func New(s runner.Settings) (runner.Runner, error) {
	return cliutil.Factory(Type, func(a cliutil.Agent) (runner.Runner, error) {
		if a.URL != "" && providerOf(a.Model) == "" {
			return nil, fmt.Errorf("runners.%s.url needs runners.%s.model written provider/model (e.g. anthropic/claude-sonnet-4-5): the URL is that provider's", a.Instance, a.Instance)
		}
		return &Runner{Agent: a}, nil
	})(s)
}

// Run runs OpenCode on inv.Prompt in inv.Dir.
func (r *Runner) Run(ctx context.Context, inv runner.Invocation) (runner.Result, error) {
	p := &parser{progress: inv.Progress}
	return r.Step(ctx, inv, cliutil.Call{Args: r.argv(inv), Stdin: strings.NewReader(inv.Text()), Set: r.vars(inv), OnLine: cliutil.Events(p.event),
		Result: func([]byte, int) (runner.Result, *runner.Error) {
			return runner.Result{Output: p.reply(), Usage: p.usage, SessionID: p.sessionID, Model: r.ModelFor(inv)}, p.failure
		}})
}

// argv builds the CLI's arguments; the prompt goes on stdin.
func (r *Runner) argv(inv runner.Invocation) []string {
	args := []string{"run", "--format", "json"}
	args = append(args, cliutil.Flag("--model", r.ModelFor(inv))...)
	args = append(args, cliutil.Flag("--session", inv.Session)...)
	return append(args, r.Args...)
}

// vars are the variables set for the CLI: the working tree, the
// permissions, and the provider's base URL when set.
func (r *Runner) vars(inv runner.Invocation) map[string]string {
	// OpenCode takes its project directory from PWD when it is set.
	set := map[string]string{"PWD": inv.Dir, "OPENCODE_PERMISSION": permission}
	if r.URL != "" {
		p := providerOf(r.ModelFor(inv))
		if p == "" {
			p = providerOf(r.Model)
		}
		cfg, _ := json.Marshal(map[string]any{"provider": map[string]any{p: map[string]any{"options": map[string]string{"baseURL": r.URL}}}})
		set["OPENCODE_CONFIG_CONTENT"] = string(cfg)
	}
	return set
}

// providerOf returns the provider of a provider/model name, or "".
func providerOf(model string) string {
	p, _, ok := strings.Cut(model, "/")
	if !ok {
		return ""
	}
	return p
}

// parser reads the JSON events as they arrive.
type parser struct {
	progress  func(string)
	sessionID string
	usage     event.Usage
	stepText  []string // text of the step in progress
	lastText  []string // text of the last finished step that had any
	failure   *runner.Error
}

type runEvent struct {
	Type      string          `json:"type"`
	SessionID string          `json:"sessionID"`
	Part      *part           `json:"part"`
	Error     json.RawMessage `json:"error"`
}

type part struct {
	Type   string  `json:"type"`
	Text   string  `json:"text"`
	Tool   string  `json:"tool"`
	Reason string  `json:"reason"`
	Cost   float64 `json:"cost"`
	State  *struct {
		Title string         `json:"title"`
		Input map[string]any `json:"input"`
	} `json:"state"`
	Tokens *struct {
		Input     int64 `json:"input"`
		Output    int64 `json:"output"`
		Reasoning int64 `json:"reasoning"`
		Cache     struct {
			Read  int64 `json:"read"`
			Write int64 `json:"write"`
		} `json:"cache"`
	} `json:"tokens"`
}

// runError is the error of an error event: a named error whose data says
// more for API errors.
type runError struct {
	Name string `json:"name"`
	Data struct {
		Message         string            `json:"message"`
		StatusCode      int               `json:"statusCode"`
		ResponseHeaders map[string]string `json:"responseHeaders"`
		ResponseBody    string            `json:"responseBody"`
	} `json:"data"`
}

// event handles one event of the stream.
func (p *parser) event(ev runEvent) {
	if ev.SessionID != "" {
		p.sessionID = ev.SessionID
	}
	switch ev.Type {
	case "step_start":
		p.stepText = nil
	case "text":
		if ev.Part != nil && strings.TrimSpace(ev.Part.Text) != "" {
			p.stepText = append(p.stepText, ev.Part.Text)
			p.note("says: " + cliutil.FirstLine(ev.Part.Text))
		}
	case "tool_use":
		if ev.Part != nil {
			p.note(toolNote(ev.Part))
		}
	case "step_finish":
		if ev.Part != nil {
			p.finish(ev.Part)
		}
	case "error":
		p.failure = classifyEvent(ev.Error)
	}
}

func (p *parser) finish(pt *part) {
	if t := pt.Tokens; t != nil {
		p.usage.InputTokens += t.Input
		// OpenCode bills reasoning at the output price.
		p.usage.OutputTokens += t.Output + t.Reasoning
		p.usage.CacheReadTokens += t.Cache.Read
		p.usage.CacheWriteTokens += t.Cache.Write
	}
	p.usage.CostUSD += pt.Cost
	if len(p.stepText) > 0 {
		p.lastText = p.stepText
	}
	// A step that finished after an error means the error did not end the run.
	p.failure = nil
}

// reply is the text of the last step that produced any.
func (p *parser) reply() string {
	text := p.lastText
	if len(p.stepText) > 0 {
		text = p.stepText
	}
	return strings.Join(text, "\n\n")
}

// toolNote names a tool call by its tool and its title or the argument that
// says most.
func toolNote(pt *part) string {
	if pt.State != nil {
		if n := cliutil.ToolNote(pt.Tool, pt.State.Input, "filePath", "command", "pattern", "path", "url"); n != pt.Tool {
			return n
		}
		if pt.State.Title != "" {
			return pt.Tool + " " + pt.State.Title
		}
	}
	return pt.Tool
}

func (p *parser) note(s string) { cliutil.Note(p.progress, s) }

// classifyEvent turns an error event's error into a *runner.Error.
func classifyEvent(raw json.RawMessage) *runner.Error {
	var e runError
	if json.Unmarshal(raw, &e) != nil {
		return &runner.Error{Kind: runner.KindBackend, Msg: cliutil.Short(string(raw), cliutil.MsgMax)}
	}
	msg := e.Data.Message
	if msg == "" {
		msg = e.Name
	}
	return &runner.Error{
		Kind:       classify(e.Name, e.Data.StatusCode, msg+"\n"+e.Data.ResponseBody),
		Msg:        cliutil.Short(msg, cliutil.MsgMax),
		RetryAfter: retryAfter(e.Data.ResponseHeaders, msg),
	}
}

// classify maps an OpenCode error to an error kind: its name and HTTP status
// first, then the words of the message and response body. Quota comes
// before rate limit because an exhausted quota may arrive as a 429.
func classify(name string, status int, text string) runner.Kind {
	m := strings.ToLower(text)
	switch {
	case name == "ProviderAuthError" || status == 401 || status == 403 ||
		cliutil.ContainsAny(m, "authentication_error", "invalid x-api-key", "invalid api key", "incorrect api key", "invalid_api_key", "unauthorized"):
		return runner.KindAuth
	case status == 402 || cliutil.ContainsAny(m, "credit balance", "insufficient_quota", "exceeded your current quota", "usage limit", "spend limit", "billing"):
		return runner.KindQuota
	case status == 429 || status == 529 || status == 503 ||
		cliutil.ContainsAny(m, "rate limit", "rate_limit", "too many requests", "overloaded"):
		return runner.KindRateLimit
	case name == "MessageOutputLengthError" ||
		cliutil.ContainsAny(m, "prompt is too long", "context length", "context window", "context_length_exceeded", "maximum context"):
		return runner.KindTurnLimit
	}
	return runner.KindBackend
}

// retryAfter reads the retry-after(-ms) response header, else a wait named
// in the message; 0 when there is none.
func retryAfter(headers map[string]string, msg string) time.Duration {
	for k, v := range headers {
		n, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || n < 0 {
			continue
		}
		switch strings.ToLower(k) {
		case "retry-after-ms":
			return time.Duration(n * float64(time.Millisecond))
		case "retry-after":
			return time.Duration(n * float64(time.Second))
		}
	}
	return cliutil.RetryAfter(msg)
}
