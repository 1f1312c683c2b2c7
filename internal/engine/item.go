package engine

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/item/taskfile"
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
	run  string
	rs   *runState
	opts Options
	it   store.Item
	task *taskfile.Task
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
	dir      string        // its directory
	outDir   string        // .cadre/runs/<run>/items/<item>
	agents   chan struct{} // bounds this item's concurrent agent steps
	cycle    *cycleLog     // current_cycle.md
	board    *board        // the task file's frontmatter, written in the background
	// boardMu serialises task-file writes of parallel steps of one item.
	boardMu sync.Mutex
	gitMu   sync.Mutex // serialises commits in the item's tree
	// written is the frontmatter last written, to skip redundant writes.
	written map[string]string

	workMu   sync.Mutex
	lastWork string // the last working step, which the next reviewer rates

	// remote: the item's branch travels through a git remote (an
	// executor's OpenOptions.Remote); nil for the embedded engine's runs.
	remote *remoteItem
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
	agents := rs.opts.Agents
	if agents <= 0 {
		agents = e.d.Config.Limits.ParallelAgents
	}
	ir := &itemRun{run: rs.id, rs: rs, opts: rs.opts, it: it, task: task, repo: e.repo, dir: e.d.Root, board: newBoard(task.Path, it.Source == "github"),
		outDir: filepath.Join(e.StateDir(), "runs", rs.id, "items", it.ID), written: map[string]string{},
		agents: make(chan struct{}, max(agents, 1))}
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
	mk := newCycleLog
	if shared {
		mk = sharedCycleLog
	}
	ir.cycle = mk(filepath.Join(ir.outDir, "current_cycle.md"), cycleID(e.StateDir(), time.Now()),
		task.Title, fmt.Sprintf("- stage: %s, attempts: %d\n- task file: %s", it.InitStage, it.InitAttempts, task.Path), task.Contexts,
		e.firstRole(name, it.InitStage))
}

