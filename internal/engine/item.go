package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/cadre-dev/cadre/internal/eval"
	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/item/taskfile"
	"github.com/cadre-dev/cadre/internal/reply"
	"github.com/cadre-dev/cadre/internal/role"
	"github.com/cadre-dev/cadre/internal/runner"
	"github.com/cadre-dev/cadre/internal/safefile"
	"github.com/cadre-dev/cadre/internal/sandbox"
	"github.com/cadre-dev/cadre/internal/signal"
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
	repo *workspace.Repo // the tree the agents work in
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
	agents := rs.opts.Agents
	if agents <= 0 {
		agents = e.d.Config.Limits.ParallelAgents
	}
	brd := newBoard(task.Path)
	defer func() {
		if err := brd.close(); err != nil {
			e.d.Bus.Publish(event.Event{Run: runID, Item: it.ID, Type: event.Warning, Message: "update task file: " + err.Error()})
		}
	}()
	ir := &itemRun{run: runID, rs: rs, opts: rs.opts, it: it, task: task, repo: e.repo, dir: e.d.Root, board: brd,
		outDir: filepath.Join(e.StateDir(), "runs", runID, "items", it.ID), written: map[string]string{},
		agents: make(chan struct{}, max(agents, 1))}
	ir.trusted = e.trustsRepo(it)
	if !ir.trusted {
		ir.repo = e.repo.Untrusted()
	}
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
	ir.cycle = newCycleLog(filepath.Join(ir.outDir, "current_cycle.md"), cycleID(e.StateDir(), time.Now()),
		task.Title, fmt.Sprintf("- stage: %s, attempts: %d\n- task file: %s", it.InitStage, it.InitAttempts, task.Path), task.Contexts,
		e.firstRole(name, it.InitStage))
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
			if err := e.commit(ctx, ir); err != nil {
				return e.failItem(ctx, ir, s, err.Error())
			}
			e.d.Store.UpdateItem(ctx, runID, it.ID, store.ItemUpdate{Status: strp(store.ItemCompleted), Stage: strp(s.Stage), Attempts: &s.Attempts, CurrentStep: strp("")})
			e.archiveCycle(ctx, ir, time.Now(), "")
			e.outcomes(ctx, ir, true)
			e.publish(ir, event.Event{Type: event.TaskCompleted, Stage: s.Stage})
			return itemOutcome{completed: true}, nil
		case workflow.HardStop:
			return e.failItem(ctx, ir, s, d.Reason)
		case workflow.Stopped:
			e.d.Store.UpdateItem(ctx, runID, it.ID, store.ItemUpdate{Status: strp(store.ItemStopped), Stage: strp(s.Stage), Attempts: &s.Attempts})
			reason := "stopped by request"
			status := store.RunStopped
			if h := rs.halted(); h != "" {
				status, reason = h, rs.haltReason
			}
			e.publish(ir, event.Event{Type: event.RunnerStopped, Stage: s.Stage, Message: d.Reason})
			return itemOutcome{halt: status, reason: reason}, nil
		default:
			return itemOutcome{}, fmt.Errorf("item %s: unexpected decision %v", it.ID, d.Kind)
		}
	}
}

// next feeds ev to the state machine, first telling it about a stop
// request or a halt of the run by another item.
func (e *Engine) next(lim workflow.Limits, ir *itemRun, s workflow.State, ev workflow.Event) (workflow.State, workflow.Decision) {
	if !s.Stopping && (e.stopRequested(ir.run) || ir.rs.halted() != "") {
		s, _ = workflow.Next(lim, s, workflow.Event{Kind: workflow.Stop})
	}
	return workflow.Next(lim, s, ev)
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
	owned := false
	if ir.rs.resumed {
		steps, err := e.d.Store.Steps(ctx, ir.run)
		if err != nil {
			return err
		}
		for _, st := range steps {
			owned = owned || st.ItemID == ir.it.ID
		}
	}
	branch := workspace.BranchName(ir.it.ID, ir.task.Title)
	wt, err := e.wts.Ensure(ctx, ir.it.ID, branch, e.d.Config.BaseBranch, workspace.EnsureOptions{AllowDirty: owned, Untrusted: !ir.trusted})
	if err != nil {
		return fmt.Errorf("item %s refused: %w", ir.it.ID, err)
	}
	ir.repo, ir.dir = wt, wt.Dir
	if err := e.recordBranch(ctx, ir, branch); err != nil {
		return fmt.Errorf("item %s: record branch: %w", ir.it.ID, err)
	}
	return e.unshieldLeftovers(ctx, ir)
}

