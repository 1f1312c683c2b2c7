// Package engine runs a run: it loads items, drives each through its
// workflow's pure state machine, and performs the machine's decisions as
// journaled effects (agent steps, commits), so that a resumed run replays
// what completed and redoes only what did not.
package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/cadre-dev/cadre/internal/codehost"
	"github.com/cadre-dev/cadre/internal/config"
	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/redact"
	"github.com/cadre-dev/cadre/internal/remote"
	"github.com/cadre-dev/cadre/internal/replica"
	"github.com/cadre-dev/cadre/internal/report"
	"github.com/cadre-dev/cadre/internal/role"
	"github.com/cadre-dev/cadre/internal/roster"
	"github.com/cadre-dev/cadre/internal/runlock"
	"github.com/cadre-dev/cadre/internal/runner"
	"github.com/cadre-dev/cadre/internal/runspec"
	"github.com/cadre-dev/cadre/internal/runstop"
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

// Options say what to run (runspec.Options).
type Options = runspec.Options

// Settings are a run's limits resolved once (runspec.Settings).
type Settings = runspec.Settings

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
	Forge codehost.Forge
	// Tracker reaches the tracker (Jira, Linear) a tracker's issue items
	// came from; nil without one.
	Tracker codehost.Tracker
	Bus     *event.Bus
	PID     int
	// Crash, when set, is called at named points of the journal protocol;
	// tests make it kill the process there (see CrashPoints).
	Crash func(point string)
	// Sandbox confines every agent process (cadre.yaml sandbox); nil runs
	// them unconfined.
	Sandbox *sandbox.Policy
	// Mask holds cadre's own secrets (the GitHub token, the model keys it
	// passes to agents); nil masks nothing. They are masked in what an
	// agent leaves behind: its step log, its output, the files of its work
	// cadre commits. (The journal and the events mask them themselves.)
	Mask *redact.Redactor
}

// Crash points, in the order a step meets them.
const (
	CrashStepStarted  = "step-started"  // after a step's start is journaled
	CrashAgentExited  = "agent-exited"  // after the agent exits, before its result is journaled
	CrashCommitted    = "committed"     // after a commit, before it is journaled
	CrashBetweenItems = "between-items" // after one item ended, before the next starts
	CrashPushed       = "pushed"        // after a branch was pushed, before it is journaled
	CrashPRCreated    = "pr-created"    // after a pull request was opened, before it is journaled
	// CrashRemotePushed: after a remote item's step pushed its commit,
	// before the step is journaled (see executor.OpenOptions.Remote).
	CrashRemotePushed = remote.CrashPushed
	// CrashWIPPushed: after a remote item's step pushed its uncommitted
	// changes, before the step is journaled.
	CrashWIPPushed = remote.CrashWIPPushed
)

// CrashPoints lists every named crash point.
var CrashPoints = []string{CrashStepStarted, CrashAgentExited, CrashCommitted, CrashBetweenItems}

// PublishCrashPoints are the crash points of publishing an issue item.
var PublishCrashPoints = []string{CrashPushed, CrashPRCreated}

// Engine runs and resumes runs in one repository.
type Engine struct {
	d    Deps
	repo *workspace.Repo
	wts  *workspace.Worktrees
	// rosterState is what the roster remembers between calls: the
	// runners checkRunners built, for the run to take over.
	rosterState roster.State

	// The journal as a home of items run elsewhere or a worker's replica
	// of them (replica.go).
	rep *replica.Journal

	// bases is the fetch of the base from origin under way, which the
	// items starting meanwhile share (base.go).
	bases baseFetches
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
	e := &Engine{d: d, repo: repo, wts: workspace.NewWorktrees(repo)}
	e.rep = &replica.Journal{Store: d.Store, Root: d.Root, StateDir: e.StateDir(), Bus: d.Bus}
	return e, nil
}

// StateDir is the repository's .cadre directory.
func (e *Engine) StateDir() string { return filepath.Join(e.d.Root, workspace.StateDir) }

// Warn tells run's watchers msg, as a warning event of the run.
func (e *Engine) Warn(run, msg string) {
	e.d.Bus.Publish(event.Event{Run: run, Type: event.Warning, Message: msg})
}