// runItem drives one item through the runner workflow from the state the run
// first saw, replaying journaled steps and running the rest.
func (e *Engine) runItem(ctx context.Context, rs *runState, it store.Item) (itemOutcome, error) {
	runID := rs.id
	task, err := taskfile.Load(it.Ref)
	if err != nil {
		msg := relErr(err, e.d.Root)
		e.d.Store.UpdateItem(ctx, runID, it.ID, store.ItemUpdate{Status: strp(store.ItemFailed), Error: &msg})
		return itemOutcome{failed: true, reason: msg}, nil
	}
	ir := e.newItemRun(rs, it, task)
	defer func() {
		if err := ir.board.close(); err != nil {
			e.d.Bus.Publish(event.Event{Run: runID, Item: it.ID, Type: event.Warning, Message: "update task file: " + err.Error()})
		}
	}()
	if rs.opts.InPlace {
		if err := e.unshieldLeftovers(ctx, ir); err != nil {
			return itemOutcome{}, err
		}
	}
	lim := workflow.Limits{AuditPassRating: e.d.Config.Limits.AuditPassRating, MaxAttempts: e.d.Config.Limits.MaxAttempts,
		EscalateBelowConfidence: e.d.Config.Limits.EscalateBelowConfidence}

	s := workflow.Initial(it.ID, it.InitStage, it.InitAttempts)
	if reason := e.unmetDeps(task, rs); reason != "" {
		e.d.Store.UpdateItem(ctx, runID, it.ID, store.ItemUpdate{Status: strp(store.ItemSkipped), Error: &reason})
		e.publish(ir, event.Event{Type: event.Warning, Message: "skipped: " + reason})
		return itemOutcome{}, nil
	}
	name := e.workflowOf(rs.opts, task)
	e.startCycle(ir, name, false)
	if name != workflow.RunnerWorkflow {
		switch it.InitStage {
		case workflow.StageCompleted, workflow.StageBacklog, workflow.StageFailed:
			reason := "stage " + it.InitStage + ": nothing to do"
			e.d.Store.UpdateItem(ctx, runID, it.ID, store.ItemUpdate{Status: strp(store.ItemSkipped), Error: &reason})
			e.publish(ir, event.Event{Type: event.Warning, Message: "skipped: " + reason})
			return itemOutcome{completed: it.InitStage == workflow.StageCompleted}, nil
		}
		def, ok := e.d.Workflows.Get(name)
		if !ok {
			msg := fmt.Sprintf("unknown workflow %q (see cadre workflows list)", name)
			e.d.Store.UpdateItem(ctx, runID, it.ID, store.ItemUpdate{Status: strp(store.ItemFailed), Error: &msg})
			return itemOutcome{failed: true, reason: msg}, nil
		}
		if !rs.opts.InPlace {
			if err := e.provision(ctx, ir); err != nil {
				msg := err.Error()
				e.d.Store.UpdateItem(ctx, runID, it.ID, store.ItemUpdate{Status: strp(store.ItemFailed), Error: &msg})
				e.publish(ir, event.Event{Type: event.TaskFailed, Error: msg})
				return itemOutcome{failed: true, reason: msg}, nil
			}
		}
		e.d.Store.UpdateItem(ctx, runID, it.ID, store.ItemUpdate{Status: strp(store.ItemRunning)})
		e.publish(ir, event.Event{Type: event.TaskStarted, Message: task.Title + " (" + name + ")"})
		e.comment(ctx, ir, "start", fmt.Sprintf("cadre is working on this issue (run %s, workflow %s).", runID, name))
		return e.runFlow(ctx, ir, def)
	}
	s, d := e.next(lim, ir, s, workflow.Event{Kind: workflow.Start})
	if d.Kind == workflow.Skip {
		e.d.Store.UpdateItem(ctx, runID, it.ID, store.ItemUpdate{Status: strp(store.ItemSkipped), Error: &d.Reason})
		e.publish(ir, event.Event{Type: event.Warning, Message: "skipped: " + d.Reason})
		return itemOutcome{completed: s.Stage == workflow.StageCompleted}, nil
	}
	if !rs.opts.InPlace && d.Kind == workflow.RunStep {
		if err := e.provision(ctx, ir); err != nil {
			msg := err.Error()
			e.d.Store.UpdateItem(ctx, runID, it.ID, store.ItemUpdate{Status: strp(store.ItemFailed), Error: &msg})
			e.publish(ir, event.Event{Type: event.TaskFailed, Stage: s.Stage, Error: msg})
			return itemOutcome{failed: true, reason: msg}, nil
		}
	}
	e.d.Store.UpdateItem(ctx, runID, it.ID, store.ItemUpdate{Status: strp(store.ItemRunning)})
	e.publish(ir, event.Event{Type: event.TaskStarted, Stage: s.Stage, Message: task.Title})
	for {
		if err := e.syncFrontmatter(ctx, ir, s, d); err != nil {
			return itemOutcome{}, err
		}
		switch d.Kind {
		case workflow.RunStep:
			if reason := e.overBudget(ctx, ir, d.Step.ID); reason != "" {
				e.d.Store.UpdateItem(ctx, runID, it.ID, store.ItemUpdate{Status: strp(store.ItemPaused), Error: &reason})
				e.publish(ir, event.Event{Type: event.ItemPaused, Stage: s.Stage, Message: reason})
				return itemOutcome{halt: store.RunPaused, reason: reason}, nil
			}
			ev, err := e.step(ctx, ir, s, d.Step)
			if te := (*tamperError)(nil); errors.As(err, &te) {
				return e.failItem(ctx, ir, s, te.msg)
			}
			var pe *pausedError
			if errors.As(err, &pe) {
				e.d.Store.UpdateItem(ctx, runID, it.ID, store.ItemUpdate{Status: strp(store.ItemPaused), Error: &pe.reason})
				e.publish(ir, event.Event{Type: event.ItemPaused, Stage: s.Stage, Message: pe.reason})
				return itemOutcome{paused: true, reason: pe.reason}, nil
			}
			if err != nil {
				return itemOutcome{}, err
			}
			s, d = e.next(lim, ir, s, ev)
		case workflow.AskHuman:
			ans, err := e.askHuman(ctx, ir, d.Human)
			if errors.Is(err, workflow.ErrPaused) {
				reason := pauseReason(err)
				e.d.Store.UpdateItem(ctx, runID, it.ID, store.ItemUpdate{Status: strp(store.ItemPaused), Error: &reason})
				e.publish(ir, event.Event{Type: event.ItemPaused, Stage: s.Stage, Message: reason})
				return itemOutcome{paused: true, reason: reason}, nil
			}
			if err != nil {
				return itemOutcome{}, err
			}
			s, d = e.next(lim, ir, s, workflow.Event{Kind: workflow.Answered, Human: &ans})
		case workflow.Complete:
			return e.completeItem(ctx, ir, s)
		case workflow.HardStop:
			return e.failItem(ctx, ir, s, d.Reason)
		case workflow.Stopped:
			return e.stopItem(ctx, ir, s, d)
		default:
			return itemOutcome{}, fmt.Errorf("item %s: unexpected decision %v", it.ID, d.Kind)
		}
	}
}

