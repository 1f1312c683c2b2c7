// Package runner defines how cadre reaches an agent: one small interface that
// every backend (agent CLIs, model APIs, exec, script) implements, and an
// explicit registry of backend types.
package runner

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/redact"
	"github.com/cadre-dev/cadre/internal/runner/price"
	"github.com/cadre-dev/cadre/internal/sandbox"
)

// Caps says what a runner can do, so the engine can refuse a role a runner
// cannot serve instead of discovering it mid-run.
type Caps struct {
	EditsFiles  bool // the agent changes files in the working tree itself
	ReportsCost bool // usage comes with a cost from the backend (else estimated or none)
	ModelChoice bool // the model can be chosen per step
	Streams     bool // progress arrives while the step runs
}

// Invocation is one agent step as the runner sees it.
type Invocation struct {
	Role    string
	Item    string // item id (task file stem, issue number)
	Step    string // stable step id
	Attempt int    // the n of the step id <...>#<n>: this step's attempt, 1-based (CADRE_ATTEMPT)
	Visit   int    // nth invocation of this role for this item, 1-based (0: same as Attempt)
	Reask   bool   // this is the corrective re-ask after an unusable reply
	// Prompt is the step's own text: for an agent that reads files, the
	// context file's path and what in it to read (the item's text, earlier
	// outputs, the output path); for one that cannot, that content itself.
	Prompt string
	// Instructions are the role's fixed instructions and the SIGNAL BLOCK
	// contract. A runner whose backend takes a system prompt passes them
	// there, once per process (see UserText); any other sends Text.
	Instructions string
	// Followup is the corrective note of a re-ask, sent after the prompt,
	// or alone into the resumed Session, which holds the prompt already.
	Followup    string
	Dir         string // working tree the agent works in
	ContextPath string // the step's context file (docs/workflows.md#context-files)
	OutputPath  string // where the agent may write its Markdown result
	LogPath     string // raw transcript of the process, masked by Mask
	Model       string
	Timeout     time.Duration
	// Grace is what a stopped or timed-out agent process is given between
	// SIGTERM and SIGKILL (limits.kill_grace; 0: proc.DefaultGrace).
	Grace time.Duration
	// Session, when set, is a backend session to continue (a resumed retry
	// of the same step); runners that cannot resume ignore it.
	Session string
	// Progress, when set, receives one-line progress notes while the step
	// runs (a tool call, a message); it must not block.
	Progress func(note string)
	// OnStart, when set, is called with the pid (also the process group
	// id) of every agent process the runner starts, as it starts, so the
	// engine can journal it and kill the group should cadre die and resume.
	// Every runner that starts a process calls it (see proc.Spec.OnStart).
	OnStart func(pid int)
	// Untrusted: the tree's own configuration must not make the agent
	// run programs (sandbox.trust_repo); a CLI runner passes the options
	// that make its CLI skip project settings, hooks and MCP servers.
	Untrusted bool
	// GitConfig is git configuration ("key=value") for the git commands the
	// agent runs, given through GIT_CONFIG_* variables: for an untrusted
	// tree, hooks and filter drivers off.
	GitConfig []string
	// Sandbox, when set, confines every process the runner starts for
	// this step (cadre.yaml sandbox); nil runs them unconfined.
	Sandbox *sandbox.Policy
	// Mask holds cadre's secrets (its GitHub token, the model keys it
	// passes to agents): the runner masks them in what it writes to
	// LogPath, where an agent that printed one would leave it. Nil masks
	// nothing.
	Mask *redact.Redactor
}

// Text is the whole message for a runner that has no system prompt: the
// prompt, the role's instructions, then a re-ask's follow-up; only the
// follow-up when it goes into a resumed session.
func (inv Invocation) Text() string {
	if inv.resumed() {
		return inv.Followup
	}
	return join(inv.Prompt, inv.Instructions, inv.Followup)
}

// UserText is the user message for a runner that passes Instructions as
// its system prompt: the prompt and a re-ask's follow-up, or only the
// follow-up when it goes into a resumed session.
func (inv Invocation) UserText() string {
	if inv.resumed() {
		return inv.Followup
	}
	return join(inv.Prompt, inv.Followup)
}

// resumed: a re-ask continuing the agent's session, which holds the
// prompt and instructions already.
func (inv Invocation) resumed() bool { return inv.Session != "" && inv.Followup != "" }

func join(parts ...string) string {
	out := ""
	for _, p := range parts {
		switch {
		case strings.TrimSpace(p) == "":
		case out == "":
			out = p // a lone part goes as it is
		default:
			out = strings.TrimRight(out, " \t\n") + "\n\n" + strings.TrimLeft(p, "\n")
		}
	}
	return out
}