// Start begins a new run of opts.
func (e *Engine) Start(ctx context.Context, opts Options) (report.Summary, error) {
	runID, release, err := e.create(ctx, opts)
	if err != nil {
		return report.Summary{}, err
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
	// Runners first: loading a prompt or an issue writes its task file
	// under the run's directory, which a refused run would leave behind.
	if err := e.checkRunners(opts); err != nil {
		return "", nil, err
	}
	runID = runspec.NewID(time.Now())
	items, err := e.loadTargets(ctx, runID, opts)
	if err != nil {
		return "", nil, err
	}
	if err := e.checkDetachedTemporal(ctx, runID); err != nil {
		return "", nil, err
	}
	lk, err := e.lock(ctx, runID)
	if err != nil {
		return "", nil, err
	}
	defer func() {
		if err != nil {
			lk.Release()
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
	recs := make([]store.Item, 0, len(items))
	in := e.intake()
	for _, t := range items {
		recs = append(recs, store.Item{ID: t.ID, Source: in.Source(t), Ref: t.Path, Title: t.Title,
			InitStage: t.Stage, InitAttempts: t.Attempts, Stage: t.Stage, Attempts: t.Attempts})
	}
	run := store.Run{ID: runID, Repo: e.d.Root, Workflow: opts.WorkflowName(), Options: optsJSON, PID: e.d.PID}
	if err := e.d.Store.CreateRun(ctx, run, recs...); err != nil {
		return "", nil, err
	}
	return runID, lk.Release, nil
}

// Resume continues run runID, or the latest run when runID is empty.
func (e *Engine) Resume(ctx context.Context, runID string) (report.Summary, error) {
	return e.ResumeWith(ctx, runID, runspec.Overrides{})
}

// ResumeWith continues a run with some options changed (a higher budget).
func (e *Engine) ResumeWith(ctx context.Context, runID string, ov runspec.Overrides) (report.Summary, error) {
	id, opts, release, err := e.reopen(ctx, runID, ov)
	if err != nil {
		return report.Summary{}, err
	}
	defer release()
	if opts.Temporal != nil {
		return report.Summary{}, fmt.Errorf("%w: run %s runs on Temporal: resume it with the Temporal engine", ErrPreflight, id)
	}
	return e.execute(ctx, id, opts, true)
}

// reopen checks that run runID (the latest when "") can go on, applies ov
// to its stored options and takes its lock, which release gives back.
func (e *Engine) reopen(ctx context.Context, runID string, ov runspec.Overrides) (id string, opts Options, release func(), err error) {
	r, opts, err := StoredRun(ctx, e.d.Store, runID)
	if errors.Is(err, store.ErrNotFound) {
		if runID == "" {
			return "", opts, nil, fmt.Errorf("%w: no run recorded in %s", ErrNothingToResume, e.StateDir())
		}
		return "", opts, nil, fmt.Errorf("%w: no run %q (see cadre status)", ErrNothingToResume, runID)
	}
	if err != nil {
		return "", opts, nil, err
	}
	if r.Status == store.RunCompleted {
		return "", opts, nil, fmt.Errorf("%w: run %s already completed", ErrNothingToResume, r.ID)
	}
	if r.Workflow == store.WorkflowBench {
		return "", opts, nil, fmt.Errorf("%w: run %s is a benchmark: continue it with cadre bench and the same roles, runners and repeat", ErrNothingToResume, r.ID)
	}
	opts = opts.Override(ov)
	if err := e.checkRunners(opts); err != nil {
		return "", opts, nil, err
	}
	if !ov.Empty() {
		// Kept with the run: Temporal workers read its options from the
		// journal, and a later resume goes on with them.
		data, _ := json.Marshal(opts)
		if err := e.d.Store.SetRunOptions(ctx, r.ID, data); err != nil {
			return "", opts, nil, err
		}
	}
	if err := e.checkDetachedTemporal(ctx, r.ID); err != nil {
		return "", opts, nil, err
	}
	lk, err := e.lock(ctx, r.ID)
	if err != nil {
		return "", opts, nil, err
	}
	if err := runstop.Withdraw(e.StateDir(), r.ID); err != nil {
		lk.Release()
		return "", opts, nil, err
	}
	// A retry changes the journal only once the run holds the lock: one
	// refused it has changed nothing.
	for _, item := range ov.Retry {
		if err := runspec.GrantRetry(ctx, e.d.Store, r.ID, item); err != nil {
			lk.Release()
			return "", opts, nil, err
		}
	}
	return r.ID, opts, lk.Release, nil
}

// RunLock is the file of the repository's run lock (see runlock): in its
// common git directory, shared by all its checkouts.
func (e *Engine) RunLock(ctx context.Context) (string, error) { return e.repo.RunLock(ctx) }

// lock takes the repository's run lock for run, working from this
// checkout.
func (e *Engine) lock(ctx context.Context, run string) (*runlock.Lock, error) {
	path, err := e.RunLock(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPreflight, err)
	}
	lk, err := runlock.Acquire(path, runlock.Info{Run: run, PID: e.d.PID, State: e.StateDir()}, e.warn(run))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPreflight, err)
	}
	return lk, nil
}

