// Package engine runs a run: it loads items, drives each through its
// workflow's pure state machine, and performs the machine's decisions as
// journaled effects (agent steps, commits), so that a resumed run replays
// what completed and redoes only what did not.
package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/cadre-dev/cadre/internal/config"
	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/item/taskfile"
	"github.com/cadre-dev/cadre/internal/role"
	"github.com/cadre-dev/cadre/internal/runner"
	"github.com/cadre-dev/cadre/internal/sandbox"
	"github.com/cadre-dev/cadre/internal/store"
	"github.com/cadre-dev/cadre/internal/workflow"
	"github.com/cadre-dev/cadre/internal/workspace"
)

// ErrPreflight is wrapped by every error found before a run starts
// (bad targets, task files, runners, dirty tree): nothing was changed.
var ErrPreflight = errors.New("pre-flight")

// ErrNothingToResume is wrapped when there is no run to resume.
var ErrNothingToResume = errors.New("nothing to resume")

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
	// BudgetUSD stops new steps once the run has spent this much (0: limits.budget_usd).
	BudgetUSD float64 `json:"budget_usd,omitempty"`
	// Query selects GitHub issues to work on, besides the targets.
	Query IssueQuery `json:"query,omitempty"`
	// Prompt is an ad-hoc item's description (cadre do).
	Prompt string `json:"prompt,omitempty"`
}

// Deps are the engine's explicit dependencies.
type Deps struct {
	Root    string // repository top level
	Config  config.Config
	Store   *store.Store
	Roles   *role.Registry
	Runners *runner.Registry
	// Workflows are the declarative workflows (built-in and .cadre/workflows).
	Workflows *workflow.Registry
	// Forge reaches the code host for issue items; nil without GitHub access.
	Forge Forge
	Bus   *event.Bus
	PID   int
	// Crash, when set, is called at named points of the journal protocol;
	// tests make it kill the process there (see CrashPoints).
	Crash func(point string)
	// Sandbox confines every agent process (cadre.yaml sandbox); nil runs
	// them unconfined.
	Sandbox *sandbox.Policy
}

// Crash points, in the order a step meets them.
const (
	CrashStepStarted  = "step-started"  // after a step's start is journaled
	CrashAgentExited  = "agent-exited"  // after the agent exits, before its result is journaled
	CrashCommitted    = "committed"     // after a commit, before it is journaled
	CrashBetweenItems = "between-items" // after one item ended, before the next starts
	CrashPushed       = "pushed"        // after a branch was pushed, before it is journaled
	CrashPRCreated    = "pr-created"    // after a pull request was opened, before it is journaled
)

// CrashPoints lists every named crash point.
var CrashPoints = []string{CrashStepStarted, CrashAgentExited, CrashCommitted, CrashBetweenItems}

// PublishCrashPoints are the crash points of publishing an issue item.
var PublishCrashPoints = []string{CrashPushed, CrashPRCreated}

// Engine runs and resumes runs in one repository.
type Engine struct {
	d          Deps
	repo       *workspace.Repo
	wts        *workspace.Worktrees
	criticOnce sync.Once
}

// New returns an engine for d.Root, which must be a git working tree.
func New(ctx context.Context, d Deps) (*Engine, error) {
	repo, err := workspace.Open(ctx, d.Root)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPreflight, err)
	}
	if d.Crash == nil {
		d.Crash = func(string) {}
	}
	if d.PID == 0 {
		d.PID = os.Getpid()
	}
	if d.Workflows == nil {
		flows, err := workflow.LoadDefs("", nil)
		if err != nil {
			return nil, err
		}
		d.Workflows = flows
	}
	d.Root = repo.Dir
	return &Engine{d: d, repo: repo, wts: workspace.NewWorktrees(repo)}, nil
}

// StateDir is the repository's .cadre directory.
func (e *Engine) StateDir() string { return filepath.Join(e.d.Root, workspace.StateDir) }

// Summary is the outcome of a run.
type Summary struct {
	Run      string
	Status   string // a store run status
	Reason   string // why the run stopped, when it did not complete
	Items    []ItemSummary
	Usage    event.Usage
	Duration time.Duration
	Started  time.Time
	Updated  time.Time
}

