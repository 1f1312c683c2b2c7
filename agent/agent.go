package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/cadre-dev/cadre/internal/reply"
	"github.com/cadre-dev/cadre/internal/role"
	"github.com/cadre-dev/cadre/internal/signal"
)

// Agent is a role reached through a runner. It is immutable: WithRunner and
// WithPrompt return modified copies, so one agent can be varied freely
// (docs/library.md).
type Agent struct {
	role    string
	roles   *role.Registry
	runner  Runner
	prompt  string // custom template from WithPrompt; "" for the role's own
	promptR *role.Registry
	err     error // a WithPrompt template that does not parse, reported by Invoke
	cfg     config
}

type config struct {
	roleDir string
	dir     string
	model   string
	item    string
	timeout time.Duration
}

// Option configures an Agent.
type Option func(*config)

// WithRoleDir loads role overrides and extra roles (NAME.md files, as in a
// repository's .cadre/roles) from dir on top of the built-in roles.
func WithRoleDir(dir string) Option { return func(c *config) { c.roleDir = dir } }

// WithDir sets the working directory the agent works in (default: the
// current directory).
func WithDir(dir string) Option { return func(c *config) { c.dir = dir } }

// WithModel sets the model asked for (default: the runner's).
func WithModel(model string) Option { return func(c *config) { c.model = model } }

// WithTimeout bounds each ask; the agent's process group is killed after it.
func WithTimeout(d time.Duration) Option { return func(c *config) { c.timeout = d } }

// WithItem sets the item id the prompt names and the runner sees
// (CADRE_ITEM; the script runner's task); default "prompt".
func WithItem(id string) Option { return func(c *config) { c.item = id } }

// New creates an agent doing role (a built-in role, or one from WithRoleDir)
// through r.
func New(roleName string, r Runner, opts ...Option) (*Agent, error) {
	c := config{item: "prompt"}
	for _, o := range opts {
		o(&c)
	}
	roles, err := role.Load(c.roleDir)
	if err != nil {
		return nil, fmt.Errorf("load roles: %w", err)
	}
	if _, err := roles.Get(roleName); err != nil {
		return nil, fmt.Errorf("new agent: %w", err)
	}
	return &Agent{role: roleName, roles: roles, runner: r, cfg: c}, nil
}

// Role is the agent's role name.
func (a *Agent) Role() string { return a.role }

// Model is the model the agent asks for ("" for the runner's default).
func (a *Agent) Model() string { return a.cfg.model }

// Prompt is the role template set by WithPrompt, "" when the agent uses
// its role's own.
func (a *Agent) Prompt() string { return a.prompt }

// Runner is the runner the agent is reached through.
func (a *Agent) Runner() Runner { return a.runner }

// WithRunner returns a copy of a reached through r.
func (a *Agent) WithRunner(r Runner) *Agent {
	cp := *a
	cp.runner = r
	return &cp
}

// WithPrompt returns a copy of a whose prompt is p instead of the role's
// template. p is a role template like a .cadre/roles/NAME.md file (Go
// text/template; plain text works when it holds no "{{"): what it leaves
// out of cadre's prompt contract — the task, the context, where to write,
// the SIGNAL BLOCK — is added after it. A template that does not parse is
// reported by Invoke.
func (a *Agent) WithPrompt(p string) *Agent {
	cp := *a
	cp.prompt = p
	cp.promptR, cp.err = a.roles.With(a.role, p, "custom prompt")
	return &cp
}

// Response is what one Invoke produced.
type Response struct {
	// Text is the agent's output: the Markdown it wrote to its output path,
	// else its final reply. After a re-ask, the second answer's.
	Text string
	// Signal is the reply's SIGNAL BLOCK; nil only for the triage role,
	// whose contract is its JSON decision (see Triage).
	Signal   *Signal
	Usage    Usage // both asks' when the agent was asked twice
	Duration time.Duration
	Runner   string
	Model    string // the model that answered when the backend says, else the one asked for
	Asks     int    // 1, or 2 after the corrective re-ask
}

// Signal is a parsed SIGNAL BLOCK: the block of labelled lines (Agent,
// Result, Loop Summary, Confidence, Next, Context, Rating, Verdict,
// Signature) every role's reply ends with, the only part of a reply that
// steers the workflow.
type Signal struct {
	Agent      string
	Result     string // INIT, CLARIFICATION_NEEDED, PLAN_CREATED, SUCCESS, FAIL, PASS, INSUFFICIENT
	Summary    string // the Loop Summary line
	Confidence *int   // 0..10; nil when absent
	Next       string // a role, Human or Done
	Context    string
	Rating     *int   // 0..10 (reviewers, auditors, judges); nil when absent
	Verdict    string // "", "pass" or "needs-fixes"
}

