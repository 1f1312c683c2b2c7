package run

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/cadre-dev/cadre/agent"
	"github.com/cadre-dev/cadre/internal/config"
)

// Limits bound a run's loops, overriding cadre.yaml's limits section for
// this run; a zero field keeps cadre.yaml's value.
type Limits struct {
	// MaxIterations bounds the moa workflow's rounds (limits.max_iterations).
	MaxIterations int
	// MaxAttempts bounds an agent step's attempts (limits.max_attempts).
	MaxAttempts int
	// MaxReviewRounds bounds the rounds a review sends work back
	// (limits.max_review_rounds).
	MaxReviewRounds int
	// MaxInsufficientLoops bounds the loop workflow's rounds without a
	// PASS (limits.max_insufficient_loops).
	MaxInsufficientLoops int
}

// apply sets l's non-zero limits in cfg, checked as cadre.yaml's are.
func (l Limits) apply(cfg *config.Config) error {
	set := []struct {
		name string
		v    int
		min  int
		dst  *int
	}{
		{"MaxIterations", l.MaxIterations, 1, &cfg.Limits.MaxIterations},
		{"MaxAttempts", l.MaxAttempts, 1, &cfg.Limits.MaxAttempts},
		{"MaxReviewRounds", l.MaxReviewRounds, 0, &cfg.Limits.MaxReviewRounds},
		{"MaxInsufficientLoops", l.MaxInsufficientLoops, 1, &cfg.Limits.MaxInsufficientLoops},
	}
	for _, s := range set {
		if s.v < 0 || (s.v != 0 && s.v < s.min) {
			return fmt.Errorf("Options.Limits.%s is %d; want at least %d (0 keeps cadre.yaml's)", s.name, s.v, s.min)
		}
		if s.v != 0 {
			*s.dst = s.v
		}
	}
	return nil
}

// useAgents makes cfg run each role of agents with its agent: the agent's
// runner becomes a runners entry, exactly as if cadre.yaml defined it (so
// the sandbox, the secrets kept from agents and the journal treat it as
// any other), and the role's runner and model point at it. It returns the
// agents' own prompts (WithPrompt), by role, for the engine's templates.
func useAgents(cfg *config.Config, agents map[string]*agent.Agent) (map[string]string, error) {
	if len(agents) == 0 {
		return nil, nil
	}
	cfg.Runners = maps.Clone(cfg.Runners)
	cfg.Roles = maps.Clone(cfg.Roles)
	if cfg.Runners == nil {
		cfg.Runners = map[string]config.RunnerConfig{}
	}
	if cfg.Roles == nil {
		cfg.Roles = map[string]config.RoleConfig{}
	}
	used := usedRunners(*cfg, agents)
	prompts := map[string]string{}
	type built struct {
		typ string
		s   agent.RunnerSettings
	}
	mine := map[string]built{}
	for _, role := range slices.Sorted(maps.Keys(agents)) {
		a := agents[role]
		if a == nil || a.Role() != role {
			return nil, fmt.Errorf("Options.Roles[%s]: want an agent doing %s (agent.New(%q, runner))", role, role, role)
		}
		r := a.Runner()
		s := r.Settings()
		if r.Type() == "" || s.Name == "" {
			return nil, fmt.Errorf("Options.Roles[%s]: the agent has no runner; build one with agent.NewRunner", role)
		}
		b := built{r.Type(), s}
		prev, again := mine[s.Name]
		if again && !reflect.DeepEqual(prev, b) {
			return nil, fmt.Errorf("Options.Roles[%s]: another agent's runner is also named %q; name them apart with agent.WithName", role, s.Name)
		}
		if _, ok := cfg.Runners[s.Name]; (ok || used[s.Name]) && !again {
			return nil, fmt.Errorf("Options.Roles[%s]: runner name %q is cadre.yaml's too; name the agent's runner apart with agent.WithName", role, s.Name)
		}
		mine[s.Name] = b
		rc, err := runnerConfig(r.Type(), s)
		if err != nil {
			return nil, fmt.Errorf("Options.Roles[%s]: %w", role, err)
		}
		cfg.Runners[s.Name] = rc
		rl := cfg.Roles[role]
		rl.Runner, rl.Model = s.Name, a.Model()
		cfg.Roles[role] = rl
		if p := a.Prompt(); p != "" {
			prompts[role] = p
		}
	}
	return prompts, nil
}

// usedRunners are the runner names cadre.yaml gives the roles agents
// leave to it: an agent's runner may not take one of their names.
func usedRunners(cfg config.Config, agents map[string]*agent.Agent) map[string]bool {
	used := map[string]bool{cfg.Defaults.Runner: true}
	for role, rc := range cfg.Roles {
		if _, ok := agents[role]; !ok && rc.Runner != "" {
			used[rc.Runner] = true
		}
	}
	return used
}

// runnerConfig is the runners entry of settings s of a runner of type
// typ. Relative paths are made absolute against the runner's base
// directory (else the current one), since the run resolves an entry's
// paths against the repository.
func runnerConfig(typ string, s agent.RunnerSettings) (config.RunnerConfig, error) {
	abs := func(p string) (string, error) {
		if p == "" || filepath.IsAbs(p) {
			return p, nil
		}
		base := s.BaseDir
		if base == "" {
			wd, err := os.Getwd()
			if err != nil {
				return "", fmt.Errorf("resolve %s: %w", p, err)
			}
			base = wd
		}
		return filepath.Abs(filepath.Join(base, p))
	}
	scenario, err := abs(s.Scenario)
	if err != nil {
		return config.RunnerConfig{}, err
	}
	command := s.Command
	if strings.ContainsRune(command, filepath.Separator) {
		// A bare program name is looked up on the PATH, not resolved.
		if command, err = abs(command); err != nil {
			return config.RunnerConfig{}, err
		}
	}
	return config.RunnerConfig{Type: typ, Command: command, Args: s.Args, Env: s.Env, URL: s.URL, Model: s.Model,
		Scenario: scenario}, nil
}
