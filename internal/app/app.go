// Package app wires cadre for one repository: its settings, roles,
// workflows, runners, journal and GitHub, into an engine. The command line
// and the public Go API (package run) start and resume runs through it, so
// both wire the engine the same way.
package app

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/cadre-dev/cadre/internal/codehost"
	"github.com/cadre-dev/cadre/internal/config"
	"github.com/cadre-dev/cadre/internal/engine"
	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/eventlog"
	"github.com/cadre-dev/cadre/internal/notify"
	"github.com/cadre-dev/cadre/internal/role"
	"github.com/cadre-dev/cadre/internal/runner"
	"github.com/cadre-dev/cadre/internal/runner/builtin"
	"github.com/cadre-dev/cadre/internal/sandbox"
	"github.com/cadre-dev/cadre/internal/store"
	"github.com/cadre-dev/cadre/internal/workflow"
	"github.com/cadre-dev/cadre/internal/workspace"
)

// Workspace is a repository cadre works in, with its cadre.yaml.
type Workspace struct {
	Root   string
	Config config.Config
}

// Root finds the top of the git repository around dir.
func Root(ctx context.Context, dir string) (string, error) {
	repo, err := workspace.Open(ctx, dir)
	if err != nil {
		return "", err
	}
	return repo.Dir, nil
}

// LoadConfig reads root's cadre.yaml (the defaults when there is none),
// with getenv's CADRE_* overrides, and settles which forge the repository
// is on (config.ResolveForge) from its origin remote when it does not say.
func LoadConfig(root string, getenv func(string) string) (config.Config, error) {
	cfg, err := config.Load(filepath.Join(root, "cadre.yaml"), getenv)
	if err != nil {
		return cfg, err
	}
	if cfg.Forge.Type == "" {
		cfg.ResolveForge(originURL(root))
	}
	return cfg, cfg.CheckForge()
}

// originURL is the URL of root's origin remote, "" without one.
func originURL(root string) string {
	repo, err := workspace.Open(context.Background(), root)
	if err != nil {
		return ""
	}
	url, err := repo.Git(context.Background(), "config", "--get", "remote.origin.url")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(url)
}

// HasJournal says whether root has a journal (a run was ever made there).
func HasJournal(root string) bool {
	_, err := os.Stat(journalPath(root))
	return err == nil
}

// OpenStore opens (creating when needed) root's journal.
func OpenStore(ctx context.Context, root string) (*store.Store, error) {
	return store.Open(ctx, journalPath(root))
}

func journalPath(root string) string { return filepath.Join(root, workspace.StateDir, "cadre.db") }

// LoadWorkflows reads the built-in workflows and the repository's own
// (.cadre/workflows), checking their roles against roles.
func LoadWorkflows(root string, roles *role.Registry) (*workflow.Registry, error) {
	dir := ""
	if root != "" {
		dir = filepath.Join(root, workspace.StateDir, "workflows")
	}
	return workflow.LoadDefs(dir, func(name string) bool {
		_, err := roles.Get(name)
		return err == nil
	})
}

// Options are what an engine needs beyond its workspace and journal.
type Options struct {
	Getenv func(string) string // the environment (GitHub token, CADRE_*)
	// Runners builds the registry of runner types with cadre.yaml's price
	// overrides; nil: the built-in runners.
	Runners func(prices map[string]config.Price) *runner.Registry
	Crash   func(point string) // the engine's crash hook, for tests; may be nil
	Sinks   []event.Sink       // where events go besides the journal
	// Notify tunes the webhook notifier of cadre.yaml's notify: (tests
	// shorten its backoff); NotifyWait bounds how long the end of a run
	// waits for queued notifications (default 10s).
	Notify     notify.Options
	NotifyWait time.Duration
	// Warn is where a warning no event can carry goes (the journal
	// refusing events); nil: os.Stderr.
	Warn io.Writer
	// Forge replaces the code host built from cadre.yaml (nil: that one);
	// Tracker, its tracker.
	Forge   codehost.Forge
	Tracker codehost.Tracker
	// Geteuid is the user cadre runs as, whose agents run as it too
	// (nil: os.Geteuid).
	Geteuid func() int
	// Prompts replace roles' templates for this engine only (role →
	// template), over the repository's .cadre/roles: the prompts of the
	// agents a Go program gives a run (run.Options.Roles).
	Prompts map[string]string
}

// NewEngine wires an engine for ws that journals into st. Its errors are
// the repository's configuration's (roles, workflows, the tree): fix and
// rerun. The returned function flushes the journal; call it before closing
// st.
func NewEngine(ctx context.Context, ws Workspace, st *store.Store, o Options) (*engine.Engine, func(), error) {
	p, err := build(ctx, ws, st, o)
	return p.e, p.close, err
}

// parts is what build wires: the engine, its event bus and its code host.
type parts struct {
	e       *engine.Engine
	bus     *event.Bus
	host    Host
	tracker codehost.Tracker // nil without one
	close   func()
}

