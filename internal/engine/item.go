package engine

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/cadre-dev/cadre/internal/cyclelog"
	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/item/taskfile"
	"github.com/cadre-dev/cadre/internal/remote"
	"github.com/cadre-dev/cadre/internal/runspec"
	"github.com/cadre-dev/cadre/internal/safefile"
	"github.com/cadre-dev/cadre/internal/sandbox"
	"github.com/cadre-dev/cadre/internal/store"
	"github.com/cadre-dev/cadre/internal/workflow"
	"github.com/cadre-dev/cadre/internal/workspace"
)

// itemOutcome is how an item ended, and whether the run goes on.
type itemOutcome struct {
	completed bool
	paused    bool   // the item waits (for a human, or a runner's quota)
	failed    bool   // the item failed (the run ends failed)
	halt      string // non-empty: stop the whole run with this status
	reason    string
}

// itemRun is the working state of one item.
type itemRun struct {
	grants int // the retries the journal grants the item (GrantRetry)
	// again names the steps the item's retries ask again; read with
	// grants by begin, or by the first agent step of a process that did
	// not begin the item.
	againMu   sync.Mutex
	again     runspec.Grants
	againRead bool
	run       string
	rs        *runState
	opts      Options
	set       Settings // opts resolved against cadre.yaml
	it        store.Item
	task      *taskfile.Task
	// issueOnce reads the item's issue record (issue.json) once: cadre
	// wrote it when the item was made, and every step would read it again.
	issueOnce sync.Once
	issue     Issue
	isIssue   bool
	repo      *workspace.Repo // the tree the agents work in
	// trusted: the tree may keep configuration that runs programs
	// (sandbox.trust_repo); if not, agents see none and git runs no filter.
	trusted bool
	// shieldMu guards shielded, the item's agents running with its
	// executable configuration hidden (see Engine.shield).
	shieldMu sync.Mutex
	shielded int
	dir      string          // its directory
	outDir   string          // .cadre/runs/<run>/items/<item>
	agents   chan struct{}   // bounds this item's concurrent agent steps
	cycle    *cyclelog.Log   // current_cycle.md
	board    *taskfile.Board // the task file's frontmatter, written in the background
	// boardMu serialises task-file writes of parallel steps of one item.
	boardMu sync.Mutex
	gitMu   sync.Mutex // serialises commits in the item's tree
	// treeMu is held by every agent step while it runs: shared by those
	// that change the tree, alone by a reviewer (holdTree).
	treeMu sync.RWMutex
	// written is the frontmatter last written, to skip redundant writes.
	written map[string]string

	workMu   sync.Mutex
	lastWork string // the last working step, which the next reviewer rates

	// remote: the item's branch travels through a git remote (an
	// executor's OpenOptions.Remote); nil for the embedded engine's runs.
	remote *remote.Item
}

// worked notes a working (not reviewing) step, for the reviewer after it.
func (ir *itemRun) worked(sp agentSpec) {
	if workflow.IsReviewing(sp.Role) {
		return
	}
	ir.workMu.Lock()
	ir.lastWork = sp.ID
	ir.workMu.Unlock()
}

func (e *Engine) publish(ir *itemRun, ev event.Event) {
	ev.Run, ev.Item = ir.run, ir.it.ID
	e.d.Bus.Publish(ev)
}

func strp(s string) *string { return &s }

// newItemRun is the state of item it of run rs, whose task file is task:
// its board, output directory, agent bound and trust.
func (e *Engine) newItemRun(rs *runState, it store.Item, task *taskfile.Task) *itemRun {
	set := rs.opts.Settings(e.d.Config)
	ir := &itemRun{run: rs.id, rs: rs, opts: rs.opts, set: set, it: it, task: task, repo: e.repo, dir: e.d.Root, board: taskfile.NewBoard(task.Path, it.Source == "github"),
		outDir: filepath.Join(e.StateDir(), "runs", rs.id, "items", it.ID), written: map[string]string{},
		agents: make(chan struct{}, set.Agents)}
	ir.trusted = e.trustsRepo(it)
	if !ir.trusted {
		ir.repo = e.repo.Untrusted()
	}
	return ir
}