// next feeds ev to the state machine, first telling it about a stop
// request or a halt of the run by another item.
func (e *Engine) next(lim workflow.Limits, ir *itemRun, s workflow.State, ev workflow.Event) (workflow.State, workflow.Decision) {
	if !s.Stopping && e.mustStop(ir) {
		s, _ = workflow.Next(lim, s, workflow.Event{Kind: workflow.Stop})
	}
	return workflow.Next(lim, s, ev)
}

// completeItem commits a task that reached completed and journals it so.
func (e *Engine) completeItem(ctx context.Context, ir *itemRun, s workflow.State) (itemOutcome, error) {
	if err := e.commit(ctx, ir); err != nil {
		if isRemoteErr(err) {
			return itemOutcome{}, err // pushed on the next try
		}
		return e.failItem(ctx, ir, s, err.Error())
	}
	e.d.Store.UpdateItem(ctx, ir.run, ir.it.ID, store.ItemUpdate{Status: strp(store.ItemCompleted), Stage: strp(s.Stage), Attempts: &s.Attempts, CurrentStep: strp("")})
	e.archiveCycle(ctx, ir, time.Now(), "")
	e.outcomes(ctx, ir, true)
	e.publish(ir, event.Event{Type: event.TaskCompleted, Stage: s.Stage})
	return itemOutcome{completed: true}, nil
}

// stopItem journals an item that honoured a stop (cadre stop, or another
// item's hard stop) before a new stage: it stays to do, for resume.
func (e *Engine) stopItem(ctx context.Context, ir *itemRun, s workflow.State, d workflow.Decision) (itemOutcome, error) {
	e.d.Store.UpdateItem(ctx, ir.run, ir.it.ID, store.ItemUpdate{Status: strp(store.ItemStopped), Stage: strp(s.Stage), Attempts: &s.Attempts})
	reason := "stopped by request"
	status := store.RunStopped
	if h, why := ir.rs.haltedWhy(); h != "" {
		status, reason = h, why
	}
	e.publish(ir, event.Event{Type: event.RunnerStopped, Stage: s.Stage, Message: d.Reason})
	return itemOutcome{halt: status, reason: reason}, nil
}