// ItemSummary is one item's outcome.
type ItemSummary struct {
	ID, Title, Stage, Status, Reason string
	CurrentStep                      string
	Attempts, Steps                  int
	Usage                            event.Usage
	Branch                           string // the item's own branch; "" in place
	PR                               string // its pull request's URL, once opened
	PRNumber                         int
	// Picks are the model selector's latest choice per role (runner auto).
	Picks []Pick
}

// Pick is one choice of the model selector, as journaled.
type Pick struct {
	Step   string `json:"step"`
	Role   string `json:"role"`
	Runner string `json:"runner"`
	Model  string `json:"model"`
	Reason string `json:"reason"`
}

// NewRunID returns a sortable, readable run id.
func NewRunID(now time.Time) string {
	var b [2]byte
	rand.Read(b[:])
	return now.UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:])
}

// Start begins a new run of opts.
func (e *Engine) Start(ctx context.Context, opts Options) (Summary, error) {
	runID, release, err := e.create(ctx, opts)
	if err != nil {
		return Summary{}, err
	}
	defer release()
	return e.execute(ctx, runID, opts, false)
}

// create checks opts, journals a new run with its items and takes the
// run's lock, which release gives back.
func (e *Engine) create(ctx context.Context, opts Options) (runID string, release func(), err error) {
	if err := e.repo.ExcludeState(ctx); err != nil {
		return "", nil, fmt.Errorf("%w: %w", ErrPreflight, err)
	}
	if err := e.checkWorkflows(opts); err != nil {
		return "", nil, err
	}
	runID = NewRunID(time.Now())
	items, err := e.loadTargets(ctx, runID, opts)
	if err != nil {
		return "", nil, err
	}
	if err := e.checkRunners(opts); err != nil {
		return "", nil, err
	}
	lk, err := acquireLock(e.StateDir(), runID, e.d.PID, e.warn(runID))
	if err != nil {
		return "", nil, fmt.Errorf("%w: %w", ErrPreflight, err)
	}
	defer func() {
		if err != nil {
			lk.release()
		}
	}()
	if opts.InPlace {
		// In place, the agents write in this checkout: leftovers of a failed
		// run would be committed with the next task.
		if dirty, err := e.repo.Dirty(ctx); err != nil {
			return "", nil, fmt.Errorf("%w: %w", ErrPreflight, err)
		} else if len(dirty) > 0 {
			return "", nil, fmt.Errorf("%w: the working tree has uncommitted changes (%s): commit, stash or discard them first (leftovers of a failed run?)", ErrPreflight, listFiles(dirty))
		}
	} else if _, err := e.repo.Git(ctx, "rev-parse", "--verify", "-q", e.d.Config.BaseBranch+"^{commit}"); err != nil {
		return "", nil, fmt.Errorf("%w: base_branch %q has no commit to branch from: set base_branch in cadre.yaml (or commit first)", ErrPreflight, e.d.Config.BaseBranch)
	}
	optsJSON, _ := json.Marshal(opts)
	if err := e.d.Store.CreateRun(ctx, store.Run{ID: runID, Repo: e.d.Root, Workflow: workflowName(opts), Options: optsJSON, PID: e.d.PID}); err != nil {
		return "", nil, err
	}
	for _, t := range items {
		source := "task"
		if strings.HasPrefix(t.Path, e.StateDir()) {
			source = "prompt"
			if _, err := os.Stat(filepath.Join(filepath.Dir(t.Path), "issue.json")); err == nil {
				source = "github"
			}
		}
		if err := e.d.Store.AddItem(ctx, store.Item{RunID: runID, ID: t.ID, Source: source, Ref: t.Path, Title: t.Title,
			InitStage: t.Stage, InitAttempts: t.Attempts, Stage: t.Stage, Attempts: t.Attempts}); err != nil {
			return "", nil, err
		}
	}
	return runID, lk.release, nil
}

// ResumeOverrides change a stored run's options on resume.
type ResumeOverrides struct {
	BudgetUSD *float64
	Parallel  int
}

