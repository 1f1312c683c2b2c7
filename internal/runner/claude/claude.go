// Package claude runs Claude Code headless: `claude -p --output-format
// stream-json --verbose`, in the item's working tree, with edits accepted and
// the Bash tool allowed so the agent can run the project's commands.
//
// The prompt is the last argument (after "--"), or stdin when it is too long
// for one argument. Progress comes from the stream's assistant events; the
// reply, the token usage, the cost (total_cost_usd, reported by the CLI) and
// the session id come from the final result event alone, never from summing
// per-message usage. A result that says the run failed is returned as a
// *runner.Error of the matching kind.
package claude

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/proc"
	"github.com/cadre-dev/cadre/internal/runner"
)

const (
	defaultCommand = "claude"
	installHint    = "npm install -g @anthropic-ai/claude-code"
	// maxArgPrompt keeps the prompt well under Linux's 128 KiB limit on one
	// argument; a longer prompt goes on stdin.
	maxArgPrompt = 100 << 10
)

// defaultEnv is passed through when the settings list no variables: the
// credentials and endpoint Claude Code reads, and its config directory.
var defaultEnv = []string{
	"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL",
	"CLAUDE_CODE_OAUTH_TOKEN", "CLAUDE_CONFIG_DIR",
}

// Runner runs one Claude Code process per step.
type Runner struct {
	name    string
	command string
	args    []string
	pass    []string
	url     string
	model   string
	lookup  func(string) (string, bool)
}

// New builds a claude runner. Command defaults to "claude"; a relative path
// is resolved against BaseDir. Env lists the variables passed through
// (default: Anthropic credentials and base URL); URL, when set, becomes
// ANTHROPIC_BASE_URL; Model is the default --model; Args are appended to the
// CLI's own flags.
func New(s runner.Settings) (runner.Runner, error) {
	if err := checkURL(s.Name, s.URL); err != nil {
		return nil, err
	}
	cmd := strings.TrimSpace(s.Command)
	if cmd == "" {
		cmd = defaultCommand
	}
	if strings.Contains(cmd, "/") && !filepath.IsAbs(cmd) && s.BaseDir != "" {
		cmd = filepath.Join(s.BaseDir, cmd)
	}
	pass := s.Env
	if len(pass) == 0 {
		pass = defaultEnv
	}
	return &Runner{name: s.Name, command: cmd, args: s.Args, pass: pass, url: s.URL, model: s.Model, lookup: os.LookupEnv}, nil
}

// Name returns the configured instance name.
func (r *Runner) Name() string { return r.name }

// Capabilities: Claude Code edits files, reports its cost, takes a model per
// step and streams its events.
func (r *Runner) Capabilities() runner.Caps {
	return runner.Caps{EditsFiles: true, ReportsCost: true, ModelChoice: true, Streams: true}
}

// Run runs Claude Code on inv.Prompt in inv.Dir.
func (r *Runner) Run(ctx context.Context, inv runner.Invocation) (runner.Result, error) {
	log, err := openLog(inv.LogPath)
	if err != nil {
		return runner.Result{}, fmt.Errorf("runner %s: %w", r.name, err)
	}
	defer log.Close()
	args, stdin := r.argv(inv)
	fmt.Fprintf(log, "$ %s\n", commandLine(r.command, args, inv.Prompt, stdin != nil))
	p := &parser{progress: inv.Progress}
	res, err := proc.Run(ctx, proc.Spec{
		Path:    r.command,
		Args:    args,
		Dir:     inv.Dir,
		Env:     r.env(inv),
		Stdin:   stdin,
		Log:     log,
		Timeout: inv.Timeout,
		OnLine:  p.line,
	})
	out := p.result()
	out.ExitCode, out.StderrTail = res.ExitCode, res.StderrTail
	if out.Model == "" {
		out.Model = r.modelFor(inv)
	}
	if errors.Is(err, osexec.ErrNotFound) {
		return out, fmt.Errorf("runner %s: %w: install it (%s) or fix runners.%s.command", r.name, err, installHint, r.name)
	}
	if err != nil {
		return out, fmt.Errorf("runner %s: %w", r.name, err)
	}
	if e := p.failure(); e != nil {
		e.Runner = r.name
		return out, e
	}
	return out, nil
}

