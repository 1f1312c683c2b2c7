// Package codex runs the OpenAI Codex CLI headless: `codex exec --json`, in
// the item's working tree, sandboxed to write only there (`--sandbox
// workspace-write`, unless the settings' Args choose another sandbox), and
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
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	osexec "os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/proc"
	"github.com/cadre-dev/cadre/internal/runner"
	"github.com/cadre-dev/cadre/internal/runner/price"
)

const (
	defaultCommand = "codex"
	installHint    = "npm install -g @openai/codex"
	// maxArgPrompt keeps the prompt well under Linux's 128 KiB limit on one
	// argument; a longer prompt goes on stdin.
	maxArgPrompt = 100 << 10
	// provider names the model provider cadre defines when a URL is set.
	provider = "cadre"
)

// defaultEnv is passed through when the settings list no variables: the
// credentials and endpoint Codex reads, and its home directory.
var defaultEnv = []string{"OPENAI_API_KEY", "OPENAI_BASE_URL", "CODEX_API_KEY", "CODEX_HOME"}

// Runner runs one Codex process per step.
type Runner struct {
	name    string
	command string
	args    []string
	pass    []string
	url     string
	model   string
	prices  *price.Table
	lookup  func(string) (string, bool)
}

// New builds a codex runner that estimates cost from the built-in prices.
// Command defaults to "codex"; a relative path is resolved against BaseDir.
// Env lists the variables passed through (default: OpenAI credentials,
// CODEX_HOME); URL, when set, becomes the base URL of a model provider
// defined on the command line (Responses API, key in OPENAI_API_KEY); Model
// is the default --model; Args are added after cadre's own flags.
func New(s runner.Settings) (runner.Runner, error) { return WithPrices(price.New(nil))(s) }

// WithPrices returns a factory of codex runners that estimate cost from t,
// the built-in prices overlaid with the project's.
func WithPrices(t *price.Table) runner.Factory {
	return func(s runner.Settings) (runner.Runner, error) {
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
		return &Runner{name: s.Name, command: cmd, args: s.Args, pass: pass, url: s.URL, model: s.Model, prices: t, lookup: os.LookupEnv}, nil
	}
}

// Name returns the configured instance name.
func (r *Runner) Name() string { return r.name }

// Capabilities: Codex edits files, takes a model per step and streams its
// events; its cost is estimated, not reported.
func (r *Runner) Capabilities() runner.Caps {
	return runner.Caps{EditsFiles: true, ModelChoice: true, Streams: true}
}

