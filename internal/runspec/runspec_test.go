package runspec

import (
	"testing"
	"time"

	"github.com/cadre-dev/cadre/internal/config"
)

func TestSettings(t *testing.T) {
	cfg := config.Default()
	cfg.Limits.ParallelIssues, cfg.Limits.ParallelAgents, cfg.Limits.BudgetUSD = 4, 3, 2.5
	cfg.Defaults.Timeout = config.Duration(7 * time.Minute)
	tests := []struct {
		name string
		o    Options
		want Settings
	}{
		{"cadre.yaml's", Options{}, Settings{Parallel: 4, Agents: 3, Timeout: 7 * time.Minute, Budget: 2.5}},
		{"the run's own", Options{Parallel: 2, Agents: 5, Timeout: time.Minute, BudgetUSD: 9},
			Settings{Parallel: 2, Agents: 5, Timeout: time.Minute, Budget: 9}},
		{"in place one at a time", Options{InPlace: true, Parallel: 6}, Settings{Parallel: 1, Agents: 3, Timeout: 7 * time.Minute, Budget: 2.5}},
		{"no budget whatever cadre.yaml says", Options{BudgetUSD: NoBudget}, Settings{Parallel: 4, Agents: 3, Timeout: 7 * time.Minute}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.o.Settings(cfg); got != tt.want {
				t.Errorf("%+v.Settings = %+v, want %+v", tt.o, got, tt.want)
			}
		})
	}
	zero := config.Default()
	zero.Limits.ParallelIssues, zero.Limits.ParallelAgents, zero.Limits.BudgetUSD = 0, 0, 0
	if got := (Options{}).Settings(zero); got.Parallel != 1 || got.Agents != 1 || got.Budget != 0 {
		t.Errorf("limits of 0 resolve to %+v, want one item and one agent at a time and no budget", got)
	}
}

// TestOverride: a resume's budget replaces the run's, 0 lifting it
// whatever cadre.yaml says; its parallelism replaces the run's when set.
func TestOverride(t *testing.T) {
	zero, nine := 0.0, 9.0
	o := Options{BudgetUSD: 3, Parallel: 2}
	tests := []struct {
		ov   Overrides
		want Options
	}{
		{Overrides{}, o},
		{Overrides{BudgetUSD: &nine}, Options{BudgetUSD: 9, Parallel: 2}},
		{Overrides{BudgetUSD: &zero}, Options{BudgetUSD: NoBudget, Parallel: 2}},
		{Overrides{Parallel: 5}, Options{BudgetUSD: 3, Parallel: 5}},
	}
	for _, tt := range tests {
		got := o.Override(tt.ov)
		if got.BudgetUSD != tt.want.BudgetUSD || got.Parallel != tt.want.Parallel {
			t.Errorf("Override(%+v) = %+v, want %+v", tt.ov, got, tt.want)
		}
		if tt.ov.Empty() != (tt.ov.BudgetUSD == nil && tt.ov.Parallel == 0) {
			t.Errorf("%+v.Empty() = %v", tt.ov, tt.ov.Empty())
		}
	}
}