// Resume continues run runID, or the latest run when runID is empty.
func (e *Engine) Resume(ctx context.Context, runID string) (Summary, error) {
	return e.ResumeWith(ctx, runID, ResumeOverrides{})
}

// ResumeWith continues a run with some options changed (a higher budget).
func (e *Engine) ResumeWith(ctx context.Context, runID string, ov ResumeOverrides) (Summary, error) {
	var r store.Run
	var err error
	if runID == "" {
		r, err = e.d.Store.LatestRun(ctx)
	} else {
		r, err = e.d.Store.GetRun(ctx, runID)
	}
	if errors.Is(err, store.ErrNotFound) {
		if runID == "" {
			return Summary{}, fmt.Errorf("%w: no run recorded in %s", ErrNothingToResume, e.StateDir())
		}
		return Summary{}, fmt.Errorf("%w: no run %q (see cadre status)", ErrNothingToResume, runID)
	}
	if err != nil {
		return Summary{}, err
	}
	if r.Status == store.RunCompleted {
		return Summary{}, fmt.Errorf("%w: run %s already completed", ErrNothingToResume, r.ID)
	}
	if r.Workflow == store.WorkflowBench {
		return Summary{}, fmt.Errorf("%w: run %s is a benchmark: continue it with cadre bench and the same roles, runners and repeat", ErrNothingToResume, r.ID)
	}
	var opts Options
	if err := json.Unmarshal(r.Options, &opts); err != nil {
		return Summary{}, fmt.Errorf("run %s: options: %w", r.ID, err)
	}
	if ov.BudgetUSD != nil {
		opts.BudgetUSD = *ov.BudgetUSD
	}
	if ov.Parallel > 0 {
		opts.Parallel = ov.Parallel
	}
	if err := e.checkRunners(opts); err != nil {
		return Summary{}, err
	}
	lk, err := acquireLock(e.StateDir(), r.ID, e.d.PID, e.warn(r.ID))
	if err != nil {
		return Summary{}, fmt.Errorf("%w: %w", ErrPreflight, err)
	}
	defer lk.release()
	os.Remove(e.stopPath(r.ID))
	return e.execute(ctx, r.ID, opts, true)
}

func workflowName(o Options) string {
	if o.Workflow == "" {
		return "runner"
	}
	return o.Workflow
}

func (e *Engine) warn(run string) func(string) {
	return func(msg string) { e.d.Bus.Publish(event.Event{Run: run, Type: event.Warning, Message: msg}) }
}

func listFiles(paths []string) string {
	const show = 5
	if len(paths) <= show {
		return strings.Join(paths, ", ")
	}
	return strings.Join(paths[:show], ", ") + fmt.Sprintf(" and %d more", len(paths)-show)
}