// startCycle starts the item's cycle log, for the workflow name; shared,
// it takes up the file another process wrote.
func (e *Engine) startCycle(ir *itemRun, name string, shared bool) {
	it, task := ir.it, ir.task
	mk := cyclelog.New
	if shared {
		mk = cyclelog.NewShared
	}
	ir.cycle = mk(filepath.Join(ir.outDir, "current_cycle.md"), cyclelog.Header{
		ID: cyclelog.NextID(e.StateDir(), time.Now()), Goal: cyclelog.Objective(task.Title, task.Body),
		State: cyclelog.StartState(task.Body), Docs: task.Contexts, Next: e.firstRole(name, it.InitStage),
		Bookkeeping: []string{fmt.Sprintf("stage: %s, attempts: %d", it.InitStage, it.InitAttempts), "task file: " + task.Path},
		Assets:      filepath.Join(filepath.Dir(task.Path), "context", cyclelog.AssetDir),
	})
}

// runItem drives one item through its workflow from the state the run
// first saw, replaying journaled steps and running the rest.
func (e *Engine) runItem(ctx context.Context, rs *runState, it store.Item) (itemOutcome, error) {
	task, loadErr := taskfile.Load(it.Ref)
	if loadErr != nil {
		// begin journals the item failed, saying why.
		loadErr = errors.New(relErr(loadErr, e.d.Root))
		task = &taskfile.Task{ID: it.ID, Title: it.Title, Path: it.Ref}
	}
	ir := e.newItemRun(rs, it, task)
	e.learnCredential(ctx, ir)
	defer func() {
		if err := ir.board.Close(); err != nil {
			e.d.Bus.Publish(event.Event{Run: rs.id, Item: it.ID, Type: event.Warning, Message: "update task file: " + err.Error()})
		}
	}()
	if rs.opts.InPlace && loadErr == nil {
		if err := e.unshieldLeftovers(ctx, ir); err != nil {
			return itemOutcome{}, err
		}
	}
	provision := func(ctx context.Context) error {
		if rs.opts.InPlace {
			return nil
		}
		return e.provision(ctx, ir)
	}
	b, err := e.begin(ctx, ir, loadErr, provision, true)
	switch {
	case err != nil || b.Status != "":
		return b.out, err
	case b.def != nil:
		return e.runFlow(ctx, ir, b.def)
	}
	return e.runPipeline(ctx, ir, b.s, b.d)
}

// runPipeline drives a begun item through the stage pipeline with
// workflow.Drive from state s and its decision d; pipeline performs the
// effects.
func (e *Engine) runPipeline(ctx context.Context, ir *itemRun, s workflow.State, d workflow.Decision) (itemOutcome, error) {
	lim := e.itemLimits(ir)
	s, d, err := workflow.Drive(ctx, lim, &pipeline{e: e, ir: ir}, s, d)
	if err != nil {
		return e.pipelineFailed(ctx, ir, s, err)
	}
	if err := e.syncFrontmatter(ctx, ir, s, d); err != nil {
		return itemOutcome{}, err
	}
	switch d.Kind {
	case workflow.Complete:
		return e.completeItem(ctx, ir, s)
	case workflow.HardStop:
		return e.failItem(ctx, ir, s, d.Reason)
	}
	return e.stopItem(ctx, ir, s, d)
}

// pipeline performs the stage pipeline's effects in this process.
type pipeline struct {
	e  *Engine
	ir *itemRun
}

// Stopping says whether cadre stop came or the run halted.
func (p *pipeline) Stopping() bool { return p.e.mustStop(p.ir) }

// Stage brings the task file to the state, refuses a step once the run's
// budget is spent (a *BudgetPause), and runs (or replays) the step.
func (p *pipeline) Stage(ctx context.Context, s workflow.State, d workflow.Decision) (workflow.Event, error) {
	if err := p.e.syncFrontmatter(ctx, p.ir, s, d); err != nil {
		return workflow.Event{}, err
	}
	if reason := p.e.overBudget(ctx, p.ir, d.Step.ID); reason != "" {
		return workflow.Event{}, &BudgetPause{Reason: reason}
	}
	return p.e.step(ctx, p.ir, s, d.Step)
}

// Ask brings the task file to the state and asks a human (the answer may
// be journaled already; if not, the item pauses).
func (p *pipeline) Ask(ctx context.Context, s workflow.State, d workflow.Decision) (workflow.Answer, error) {
	if err := p.e.syncFrontmatter(ctx, p.ir, s, d); err != nil {
		return workflow.Answer{}, err
	}
	return p.e.askHuman(ctx, p.ir, d.Human)
}