func (r *Runner) modelFor(inv runner.Invocation) string {
	if inv.Model != "" {
		return inv.Model
	}
	return r.model
}

// argv builds the CLI's arguments and, for a long prompt, its stdin.
func (r *Runner) argv(inv runner.Invocation) ([]string, io.Reader) {
	args := []string{"-p", "--output-format", "stream-json", "--verbose",
		"--permission-mode", "acceptEdits", "--allowedTools", "Bash"}
	if m := r.modelFor(inv); m != "" {
		args = append(args, "--model", m)
	}
	if inv.Session != "" {
		args = append(args, "--resume", inv.Session)
	}
	// The context and output files live outside the working tree.
	for _, d := range outsideDirs(inv) {
		args = append(args, "--add-dir", d)
	}
	args = append(args, r.args...)
	if len(inv.Prompt) > maxArgPrompt {
		return args, strings.NewReader(inv.Prompt)
	}
	// "--" ends the options, so neither a variadic flag above nor a prompt
	// starting with "-" can swallow or be mistaken for an option.
	return append(args, "--", inv.Prompt), nil
}

// env is the agent's environment: minimal, the passed-through keys, the
// CADRE_* variables of the exec runner, and the base URL when set.
func (r *Runner) env(inv runner.Invocation) []string {
	set := cadreVars(inv)
	if r.url != "" {
		set["ANTHROPIC_BASE_URL"] = r.url
		// No telemetry or update checks against a custom endpoint.
		set["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] = "1"
	}
	return proc.MinimalEnv(r.lookup, r.pass, set)
}

// parser reads the stream-json events as they arrive.
type parser struct {
	progress  func(string)
	sessionID string
	model     string
	lastText  string // the last assistant text: the reply if no result came
	lastError string // the error code of the last assistant message
	final     *streamEvent
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
	Model   string          `json:"model"`
	Content json.RawMessage `json:"content"` // an array of blocks, or a string
}

type block struct {
	Type  string         `json:"type"`
	Text  string         `json:"text"`
	Name  string         `json:"name"`
	Input map[string]any `json:"input"`
}

type usage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
}

type modelUsage struct {
	CostUSD float64 `json:"costUSD"`
}

// line handles one line of output; only stdout carries events.
func (p *parser) line(stream, line string) {
	if stream != "stdout" || !strings.HasPrefix(strings.TrimSpace(line), "{") {
		return
	}
	var ev streamEvent
	if json.Unmarshal([]byte(line), &ev) != nil {
		return
	}
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
	var blocks []block
	if json.Unmarshal(ev.Message.Content, &blocks) != nil {
		return
	}
	for _, b := range blocks {
		switch b.Type {
		case "text":
			if strings.TrimSpace(b.Text) != "" {
				p.lastText = b.Text
				p.note("says: " + firstLine(b.Text))
			}
		case "tool_use":
			p.note(toolNote(b))
		}
	}
}

// toolNote names a tool call by its tool and the argument that says most.
func toolNote(b block) string {
	for _, key := range []string{"file_path", "path", "command", "pattern", "url", "description"} {
		if v, ok := b.Input[key].(string); ok && v != "" {
			return b.Name + " " + v
		}
	}
	return b.Name
}

func (p *parser) note(s string) {
	if p.progress != nil {
		p.progress(short(s, noteMax))
	}
}

