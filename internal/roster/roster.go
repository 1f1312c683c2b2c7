// Package roster says which runner, and which model, serves each role of
// a run, and builds the runners cadre.yaml defines: a role's own setting
// wins over --runner, which wins over defaults.runner; runner auto asks
// the model selector (internal/eval) with the score store's figures.
// Before a run starts, Check builds every runner a role may use and finds
// the program each starts, so a missing or misconfigured runner stops the
// run before anything changed.
package roster

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cadre-dev/cadre/internal/config"
	"github.com/cadre-dev/cadre/internal/eval"
	"github.com/cadre-dev/cadre/internal/evalstore"
	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/role"
	"github.com/cadre-dev/cadre/internal/runner"
	"github.com/cadre-dev/cadre/internal/store"
)

// Roster resolves the roles of one repository to runners. It is cheap to
// make from the repository's settings; what it remembers between calls is
// in State, which the caller keeps.
type Roster struct {
	Config  config.Config
	Runners *runner.Registry
	Roles   *role.Registry
	Root    string       // the repository, the runners' base directory
	Store   *store.Store // the score store, for runner auto
	Bus     *event.Bus   // warnings
	State   *State
}

// State is what a Roster remembers between calls; its zero value is
// ready to use.
type State struct {
	criticOnce sync.Once // the critic's fallback was told
	mu         sync.Mutex
	// checked holds the runners Check built, by name, for the run it
	// checked to take over (a script runner's scenario is parsed once,
	// not once to check and again to run).
	checked map[string]runner.Runner
}

// Flags are a run's --runner and --model; a role's own settings win over
// them.
type Flags struct{ Runner, Model string }

// For resolves the runner name and model for role under f, and where the
// name came from (for errors): a per-role setting wins over --runner,
// which wins over defaults.runner.
func (r *Roster) For(f Flags, roleName string) (name, model, from string) {
	cfg := r.Config
	name, model = cfg.RoleRunner(roleName)
	rc := cfg.Roles[roleName]
	from = cfg.Where("defaults.runner")
	switch {
	case rc.Runner != "":
		from = cfg.Where("roles." + roleName + ".runner")
	case roleName == "critic" && cfg.Roles["architect"].Runner != "":
		// The critic defaults to the architect's backend; a
		// separate critic judges better, so say so once.
		name, model = cfg.RoleRunner("architect")
		from = cfg.Where("roles.architect.runner")
		r.State.criticOnce.Do(func() {
			r.Bus.Publish(event.Event{Type: event.Warning, Role: "critic",
				Message: "roles.critic is not configured: the critic uses the architect's runner " + name + " (a separate critic judges better)"})
		})
	case f.Runner != "":
		name, from = f.Runner, "--runner"
	}
	if f.Model != "" && rc.Model == "" {
		model = f.Model
	}
	return name, model, from
}

// IsAuto says whether a runner name asks the model selector.
func IsAuto(name string) bool { return name == config.Auto }

// Check builds every runner a role may use under f and, when locate,
// finds the program each starts, so a missing or misconfigured runner
// stops the run before anything starts. The runners built wait in State
// for Runner to take them.
func (r *Roster) Check(f Flags, locate bool) error {
	if err := r.checkEntries(); err != nil {
		return err
	}
	checked := map[string]runner.Runner{}
	defer func() {
		r.State.mu.Lock()
		r.State.checked = checked
		r.State.mu.Unlock()
	}()
	for _, ro := range r.Roles.List() {
		name, _, from := r.For(f, ro.Name)
		names := []string{name}
		if IsAuto(name) {
			cands, err := r.Candidates()
			if err != nil {
				return fmt.Errorf("%s: %w", from, err)
			}
			names, from = nil, r.Config.Where("selector.candidates")
			for _, c := range cands {
				names = append(names, c.Runner)
			}
		}
		for _, name := range names {
			if _, ok := checked[name]; ok {
				continue
			}
			rn, err := r.check(name, locate)
			if err != nil {
				checked = nil
				return fmt.Errorf("%s: %w", from, err)
			}
			checked[name] = rn
		}
	}
	return nil
}

// checkEntries refuses a roles entry for a role that does not exist (a
// typo would be ignored and its role run on the default runner) and a
// runners entry of a type nothing registers, which could never run:
// refused even when no role uses it, rather than kept as a setting that
// does nothing.
func (r *Roster) checkEntries() error {
	for _, name := range slices.Sorted(maps.Keys(r.Config.Roles)) {
		if !r.roleExists(name) {
			return fmt.Errorf("%s: no such role; fix the name (cadre roles list shows them) or remove the entry", r.Config.Where("roles."+name))
		}
	}
	types := r.Runners.Types()
	for _, name := range slices.Sorted(maps.Keys(r.Config.Runners)) {
		if typ := r.Config.RunnerType(name); !slices.Contains(types, typ) {
			path := "runners." + name
			if r.Config.Runners[name].Type != "" {
				path += ".type"
			}
			return fmt.Errorf("%s: unknown runner type %q: use one of %s", r.Config.Where(path), typ, strings.Join(types, ", "))
		}
	}
	return nil
}