// overBudget says why no new step may start, when the run's spending has
// reached its budget; a step the journal has as completed is replayed free.
func (e *Engine) overBudget(ctx context.Context, ir *itemRun, step string) string {
	budget := ir.opts.BudgetUSD
	if budget <= 0 {
		budget = e.d.Config.Limits.BudgetUSD
	}
	if budget <= 0 {
		return ""
	}
	if rec, err := e.d.Store.GetStep(ctx, ir.run, step); err == nil && rec.Status == store.StepCompleted {
		return ""
	}
	tot, err := e.d.Store.Totals(ctx, ir.run)
	if err != nil || tot.CostUSD < budget {
		return ""
	}
	reason := fmt.Sprintf("budget reached: spent $%.4f of $%.4f; continue with cadre resume --budget-usd N", tot.CostUSD, budget)
	ir.rs.halt(store.RunPaused, reason)
	return reason
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
	return strings.NewReplacer("/", "-", "#", "-").Replace(strings.TrimPrefix(id, item+"/"))
}

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

// agentSpec is one agent step, whatever the workflow.
type agentSpec struct {
	ID, Role, Phase string
	Workflow        string
	Attempt         int            // the n of the step id
	Visit           int            // nth invocation of the role for the item (0: Attempt)
	Work            *workflow.Work // a reviewer's: the work it reviews
	Inputs          []string
	Review          string // runner workflow: the rejecting audit the coder addresses
	Note            string // hand-off note (judge's discrepancy, human feedback)
	Signature       string
	TaskID          string         // context file taskId
	Payload         map[string]any // context file payload additions
	PayloadJSON     string         // step data shown in the prompt (a plan task)
}

// agentOut is a finished (or replayed) agent step.
type agentOut struct {
	sig     signal.Signal
	output  string // output file
	text    string // its content
	failure string // non-empty when the step failed
	paused  string // non-empty when the step could not run for now (quota)
	usage   event.Usage
}