// loadTargets reads the task files a run works on, in dependency order.
func (e *Engine) loadTargets(ctx context.Context, runID string, opts Options) ([]*taskfile.Task, error) {
	if w := opts.Workflow; w != "" && w != workflow.RunnerWorkflow {
		if _, ok := e.d.Workflows.Get(w); !ok {
			return nil, fmt.Errorf("%w: --workflow %s: unknown workflow (available: runner, %s)", ErrPreflight, w, strings.Join(e.d.Workflows.Names(), ", "))
		}
	}
	if opts.Column != "" && !validStage(opts.Column) {
		return nil, fmt.Errorf("%w: --column %q: unknown stage (want one of %s)", ErrPreflight, opts.Column, strings.Join(taskfile.Stages, ", "))
	}
	targets := opts.Targets
	var issues []*taskfile.Task // generated task files: issues and a prompt
	if opts.Prompt != "" {
		t, err := e.promptTask(runID, opts.Prompt)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrPreflight, err)
		}
		if len(targets) == 0 && opts.Query.Empty() {
			return []*taskfile.Task{t}, nil
		}
		issues = append(issues, t)
	}
	if !opts.Query.Empty() {
		if e.d.Forge == nil {
			return nil, fmt.Errorf("%w: issue query: %w", ErrPreflight, errNoForge)
		}
		found, err := e.d.Forge.Issues(ctx, opts.Query)
		if err != nil {
			return nil, fmt.Errorf("%w: issue query: %w", ErrPreflight, err)
		}
		if len(found) == 0 {
			return nil, fmt.Errorf("%w: no issue matches the query", ErrPreflight)
		}
		for _, is := range found {
			targets = append(targets, fmt.Sprintf("%s#%d", is.Repo, is.Number))
		}
	}
	if len(targets) == 0 {
		targets = []string{filepath.Join(e.d.Root, e.d.Config.TasksDir)}
	}
	var paths []string
	for _, t := range targets {
		fi, err := os.Stat(t)
		if err != nil && isIssueRef(t) {
			if e.d.Forge == nil {
				return nil, fmt.Errorf("%w: %s: %w", ErrPreflight, t, errNoForge)
			}
			is, err := e.d.Forge.Issue(ctx, t)
			if err != nil {
				return nil, fmt.Errorf("%w: issue %s: %w", ErrPreflight, t, err)
			}
			if reason := e.refuseIssue(is); reason != "" {
				return nil, fmt.Errorf("%w: issue %s: %s", ErrPreflight, t, reason)
			}
			task, err := e.issueTask(runID, is)
			if err != nil {
				return nil, fmt.Errorf("%w: issue %s: %w", ErrPreflight, t, err)
			}
			issues = append(issues, task)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %s: no such task file or directory", ErrPreflight, relErr(errors.New(t), e.d.Root))
		}
		if !fi.IsDir() {
			paths = append(paths, t)
			continue
		}
		found, err := taskfile.Find(t)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrPreflight, err)
		}
		paths = append(paths, found...)
	}
	seen := map[string]string{}
	var tasks []*taskfile.Task
	for _, p := range paths {
		abs, err := filepath.Abs(p)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrPreflight, err)
		}
		if rel, err := filepath.Rel(e.d.Root, abs); err != nil || strings.HasPrefix(rel, "..") {
			return nil, fmt.Errorf("%w: %s is outside the repository %s", ErrPreflight, p, e.d.Root)
		}
		t, err := taskfile.Load(abs)
		if err != nil {
			return nil, fmt.Errorf("%w: %s", ErrPreflight, relErr(err, e.d.Root))
		}
		if err := workspace.CheckItemID(t.ID); err != nil {
			return nil, fmt.Errorf("%w: %s: %w: rename the file", ErrPreflight, relErr(errors.New(abs), e.d.Root), err)
		}
		if prev, dup := seen[t.ID]; dup {
			if prev == abs {
				continue
			}
			return nil, fmt.Errorf("%w: task id %q is used by both %s and %s: rename one", ErrPreflight, t.ID, prev, abs)
		}
		seen[t.ID] = abs
		if w := t.Workflow; w != "" && w != workflow.RunnerWorkflow && opts.Workflow == "" {
			if _, ok := e.d.Workflows.Get(w); !ok {
				return nil, fmt.Errorf("%w: %s: workflow %q is unknown (available: runner, %s)", ErrPreflight, relErr(errors.New(abs), e.d.Root), w, strings.Join(e.d.Workflows.Names(), ", "))
			}
		}
		if opts.Column != "" && t.Stage != opts.Column {
			continue
		}
		tasks = append(tasks, t)
	}
	tasks = append(tasks, issues...)
	if len(tasks) == 0 {
		what := relErr(errors.New("no task files found in "+strings.Join(targets, ", ")), e.d.Root)
		if opts.Column != "" {
			what = fmt.Sprintf("no task in stage %s", opts.Column)
		}
		return nil, fmt.Errorf("%w: %s", ErrPreflight, what)
	}
	return orderByDeps(tasks)
}

// relErr shortens absolute paths in a task file error to repository-relative ones.
func relErr(err error, root string) string {
	return strings.ReplaceAll(err.Error(), root+string(filepath.Separator), "")
}

func validStage(s string) bool {
	for _, st := range taskfile.Stages {
		if st == s {
			return true
		}
	}
	return false
}

