package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/runner"
	"github.com/cadre-dev/cadre/internal/workflow"
)

// runnerFor resolves the runner name and model for role under opts, and
// where the name came from (for errors): a per-role setting wins over
// --runner, which wins over defaults.runner.
func (e *Engine) runnerFor(opts Options, roleName string) (name, model, from string) {
	name, model = e.d.Config.RoleRunner(roleName)
	rc := e.d.Config.Roles[roleName]
	from = e.d.Config.Where("defaults.runner")
	switch {
	case rc.Runner != "":
		from = e.d.Config.Where("roles." + roleName + ".runner")
	case roleName == "critic" && e.d.Config.Roles["architect"].Runner != "":
		// The critic defaults to the architect's backend; a
		// separate critic judges better, so say so once.
		name, model = e.d.Config.RoleRunner("architect")
		from = e.d.Config.Where("roles.architect.runner")
		e.criticOnce.Do(func() {
			e.d.Bus.Publish(event.Event{Type: event.Warning, Role: "critic",
				Message: "roles.critic is not configured: the critic uses the architect's runner " + name + " (a separate critic judges better)"})
		})
	case opts.Runner != "":
		name, from = opts.Runner, "--runner"
	}
	if opts.Model != "" && rc.Model == "" {
		model = opts.Model
	}
	return name, model, from
}

// checkWorkflows refuses a defaults.workflow that names no workflow: the
// run would start and fail every prompt or issue item, and a dry run would
// print a plan for it. (--workflow and a task file's workflow: are checked
// as the targets load.)
func (e *Engine) checkWorkflows(opts Options) error {
	w := e.d.Config.Defaults.Workflow
	if _, ok := e.d.Workflows.Get(w); ok || opts.Workflow != "" || w == workflow.PipelineWorkflow {
		return nil
	}
	return fmt.Errorf("%w: %s: unknown workflow %q (available: runner, %s)", ErrPreflight, e.d.Config.Where("defaults.workflow"), w,
		strings.Join(e.d.Workflows.Names(), ", "))
}

// checkRunners builds every runner a role may use, and finds the program
// each starts, so a missing or misconfigured runner stops the run before
// anything starts.
func (e *Engine) checkRunners(opts Options) error {
	// A roles entry for a role that does not exist (a typo) would be
	// ignored and its role run on the default runner.
	for _, name := range slices.Sorted(maps.Keys(e.d.Config.Roles)) {
		if !e.roleExists(name) {
			return fmt.Errorf("%w: %s: no such role; fix the name (cadre roles list shows them) or remove the entry", ErrPreflight, e.d.Config.Where("roles."+name))
		}
	}
	// An entry of a type nothing registers could never run: refused even
	// when no role uses it, rather than kept as a setting that does nothing.
	types := e.d.Runners.Types()
	for _, name := range slices.Sorted(maps.Keys(e.d.Config.Runners)) {
		if typ := e.d.Config.RunnerType(name); !slices.Contains(types, typ) {
			path := "runners." + name
			if e.d.Config.Runners[name].Type != "" {
				path += ".type"
			}
			return fmt.Errorf("%w: %s: unknown runner type %q: use one of %s", ErrPreflight, e.d.Config.Where(path), typ, strings.Join(types, ", "))
		}
	}
	checked := map[string]runner.Runner{}
	defer func() {
		e.checkedMu.Lock()
		e.checked = checked
		e.checkedMu.Unlock()
	}()
	for _, ro := range e.d.Roles.List() {
		name, _, from := e.runnerFor(opts, ro.Name)
		names := []string{name}
		if isAuto(name) {
			cands, err := e.candidates()
			if err != nil {
				return fmt.Errorf("%w: %s: %w", ErrPreflight, from, err)
			}
			names, from = nil, e.d.Config.Where("selector.candidates")
			for _, c := range cands {
				names = append(names, c.Runner)
			}
		}
		for _, name := range names {
			if _, ok := checked[name]; ok {
				continue
			}
			r, err := e.newRunner(name)
			if k, ok := r.(runner.RoleKeyed); ok && err == nil {
				for _, kr := range k.KeyedRoles() {
					if kr.Role != "*" && !e.roleExists(kr.Role) {
						err = fmt.Errorf("%s: %q is no role, so the rule never matches; fix the name (cadre roles list shows them) or remove the rule", kr.Where, kr.Role)
						break
					}
				}
			}
			if err == nil && opts.Temporal == nil {
				// A missing agent CLI would fail the run's first step; on
				// Temporal the workers, not this process, run the agents.
				if l, ok := r.(runner.Locator); ok {
					err = l.Locate()
				}
			}
			if err != nil {
				checked = nil
				return fmt.Errorf("%w: %s: %w", ErrPreflight, from, err)
			}
			checked[name] = r
		}
	}
	return nil
}