// Run runs Codex on inv.Prompt in inv.Dir.
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
		Env:     proc.MinimalEnv(r.lookup, r.pass, cadreVars(inv)),
		Stdin:   stdin,
		Log:     log,
		Timeout: inv.Timeout,
		OnLine:  p.line,
	})
	out := runner.Result{
		ExitCode:   res.ExitCode,
		Output:     p.lastMessage,
		StderrTail: res.StderrTail,
		Usage:      p.usage,
		SessionID:  p.threadID,
		Model:      r.modelFor(inv),
	}
	if cost, ok := r.prices.Estimate(out.Model, out.Usage); ok {
		out.Usage.CostUSD, out.Usage.CostEstimated = cost, true
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

// argv builds the CLI's arguments and, for a long prompt, its stdin. The
// options come before `resume`, which takes only the thread id and prompt.
func (r *Runner) argv(inv runner.Invocation) ([]string, io.Reader) {
	args := []string{"exec", "--json", "--skip-git-repo-check"}
	// Codex refuses an option given twice, so a sandbox chosen in the
	// settings' args replaces cadre's.
	if !hasFlag(r.args, "--sandbox", "-s", "--full-auto", "--dangerously-bypass-approvals-and-sandbox") {
		args = append(args, "--sandbox", "workspace-write")
	}
	if m := r.modelFor(inv); m != "" {
		args = append(args, "--model", m)
	}
	// The output file lives outside the working tree: make it writable.
	for _, d := range outsideDirs(inv) {
		args = append(args, "--add-dir", d)
	}
	if r.url != "" {
		p := "model_providers." + provider
		args = append(args,
			"-c", "model_provider="+strconv.Quote(provider),
			"-c", p+".name="+strconv.Quote(provider),
			"-c", p+".base_url="+strconv.Quote(r.url),
			"-c", p+".wire_api="+strconv.Quote("responses"),
			"-c", p+".env_key="+strconv.Quote("OPENAI_API_KEY"))
	}
	args = append(args, r.args...)
	if inv.Session != "" {
		args = append(args, "resume", inv.Session)
	}
	if len(inv.Prompt) > maxArgPrompt {
		return append(args, "-"), strings.NewReader(inv.Prompt)
	}
	// "--" makes a prompt starting with "-" the prompt, not an option.
	return append(args, "--", inv.Prompt), nil
}

// hasFlag reports whether args hold one of the flags, alone or as --flag=value.
func hasFlag(args []string, flags ...string) bool {
	for _, a := range args {
		name, _, _ := strings.Cut(a, "=")
		if slices.Contains(flags, name) {
			return true
		}
	}
	return false
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

// line handles one line of output; only stdout carries events.
func (p *parser) line(stream, line string) {
	if stream != "stdout" || !strings.HasPrefix(strings.TrimSpace(line), "{") {
		return
	}
	var ev threadEvent
	if json.Unmarshal([]byte(line), &ev) != nil {
		return
	}
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
		p.note("says: " + firstLine(it.Text))
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

func (p *parser) note(s string) {
	if p.progress != nil {
		p.progress(short(s, noteMax))
	}
}

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
	wait := retryAfter(msg)
	if wait == 0 {
		wait = retryAfter(p.lastErr)
	}
	return &runner.Error{Kind: classify(msg), Msg: short(msg, msgMax), RetryAfter: wait}
}

// classify maps a Codex error message to an error kind. Quota comes before
// rate limit because OpenAI reports an exhausted quota as a 429.
func classify(msg string) runner.Kind {
	m := strings.ToLower(msg)
	switch {
	case containsAny(m, "401 unauthorized", "403 forbidden", "invalid_api_key", "incorrect api key",
		"missing environment variable", "not logged in", "please log in", "authentication"):
		return runner.KindAuth
	case containsAny(m, "quota", "usage limit", "billing", "purchase more credits", "credit balance"):
		return runner.KindQuota
	case containsAny(m, "429", "too many requests", "rate limit", "overloaded", "503 service unavailable"):
		return runner.KindRateLimit
	case containsAny(m, "context window", "context_length_exceeded", "maximum context length"):
		return runner.KindTurnLimit
	}
	return runner.KindBackend
}

// retryPattern finds the wait a provider asks for, in a unit.
var retryPattern = regexp.MustCompile(`(?i)(?:try again in|retry in|retry after)\s+([0-9]+(?:\.[0-9]+)?)\s*(ms|milliseconds?|s|secs?|seconds?|m|mins?|minutes?)\b`)

// retryAfter reads "try again in 4.45s" and the like; 0 when there is none.
func retryAfter(msg string) time.Duration {
	m := retryPattern.FindStringSubmatch(msg)
	if m == nil {
		return 0
	}
	n, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return 0
	}
	unit := time.Second
	switch u := strings.ToLower(m[2]); {
	case strings.HasPrefix(u, "ms") || strings.HasPrefix(u, "milli"):
		unit = time.Millisecond
	case strings.HasPrefix(u, "m"):
		unit = time.Minute
	}
	return time.Duration(n * float64(unit))
}

func containsAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
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
// not inside the working tree.
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

// commandLine renders the command for the log, with the prompt elided.
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
		return fmt.Errorf("runners.%s.url %q is not an http(s) URL: set it like https://host:port/v1", name, raw)
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