// orderByDeps sorts tasks so each comes after the tasks it depends on;
// ties keep file order. A cycle is a pre-flight error naming its tasks.
func orderByDeps(tasks []*taskfile.Task) ([]*taskfile.Task, error) {
	index := map[string]*taskfile.Task{}
	for _, t := range tasks {
		index[t.ID] = t
	}
	var out []*taskfile.Task
	state := map[string]int{} // 1 visiting, 2 done
	var visit func(t *taskfile.Task, path []string) error
	visit = func(t *taskfile.Task, path []string) error {
		switch state[t.ID] {
		case 1:
			return fmt.Errorf("%w: tasks depend on each other in a cycle: %s", ErrPreflight, strings.Join(append(path, t.ID), " → "))
		case 2:
			return nil
		}
		state[t.ID] = 1
		for _, d := range t.DependsOn {
			if dep, ok := index[d]; ok {
				if err := visit(dep, append(path, t.ID)); err != nil {
					return err
				}
			}
		}
		state[t.ID] = 2
		out = append(out, t)
		return nil
	}
	for _, t := range tasks {
		if err := visit(t, nil); err != nil {
			return nil, err
		}
	}
	return out, nil
}

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
		// Seed 003: the critic defaults to the architect's backend; a
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
	if _, ok := e.d.Workflows.Get(w); ok || opts.Workflow != "" || w == workflow.RunnerWorkflow {
		return nil
	}
	return fmt.Errorf("%w: %s: unknown workflow %q (available: runner, %s)", ErrPreflight, e.d.Config.Where("defaults.workflow"), w,
		strings.Join(e.d.Workflows.Names(), ", "))
}

// checkRunners builds every runner a role may use, so a missing or
// misconfigured runner stops the run before anything starts.
func (e *Engine) checkRunners(opts Options) error {
	// A roles entry for a role that does not exist (a typo) would be
	// ignored and its role run on the default runner.
	for _, name := range slices.Sorted(maps.Keys(e.d.Config.Roles)) {
		if !e.roleExists(name) {
			return fmt.Errorf("%w: %s: no such role; fix the name (cadre roles list shows them) or remove the entry", ErrPreflight, e.d.Config.Where("roles."+name))
		}
	}
	checked := map[string]bool{}
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
			if checked[name] {
				continue
			}
			checked[name] = true
			if _, err := e.newRunner(name); err != nil {
				return fmt.Errorf("%w: %s: %w", ErrPreflight, from, err)
			}
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
	r, err := e.newRunner(name)
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
		return nil, fmt.Errorf("unknown runner %q: define it under runners: in cadre.yaml or use one of %s", typ, strings.Join(e.d.Runners.Types(), ", "))
	}
	return rn, err
}

func (e *Engine) stopPath(run string) string {
	return filepath.Join(e.StateDir(), "runs", run, "stop")
}

// RequestStop asks run to start no new step; a running step finishes.
func RequestStop(stateDir, run string) error {
	p := filepath.Join(stateDir, "runs", run, "stop")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("request stop: %w", err)
	}
	return os.WriteFile(p, []byte(time.Now().UTC().Format(time.RFC3339)+"\n"), 0o644)
}

func (e *Engine) stopRequested(run string) bool {
	_, err := os.Stat(e.stopPath(run))
	return err == nil
}