// agentStep performs one agent step, or replays it from the journal when it
// already completed. The error is only for ctx cancellation or a journal
// failure; agent failures are in agentOut.failure.
func (e *Engine) agentStep(ctx context.Context, ir *itemRun, sp agentSpec) (agentOut, error) {
	if rec, err := e.d.Store.GetStep(ctx, ir.run, sp.ID); err == nil && rec.Status == store.StepCompleted {
		var out agentOut
		json.Unmarshal(rec.Signal, &out.sig)
		out.output = rec.OutputPath
		// A later agent may have replaced this output with a link since.
		out.text, _ = readText(ir.outDir, rec.OutputPath)
		ir.cycle.add(sp, out)
		ir.worked(sp)
		return out, nil
	} else if err != nil && !errors.Is(err, store.ErrNotFound) {
		return agentOut{}, err
	}
	if err := e.killOrphan(ctx, ir, sp.ID); err != nil {
		return agentOut{}, err
	}
	runnerName, model, _ := e.runnerFor(ir.opts, sp.Role)
	picked := ""
	if isAuto(runnerName) {
		c, err := e.pick(ctx, ir, sp)
		if err != nil {
			if ctx.Err() != nil {
				return agentOut{}, ctx.Err()
			}
			return agentOut{failure: err.Error()}, nil
		}
		runnerName, model, picked = c.Runner, c.Model, "runner auto chose "+c.Reason
	}
	if why := ir.rs.broken(runnerName); why != "" {
		return agentOut{paused: "runner " + runnerName + " is stopped for this run: " + why}, nil
	}
	rn, err := ir.rs.runner(e, runnerName)
	if err != nil {
		return agentOut{failure: err.Error()}, nil
	}
	ctxPath, outPath, logPath := ir.stepFiles(sp.ID)
	cmds := e.d.Config.Commands
	project := e.d.Config.Project
	if project == "" {
		project = filepath.Base(e.d.Root)
	}
	payload := map[string]any{"taskFile": ir.task.Path, "title": ir.task.Title, "contexts": ir.task.Contexts, "workflow": sp.Workflow}
	for k, v := range sp.Payload {
		payload[k] = v
	}
	if sp.Review != "" {
		payload["review"] = sp.Review
	}
	if sp.Note != "" {
		payload["note"] = sp.Note
	}
	var issueNumber *int
	if is, ok := e.issueOf(ir.it); ok {
		payload["taskFile"] = ""
		payload["issue"] = map[string]any{"number": is.Number, "repository": is.Repo, "url": is.URL}
		issueNumber = &is.Number
	}
	cf := contextFile{SchemaVersion: contextSchemaVersion, Agent: sp.Role, ProjectName: project, Repository: e.d.Config.Repository, IssueNumber: issueNumber,
		WorktreePath: ir.dir, Phase: e.phaseNumber(sp.Workflow, sp.Phase), PhaseName: sp.Phase, TaskID: sp.TaskID,
		Config:     contextConfig{Commands: map[string]string{"install": cmds.Install, "build": cmds.Build, "test": cmds.Test, "lint": cmds.Lint}},
		InputFiles: append([]string{}, sp.Inputs...), OutputPath: outPath, Payload: payload}
	if err := writeJSON(ir.outDir, ctxPath, cf); err != nil {
		return agentOut{}, err
	}
	// The agent may write its output file itself, and some CLIs refuse a
	// directory they are granted that does not exist yet.
	if err := os.MkdirAll(filepath.Dir(outPath), 0o755); err != nil {
		return agentOut{}, fmt.Errorf("create outputs dir: %w", err)
	}
	inline := !rn.Capabilities().EditsFiles
	taskFile := ir.task.Path
	if ir.it.Source == "github" {
		taskFile = "" // an issue's text reaches the agent only fenced as data, in the prompt
	}
	data := role.Data{Item: ir.it.ID, Title: ir.task.Title, TaskFile: taskFile, WorkDir: ir.dir,
		ContextPath: ctxPath, OutputPath: outPath, Inputs: sp.Inputs, Review: sp.Review, Automated: true,
		Workflow: sp.Workflow, Phase: sp.Phase, Body: ir.task.Body, Inline: inline, Payload: sp.PayloadJSON,
		Note: sp.Note, Signature: sp.Signature}
	var rubric eval.Rubric
	if sp.Role == roleJudge {
		rubric = e.rubric(sp.Work)
		data.Rubric = rubricLines(rubric)
	}
	if inline {
		for _, in := range sp.Inputs {
			// An input is an earlier agent's output: a link there would
			// send a host file to the model in this prompt.
			text, err := readText(ir.outDir, in)
			if errors.Is(err, safefile.ErrUnsafe) {
				return agentOut{failure: fmt.Sprintf("input %s refused: %v", in, err)}, nil
			}
			data.InputTexts = append(data.InputTexts, text)
		}
	}
	prompt, err := e.d.Roles.Render(sp.Role, data)
	if err != nil {
		return agentOut{failure: err.Error()}, nil
	}
	// Kept beside the step's other files: what the agent was asked is part
	// of its record (the board shows it).
	if err := writeStepFile(ir.outDir, filepath.Join(ir.outDir, "prompts", stepStem(ir.it.ID, sp.ID)+".md"), []byte(prompt)); err != nil {
		return agentOut{}, err
	}
	select {
	case ir.agents <- struct{}{}:
		defer func() { <-ir.agents }()
	case <-ctx.Done():
		return agentOut{}, ctx.Err()
	}
	if err := ir.board.beginAgent(); err != nil {
		return agentOut{}, fmt.Errorf("update task %s: %w", ir.it.ID, err)
	}
	defer ir.board.endAgent()
	rec := store.Step{RunID: ir.run, ItemID: ir.it.ID, ID: sp.ID, Role: sp.Role, Runner: runnerName, Model: model, Kind: "agent", OutputPath: outPath}
	if err := e.d.Store.StartStep(ctx, rec); err != nil {
		return agentOut{}, err
	}
	base := event.Event{Stage: sp.Phase, Phase: sp.Phase, Role: sp.Role, Step: sp.ID, Runner: runnerName, Model: model}
	if sp.Workflow != workflow.RunnerWorkflow {
		base.Stage = ""
	}
	ev := base
	ev.Type = event.StageStarted
	e.publish(ir, ev)
	ev.Type, ev.Message = event.StepStarted, picked
	e.publish(ir, ev)
	e.d.Crash(CrashStepStarted)

	timeout := ir.opts.Timeout
	if timeout == 0 {
		timeout = time.Duration(e.d.Config.Defaults.Timeout)
	}
	inv := runner.Invocation{Role: sp.Role, Item: ir.it.ID, Step: sp.ID, Attempt: sp.Attempt, Visit: sp.Visit, Prompt: prompt, Dir: ir.dir,
		ContextPath: ctxPath, OutputPath: outPath, LogPath: logPath, Model: model, Timeout: timeout,
		Progress: func(note string) {
			ev := base
			ev.Type, ev.Message = event.StepProgress, note
			e.publish(ir, ev)
		}}
	inv.OnStart = e.recordGroup(ctx, ir, sp.ID)
	inv.Sandbox = e.stepSandbox(ir, base)
	got, err := e.guardedInvoke(ctx, ir, rn, inv, rubric)
	var te *tamperError
	if errors.As(err, &te) {
		rec.Status, rec.Error = store.StepFailed, te.msg
		e.d.Store.FinishStep(context.WithoutCancel(ctx), rec)
		ev := base
		ev.Type, ev.Error = event.StepFailed, te.msg
		e.publish(ir, ev)
	}
	if err != nil {
		return agentOut{}, err
	}
	sig, output, usage, failure, kind := got.sig, got.output, got.usage, got.failure, got.kind
	e.d.Crash(CrashAgentExited)
	rec.Usage = toStoreUsage(usage)
	if failure != "" {
		rec.Status, rec.Error = store.StepFailed, failure
		if err := e.d.Store.FinishStep(context.WithoutCancel(ctx), rec); err != nil {
			return agentOut{}, err
		}
		ev := base
		ev.Type, ev.Error, ev.Usage = event.StepFailed, failure, &usage
		e.publish(ir, ev)
		out := agentOut{failure: failure, usage: usage, output: outPath, text: output}
		if kind == runner.KindQuota {
			// The circuit breaker: no step starts on this runner for the
			// rest of the run; this item pauses, resumable later.
			ir.rs.trip(runnerName, failure)
			e.publish(ir, event.Event{Type: event.Warning, Runner: runnerName, Message: "quota or spend limit reached: no new step starts on runner " + runnerName})
			out.paused = "runner " + runnerName + " hit a quota or spend limit: " + failure
		}
		return out, nil
	}
	if sp.Role == workflow.RoleAuditor && sp.Workflow == workflow.RunnerWorkflow && sig.Rating != nil {
		accepted := workflow.Rejection(sp.Role, sig, e.d.Config.Limits.AuditPassRating) == ""
		if err := ir.board.flush(); err != nil {
			return agentOut{}, fmt.Errorf("update task %s: %w", ir.it.ID, err)
		}
		if err := taskfile.SetReview(ir.task.Path, *sig.Rating, accepted, reviewText(output)); err != nil {
			return agentOut{}, fmt.Errorf("write review of %s: %w", ir.it.ID, err)
		}
	}
	rec.Status = store.StepCompleted
	rec.Signal, _ = json.Marshal(sig)
	if err := e.d.Store.FinishStep(ctx, rec); err != nil {
		return agentOut{}, err
	}
	ev = base
	ev.Type, ev.Usage = event.StepCompleted, &usage
	e.publish(ir, ev)
	ev.Type, ev.Usage = event.StageCompleted, nil
	ev.Message = sig.LoopSummary
	e.publish(ir, ev)
	out := agentOut{sig: sig, output: outPath, text: output, usage: usage}
	ir.cycle.add(sp, out)
	e.reviewed(ctx, ir, sp, sig, got.judgement)
	ir.worked(sp)
	return out, nil
}