// build wires an engine for ws (NewEngine).
func build(ctx context.Context, ws Workspace, st *store.Store, o Options) (parts, error) {
	roles, err := role.Load(filepath.Join(ws.Root, workspace.StateDir, "roles"))
	if err != nil {
		return parts{}, err
	}
	for _, name := range slices.Sorted(maps.Keys(o.Prompts)) {
		if roles, err = roles.With(name, o.Prompts[name], "the prompt of the "+name+" agent given to the run"); err != nil {
			return parts{}, err
		}
	}
	flows, err := LoadWorkflows(ws.Root, roles)
	if err != nil {
		return parts{}, err
	}
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	runners := o.Runners
	if runners == nil {
		runners = builtin.Registry
	}
	reg := runners(ws.Config.Prices)
	// cadre's own secrets: masked in everything it writes (the journal,
	// events, step files, commits) and sends.
	mask := Secrets(ws.Config, reg, getenv)
	st.SetMask(mask.String)
	policy, fallback, err := SandboxPolicy(ctx, ws.Config.Sandbox, getenv)
	if err != nil {
		return parts{}, err
	}
	journal := eventlog.NewSink(st)
	var bus *event.Bus
	nopts := o.Notify
	if nopts.Warn == nil {
		// Called from the notifier's own goroutine, never inside Publish.
		nopts.Warn = func(run, msg string) { bus.Publish(event.Event{Run: run, Type: event.Warning, Message: msg}) }
	}
	notifier := notify.New(ws.Config.Notify, nopts)
	wait := o.NotifyWait
	if wait <= 0 {
		wait = 10 * time.Second
	}
	warn := o.Warn
	if warn == nil {
		warn = os.Stderr
	}
	sinks := []event.Sink{journal, notifier}
	tel := startTelemetry(ctx, ws.Config.Telemetry, getenv, warn)
	if tel.Enabled() {
		sinks = append(sinks, tel.Sink()) // off, not even a call per event
	}
	closeAll := func() {
		notifier.Close(wait) // its last warnings still reach the journal
		if err := journal.Close(); err != nil {
			fmt.Fprintln(warn, "cadre: warning: "+err.Error())
		}
		// Last: the events published while closing are exported too.
		if err := tel.Shutdown(ctx); err != nil {
			fmt.Fprintln(warn, "cadre: warning: "+err.Error())
		}
	}
	bus = event.NewBus(nil, append(sinks, o.Sinks...)...)
	bus.SetMask(mask.String)
	if msg := unconfined(ws.Config.Sandbox.Mode, policy, fallback, o.Geteuid); msg != "" {
		bus.Publish(event.Event{Type: event.Warning, Message: msg})
	}
	host := NewHost(ws, getenv)
	host.useMask(mask) // the token it learns late (from gh) is masked everywhere too
	var fg codehost.Forge = host
	if o.Forge != nil {
		fg = o.Forge
	}
	tracker := o.Tracker
	if tracker == nil {
		tracker = NewTracker(ws.Config, getenv, mask)
	}
	e, err := engine.New(ctx, engine.Deps{Root: ws.Root, Config: ws.Config, Store: st, Roles: roles, Runners: reg,
		Workflows: flows, Forge: fg, Tracker: tracker, Bus: bus, Crash: o.Crash, Sandbox: policy, Mask: mask})
	if err != nil {
		closeAll()
		return parts{}, err
	}
	return parts{e: e, bus: bus, host: host, tracker: tracker, close: closeAll}, nil
}

// SandboxPolicy is the confinement cadre.yaml's sandbox section asks for,
// checked to work here (bubblewrap found on the PATH of getenv and run once
// with each network setting); nil for mode none. Asked for (mode bwrap)
// and unavailable is an error: the run must not start unconfined. Under
// mode auto it is nil when bubblewrap does not work here, and fallback
// says why, for a warning.
func SandboxPolicy(ctx context.Context, c config.Sandbox, getenv func(string) string) (p *sandbox.Policy, fallback, err error) {
	switch c.Mode {
	case sandbox.ModeBwrap:
		p, err := sandbox.New(ctx, SandboxSettings(c), getenv)
		if err != nil {
			return nil, nil, fmt.Errorf("sandbox.mode bwrap: %w", err)
		}
		return p, nil, nil
	case sandbox.ModeAuto:
		p, err := sandbox.New(ctx, SandboxSettings(c), getenv)
		if err != nil {
			return nil, err, nil
		}
		return p, nil, nil
	}
	return nil, nil, nil
}

// unconfined is the warning that agents run with no confinement, or "":
// under mode auto where bubblewrap does not work (fallback says why), and
// under any mode that confines nothing when cadre runs as root, whose
// agents can then change anything on the machine.
func unconfined(mode string, p *sandbox.Policy, fallback error, geteuid func() int) string {
	if geteuid == nil {
		geteuid = os.Geteuid
	}
	const asRoot = "agents run as root with no confinement, so they can change anything on this machine: run cadre as another user"
	root := p == nil && geteuid() == 0
	switch {
	case fallback != nil && root:
		return "sandbox.mode auto: agents run unconfined: " + fallback.Error() + "; " + asRoot
	case fallback != nil:
		return "sandbox.mode auto: agents run unconfined: " + fallback.Error()
	case root:
		return "sandbox.mode " + mode + ": " + asRoot + ", or set sandbox.mode: bwrap"
	}
	return ""
}

// SandboxSettings is cadre.yaml's sandbox section as sandbox.New takes it:
// each item's network by its trust.
func SandboxSettings(c config.Sandbox) sandbox.Settings {
	trusted, untrusted := c.Networks()
	return sandbox.Settings{Network: trusted, Untrusted: untrusted, AllowHosts: c.AllowHosts, Caches: c.Caches}
}

// IssueQuery is cadre.yaml's github.query_*: the issues a run with no
// target works on.
func (ws Workspace) IssueQuery() codehost.IssueQuery {
	gh := ws.Config.Host()
	return codehost.IssueQuery{Labels: gh.QueryLabels, Milestone: gh.QueryMilestone, Assignee: gh.QueryAssignee,
		State: gh.QueryState, Limit: gh.QueryLimit}
}