// failItem ends an item on a hard stop, which halts the whole run.
func (e *Engine) failItem(ctx context.Context, ir *itemRun, s workflow.State, reason string) (itemOutcome, error) {
	e.archiveCycle(ctx, ir, time.Now(), "_failed")
	e.outcomes(ctx, ir, false)
	e.d.Store.UpdateItem(ctx, ir.run, ir.it.ID, store.ItemUpdate{Status: strp(store.ItemFailed), Stage: strp(s.Stage), Attempts: &s.Attempts, Error: &reason})
	e.publish(ir, event.Event{Type: event.TaskFailed, Stage: s.Stage, Error: reason})
	e.publish(ir, event.Event{Type: event.RunnerStopped, Stage: s.Stage, Error: reason})
	return itemOutcome{failed: true, halt: store.RunFailed, reason: reason}, nil
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
	base := e.d.Config.BaseBranch
	if ir.remote != nil {
		if base, err = e.fetchItem(ctx, ir, branch); err != nil {
			return err
		}
	}
	wt, err := e.wts.Ensure(ctx, ir.it.ID, branch, base, workspace.EnsureOptions{AllowDirty: owned, Untrusted: !ir.trusted})
	if err != nil {
		return fmt.Errorf("item %s refused: %w", ir.it.ID, err)
	}
	ir.repo, ir.dir = wt, wt.Dir
	if ir.remote != nil {
		// A worktree or branch this process kept from an earlier visit of
		// the item is behind what other workers pushed since.
		if _, err := e.bringUp(ctx, ir); err != nil {
			return err
		}
		// What the item's last step left uncommitted, on any worker.
		if err := e.restoreWIP(ctx, ir); err != nil {
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
	reason := e.budgetReached(ctx, ir.run, step, ir.opts.BudgetUSD)
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
		return ir.opts.BudgetUSD
	}
	if _, opts, err := StoredRun(ctx, e.d.Store, ir.run); err == nil {
		return opts.BudgetUSD
	}
	return ir.opts.BudgetUSD
}

// budgetReached says why no new step may start, when run's spending has
// reached budget (0: limits.budget_usd; none set, or NoBudget: no limit);
// a step the journal has as completed is replayed free.
func (e *Engine) budgetReached(ctx context.Context, run, step string, budget float64) string {
	if budget < 0 {
		return ""
	}
	if budget == 0 {
		budget = e.d.Config.Limits.BudgetUSD
	}
	if budget <= 0 {
		return ""
	}
	if rec, err := e.d.Store.GetStep(ctx, run, step); err == nil && rec.Status == store.StepCompleted {
		return ""
	}
	tot, err := e.d.Store.Totals(ctx, run)
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
	ir.board.set(set)
	return e.d.Store.UpdateItem(ctx, ir.run, ir.it.ID, store.ItemUpdate{Stage: strp(s.Stage), Attempts: &s.Attempts})
}

// stepFiles are the SPEC §6 paths of one step.
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

// contextSchemaVersion is the context file's format: 2 since "phase" is
// seed 000's phase number and its name moved to "phaseName".
const contextSchemaVersion = 2

// contextFile is the SPEC §6 context file.
type contextFile struct {
	SchemaVersion int            `json:"schemaVersion"`
	Agent         string         `json:"agent"`
	IssueNumber   *int           `json:"issueNumber"`
	ProjectName   string         `json:"projectName"`
	Repository    string         `json:"repository"`
	WorktreePath  string         `json:"worktreePath"`
	Phase         int            `json:"phase"`     // seed 000's phase number (see phaseNumber)
	PhaseName     string         `json:"phaseName"` // the phase (or stage) by name
	TaskID        string         `json:"taskId"`
	Config        contextConfig  `json:"config"`
	InputFiles    []string       `json:"inputFiles"`
	OutputPath    string         `json:"outputPath"`
	Payload       map[string]any `json:"payload"`
}

type contextConfig struct {
	Commands map[string]string `json:"commands"`
}

// pausedError stops an item until it is resumed (a runner's quota).
type pausedError struct{ reason string }

func (e *pausedError) Error() string { return e.reason }

// firstRole names the role an item's workflow starts with.
func (e *Engine) firstRole(name, stage string) string {
	if name == workflow.RunnerWorkflow {
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
	return workflow.RunnerWorkflow
}

// stepSandbox is the run's sandbox policy for one step, reporting each
// connection its proxy refused as a warning of that step; nil without a
// sandbox.
func (e *Engine) stepSandbox(ir *itemRun, base event.Event) *sandbox.Policy {
	if e.d.Sandbox == nil {
		return nil
	}
	p := *e.d.Sandbox
	p.Warn = func(host string) {
		ev := base
		ev.Type, ev.Message = event.Warning, "sandbox refused a connection to "+host+" (network: model-only; allow it in sandbox.allow_hosts)"
		e.publish(ir, ev)
	}
	return &p
}