// step runs one step of the runner workflow and turns its outcome into the
// state machine's event.
func (e *Engine) step(ctx context.Context, ir *itemRun, s workflow.State, st workflow.Step) (workflow.Event, error) {
	out, err := e.agentStep(ctx, ir, agentSpec{ID: st.ID, Role: st.Role, Phase: st.Stage, Workflow: workflow.RunnerWorkflow,
		Attempt: st.Attempt, Inputs: st.Inputs, Review: st.Review, Note: st.Note, TaskID: ir.it.ID,
		Payload: map[string]any{"stage": st.Stage, "attempts": s.Attempts}})
	if err != nil {
		return workflow.Event{}, err
	}
	if out.paused != "" {
		return workflow.Event{}, &pausedError{out.paused}
	}
	if out.failure != "" {
		return workflow.Event{Kind: workflow.StepFailed, Role: st.Role, Reason: out.failure}, nil
	}
	return workflow.Event{Kind: workflow.StepDone, Role: st.Role, Step: st.ID, Signal: out.sig, Output: out.output}, nil
}

// asked is what invoke got from an agent.
type asked struct {
	sig       signal.Signal
	output    string
	usage     event.Usage
	failure   string          // the step's error message when it failed
	kind      runner.Kind     // the runner's failure kind (quota, ...)
	judgement *eval.Judgement // a judge's scores, when it gave them
}