// pipelineFailed ends a stage-pipeline item whose effect failed in state
// s: a tampered tree fails it and halts the run; a link planted among its
// step files fails it alone; a spent budget pauses it
// and the run; a runner's quota or a question pauses it alone; anything
// else (the journal, a cancellation) stops the run with the error.
func (e *Engine) pipelineFailed(ctx context.Context, ir *itemRun, s workflow.State, err error) (itemOutcome, error) {
	var te *tamperError
	var bp *BudgetPause
	var pe *pausedError
	switch {
	case errors.As(err, &te):
		return e.failItem(ctx, ir, s, te.msg)
	case errors.Is(err, safefile.ErrUnsafe):
		return e.failAlone(ctx, ir, s, plantedLink(err))
	case errors.As(err, &bp):
		return itemOutcome{halt: store.RunPaused, reason: bp.Reason}, e.setItem(ctx, ir, paused(s.Stage, bp.Reason))
	case errors.As(err, &pe):
		return itemOutcome{paused: true, reason: pe.reason}, e.setItem(ctx, ir, paused(s.Stage, pe.reason))
	case errors.Is(err, workflow.ErrPaused):
		reason := pauseReason(err)
		return itemOutcome{paused: true, reason: reason}, e.setItem(ctx, ir, paused(s.Stage, reason))
	}
	return itemOutcome{}, err
}

// completeItem commits a task that reached completed and journals it so.
func (e *Engine) completeItem(ctx context.Context, ir *itemRun, s workflow.State) (itemOutcome, error) {
	if err := e.commit(ctx, ir); err != nil {
		if isRemoteErr(err) || isJournalErr(err) {
			return itemOutcome{}, err // done on the next try
		}
		return e.failItem(ctx, ir, s, err.Error())
	}
	done := change{status: store.ItemCompleted, stage: &s.Stage, attempts: &s.Attempts, step: strp(""),
		events: []event.Event{{Type: event.TaskCompleted, Stage: s.Stage}}}
	if err := e.setItem(ctx, ir, done); err != nil {
		return itemOutcome{}, err
	}
	e.archiveCycle(ctx, ir, time.Now(), "")
	e.outcomes(ctx, ir, true)
	return itemOutcome{completed: true}, nil
}

// stopItem journals an item that honoured a stop (cadre stop, or another
// item's hard stop) before a new stage: it stays to do, for resume.
func (e *Engine) stopItem(ctx context.Context, ir *itemRun, s workflow.State, d workflow.Decision) (itemOutcome, error) {
	reason := "stopped by request"
	status := store.RunStopped
	if h, why := ir.rs.haltedWhy(); h != "" {
		status, reason = h, why
	}
	c := stopped(event.Event{Type: event.RunnerStopped, Stage: s.Stage, Message: d.Reason})
	c.stage, c.attempts = &s.Stage, &s.Attempts
	return itemOutcome{halt: status, reason: reason}, e.setItem(ctx, ir, c)
}

// failItem ends an item on a hard stop, which halts the whole run.
func (e *Engine) failItem(ctx context.Context, ir *itemRun, s workflow.State, reason string) (itemOutcome, error) {
	out, err := e.failAlone(ctx, ir, s, reason, event.Event{Type: event.RunnerStopped, Stage: s.Stage, Error: reason})
	out.halt = store.RunFailed
	return out, err
}

// failAlone fails a stage-pipeline item without stopping the run: its
// failure is its own (a link one of its agents planted), not the
// runner's.
func (e *Engine) failAlone(ctx context.Context, ir *itemRun, s workflow.State, reason string, more ...event.Event) (itemOutcome, error) {
	e.archiveCycle(ctx, ir, time.Now(), "_failed")
	e.outcomes(ctx, ir, false)
	c := change{status: store.ItemFailed, stage: &s.Stage, attempts: &s.Attempts, reason: &reason,
		events: append([]event.Event{{Type: event.TaskFailed, Stage: s.Stage, Error: reason}}, more...)}
	return itemOutcome{failed: true, reason: reason}, e.setItem(ctx, ir, c)
}

// isJournalErr says whether err is a journal write that failed.
func isJournalErr(err error) bool {
	var je *JournalError
	return errors.As(err, &je)
}

