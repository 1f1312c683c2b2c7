// Package cliutil holds what the runners of agent CLIs (claude, codex,
// gemini, opencode, qwen, copilot, crush, aider; exec in part) share:
// reading their settings into an Agent (NewAgent, Factory), running one
// step of the CLI (Step: the step log, the CADRE_* variables, the
// sandbox, the command line written to the log, how a finished process
// becomes Run's error), building its arguments (Flag, HasFlag, the
// directories outside the working tree an agent may use), reading its
// event stream (Events), and the short-text helpers of progress notes and
// error messages. The step log, the cost estimate and the text helpers
// serve the HTTP API runners too.
package cliutil

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/url"
	"os"
	osexec "os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/proc"
	"github.com/cadre-dev/cadre/internal/redact"
	"github.com/cadre-dev/cadre/internal/runner"
	"github.com/cadre-dev/cadre/internal/runner/price"
	"github.com/cadre-dev/cadre/internal/safefile"
	"github.com/cadre-dev/cadre/internal/sandbox"
)

// MaxArgPrompt keeps a prompt given as one argument well under Linux's
// 128 KiB limit on one argument; a longer prompt goes on stdin or in a file.
const MaxArgPrompt = 100 << 10

// Lengths of a progress note and of an error message, in characters.
const (
	NoteMax = 120
	MsgMax  = 400
)

// Agent is what a runner of an agent CLI keeps of its settings, and how it
// starts the CLI. A runner embeds it and adds its own flags, environment
// and reading of the output.
type Agent struct {
	Instance string   // the runner's instance name (runners.NAME)
	Command  string   // the CLI, resolved against the repository root
	Install  string   // how to install the CLI, for the error when it is missing
	Args     []string // the settings' args, added after the runner's own flags
	Pass     []string // the variables passed through to the agent
	URL      string   // the base URL the CLI is pointed at, if any
	Model    string   // the model of a step that names none
	// Lookup reads the variables passed through; os.LookupEnv.
	Lookup func(string) (string, bool)
	// Home lists the files and directories, relative to the user's home,
	// a sandboxed step copies into its fresh home: the CLI's settings
	// and credentials, nothing else of the home.
	Home []string
	// Hosts are the CLI's own model endpoints (URLs), reachable under
	// network: model-only when URL is not set.
	Hosts []string
	// Caps are what the CLI can do (Capabilities).
	Caps runner.Caps
	// Prices turn the tokens of a CLI that reports no cost into an
	// estimate (see Estimate); nil means the built-in prices.
	Prices *price.Table
}

// NewAgent reads the settings every agent-CLI runner takes alike, with the
// defaults of d, the runner type's descriptor. It checks s.URL (when set)
// with CheckURL and d.URLExample; the command is d.Program when none is
// set, a relative path resolved against s.BaseDir; the variables passed
// through are d.Env when s.Env lists none; the prices are s's. The install
// command, the sandbox's home files and model hosts are d's.
func NewAgent(s runner.Settings, d runner.Descriptor) (Agent, error) {
	if err := CheckURL(s.Name, s.URL, d.URLExample); err != nil {
		return Agent{}, err
	}
	cmd := strings.TrimSpace(s.Command)
	if cmd == "" {
		cmd = d.Program
	}
	pass := s.Env
	if len(pass) == 0 {
		pass = d.Env
	}
	return Agent{Instance: s.Name, Command: Resolve(cmd, s.BaseDir), Install: d.Install, Args: s.Args, Pass: pass,
		URL: s.URL, Model: s.Model, Lookup: os.LookupEnv, Home: d.SandboxHome, Hosts: d.ModelHosts, Prices: s.Prices}, nil
}

// Factory returns a factory of the runners of type d, whose CLI can do
// caps: each reads its settings with NewAgent, and wrap makes the runner
// around the Agent (or refuses settings the CLI cannot use).
func Factory(d runner.Descriptor, caps runner.Caps, wrap func(Agent) (runner.Runner, error)) runner.Factory {
	return func(s runner.Settings) (runner.Runner, error) {
		a, err := NewAgent(s, d)
		if err != nil {
			return nil, err
		}
		a.Caps = caps
		return wrap(a)
	}
}