// invoke runs the agent, reads its output and signal, and re-asks once when
// the reply has no usable SIGNAL BLOCK (or, from a judge, an unusable
// judgement). The error is only for ctx cancellation or a journal failure.
func (e *Engine) invoke(ctx context.Context, rn runner.Runner, inv runner.Invocation, rubric eval.Rubric) (asked, error) {
	var got asked
	for ask := 0; ask < 2; ask++ {
		// Each ask starts without an output file, so the file read after it
		// is this ask's (the re-ask's answer, not the first one's copy).
		os.Remove(inv.OutputPath)
		res, rerr := rn.Run(ctx, inv)
		got.usage = got.usage.Add(res.Usage)
		if ctx.Err() != nil {
			return got, ctx.Err()
		}
		if rerr != nil {
			got.failure, got.kind = fmt.Sprintf("%s: %v", inv.Role, rerr), runner.KindOf(rerr)
			return got, nil
		}
		output, err := collectOutput(inv.OutputPath, res.Output)
		if errors.Is(err, safefile.ErrUnsafe) {
			got.failure = fmt.Sprintf("%s output refused: %v; cadre reads only a regular file the agent wrote", inv.Role, err)
			return got, nil
		}
		if err != nil {
			return got, err
		}
		got.output = output
		sig, perr := reply.Check(inv.Role, output)
		if perr != nil && inv.Role == roleTriage {
			// Triage's contract is its JSON decision (seed 003), and an
			// unusable one has a safe default that "run: routed" applies
			// with a warning, so its reply is never re-asked or failed
			// for want of a SIGNAL BLOCK.
			sig, perr = triageSignal(output), nil
		}
		var jerr error
		if inv.Role == roleJudge {
			sig, got.judgement, perr, jerr = e.judged(output, sig, perr, rubric)
		}
		got.sig = sig
		// An auditor that exits non-zero but rated the work is an audit
		// failure, not a crash (seed 001).
		if res.ExitCode != 0 && !(perr == nil && inv.Role == workflow.RoleAuditor) {
			got.failure = fmt.Sprintf("%s exited with code %d%s (see %s)", inv.Role, res.ExitCode, tail(res.StderrTail), inv.LogPath)
			return got, nil
		}
		if perr == nil {
			return got, nil
		}
		if ask == 1 {
			switch {
			case jerr != nil:
				got.failure = fmt.Sprintf("unusable judgement in %s output: %v (see %s)", inv.Role, jerr, inv.OutputPath)
			case errors.Is(perr, signal.ErrNoBlock):
				got.failure = fmt.Sprintf("no SIGNAL BLOCK in %s output (see %s)", inv.Role, inv.OutputPath)
			default:
				got.failure = fmt.Sprintf("unusable SIGNAL BLOCK in %s output: %v (see %s)", inv.Role, perr, inv.OutputPath)
			}
			return got, nil
		}
		inv.Reask = true
		// The re-ask continues the agent's own session where the backend
		// keeps one, so it answers with its work in context.
		inv.Session = res.SessionID
		if jerr != nil {
			inv.Prompt += reply.ReaskJudgement(jerr)
		} else {
			inv.Prompt += reply.Reask(perr)
		}
	}
	got.failure = "unreachable"
	return got, nil
}