// execute drives the items of a run: one after another in place, or up to
// Parallel at once in their own worktrees. A hard stop halts the whole run:
// no item starts a new step after it.
func (e *Engine) execute(ctx context.Context, runID string, opts Options, resumed bool) (Summary, error) {
	start := time.Now()
	if err := e.d.Store.SetRunStatus(ctx, runID, store.RunRunning, e.d.PID); err != nil {
		return Summary{}, err
	}
	e.d.Bus.Publish(event.Event{Run: runID, Type: event.RunStarted, Message: map[bool]string{false: "started", true: "resumed"}[resumed]})
	items, err := e.d.Store.Items(ctx, runID)
	if err != nil {
		return Summary{}, err
	}
	rs := &runState{id: runID, opts: opts, resumed: resumed, done: map[string]chan struct{}{}, ok: map[string]bool{}}
	for _, it := range items {
		rs.done[it.ID] = make(chan struct{})
	}
	parallel := opts.Parallel
	if parallel <= 0 {
		parallel = e.d.Config.Limits.ParallelIssues
	}
	if opts.InPlace || parallel < 1 {
		parallel = 1
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(parallel)
	for i, it := range items {
		if i > 0 && parallel == 1 {
			// Sequential runs wait for the previous item before the crash
			// point, so "between items" means what it says.
			<-rs.done[items[i-1].ID]
			e.d.Crash(CrashBetweenItems)
		}
		if rs.halted() != "" {
			close(rs.done[it.ID])
			continue
		}
		g.Go(func() error {
			defer close(rs.done[it.ID])
			if it.Status == store.ItemCompleted || it.Status == store.ItemSkipped {
				rs.markOK(it.ID, it.Status == store.ItemCompleted)
				return nil
			}
			if reason := rs.waitDeps(gctx, it.ID, e.depsOf(it)); reason != "" {
				e.d.Store.UpdateItem(gctx, runID, it.ID, store.ItemUpdate{Status: strp(store.ItemSkipped), Error: &reason})
				e.d.Bus.Publish(event.Event{Run: runID, Item: it.ID, Type: event.Warning, Message: "skipped: " + reason})
				return nil
			}
			if rs.halted() != "" {
				return nil
			}
			if it.Status == store.ItemPaused && !e.waitsForHuman(gctx, runID, it.ID) {
				// The item waited (for a human or a runner) and goes on now;
				// watchers of itemPaused learn it is no longer waiting.
				e.d.Bus.Publish(event.Event{Run: runID, Item: it.ID, Type: event.ItemResumed, Stage: it.Stage, Message: it.Error})
			}
			out, err := e.runItem(gctx, rs, it)
			if err != nil {
				return err
			}
			rs.markOK(it.ID, out.completed)
			if out.failed {
				rs.fail(out.reason)
			}
			if out.paused {
				rs.pause(out.reason)
				if rs.opts.InPlace {
					// In place the next item would commit this one's
					// unfinished changes, so the run waits with it.
					rs.halt(store.RunPaused, out.reason)
				}
			}
			if out.halt != "" {
				rs.halt(out.halt, out.reason)
			}
			return nil
		})
	}
	err = g.Wait()
	sum := Summary{Run: runID, Status: store.RunCompleted}
	switch {
	case rs.halted() != "":
		sum.Status, sum.Reason = rs.halted(), rs.haltReason
	case rs.failed != "":
		sum.Status, sum.Reason = store.RunFailed, rs.failed
	case rs.paused != "":
		sum.Status, sum.Reason = store.RunPaused, rs.paused
	}
	return e.finish(ctx, runID, sum, start, err)
}

// runState is what the items of one run share.
type runState struct {
	id      string
	opts    Options
	resumed bool
	done    map[string]chan struct{} // closed when an item ends (or is never started)

	mu         sync.Mutex
	runners    map[string]runner.Runner // built once per run, by name
	tripped    map[string]string        // runners stopped by the circuit breaker, with why
	ok         map[string]bool          // item completed
	haltStatus string
	haltReason string
	failed     string // first item failure that did not halt the run
	paused     string // first item that waits (for a human or a runner)
}

func (rs *runState) pause(reason string) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.paused == "" {
		rs.paused = reason
	}
}

func (rs *runState) markOK(id string, ok bool) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.ok[id] = ok
}

// halt stops the run with status; the first halt wins, a failure over a stop.
func (rs *runState) halt(status, reason string) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.haltStatus == "" || (status == store.RunFailed && rs.haltStatus != store.RunFailed) {
		rs.haltStatus, rs.haltReason = status, reason
	}
}

func (rs *runState) halted() string {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.haltStatus
}

func (rs *runState) fail(reason string) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.failed == "" {
		rs.failed = reason
	}
}

// waitDeps blocks until the item's dependencies in this run have ended and
// says why the item cannot go on, if it cannot.
func (rs *runState) waitDeps(ctx context.Context, item string, deps []string) string {
	var missing []string
	for _, d := range deps {
		ch, inRun := rs.done[d]
		if !inRun {
			continue
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return "cancelled"
		}
		rs.mu.Lock()
		ok := rs.ok[d]
		rs.mu.Unlock()
		if !ok {
			missing = append(missing, d)
		}
	}
	if len(missing) > 0 {
		return "depends on " + strings.Join(missing, ", ") + ", which did not complete"
	}
	return ""
}