// trip stops every new step on a runner for the rest of the run.
func (rs *runState) trip(name, why string) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.tripped == nil {
		rs.tripped = map[string]string{}
	}
	rs.tripped[name] = why
}

// broken says why a runner takes no new step in this run, if it does not.
func (rs *runState) broken(name string) string {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.tripped[name]
}

// runner returns the run's instance of the named runner, building it on
// first use (a script runner parses its scenario once, not per step).
func (rs *runState) runner(e *Engine, name string) (runner.Runner, error) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if r, ok := rs.runners[name]; ok {
		return r, nil
	}
	r, err := e.checkedRunner(name)
	if err != nil {
		return nil, err
	}
	if d := e.d.Config.Runners[name].Timeout; d > 0 && rs.opts.Timeout == 0 {
		r = withTimeout{Runner: r, d: e.d.Config.StepTimeout(name)}
	}
	if rs.runners == nil {
		rs.runners = map[string]runner.Runner{}
	}
	rs.runners[name] = r
	return r, nil
}

// checkedRunner takes the runner checkRunners built under name, once, or
// builds one when there is none (a runner no role named at the check).
func (e *Engine) checkedRunner(name string) (runner.Runner, error) {
	e.checkedMu.Lock()
	r, ok := e.checked[name]
	delete(e.checked, name)
	e.checkedMu.Unlock()
	if ok {
		return r, nil
	}
	return e.newRunner(name)
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
func (e *Engine) forbiddenEnv(name string) bool {
	tokenEnv := e.d.Config.GitHub.TokenEnv
	return name == tokenEnv || name == "GITHUB_TOKEN" || name == "GH_TOKEN" || name == "GH_ENTERPRISE_TOKEN"
}

func (e *Engine) newRunner(name string) (runner.Runner, error) {
	rc := e.d.Config.Runners[name]
	typ := e.d.Config.RunnerType(name)
	var pass []string
	for _, k := range rc.Env {
		if e.forbiddenEnv(k) {
			e.d.Bus.Publish(event.Event{Type: event.Warning, Runner: name, Message: "runners." + name + ".env: " + k + " is cadre's GitHub credential and is never passed to an agent"})
			continue
		}
		pass = append(pass, k)
	}
	if len(rc.Env) > 0 && len(pass) == 0 {
		pass = []string{"CADRE_NO_EXTRA_ENV"} // keep "only what is listed" instead of the runner's defaults
	}
	rn, err := e.d.Runners.New(typ, runner.Settings{Name: name, Command: rc.Command, Args: rc.Args, Env: pass,
		URL: rc.URL, Model: rc.Model, Scenario: rc.Scenario, BaseDir: e.d.Root})
	if errors.Is(err, runner.ErrUnknown) {
		// Still ErrUnknown: an executor that retries failed steps tells it
		// from a failure that may pass. An entry that exists has a wrong
		// type, not a missing definition.
		types := strings.Join(e.d.Runners.Types(), ", ")
		if _, ok := e.d.Config.Runners[name]; ok && typ != name {
			return nil, fmt.Errorf("runner %s: %w type %q: fix runners.%s.type, one of %s", name, runner.ErrUnknown, typ, name, types)
		}
		return nil, fmt.Errorf("%w %q: define it under runners: in cadre.yaml or use one of %s", runner.ErrUnknown, typ, types)
	}
	return rn, err
}