// roleTriage is the role whose reply is a routing decision.
const roleTriage = "triage"

// triageSignal stands in for the SIGNAL BLOCK a triage reply lacks: its
// decision summarised when the reply holds one, else no Result, so the
// journal does not claim a success the routing step then ignores.
func triageSignal(output string) signal.Signal {
	t, err := signal.ParseTriage(output)
	if err != nil {
		return signal.Signal{Agent: roleTriage, LoopSummary: "no usable routing decision", Context: err.Error()}
	}
	sum := "chose workflow " + t.Workflow
	if len(t.Roles) > 0 {
		sum += " (" + strings.Join(t.Roles, ", ") + ")"
	}
	return signal.Signal{Agent: roleTriage, Result: signal.Success, LoopSummary: sum, Context: t.Reasoning}
}

func tail(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return ""
	}
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	if len(s) > 200 {
		s = s[len(s)-200:]
	}
	return ": " + s
}

// collectOutput settles the step's output file: the agent's own file when it
// wrote one (with the reply's signal block appended when only the reply has
// it), else the reply itself.
//
// The file is read under the item's step directory (outputs/<step>.md sits
// one level down) without following links: an output the agent made a
// link (to /etc/passwd, say) is refused with an error wrapping
// safefile.ErrUnsafe, never read through.
func collectOutput(path, text string) (string, error) {
	root := filepath.Dir(filepath.Dir(path))
	data, err := safefile.ReadFile(root, path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		data = nil // no file: the reply is the output
	case err != nil:
		return "", err
	}
	out, merged := reply.Output(string(data), text)
	if merged || len(strings.TrimSpace(string(data))) == 0 {
		if err := writeStepFile(root, path, []byte(out)); err != nil {
			return "", err
		}
	}
	return out, nil
}

// reviewText is the auditor's output without its SIGNAL BLOCK.
func reviewText(output string) string {
	return demoteHeadings(withoutSignal(output), 3)
}

// withoutSignal is an agent's output without its SIGNAL BLOCK (and the
// fence around it, if any).
func withoutSignal(output string) string {
	lines := strings.Split(output, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.Contains(strings.ToUpper(lines[i]), "SIGNAL BLOCK") {
			lines = lines[:i]
			break
		}
	}
	text := strings.TrimSpace(strings.Join(lines, "\n"))
	return strings.TrimSpace(strings.TrimSuffix(text, "```"))
}

// demoteHeadings shifts Markdown headings so the highest is at level min:
// the review lives under "## Review" and must not open sections of its own
// at that level (the next review would not replace them).
func demoteHeadings(text string, min int) string {
	lines := strings.Split(text, "\n")
	top := 7
	fence := false
	for _, l := range lines {
		if strings.HasPrefix(l, "```") {
			fence = !fence
		}
		if n := headingLevel(l); !fence && n > 0 && n < top {
			top = n
		}
	}
	if top >= min {
		return text
	}
	shift := strings.Repeat("#", min-top)
	fence = false
	for i, l := range lines {
		if strings.HasPrefix(l, "```") {
			fence = !fence
		}
		if !fence && headingLevel(l) > 0 {
			lines[i] = shift + l
		}
	}
	return strings.Join(lines, "\n")
}

