package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/reply"
	"github.com/cadre-dev/cadre/internal/runner"
	"github.com/cadre-dev/cadre/internal/runner/builtin"
)

// Runner is a reachable agent backend: an agent CLI (claude, codex, gemini,
// aider, opencode), a model API (anthropic, openai, ollama), any command
// (exec) or a scenario (script). It says HOW an agent is reached; the role
// says WHAT it does. The zero Runner reaches nothing: build one with
// NewRunner.
type Runner struct {
	typ string
	rn  runner.Runner
	// set is kept so a run can configure the same runner as cadre.yaml
	// would (Settings); a pointer keeps Runner comparable.
	set *runner.Settings
}

// RunnerOption sets one field of a runner's settings, as cadre.yaml's
// runners.NAME section would.
type RunnerOption func(*runner.Settings)

// WithName names the runner instance (default: its type). The name is
// what Response.Runner and the selector's candidates refer to.
func WithName(name string) RunnerOption { return func(s *runner.Settings) { s.Name = name } }

// WithCommand sets the program to run and its arguments (exec; the agent
// CLIs' own binary otherwise).
func WithCommand(command string, args ...string) RunnerOption {
	return func(s *runner.Settings) { s.Command, s.Args = command, args }
}

// WithEnv names environment variables passed through to the agent. Agents
// get a minimal environment otherwise (PATH, HOME, LANG, TERM and the keys
// their runner declares; docs/runners.md), never the caller's secrets.
func WithEnv(names ...string) RunnerOption {
	return func(s *runner.Settings) { s.Env = append(s.Env, names...) }
}

// WithURL sets a model API's base URL (anthropic, openai, ollama).
func WithURL(url string) RunnerOption { return func(s *runner.Settings) { s.URL = url } }

// WithRunnerModel sets the runner's default model.
func WithRunnerModel(model string) RunnerOption { return func(s *runner.Settings) { s.Model = model } }

// WithScenario sets the script runner's scenario file (docs/script-runner.md).
func WithScenario(path string) RunnerOption { return func(s *runner.Settings) { s.Scenario = path } }

// WithBaseDir sets the directory relative paths in the settings (command,
// scenario) are resolved against.
func WithBaseDir(dir string) RunnerOption { return func(s *runner.Settings) { s.BaseDir = dir } }

// NewRunner builds a runner of type typ ("claude", "exec", "script", ...;
// see Types) from the registry the cadre command uses, so a runner built
// here behaves exactly as the same runner configured in cadre.yaml.
func NewRunner(typ string, opts ...RunnerOption) (Runner, error) {
	s := runner.Settings{Name: typ}
	for _, o := range opts {
		o(&s)
	}
	rn, err := builtin.Registry(nil).New(typ, s)
	if err != nil {
		return Runner{}, fmt.Errorf("new runner: %w", err)
	}
	return Runner{typ: typ, rn: rn, set: &s}, nil
}

// RunnerSettings are a runner's settings as cadre.yaml's runners.NAME
// section holds them: what the RunnerOptions set.
type RunnerSettings struct {
	Name     string
	Command  string
	Args     []string
	Env      []string
	URL      string
	Model    string
	Scenario string
	BaseDir  string
}

// Settings returns the settings r was built with (none for the zero
// Runner), so a run (package run) can configure the same runner.
func (r Runner) Settings() RunnerSettings {
	if r.set == nil {
		return RunnerSettings{}
	}
	s := r.set
	return RunnerSettings{Name: s.Name, Command: s.Command, Args: slices.Clone(s.Args), Env: slices.Clone(s.Env), URL: s.URL,
		Model: s.Model, Scenario: s.Scenario, BaseDir: s.BaseDir}
}

// Types lists the runner types NewRunner knows.
func Types() []string { return builtin.Registry(nil).Types() }

// Name is the runner instance's name.
func (r Runner) Name() string {
	if r.rn == nil {
		return ""
	}
	return r.rn.Name()
}

// Type is the runner's type, as given to NewRunner.
func (r Runner) Type() string { return r.typ }

// ErrNoRunner is returned for calls on the zero Runner.
var ErrNoRunner = errors.New("no runner: build one with agent.NewRunner")