// New is Factory for a runner type R that is an Agent and nothing more,
// as most are.
func New[R ~struct{ Agent }, P interface {
	*R
	runner.Runner
}](d runner.Descriptor, caps runner.Caps) runner.Factory {
	return Factory(d, caps, func(a Agent) (runner.Runner, error) {
		r := R{a}
		return P(&r), nil
	})
}

// Name returns the configured instance name.
func (a *Agent) Name() string { return a.Instance }

// Capabilities returns what the CLI can do.
func (a *Agent) Capabilities() runner.Caps { return a.Caps }

// Locate finds the CLI as a step would (runner.Locator).
func (a *Agent) Locate() error {
	return Outcome(a.Instance, a.Install, proc.Locate(a.Command, a.Env(nil)), nil)
}

// OpenLog opens the step's transcript (see OpenLog), its error naming the
// runner.
func (a *Agent) OpenLog(inv runner.Invocation) (io.WriteCloser, error) {
	log, err := OpenLog(inv.LogPath, inv.Mask)
	if err != nil {
		return nil, fmt.Errorf("runner %s: %w", a.Instance, err)
	}
	return log, nil
}

// Outcome is the error Run returns once the CLI has ended (see Outcome):
// a missing CLI says how to install it.
func (a *Agent) Outcome(err error, failure *runner.Error) error {
	return Outcome(a.Instance, a.Install, err, failure)
}

// ModelFor is the model a step asks for, else the runner's.
func (a *Agent) ModelFor(inv runner.Invocation) string { return Model(inv, a.Model) }

// Env is the agent's minimal environment: PATH, HOME, LANG, TERM, the
// variables passed through, and set (Vars and the runner's own).
func (a *Agent) Env(set map[string]string) []string { return proc.MinimalEnv(a.Lookup, a.Pass, set) }

// Call is how a runner runs its CLI for one step.
type Call struct {
	Args  []string
	Stdin io.Reader // the prompt, when it goes on stdin
	// Set are the variables the runner sets for its CLI, over the
	// CADRE_* ones of Vars.
	Set map[string]string
	// PromptFlag is how the last argument carries the prompt ("--prompt=",
	// or "" for the bare prompt), so the log shows only its length; a
	// prompt on stdin is shown as a redirection.
	PromptFlag string
	// OnLine reads each line of output as it comes.
	OnLine func(stream, line string)
	// Then, when set, is called once the process has ended and before a
	// sandbox's fresh home is removed, so a runner can read what the CLI
	// left there (its session log): hostPath turns a path as the agent
	// saw it into where that file is on the host; log is the step's.
	Then func(log io.Writer, hostPath func(string) string)
	// Result reads the step's result once the CLI has ended, from what it
	// printed and the code it exited with (which Step sets in the result,
	// with the tail of its stderr), and the failure the agent reported,
	// nil for none.
	Result func(stdout []byte, exitCode int) (runner.Result, *runner.Error)
}

// Step runs the CLI once for inv as c says: in inv.Dir, within
// inv.Timeout, confined by inv.Sandbox, its output appended to the step's
// log after the command line. The error is Run's (see Outcome).
func (a *Agent) Step(ctx context.Context, inv runner.Invocation, c Call) (runner.Result, error) {
	log, err := a.OpenLog(inv)
	if err != nil {
		return runner.Result{}, err
	}
	defer log.Close()
	set := Vars(inv)
	maps.Copy(set, c.Set)
	var then func(func(string) string)
	if c.Then != nil {
		then = func(hostPath func(string) string) { c.Then(log, hostPath) }
	}
	res, err := a.exec(ctx, inv, log, c.PromptFlag, proc.Spec{Args: c.Args, Env: a.Env(set), Stdin: c.Stdin, OnLine: c.OnLine}, then)
	out, failure := c.Result(res.Stdout, res.ExitCode)
	out.ExitCode, out.StderrTail = res.ExitCode, res.StderrTail
	return out, a.Outcome(err, failure)
}