func headingLevel(line string) int {
	n := 0
	for n < len(line) && line[n] == '#' {
		n++
	}
	if n == 0 || n > 6 || n >= len(line) || line[n] != ' ' {
		return 0
	}
	return n
}

// commit commits a completed task in place, once: a commit already carrying
// the step's trailer (a crash after committing) is adopted, not repeated.
func (e *Engine) commit(ctx context.Context, ir *itemRun) error {
	// In place the task file is part of the commit: it must be current.
	if err := ir.board.flush(); err != nil {
		return fmt.Errorf("update task %s: %w", ir.it.ID, err)
	}
	id := ir.it.ID + "/commit"
	prev, err := e.d.Store.GetStep(ctx, ir.run, id)
	if err == nil && prev.Status == store.StepCompleted {
		return nil
	}
	tried := err == nil // started before: a crash may have left its commit unrecorded
	rec := store.Step{RunID: ir.run, ItemID: ir.it.ID, ID: id, Kind: "commit"}
	if err := e.d.Store.StartStep(ctx, rec); err != nil {
		return err
	}
	sha := ""
	if tried {
		if sha, err = ir.repo.FindStepCommit(ctx, workspace.Mark{Step: id, Run: ir.run}); err != nil {
			return err
		}
	}
	if sha == "" {
		if err = e.refuseOutsideLinks(ctx, ir); err == nil {
			sha, err = ir.repo.CommitAll(ctx, commitMessage(ir.task), workspace.Mark{Step: id, Run: ir.run})
		}
		if err != nil {
			rec.Status, rec.Error = store.StepFailed, err.Error()
			e.d.Store.FinishStep(context.WithoutCancel(ctx), rec)
			return fmt.Errorf("commit %s: %w", ir.it.ID, err)
		}
		e.d.Crash(CrashCommitted)
	}
	rec.Status = store.StepCompleted
	rec.Result, _ = json.Marshal(map[string]string{"commit": sha})
	return e.d.Store.FinishStep(ctx, rec)
}

// commitMessage names the task; the title is untrusted text, so it is
// reduced to one short line (it travels as one argv element, never a shell).
func commitMessage(t *taskfile.Task) string {
	return fmt.Sprintf("cadre: complete task %s: %s", t.ID, shorten(t.Title, 60))
}

// shorten puts untrusted or long text on one line of at most n runes.
func shorten(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		s = string(r[:n]) + "…"
	}
	return s
}

func writeJSON(root, path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return writeStepFile(root, path, append(data, '\n'))
}

// writeFileAtomic writes path through a synced temp file and a rename, for
// files people keep (archives): a crash leaves the old or the new content.
func writeFileAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	_, werr := f.Write(data)
	if err := f.Sync(); werr == nil {
		werr = err
	}
	if err := f.Close(); werr == nil {
		werr = err
	}
	if werr == nil {
		werr = os.Rename(f.Name(), path)
	}
	if werr != nil {
		os.Remove(f.Name())
		return fmt.Errorf("write %s: %w", path, werr)
	}
	return nil
}

// writeStepFile writes one of cadre's own step files (context, output)
// under root, the item's step directory, never through a link an agent
// planted there (cadre's write would land wherever the link points).
// No temp file, rename or fsync: the file is rewritten whenever its step
// runs again, and the journal, not this file, says whether the step
// completed, so a torn write after a crash is never read as a result.
func writeStepFile(root, path string, data []byte) error {
	if err := os.MkdirAll(root, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", root, err)
	}
	if err := safefile.WriteFile(root, path, data, 0o644); err != nil {
		return fmt.Errorf("write step file: %w", err)
	}
	return nil
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