// Request is one raw call of a runner: the prompt is sent as it is, with no
// role template around it. Agent.Invoke, the judge and triage are built on it.
type Request struct {
	// Role names the role the call is made for: the script runner's rules
	// match on it and the exec runner sees it as CADRE_ROLE.
	Role    string
	Item    string // item id (CADRE_ITEM; script rules' task)
	Prompt  string
	Dir     string // working directory; "" is the current directory
	Model   string // "" for the runner's default
	Timeout time.Duration
	// Reask marks the corrective second ask after an unusable reply.
	Reask bool
	// Session continues a backend session (Reply.Session of an earlier
	// call), for runners that keep one.
	Session string
}

// Reply is what a runner call produced.
type Reply struct {
	// Text is the agent's output: the file it wrote to its output path
	// (CADRE_OUTPUT) when it wrote one, else its final reply.
	Text     string
	ExitCode int
	Usage    Usage
	Session  string // the backend's session id, for Request.Session
	Model    string // the model that answered, when the backend says
	Duration time.Duration
}

// ExitError reports an agent process that exited non-zero.
type ExitError struct {
	Runner string
	Code   int
	Stderr string // the tail of its standard error
}

func (e *ExitError) Error() string {
	msg := fmt.Sprintf("runner %s: agent exited with code %d", e.Runner, e.Code)
	if e.Stderr != "" {
		msg += ": " + e.Stderr
	}
	return msg
}

// Run makes one raw call. A non-zero exit is returned as an *ExitError
// together with what the agent did produce.
func (r Runner) Run(ctx context.Context, req Request) (Reply, error) {
	if r.rn == nil {
		return Reply{}, ErrNoRunner
	}
	// The agent's output file and transcript need a home outside the
	// caller's tree; nothing in it outlives the call.
	step, err := os.MkdirTemp("", "cadre-agent-*")
	if err != nil {
		return Reply{}, fmt.Errorf("step directory: %w", err)
	}
	defer os.RemoveAll(step)
	return r.run(ctx, req, step)
}

// run makes the call with the step's files in the directory step. Each ask
// starts without an output file, so the file read after it is its own.
func (r Runner) run(ctx context.Context, req Request, step string) (Reply, error) {
	dir, err := workDir(req.Dir)
	if err != nil {
		return Reply{}, err
	}
	inv := runner.Invocation{Role: req.Role, Item: req.Item, Step: req.Role + "#1", Attempt: 1, Reask: req.Reask,
		Prompt: req.Prompt, Dir: dir, OutputPath: filepath.Join(step, "output.md"), LogPath: filepath.Join(step, "step.log"),
		Model: req.Model, Timeout: req.Timeout, Session: req.Session}
	os.Remove(inv.OutputPath)
	start := time.Now()
	res, err := r.rn.Run(ctx, inv)
	rep := Reply{ExitCode: res.ExitCode, Usage: usageOf(res.Usage), Session: res.SessionID, Model: res.Model,
		Duration: time.Since(start)}
	if err != nil {
		return rep, fmt.Errorf("run %s: %w", r.rn.Name(), err)
	}
	file, _ := os.ReadFile(inv.OutputPath) // absent: the agent answered in its reply
	rep.Text, _ = reply.Output(string(file), res.Output)
	if res.ExitCode != 0 {
		return rep, &ExitError{Runner: r.rn.Name(), Code: res.ExitCode, Stderr: res.StderrTail}
	}
	return rep, nil
}

// Usage is the token account and cost of a call (of both asks when an
// agent was asked twice).
type Usage struct {
	InputTokens      int64
	OutputTokens     int64
	CacheReadTokens  int64
	CacheWriteTokens int64
	CostUSD          float64
	// Estimated marks a cost computed from the price table because the
	// backend reported tokens but no cost.
	Estimated bool
}

func usageOf(u event.Usage) Usage {
	return Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CacheReadTokens: u.CacheReadTokens,
		CacheWriteTokens: u.CacheWriteTokens, CostUSD: u.CostUSD, Estimated: u.CostEstimated}
}

// Add returns the sum of two usages; the sum is estimated if either part is.
func (u Usage) Add(o Usage) Usage {
	return Usage{InputTokens: u.InputTokens + o.InputTokens, OutputTokens: u.OutputTokens + o.OutputTokens,
		CacheReadTokens: u.CacheReadTokens + o.CacheReadTokens, CacheWriteTokens: u.CacheWriteTokens + o.CacheWriteTokens,
		CostUSD: u.CostUSD + o.CostUSD, Estimated: u.Estimated || o.Estimated}
}