// Result is what a finished agent process produced.
type Result struct {
	ExitCode   int
	Output     string // final reply text (stdout for exec, the CLI's final result text)
	StderrTail string
	Usage      event.Usage // Usage.CostEstimated marks a cost computed from the price table
	SessionID  string      // the backend's session/thread id, for a resumed retry
	Model      string      // the model that answered, when the backend says
}

// Runner reaches one agent backend.
type Runner interface {
	Name() string
	Capabilities() Caps
	// Run performs the invocation. A non-zero exit is reported in Result, not
	// as an error; err means the agent could not be run at all, or ctx ended.
	Run(ctx context.Context, inv Invocation) (Result, error)
}

// Locator is a runner that starts a program: Locate finds it as a step
// would, and says what to do when it is missing, so a run refuses a
// missing agent CLI before it starts instead of failing its first step.
type Locator interface {
	Locate() error
}

// RoleKeyed is a runner whose behaviour is keyed by role names (the
// script runner's rules): a name that is no role would never match, so a
// run refuses it before it starts.
type RoleKeyed interface {
	// KeyedRoles are the role names it keys on, each with where it is
	// written; "*" stands for any role.
	KeyedRoles() []KeyedRole
}

// KeyedRole is a role name a RoleKeyed runner keys on.
type KeyedRole struct {
	Role  string
	Where string // file and field, e.g. "scenario.yaml: rules[3].role"
}

// Settings are a named runner instance's configuration (cadre.yaml runners.NAME).
type Settings struct {
	Name     string
	Command  string
	Args     []string
	Env      []string // names of variables passed through to the agent
	URL      string
	Model    string
	Scenario string
	BaseDir  string // directory relative paths in the settings are resolved against
	// Prices turn the tokens of a backend that reports no cost into an
	// estimated one: the built-in prices overlaid with the project's
	// (cadre.yaml prices); nil means the built-in prices.
	Prices *price.Table
}

// Factory builds a runner of one type from its settings.
type Factory func(s Settings) (Runner, error)

// Registry maps runner type names to their descriptors and factories. It
// is built explicitly in one place (no init-time registration), so the set
// of backends is easy to read.
type Registry struct {
	types map[string]entry
	order []string // registration order
}

type entry struct {
	d Descriptor
	f Factory
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{types: map[string]entry{}} }

// Add adds the runner type d describes, built by f. Adding a name twice,
// or a descriptor incomplete for its kind (see Descriptor.Check), is a
// programming error, so it panics.
func (r *Registry) Add(d Descriptor, f Factory) {
	if err := d.Check(); err != nil {
		panic(err.Error())
	}
	r.add(d, f)
}

// Register adds a runner type known by its name only, such as a test's
// fake: its descriptor has no kind, so nothing checks it as a CLI or an
// API. Registering a name twice is a programming error, so it panics.
func (r *Registry) Register(typ string, f Factory) { r.add(Descriptor{Type: typ}, f) }

func (r *Registry) add(d Descriptor, f Factory) {
	if _, dup := r.types[d.Type]; dup {
		panic(fmt.Sprintf("runner type %q registered twice", d.Type))
	}
	r.types[d.Type] = entry{d: d, f: f}
	r.order = append(r.order, d.Type)
}

// Types lists the registered type names, sorted.
func (r *Registry) Types() []string {
	out := slices.Clone(r.order)
	sort.Strings(out)
	return out
}

// Descriptors lists the registered types' descriptors in the order they
// were registered, which is the order of preference among alike types
// (cadre init picks the first agent CLI it finds).
func (r *Registry) Descriptors() []Descriptor {
	out := make([]Descriptor, 0, len(r.order))
	for _, typ := range r.order {
		out = append(out, r.types[typ].d)
	}
	return out
}

// Describe returns the descriptor of type typ; ok is false when typ is not
// registered.
func (r *Registry) Describe(typ string) (d Descriptor, ok bool) {
	e, ok := r.types[typ]
	return e.d, ok
}

// ErrUnknown is wrapped by New when the type is not registered.
var ErrUnknown = errors.New("unknown runner")

// New builds a runner instance of type typ.
func (r *Registry) New(typ string, s Settings) (Runner, error) {
	e, ok := r.types[typ]
	if !ok {
		return nil, fmt.Errorf("%w %q (known: %v)", ErrUnknown, typ, r.Types())
	}
	return e.f(s)
}