// check builds runner name, refuses its role-keyed rules that name no
// role, and, when locate, finds the program it starts.
func (r *Roster) check(name string, locate bool) (runner.Runner, error) {
	rn, err := r.New(name)
	if err != nil {
		return nil, err
	}
	if k, ok := rn.(runner.RoleKeyed); ok {
		for _, kr := range k.KeyedRoles() {
			if kr.Role != "*" && !r.roleExists(kr.Role) {
				return nil, fmt.Errorf("%s: %q is no role, so the rule never matches; fix the name (cadre roles list shows them) or remove the rule", kr.Where, kr.Role)
			}
		}
	}
	if l, ok := rn.(runner.Locator); ok && locate {
		if err := l.Locate(); err != nil {
			return nil, err
		}
	}
	return rn, nil
}

func (r *Roster) roleExists(name string) bool {
	_, err := r.Roles.Get(name)
	return err == nil
}

// Runner returns runner name for a run: the one Check built, taken once,
// or a new one (a runner no role named at the check). Unless the run has
// its own --timeout (flag), the runner's own limit
// (runners.NAME.timeout) replaces defaults.timeout for its steps.
func (r *Roster) Runner(name string, flag time.Duration) (runner.Runner, error) {
	r.State.mu.Lock()
	rn, ok := r.State.checked[name]
	delete(r.State.checked, name)
	r.State.mu.Unlock()
	if !ok {
		var err error
		if rn, err = r.New(name); err != nil {
			return nil, err
		}
	}
	if d := r.Config.Runners[name].Timeout; d > 0 && flag == 0 {
		rn = withTimeout{Runner: rn, d: r.Config.StepTimeout(name)}
	}
	return rn, nil
}

// withTimeout gives every step of a runner the runner's own limit
// (runners.NAME.timeout) in place of defaults.timeout; --timeout, when
// given, wins over both and this wrapper is not used.
type withTimeout struct {
	runner.Runner
	d time.Duration
}

func (w withTimeout) Run(ctx context.Context, inv runner.Invocation) (runner.Result, error) {
	inv.Timeout = w.d
	return w.Runner.Run(ctx, inv)
}

// forbiddenEnv are variables no agent may receive, whatever a runner's
// settings say: the code host's credentials are cadre's alone.
func (r *Roster) forbiddenEnv(name string) bool {
	return slices.Contains(r.Config.ForgeTokenVars(), name)
}

// New builds runner name as cadre.yaml defines it (or its type's
// defaults when it is a type's name only).
func (r *Roster) New(name string) (runner.Runner, error) {
	rc := r.Config.Runners[name]
	typ := r.Config.RunnerType(name)
	var pass []string
	for _, k := range rc.Env {
		if r.forbiddenEnv(k) {
			r.Bus.Publish(event.Event{Type: event.Warning, Runner: name, Message: "runners." + name + ".env: " + k + " is cadre's code host credential and is never passed to an agent"})
			continue
		}
		pass = append(pass, k)
	}
	if len(rc.Env) > 0 && len(pass) == 0 {
		pass = []string{"CADRE_NO_EXTRA_ENV"} // keep "only what is listed" instead of the runner's defaults
	}
	rn, err := r.Runners.New(typ, runner.Settings{Name: name, Command: rc.Command, Args: rc.Args, Env: pass,
		URL: rc.URL, Model: rc.Model, Scenario: rc.Scenario, BaseDir: r.Root})
	if errors.Is(err, runner.ErrUnknown) {
		// Still ErrUnknown: an executor that retries failed steps tells it
		// from a failure that may pass. An entry that exists has a wrong
		// type, not a missing definition.
		types := strings.Join(r.Runners.Types(), ", ")
		if _, ok := r.Config.Runners[name]; ok && typ != name {
			return nil, fmt.Errorf("runner %s: %w type %q: fix runners.%s.type, one of %s", name, runner.ErrUnknown, typ, name, types)
		}
		return nil, fmt.Errorf("%w %q: define it under runners: in cadre.yaml or use one of %s", runner.ErrUnknown, typ, types)
	}
	return rn, err
}

// Choice is the model selector's pick for one step; the engine journals
// it (under these keys) so a resumed run asks the same runner again.
type Choice struct {
	Runner string `json:"runner"`
	Model  string `json:"model"`
	Reason string `json:"reason"`
}

// Candidates are the selector's candidates from cadre.yaml.
func (r *Roster) Candidates() ([]eval.Candidate, error) {
	cands, err := eval.ParseCandidates(r.Config.Selector.Candidates)
	if err != nil {
		return nil, fmt.Errorf("%s: selector.candidates: %w", r.Config.Where("selector.candidates"), err)
	}
	if len(cands) == 0 {
		return nil, fmt.Errorf("runner auto needs selector.candidates in cadre.yaml")
	}
	return cands, nil
}

// Choose asks the model selector which runner and model serve role, from
// the score store's evaluations of that role (docs/evaluation.md).
func (r *Roster) Choose(ctx context.Context, role string) (Choice, error) {
	cands, err := r.Candidates()
	if err != nil {
		return Choice{}, err
	}
	stats, err := evalstore.Stats(ctx, r.Store, role, cands)
	if err != nil {
		return Choice{}, fmt.Errorf("read scores of %s: %w", role, err)
	}
	sel := eval.Selector{MinSamples: r.Config.Selector.MinSamples, Explore: r.Config.Selector.Explore}
	c, err := sel.Select(cands, stats)
	if err != nil {
		return Choice{}, fmt.Errorf("select a runner for %s: %w", role, err)
	}
	model := c.Candidate.Model
	if model == "" {
		model = r.Config.Runners[c.Candidate.Runner].Model
	}
	return Choice{Runner: c.Candidate.Runner, Model: model, Reason: c.Reason}, nil
}