func signalOf(s signal.Signal) *Signal {
	return &Signal{Agent: s.Agent, Result: string(s.Result), Summary: s.LoopSummary, Confidence: s.Confidence,
		Next: s.Next, Context: s.Context, Rating: s.Rating, Verdict: s.Verdict}
}

// ErrNoSignal is wrapped by Invoke when the reply still has no usable
// SIGNAL BLOCK after the one corrective re-ask.
var ErrNoSignal = errors.New("no usable SIGNAL BLOCK")

// roleTriage answers with a JSON decision rather than a SIGNAL BLOCK.
const roleTriage = "triage"

// Invoke runs the agent on a task: the role's template (or the WithPrompt
// one) rendered with prompt as the item's text and, when not empty,
// taskContext as an earlier step's result, handed to the agent as context. A reply without a usable SIGNAL
// BLOCK is asked once more with a corrective prompt, as the engine does;
// still none is an error wrapping ErrNoSignal. A non-zero exit is an
// *ExitError. The Response holds what the agent produced in every case.
func (a *Agent) Invoke(ctx context.Context, prompt, taskContext string) (Response, error) {
	resp := Response{Runner: a.runner.Name(), Model: a.cfg.model}
	if a.err != nil {
		return resp, fmt.Errorf("agent %s: %w", a.role, a.err)
	}
	if a.runner.rn == nil {
		return resp, fmt.Errorf("agent %s: %w", a.role, ErrNoRunner)
	}
	dir, err := workDir(a.cfg.dir)
	if err != nil {
		return resp, err
	}
	step, err := os.MkdirTemp("", "cadre-agent-*")
	if err != nil {
		return resp, fmt.Errorf("step directory: %w", err)
	}
	defer os.RemoveAll(step)
	text, err := a.render(dir, step, prompt, taskContext)
	if err != nil {
		return resp, err
	}
	req := Request{Role: a.role, Item: a.cfg.item, Prompt: text, Dir: dir, Model: a.cfg.model, Timeout: a.cfg.timeout}
	for ask := 1; ask <= 2; ask++ {
		rep, err := a.runner.run(ctx, req, step)
		resp.Text, resp.Asks = rep.Text, ask
		resp.Usage, resp.Duration = resp.Usage.Add(rep.Usage), resp.Duration+rep.Duration
		if rep.Model != "" {
			resp.Model = rep.Model
		}
		if err != nil {
			return resp, fmt.Errorf("agent %s: %w", a.role, err)
		}
		sig, perr := reply.Check(a.role, rep.Text)
		if perr == nil {
			resp.Signal = signalOf(sig)
			return resp, nil
		}
		if a.role == roleTriage {
			return resp, nil
		}
		if ask == 2 {
			return resp, fmt.Errorf("agent %s: %w after a re-ask: %w", a.role, ErrNoSignal, perr)
		}
		// The re-ask continues the agent's session where the backend keeps
		// one, so it answers with its work in context.
		req.Reask, req.Session = true, rep.Session
		req.Prompt += reply.Reask(perr)
	}
	return resp, nil // not reached: the second ask always returns
}

// render builds the prompt. Inline: the task and context are pasted into
// the prompt rather than handed over as files, so any runner can serve it.
func (a *Agent) render(dir, step, prompt, taskContext string) (string, error) {
	roles := a.roles
	if a.promptR != nil {
		roles = a.promptR
	}
	d := role.Data{Item: a.cfg.item, Title: title(prompt), WorkDir: dir, OutputPath: filepath.Join(step, "output.md"),
		Body: prompt, Inline: true}
	if strings.TrimSpace(taskContext) != "" {
		d.Inputs, d.InputTexts = []string{"context"}, []string{taskContext}
	}
	text, err := roles.Render(a.role, d)
	if err != nil {
		return "", fmt.Errorf("agent %s: %w", a.role, err)
	}
	return text, nil
}

// title is the prompt's first line, shortened, as the item's title.
func title(prompt string) string {
	t, _, _ := strings.Cut(strings.TrimSpace(prompt), "\n")
	if r := []rune(t); len(r) > 72 {
		t = string(r[:71]) + "…"
	}
	return t
}

func workDir(dir string) (string, error) {
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", fmt.Errorf("working directory: %w", err)
		}
		return wd, nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("working directory: %w", err)
	}
	return abs, nil
}

// workflowDir is the .cadre/workflows beside a .cadre/roles directory, so
// WithRoleDir(".cadre/roles") brings the repository's workflows along; ""
// (built-ins only) for any other directory.
func workflowDir(roleDir string) string {
	if roleDir == "" || filepath.Base(filepath.Clean(roleDir)) != "roles" {
		return ""
	}
	return filepath.Join(filepath.Dir(filepath.Clean(roleDir)), "workflows")
}
