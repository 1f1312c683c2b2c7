package engine

import (
	"context"
	"fmt"

	"github.com/cadre-dev/cadre/internal/roster"
	"github.com/cadre-dev/cadre/internal/runner"
)

// roster resolves this repository's roles to runners (package roster).
func (e *Engine) roster() *roster.Roster {
	return &roster.Roster{Config: e.d.Config, Runners: e.d.Runners, Roles: e.d.Roles, Root: e.d.Root,
		Store: e.d.Store, Bus: e.d.Bus, State: &e.rosterState}
}

// flags are the run's --runner and --model.
func flags(opts Options) roster.Flags { return roster.Flags{Runner: opts.Runner, Model: opts.Model} }

// runnerFor resolves the runner name and model for role under opts, and
// where the name came from (roster.Roster.For).
func (e *Engine) runnerFor(opts Options, roleName string) (name, model, from string) {
	return e.roster().For(flags(opts), roleName)
}

// checkRunners builds every runner a role may use, and finds the program
// each starts (roster.Roster.Check), so a missing or misconfigured runner
// stops the run before anything starts. On Temporal the workers, not this
// process, run the agents: their programs are not looked for here.
func (e *Engine) checkRunners(opts Options) error {
	if err := e.roster().Check(flags(opts), opts.Temporal == nil); err != nil {
		return fmt.Errorf("%w: %w", ErrPreflight, err)
	}
	return nil
}

// newRunner builds runner name as cadre.yaml defines it.
func (e *Engine) newRunner(name string) (runner.Runner, error) { return e.roster().New(name) }

// choose asks the model selector which runner and model serve role.
func (e *Engine) choose(ctx context.Context, role string) (roster.Choice, error) {
	return e.roster().Choose(ctx, role)
}

// isAuto says whether a runner name asks the model selector.
func isAuto(name string) bool { return roster.IsAuto(name) }

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
	r, err := e.roster().Runner(name, rs.opts.Timeout)
	if err != nil {
		return nil, err
	}
	if rs.runners == nil {
		rs.runners = map[string]runner.Runner{}
	}
	rs.runners[name] = r
	return r, nil
}
