// Package runspec is what a run is asked to do, as the command line gives
// it and the journal keeps it: its Options (stored with the run as JSON,
// so resume redoes them), the overrides a resume may bring, its limits
// resolved once against cadre.yaml (Settings), and reading a journaled run
// back (Stored: a named run, or the one a plain resume continues;
// DetachedTemporal: a run on Temporal whose starting process is gone).
package runspec

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/cadre-dev/cadre/internal/codehost"
	"github.com/cadre-dev/cadre/internal/config"
	"github.com/cadre-dev/cadre/internal/runlock"
	"github.com/cadre-dev/cadre/internal/store"
)

// Options say what to run; they are stored with the run so resume can redo them.
type Options struct {
	Targets  []string      `json:"targets,omitempty"`
	Column   string        `json:"column,omitempty"`
	Workflow string        `json:"workflow,omitempty"`
	Runner   string        `json:"runner,omitempty"`
	Model    string        `json:"model,omitempty"`
	Timeout  time.Duration `json:"timeout,omitempty"`
	InPlace  bool          `json:"in_place,omitempty"`
	// Parallel is how many items run at once in worktree mode (0: limits.parallel_issues).
	Parallel int `json:"parallel,omitempty"`
	// Agents is how many agent steps of one item run at once (0: limits.parallel_agents).
	Agents int `json:"agents,omitempty"`
	// BudgetUSD stops new steps once the run has spent this much (0:
	// limits.budget_usd; NoBudget: no limit).
	BudgetUSD float64 `json:"budget_usd,omitempty"`
	// Query selects GitHub issues to work on, besides the targets.
	Query codehost.IssueQuery `json:"query,omitempty"`
	// Prompt is an ad-hoc item's description (cadre do).
	Prompt string `json:"prompt,omitempty"`
	// Again works on issues whose pull request an earlier run opened and
	// which is open or merged, which a run otherwise leaves alone.
	Again bool `json:"again,omitempty"`
	// Temporal, when set, says the run's items run as Temporal workflows
	// there (engine.StartWith), so resume, approve and stop reach them.
	Temporal *TemporalTarget `json:"temporal,omitempty"`
	// Watch says cadre watch's intake started the run: a watch that finds
	// it interrupted (its process killed) resumes it, since intake takes
	// up only issues without an item.
	Watch bool `json:"watch,omitempty"`
}

// NoBudget is the BudgetUSD of a run without a budget, whatever
// limits.budget_usd says (cadre resume --budget-usd 0).
const NoBudget = -1

// TemporalTarget is where a run's item workflows live.
type TemporalTarget struct {
	Address   string `json:"address"`
	Namespace string `json:"namespace"`
	TaskQueue string `json:"task_queue"`
	// Heartbeat is the run's --heartbeat-timeout (0: the default), kept
	// so that a resumed run's steps move between workers as they did.
	Heartbeat time.Duration `json:"heartbeat,omitempty"`
}

// Overrides change a stored run's options on resume.
type Overrides struct {
	BudgetUSD *float64
	Parallel  int
	// Retry names the items of the run cadre retry gives their attempts
	// again (GrantRetry), once the resume holds the run lock; no option
	// of the run.
	Retry []string
}

// Empty says whether ov changes none of the run's options.
func (ov Overrides) Empty() bool { return ov.BudgetUSD == nil && ov.Parallel <= 0 }

// Override is o with ov applied: a budget of 0 lifts the limit,
// cadre.yaml's too (cadre resume --budget-usd 0).
func (o Options) Override(ov Overrides) Options {
	if ov.BudgetUSD != nil {
		o.BudgetUSD = *ov.BudgetUSD
		if o.BudgetUSD == 0 {
			o.BudgetUSD = NoBudget
		}
	}
	if ov.Parallel > 0 {
		o.Parallel = ov.Parallel
	}
	return o
}

// WorkflowName is the run's workflow as journaled: --workflow, else
// the stage pipeline (its wire name).
func (o Options) WorkflowName() string {
	if o.Workflow == "" {
		return "runner"
	}
	return o.Workflow
}

// NewID returns a sortable, readable run id.
func NewID(now time.Time) string {
	var b [2]byte
	rand.Read(b[:])
	return now.UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:])
}

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

// DetachedTemporal reports the run of st holding the lock file at lock
// when it is on Temporal, its process (pid) is gone, and its item has not
// ended: the item's workflow may still run, in the run's worktrees. run is
// "" for any other lock, or none.
func DetachedTemporal(ctx context.Context, st *store.Store, lock string) (run, item string, pid int, err error) {
	li, err := runlock.Stored(lock)
	if err != nil || li.Alive() {
		return "", "", 0, nil // no lock, or a live one (runlock.Acquire refuses it itself)
	}
	r, opts, err := Stored(ctx, st, li.Run)
	if err != nil || opts.Temporal == nil || r.Status != store.RunRunning {
		return "", "", 0, nil
	}
	items, err := st.Items(ctx, li.Run)
	if err != nil {
		return "", "", 0, err
	}
	for _, it := range items {
		switch it.Status {
		case store.ItemCompleted, store.ItemSkipped, store.ItemFailed, store.ItemStopped:
			continue
		}
		return li.Run, it.ID, li.PID, nil
	}
	return "", "", 0, nil
}

// Stored reads run runID (when "", the one a plain resume continues:
// see toResume) and the options it was started with.
func Stored(ctx context.Context, st *store.Store, runID string) (store.Run, Options, error) {
	var r store.Run
	var err error
	if runID == "" {
		r, err = toResume(ctx, st)
	} else {
		r, err = st.GetRun(ctx, runID)
	}
	if err != nil {
		return r, Options{}, err
	}
	var opts Options
	if err := json.Unmarshal(r.Options, &opts); err != nil {
		return r, opts, fmt.Errorf("run %s: options: %w", r.ID, err)
	}
	return r, opts, nil
}

// toResume is the run a plain resume continues: the latest the journal
// says is running though its process is gone, which was killed (a later
// run may have taken over its lock since, and be the latest), or else the
// latest run.
func toResume(ctx context.Context, st *store.Store) (store.Run, error) {
	runs, err := st.Runs(ctx)
	if err != nil {
		return store.Run{}, err
	}
	for _, r := range runs {
		if r.Status == store.RunRunning && !runlock.Alive(r.PID) {
			return r, nil
		}
	}
	if len(runs) == 0 {
		return store.Run{}, fmt.Errorf("latest run: no runs: %w", store.ErrNotFound)
	}
	return runs[0], nil
}