// provision gives an item its worktree on its own branch. A leftover
// worktree with uncommitted changes is refused unless this run already
// worked on the item (then the changes are its own, e.g. after a crash).
func (e *Engine) provision(ctx context.Context, ir *itemRun) error {
	owned, err := false, error(nil)
	if ir.rs.resumed {
		steps, err := e.d.Store.ItemSteps(ctx, ir.run, ir.it.ID)
		if err != nil {
			return err
		}
		for _, st := range steps {
			owned = owned || st.ItemID == ir.it.ID
		}
	}
	branch := workspace.BranchName(ir.it.ID, ir.task.Title)
	var base string
	if ir.remote != nil {
		base, err = ir.remote.Fetch(ctx, branch)
	} else {
		base, err = e.startBase(ctx, ir, branch)
	}
	if err != nil {
		return err
	}
	wt, err := e.wts.Ensure(ctx, ir.it.ID, branch, base, workspace.EnsureOptions{AllowDirty: owned, Untrusted: !ir.trusted})
	if err != nil {
		return fmt.Errorf("item %s refused: %w", ir.it.ID, err)
	}
	ir.repo, ir.dir = wt, wt.Dir
	if ir.remote != nil {
		// A worktree or branch this process kept from an earlier visit of
		// the item is behind what other workers pushed since.
		if _, err := ir.remote.BringUp(ctx); err != nil {
			return err
		}
		// What the item's last step left uncommitted, on any worker.
		if err := ir.remote.RestoreWIP(ctx); err != nil {
			return err
		}
	}
	if err := e.recordBranch(ctx, ir, branch); err != nil {
		return fmt.Errorf("item %s: record branch: %w", ir.it.ID, err)
	}
	return e.unshieldLeftovers(ctx, ir)
}

// overBudget says why no new step may start, when the run's spending has
// reached its budget; a step the journal has as completed is replayed free.
func (e *Engine) overBudget(ctx context.Context, ir *itemRun, step string) string {
	reason := e.budgetReached(ctx, ir, step, ir.set.Budget)
	if reason != "" {
		ir.rs.halt(store.RunPaused, reason)
	}
	return reason
}

// runBudget is the run's budget as the journal has it now: an executor's
// process keeps its copy of the options while cadre resume --budget-usd
// raises the budget. A run of this process alone holds its lock, so its
// options cannot change under it and the journal is not read.
func (e *Engine) runBudget(ctx context.Context, ir *itemRun) float64 {
	if !ir.rs.files {
		return ir.set.Budget
	}
	if _, opts, err := StoredRun(ctx, e.d.Store, ir.run); err == nil {
		return opts.Settings(e.d.Config).Budget
	}
	return ir.set.Budget
}

// budgetReached says why no new step may start, when the run's spending has
// reached budget (resolved: 0 is no limit); a step the journal has as
// completed is replayed free.
func (e *Engine) budgetReached(ctx context.Context, ir *itemRun, step string, budget float64) string {
	if budget <= 0 {
		return ""
	}
	if id, err := e.attemptOf(ctx, ir, step); err == nil {
		step = id // a step a retry asks again is a new one
	}
	if rec, err := e.d.Store.GetStep(ctx, ir.run, step); err == nil && rec.Status == store.StepCompleted {
		return ""
	}
	tot, err := e.d.Store.Totals(ctx, ir.run)
	if err != nil || tot.CostUSD < budget {
		return ""
	}
	return fmt.Sprintf("budget reached: spent $%.4f of $%.4f; continue with cadre resume --budget-usd N", tot.CostUSD, budget)
}

// unmetDeps names the dependencies of t outside this run that are not
// completed, if any (dependencies inside the run are awaited instead).
func (e *Engine) unmetDeps(t *taskfile.Task, rs *runState) string {
	var missing []string
	for _, d := range t.DependsOn {
		if _, inRun := rs.done[d]; inRun {
			continue
		}
		dep, err := taskfile.Load(filepath.Join(filepath.Dir(t.Path), d+".md"))
		if err != nil || dep.Stage != workflow.StageCompleted {
			missing = append(missing, d)
		}
	}
	if len(missing) == 0 {
		return ""
	}
	return "waits for " + strings.Join(missing, ", ") + " to be completed"
}