// depsOf reads an item's dependencies from its task file.
func (e *Engine) depsOf(it store.Item) []string {
	t, err := taskfile.Load(it.Ref)
	if err != nil {
		return nil
	}
	return t.DependsOn
}

// finish records the run's end and builds its summary.
func (e *Engine) finish(ctx context.Context, runID string, sum Summary, start time.Time, runErr error) (Summary, error) {
	if runErr != nil {
		sum.Status = store.RunFailed
		sum.Reason = runErr.Error()
		if ctx.Err() != nil {
			sum.Status, sum.Reason = store.RunInterrupted, "interrupted"
		}
	}
	// The run's end is recorded even when ctx is cancelled.
	bg := context.WithoutCancel(ctx)
	if items, err := e.d.Store.Items(bg, runID); err == nil {
		for _, it := range items {
			if it.Status == store.ItemRunning {
				e.d.Store.UpdateItem(bg, runID, it.ID, store.ItemUpdate{Status: strp(store.ItemStopped)})
			}
		}
	}
	if err := e.d.Store.SetRunStatus(bg, runID, sum.Status, e.d.PID); err != nil && runErr == nil {
		runErr = err
	}
	full, err := Summarize(bg, e.d.Store, runID)
	if err == nil {
		full.Status, full.Reason = sum.Status, sum.Reason
		sum = full
	}
	sum.Duration = time.Since(start)
	e.d.Bus.Publish(event.Event{Run: runID, Type: event.RunCompleted, Message: sum.Status, Error: sum.Reason, Usage: &sum.Usage})
	if ctx.Err() != nil {
		return sum, ctx.Err()
	}
	return sum, runErr
}

// Summarize reads a run's outcome from the journal.
func Summarize(ctx context.Context, st *store.Store, runID string) (Summary, error) {
	r, err := st.GetRun(ctx, runID)
	if err != nil {
		return Summary{}, err
	}
	items, err := st.Items(ctx, runID)
	if err != nil {
		return Summary{}, err
	}
	steps, err := st.Steps(ctx, runID)
	if err != nil {
		return Summary{}, err
	}
	sum := Summary{Run: runID, Status: r.Status, Started: r.StartedAt, Updated: r.UpdatedAt}
	byItem := map[string]*ItemSummary{}
	for _, it := range items {
		sum.Items = append(sum.Items, ItemSummary{ID: it.ID, Title: it.Title, Stage: it.Stage, Status: it.Status, Reason: it.Error,
			Attempts: it.Attempts, CurrentStep: it.CurrentStep})
	}
	for i := range sum.Items {
		byItem[sum.Items[i].ID] = &sum.Items[i]
	}
	for _, st := range steps {
		is := byItem[st.ItemID]
		if is != nil && st.Kind == "select" && st.Status == store.StepCompleted {
			addPick(is, st)
		}
		if is == nil || st.Kind != "agent" {
			continue
		}
		is.Steps++
		if st.Status == store.StepStarted && is.Status == store.ItemRunning {
			is.CurrentStep = st.ID // the journal's last started step is the running one
		}
		u := fromStoreUsage(st.Usage)
		is.Usage = is.Usage.Add(u)
		sum.Usage = sum.Usage.Add(u)
	}
	addPublishing(byItem, steps)
	return sum, nil
}

func fromStoreUsage(u store.Usage) event.Usage {
	return event.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CacheReadTokens: u.CacheReadTokens,
		CacheWriteTokens: u.CacheWriteTokens, CostUSD: u.CostUSD, CostEstimated: u.CostEstimated}
}

func toStoreUsage(u event.Usage) store.Usage {
	return store.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CacheReadTokens: u.CacheReadTokens,
		CacheWriteTokens: u.CacheWriteTokens, CostUSD: u.CostUSD, CostEstimated: u.CostEstimated}
}