// exec runs the CLI for inv with spec's args, environment, stdin and line
// handler: in inv.Dir, within inv.Timeout, its output appended to log
// after the command line (see Call.PromptFlag), then calls then, when set
// (see Call.Then).
func (a *Agent) exec(ctx context.Context, inv runner.Invocation, log io.Writer, promptFlag string, spec proc.Spec, then func(hostPath func(string) string)) (proc.Result, error) {
	// The message is the whole text, or the user text of a runner that
	// passes the instructions apart, which are shown by length too.
	prompt, args := inv.Text(), spec.Args
	if n := len(args); n > 0 && args[n-1] == promptFlag+inv.UserText() {
		prompt = inv.UserText()
	}
	if inv.Instructions != "" && slices.Contains(args, inv.Instructions) {
		args = slices.Clone(args)
		for i, v := range args {
			if v == inv.Instructions {
				args[i] = fmt.Sprintf("<instructions, %d bytes>", len(v))
			}
		}
		if spec.Stdin != nil {
			prompt = inv.UserText()
		}
	}
	fmt.Fprintf(log, "$ %s\n", CommandLine(a.Command, args, promptFlag, prompt, spec.Stdin != nil))
	spec.Path, spec.Dir, spec.Log, spec.Timeout, spec.OnStart = a.Command, inv.Dir, log, inv.Timeout, inv.OnStart
	hosts := a.Hosts
	if a.URL != "" {
		hosts = []string{a.URL}
	}
	prep, err := confine(ctx, inv, &spec, a.Home, hosts)
	if err != nil {
		return proc.Result{ExitCode: -1}, err
	}
	if prep != nil {
		defer prep.Close()
	}
	res, err := proc.Run(ctx, spec)
	if then != nil {
		then(func(p string) string { return hostPath(prep, p) })
	}
	return res, err
}

// hostPath is where a file the agent saw at p is on the host: in a
// sandbox's fresh home when p lies in the home it was mounted over.
func hostPath(prep *sandbox.Prepared, p string) string {
	if prep == nil || prep.Sandbox.Home == "" {
		return p
	}
	home := prep.Sandbox.HomePath
	if home == "" {
		home = prep.Sandbox.Home
	}
	rel, err := filepath.Rel(home, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return p
	}
	return filepath.Join(prep.Sandbox.Home, rel)
}

// Confine puts spec in the step's sandbox when inv asks for one: the
// working tree and the output file's directory writable, the context
// file's readable, home a fresh directory holding only the home files
// listed, and under network: model-only only hosts (URLs or host:port) and
// sandbox.allow_hosts reachable. release removes what it set up once the
// process is done.
func Confine(ctx context.Context, inv runner.Invocation, spec *proc.Spec, home, hosts []string) (release func(), err error) {
	prep, err := confine(ctx, inv, spec, home, hosts)
	if err != nil {
		return nil, err
	}
	if prep == nil {
		return func() {}, nil
	}
	return prep.Close, nil
}

// confine is Confine returning the prepared sandbox, nil for none.
func confine(ctx context.Context, inv runner.Invocation, spec *proc.Spec, home, hosts []string) (*sandbox.Prepared, error) {
	if inv.Sandbox == nil {
		return nil, nil
	}
	st := sandbox.Step{Dir: inv.Dir, HomeFiles: home, Hosts: hosts, Env: spec.Env}
	if inv.OutputPath != "" {
		st.Writable = append(st.Writable, filepath.Dir(inv.OutputPath))
	}
	if inv.ContextPath != "" {
		st.Readable = append(st.Readable, filepath.Dir(inv.ContextPath))
	}
	p, err := inv.Sandbox.Prepare(ctx, st)
	if err != nil {
		return nil, fmt.Errorf("prepare the sandbox: %w", err)
	}
	spec.Sandbox = p.Sandbox
	spec.Env = proc.SetEnv(spec.Env, p.Env)
	if spec.Log != nil {
		// The transcript says how the agent was confined, so a reader of
		// a refused write or connection knows why.
		fmt.Fprintf(spec.Log, "[cadre: sandboxed by bubblewrap, network %s]\n", inv.Sandbox.Network)
	}
	return p, nil
}

// Resolve joins a command written as a relative path (./bin/agent) to
// baseDir, the repository root, so one command serves every working tree.
// A bare name is left for PATH to find.
func Resolve(cmd, baseDir string) string {
	if strings.Contains(cmd, "/") && !filepath.IsAbs(cmd) && baseDir != "" {
		return filepath.Join(baseDir, cmd)
	}
	return cmd
}

// CheckURL rejects a base URL the CLI could not use; an empty one is fine.
// The error names runners.NAME.url and shows example.
func CheckURL(name, raw, example string) error {
	if raw == "" {
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("runners.%s.url %q is not an http(s) URL: set it like %s", name, raw, example)
	}
	return nil
}

