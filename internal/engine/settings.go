package engine

import (
	"time"

	"github.com/cadre-dev/cadre/internal/config"
)

// Settings are a run's limits resolved once from its options and
// cadre.yaml, for every part of cadre that needs them (the engine, the
// Temporal starter and workers, the live view): none re-defaults them.
type Settings struct {
	Parallel int           // items at once: 1 in place
	Agents   int           // agent steps of one item at once
	Timeout  time.Duration // an agent step's limit
	Budget   float64       // USD the run may spend; 0: no limit
}

// Settings resolves o against cfg: an option left zero takes cadre.yaml's
// limit or default; a budget of NoBudget has none, whatever cadre.yaml
// says.
func (o Options) Settings(cfg config.Config) Settings {
	s := Settings{Parallel: o.Parallel, Agents: o.Agents, Timeout: o.Timeout, Budget: o.BudgetUSD}
	if s.Parallel <= 0 {
		s.Parallel = cfg.Limits.ParallelIssues
	}
	if o.InPlace || s.Parallel < 1 {
		s.Parallel = 1
	}
	if s.Agents <= 0 {
		s.Agents = cfg.Limits.ParallelAgents
	}
	s.Agents = max(s.Agents, 1)
	if s.Timeout <= 0 {
		s.Timeout = time.Duration(cfg.Defaults.Timeout)
	}
	if s.Budget == 0 {
		s.Budget = cfg.Limits.BudgetUSD
	}
	s.Budget = max(s.Budget, 0)
	return s
}