// checkDetachedTemporal refuses to take over the lock of another run on
// Temporal whose starting process is gone while some of its items have
// not ended: their workflows go on without that process, and a second
// run would work in the same worktrees at the same time. Resuming that
// run itself (self) attaches to its workflows and may take the lock.
func (e *Engine) checkDetachedTemporal(ctx context.Context, self string) error {
	path, err := e.RunLock(ctx)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrPreflight, err)
	}
	run, item, pid, err := runspec.DetachedTemporal(ctx, e.d.Store, path)
	if err != nil || run == "" || run == self {
		return err
	}
	return fmt.Errorf("%w: run %s is on Temporal and its item %s may still run there, though the process that started it (pid %d) is gone: follow it with cadre resume %s, or stop it with cadre stop %s",
		ErrPreflight, run, item, pid, run, run)
}

// StoredRun reads run runID (when "", the one a plain resume continues)
// and the options it was started with (runspec.Stored).
func StoredRun(ctx context.Context, st *store.Store, runID string) (store.Run, Options, error) {
	return runspec.Stored(ctx, st, runID)
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

// stopRequested says whether cadre stop asked run to stop.
func (e *Engine) stopRequested(run string) bool { return runstop.Requested(e.StateDir(), run) }

// execute drives the items of a run: one after another in place, or up to
// Parallel at once in their own worktrees. A hard stop halts the whole run:
// no item starts a new step after it.
func (e *Engine) execute(ctx context.Context, runID string, opts Options, resumed bool) (report.Summary, error) {
	start := time.Now()
	rs, items, err := e.beginRun(ctx, runID, opts, resumed)
	if err != nil {
		return report.Summary{}, err
	}
	parallel := opts.Settings(e.d.Config).Parallel
	if e.d.Config.Limits.WorktreePool > 0 && opts.InPlace {
		e.warn(runID)(e.d.Config.Where("limits.worktree_pool") + " is not used by --in-place, which works in this checkout, not in worktrees")
	}
	if n := e.d.Config.Limits.WorktreePool; n > 0 && !opts.InPlace {
		// Prepared worktrees outlive no run: StartPool clears what a
		// killed one left, StopPool what this one did not hand out.
		if err := e.wts.StartPool(ctx, e.d.Config.BaseBranch, n); err != nil {
			return report.Summary{}, err
		}
		defer func() {
			if err := e.wts.StopPool(context.WithoutCancel(ctx)); err != nil {
				e.d.Bus.Publish(event.Event{Run: runID, Type: event.Warning, Message: "remove prepared worktrees: " + err.Error()})
			}
		}()
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
				return e.transit(gctx, runID, it.ID, skipped(reason))
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
	return e.finish(ctx, runID, rs.summary(), start, err)
}

// finish records the run's end and builds its summary.
func (e *Engine) finish(ctx context.Context, runID string, sum report.Summary, start time.Time, runErr error) (report.Summary, error) {
	if runErr != nil {
		sum.Status = store.RunFailed
		if ctx.Err() == nil && isFault(runErr) {
			runErr = &FaultStop{Run: runID, Err: runErr}
			sum.Status = store.RunStopped
		}
		sum.Reason = runErr.Error()
		if ctx.Err() != nil {
			sum.Status, sum.Reason = store.RunInterrupted, "interrupted"
		}
	}
	// The run's end is recorded even when ctx is cancelled.
	bg := context.WithoutCancel(ctx)
	items, err := e.d.Store.Items(bg, runID)
	for _, it := range items {
		if it.Status == store.ItemRunning {
			// A journal that refuses this too leaves the item running,
			// which resume takes up all the same.
			err = both(err, e.transit(bg, runID, it.ID, stopped()))
		}
	}
	if err = both(err, e.d.Store.SetRunStatus(bg, runID, sum.Status, e.d.PID)); err != nil && runErr == nil {
		// The run's end is not recorded: it is not shown as ended well.
		runErr = &FaultStop{Run: runID, Err: fmt.Errorf("record the end of run %s: %w", runID, err)}
		sum.Status, sum.Reason = store.RunStopped, runErr.Error()
	}
	full, err := report.Summarize(bg, e.d.Store, runID)
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