// result is what the stream said: reply, usage, cost, session, model.
func (p *parser) result() runner.Result {
	out := runner.Result{SessionID: p.sessionID, Model: p.model, Output: p.lastText}
	f := p.final
	if f == nil {
		return out
	}
	if f.Result != "" {
		out.Output = f.Result
	}
	if f.Usage != nil {
		out.Usage = event.Usage{
			InputTokens:      f.Usage.InputTokens,
			OutputTokens:     f.Usage.OutputTokens,
			CacheReadTokens:  f.Usage.CacheReadInputTokens,
			CacheWriteTokens: f.Usage.CacheCreationInputTokens,
		}
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
		return &runner.Error{Kind: runner.KindTurnLimit, Msg: short(msg, msgMax)}
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
	return &runner.Error{Kind: classify(rawInt(f.APIErrorStatus), code, msg), Msg: short(msg, msgMax)}
}

// classify maps what Claude Code reports to an error kind: the API's HTTP
// status, the assistant error code, then the words of the message. Quota
// comes before rate limit because a subscription's usage limit also arrives
// as a 429.
func classify(status int, code, msg string) runner.Kind {
	m := strings.ToLower(msg)
	switch {
	case status == 401 || status == 403 || code == "authentication_failed" ||
		containsAny(m, "invalid api key", "/login", "authentication_error", "failed to authenticate", "oauth token", "invalid x-api-key"):
		return runner.KindAuth
	case status == 402 || code == "billing_error" ||
		containsAny(m, "credit balance", "usage limit", "session limit", "weekly limit", "hit your limit", "spend limit", "spending limit", "billing"):
		return runner.KindQuota
	case status == 429 || status == 529 || code == "rate_limit" ||
		containsAny(m, "rate limit", "rate_limit", "overloaded", "api error: 429", "api error: 529"):
		return runner.KindRateLimit
	case containsAny(m, "prompt is too long", "context window", "context length"):
		return runner.KindTurnLimit
	}
	return runner.KindBackend
}

func containsAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
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

// firstLine is the first non-blank line of s, to name a message briefly.
func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) != "" {
			return l
		}
	}
	return ""
}

// Lengths of a progress note and of an error message, in characters.
const (
	noteMax = 120
	msgMax  = 400
)

// short makes one line of at most n characters.
func short(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// outsideDirs lists the directories of the context and output files that are
// not inside the working tree, so the agent may read and write them.
func outsideDirs(inv runner.Invocation) []string {
	var dirs []string
	for _, f := range []string{inv.ContextPath, inv.OutputPath} {
		if f == "" {
			continue
		}
		d := filepath.Dir(f)
		if inside(d, inv.Dir) || slices.Contains(dirs, d) {
			continue
		}
		dirs = append(dirs, d)
	}
	return dirs
}

func inside(path, dir string) bool {
	if dir == "" {
		return false
	}
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// cadreVars are the variables of SPEC §9's exec runner, set for CLI agents
// too so their shell tools can find the step's files.
func cadreVars(inv runner.Invocation) map[string]string {
	return map[string]string{
		"CADRE_CONTEXT":  inv.ContextPath,
		"CADRE_OUTPUT":   inv.OutputPath,
		"CADRE_ROLE":     inv.Role,
		"CADRE_ITEM":     inv.Item,
		"CADRE_STEP":     inv.Step,
		"CADRE_ATTEMPT":  strconv.Itoa(inv.Attempt),
		"CADRE_WORKTREE": inv.Dir,
	}
}

// commandLine renders the command for the log, with the prompt elided: it
// can be long, and the log is for reading what the agent did.
func commandLine(cmd string, args []string, prompt string, onStdin bool) string {
	parts := []string{cmd}
	for i, a := range args {
		if !onStdin && i == len(args)-1 && a == prompt {
			parts = append(parts, fmt.Sprintf("<prompt, %d bytes>", len(prompt)))
			continue
		}
		if a == "" || strings.ContainsAny(a, " \t\n\"'\\$") {
			a = strconv.Quote(a)
		}
		parts = append(parts, a)
	}
	line := strings.Join(parts, " ")
	if onStdin {
		line += fmt.Sprintf(" < <prompt, %d bytes>", len(prompt))
	}
	return line
}

// checkURL rejects a base URL the CLI could not use.
func checkURL(name, raw string) error {
	if raw == "" {
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("runners.%s.url %q is not an http(s) URL: set it like https://host:port", name, raw)
	}
	return nil
}

// openLog opens the step's transcript for appending (a re-ask adds to it).
func openLog(path string) (*os.File, error) {
	if path == "" {
		return os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("create log dir: %w", err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open step log: %w", err)
	}
	return f, nil
}