// syncFrontmatter writes the task file's stage, mode, agent and attempts to
// match the state: the engine, not the agent, owns them.
func (e *Engine) syncFrontmatter(ctx context.Context, ir *itemRun, s workflow.State, d workflow.Decision) error {
	want := []taskfile.Field{{Key: "stage", Value: s.Stage}, {Key: "attempts", Value: s.Attempts}}
	if d.Kind == workflow.RunStep {
		want = append(want, taskfile.Field{Key: "mode", Value: d.Step.Mode}, taskfile.Field{Key: "agent", Value: d.Step.Role})
	}
	var set []taskfile.Field
	for _, f := range want {
		v := fmt.Sprint(f.Value)
		if ir.written[f.Key] != v {
			set = append(set, f)
			ir.written[f.Key] = v
		}
	}
	if len(set) == 0 {
		return nil
	}
	ir.board.Set(set)
	return journalErr(ir.it.ID, e.d.Store.UpdateItem(ctx, ir.run, ir.it.ID, store.ItemUpdate{Stage: strp(s.Stage), Attempts: &s.Attempts}))
}

// stepFiles are the context, output and log paths of one step
// (docs/workflows.md#context-files).
func (ir *itemRun) stepFiles(id string) (ctxPath, outPath, logPath string) {
	stem := stepStem(ir.it.ID, id)
	return filepath.Join(ir.outDir, "contexts", stem+".json"),
		filepath.Join(ir.outDir, "outputs", stem+".md"),
		filepath.Join(ir.outDir, "logs", stem+".log")
}

// stepStem is a step's file name without extension: its id without the
// item, slashes and # made dashes.
func stepStem(item, id string) string {
	return stemReplacer.Replace(strings.TrimPrefix(id, item+"/"))
}

// stemReplacer is built once: stepStem names several files per step.
var stemReplacer = strings.NewReplacer("/", "-", "#", "-")

// StepLogPath is where a step of an item writes its log, for views that
// follow it from outside the engine.
func StepLogPath(stateDir, run, item, step string) string {
	return filepath.Join(stateDir, "runs", run, "items", item, "logs", stepStem(item, step)+".log")
}

// pausedError stops an item until it is resumed (a runner's quota).
type pausedError struct{ reason string }

func (e *pausedError) Error() string { return e.reason }

// firstRole names the role an item's workflow starts with.
func (e *Engine) firstRole(name, stage string) string {
	if name == workflow.PipelineWorkflow {
		return workflow.StageRole(stage)
	}
	if d, ok := e.d.Workflows.Get(name); ok {
		if roles := d.Roles(); len(roles) > 0 {
			return roles[0]
		}
	}
	return "Done"
}

// workflowOf names the workflow an item runs: --workflow, else the task
// file's own, else the task-file stage pipeline.
func (e *Engine) workflowOf(opts Options, t *taskfile.Task) string {
	switch {
	case opts.Workflow != "":
		return opts.Workflow
	case t.Workflow != "":
		return t.Workflow
	}
	return workflow.PipelineWorkflow
}

// stepSandbox is the run's sandbox policy for one step, as it applies to
// its item (itemSandbox), reporting each connection its proxy refused as a
// warning of that step; nil without a sandbox.
func (e *Engine) stepSandbox(ir *itemRun, base event.Event) *sandbox.Policy {
	p := e.itemSandbox(ir)
	if p == nil {
		return nil
	}
	p.Warn = func(host string) {
		ev := base
		ev.Type, ev.Message = event.Warning, "sandbox refused a connection to "+host+" (network: model-only; allow it in sandbox.allow_hosts)"
		e.publish(ir, ev)
	}
	return p
}

// setAgain records the steps the item's retries ask again.
func (ir *itemRun) setAgain(again runspec.Grants) {
	ir.againMu.Lock()
	defer ir.againMu.Unlock()
	ir.again, ir.againRead = again, true
}

// attemptOf is the id under which the step whose first attempt is id runs
// now: id, or the attempt of the latest retry that asked its agent again
// (runspec.GrantRetry), read from the journal once.
func (e *Engine) attemptOf(ctx context.Context, ir *itemRun, id string) (string, error) {
	ir.againMu.Lock()
	defer ir.againMu.Unlock()
	if !ir.againRead {
		g, err := runspec.Granted(ctx, e.d.Store, ir.run, ir.it.ID)
		if err != nil {
			return "", journalErr(ir.it.ID, err)
		}
		ir.again, ir.againRead = g, true
	}
	return ir.again.Step(id), nil
}