// OpenLog opens the step's transcript for appending (a re-ask adds to it),
// creating its directory; an empty path means a step without a log. A
// link in its place (an agent's, from an earlier ask) is refused, not
// appended through. What is written is masked of mask's secrets (see
// runner.Invocation.Mask); Close writes what the mask held back.
func OpenLog(path string, mask *redact.Redactor) (io.WriteCloser, error) {
	if path == "" {
		return os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("create log dir: %w", err)
	}
	f, err := safefile.OpenAppend(filepath.Dir(path), path, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open step log: %w", err)
	}
	if !mask.Enabled() {
		return f, nil
	}
	return &maskedLog{w: mask.Writer(f), f: f}, nil
}

// maskedLog is a step log whose writes are masked. Its writes are
// serialised: a runner may log from more than one goroutine.
type maskedLog struct {
	mu sync.Mutex
	w  *redact.Writer
	f  *os.File
}

func (l *maskedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Close writes what the mask held back and closes the file.
func (l *maskedLog) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	err := l.w.Flush()
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Vars are the exec runner's CADRE_* variables, which every agent gets, so
// its shell tools can find the step's files, and inv.GitConfig for its git. The map is the caller's to add
// to.
func Vars(inv runner.Invocation) map[string]string {
	vars := map[string]string{
		"CADRE_CONTEXT":  inv.ContextPath,
		"CADRE_OUTPUT":   inv.OutputPath,
		"CADRE_ROLE":     inv.Role,
		"CADRE_ITEM":     inv.Item,
		"CADRE_STEP":     inv.Step,
		"CADRE_ATTEMPT":  strconv.Itoa(inv.Attempt),
		"CADRE_WORKTREE": inv.Dir,
	}
	// git reads GIT_CONFIG_COUNT/KEY_n/VALUE_n as configuration given on
	// its command line: it wins over the repository's own.
	if len(inv.GitConfig) > 0 {
		vars["GIT_CONFIG_COUNT"] = strconv.Itoa(len(inv.GitConfig))
		for i, kv := range inv.GitConfig {
			k, v, _ := strings.Cut(kv, "=")
			vars["GIT_CONFIG_KEY_"+strconv.Itoa(i)] = k
			vars["GIT_CONFIG_VALUE_"+strconv.Itoa(i)] = v
		}
	}
	return vars
}

// Model is the model a step asks for, else def.
func Model(inv runner.Invocation, def string) string {
	if inv.Model != "" {
		return inv.Model
	}
	return def
}

// OutsideDirs lists, once each, the directories of the context and output
// files that are not inside the working tree, so a CLI that confines its
// agent to the tree can be told to let it read and write them.
func OutsideDirs(inv runner.Invocation) []string {
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

// StdoutJSON decodes a line of stdout holding a JSON object, an event of a
// CLI's stream; ok is false for stderr, other text and malformed JSON, which
// the stream's reader skips.
func StdoutJSON[T any](stream, line string) (v T, ok bool) {
	if stream != "stdout" || !strings.HasPrefix(strings.TrimSpace(line), "{") {
		return v, false
	}
	if json.Unmarshal([]byte(line), &v) != nil {
		return v, false
	}
	return v, true
}

// Events is the line handler of a CLI whose stdout is a stream of JSON
// events: each line of stdout holding one is decoded (see StdoutJSON) and
// handed to event.
func Events[T any](event func(T)) func(stream, line string) {
	return func(stream, line string) {
		if ev, ok := StdoutJSON[T](stream, line); ok {
			event(ev)
		}
	}
}

// Flag is the arguments giving flag once for each value that is not
// empty: flag and the value, or flag+value when flag ends in "=". A runner
// appends them to its CLI's arguments.
func Flag(flag string, values ...string) []string {
	var args []string
	for _, v := range values {
		switch {
		case v == "":
		case strings.HasSuffix(flag, "="):
			args = append(args, flag+v)
		default:
			args = append(args, flag, v)
		}
	}
	return args
}

// Block is a content block of an assistant message in Claude Code's
// stream-json, which Qwen Code writes too: text, or a tool call and its
// input.
type Block struct {
	Type  string         `json:"type"`
	Text  string         `json:"text"`
	Name  string         `json:"name"`
	Input map[string]any `json:"input"`
}

// Said sends progress a note for each block, a text by its first line and
// a tool call as ToolNote names it by the first of keys, and returns the
// last text that is not blank ("" for none): the reply so far.
func Said(progress func(string), blocks []Block, keys ...string) string {
	last := ""
	for _, b := range blocks {
		switch b.Type {
		case "text":
			if strings.TrimSpace(b.Text) != "" {
				last = b.Text
				Note(progress, "says: "+FirstLine(b.Text))
			}
		case "tool_use":
			Note(progress, ToolNote(b.Name, b.Input, keys...))
		}
	}
	return last
}

// HasFlag reports whether args hold one of the flags, alone or as
// --flag=value; a CLI that refuses a repeated option then keeps the
// settings' choice instead of cadre's.
func HasFlag(args []string, flags ...string) bool {
	for _, a := range args {
		name, _, _ := strings.Cut(a, "=")
		if slices.Contains(flags, name) {
			return true
		}
	}
	return false
}

// CommandLine renders a command for the step log, quoting each argument a
// shell would split or expand. The prompt is shown only by its length: it
// can be long, and the log is for reading what the agent did. It is the last
// argument, written flag+prompt (flag may be empty), or, when onStdin, a
// redirection at the end of the line.
func CommandLine(cmd string, args []string, flag, prompt string, onStdin bool) string {
	elided := fmt.Sprintf("<prompt, %d bytes>", len(prompt))
	parts := []string{cmd}
	for i, a := range args {
		if !onStdin && i == len(args)-1 && a == flag+prompt {
			parts = append(parts, flag+elided)
			continue
		}
		if a == "" || strings.ContainsAny(a, " \t\n\"'\\$") {
			a = strconv.Quote(a)
		}
		parts = append(parts, a)
	}
	line := strings.Join(parts, " ")
	if onStdin {
		line += " < " + elided
	}
	return line
}

// Outcome is the error Run returns once the agent's process has ended. err
// is how running it went: a missing command says to install it (with
// installHint, when there is one) or fix runners.NAME.command, and any other
// error is named after the runner. When the process ran, the failure the
// agent reported, if any, is returned as the runner's.
func Outcome(name, installHint string, err error, failure *runner.Error) error {
	switch {
	case errors.Is(err, osexec.ErrNotFound) && installHint != "":
		return fmt.Errorf("runner %s: %w: install it (%s) or fix runners.%s.command", name, err, installHint, name)
	case errors.Is(err, osexec.ErrNotFound):
		return fmt.Errorf("runner %s: %w: install it or fix runners.%s.command", name, err, name)
	case err != nil:
		return fmt.Errorf("runner %s: %w", name, err)
	case failure != nil:
		failure.Runner = name
		return failure
	}
	return nil
}

// Estimate adds the cost of u from the price table t (nil: the built-in
// prices), marked estimated; a model the table does not know keeps u as it
// is.
func Estimate(t *price.Table, model string, u event.Usage) event.Usage {
	if cost, ok := t.Estimate(model, u); ok {
		u.CostUSD, u.CostEstimated = cost, true
	}
	return u
}

// retryPattern finds the wait a provider asks for in a message, in a unit.
var retryPattern = regexp.MustCompile(`(?i)(?:try again in|retry in|retry after)\s+([0-9]+(?:\.[0-9]+)?)\s*(ms|milliseconds?|s|secs?|seconds?|m|mins?|minutes?)\b`)

// RetryAfter reads the wait an error message asks for ("Please try again in
// 4.45s", "retry after 2 minutes"); 0 when it names none.
func RetryAfter(msg string) time.Duration {
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

// Note sends s to progress, if any, as one line of at most NoteMax
// characters.
func Note(progress func(string), s string) {
	if progress != nil {
		progress(Short(s, NoteMax))
	}
}

// ToolNote names a tool call by its tool and the first of keys that its
// input holds as a non-empty string: the argument that says most.
func ToolNote(name string, input map[string]any, keys ...string) string {
	for _, key := range keys {
		if v, ok := input[key].(string); ok && v != "" {
			return name + " " + v
		}
	}
	return name
}

// Short makes s one line of at most n characters, ending in "…" when cut.
func Short(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// FirstLine is the first non-blank line of s, to name a message briefly.
func FirstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) != "" {
			return l
		}
	}
	return ""
}

// ContainsAny reports whether s contains one of subs.
func ContainsAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
