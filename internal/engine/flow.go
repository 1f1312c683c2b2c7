package engine

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"time"

	"github.com/cadre-dev/cadre/internal/commitmsg"
	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/item/taskfile"
	"github.com/cadre-dev/cadre/internal/projectcmd"
	"github.com/cadre-dev/cadre/internal/safefile"
	"github.com/cadre-dev/cadre/internal/signal"
	"github.com/cadre-dev/cadre/internal/store"
	"github.com/cadre-dev/cadre/internal/workflow"
	"github.com/cadre-dev/cadre/internal/workspace"
)

// runFlow drives an item through a declarative workflow: the interpreter
// decides, flowExec performs (and replays) the steps.
func (e *Engine) runFlow(ctx context.Context, ir *itemRun, def *workflow.Def) (itemOutcome, error) {
	fx := &flowExec{e: e, ir: ir}
	in := &workflow.Interp{Item: ir.it.ID, Defs: e.d.Workflows, Exec: fx, Roles: e.roleExists, Lim: e.flowLimits(), Goals: ir.task.Goals()}
	res, err := in.Run(ctx, def)
	switch {
	case fx.stopped && (err == nil || errors.Is(err, workflow.ErrPaused)):
		return e.stopFlow(ctx, ir)
	case fx.paused != "":
		err = fmt.Errorf("%s: %w", fx.paused, workflow.ErrPaused)
	}
	return e.endFlow(ctx, ir, res, err)
}

// errStopping ends an item's flow before its next step once cadre stop
// asked for none, or another item's hard stop halted the run. It wraps
// ErrPaused so that the interpreter lets running sibling steps finish
// instead of cancelling them.
var errStopping = fmt.Errorf("stopped by request: %w", workflow.ErrPaused)

// stopping refuses the item's next step when it must start none.
func (fx *flowExec) stopping() error {
	if fx.e.mustStop(fx.ir) {
		fx.mu.Lock()
		fx.stopped = true
		fx.mu.Unlock()
		return errStopping
	}
	return nil
}

// stopFlow journals an item whose flow stopped between steps: it stays to
// do for cadre resume, and the run stops (or keeps the halt it had).
func (e *Engine) stopFlow(ctx context.Context, ir *itemRun) (itemOutcome, error) {
	status, reason := store.RunStopped, "stopped by request"
	if h, why := ir.rs.haltedWhy(); h != "" {
		status, reason = h, why
	}
	return itemOutcome{halt: status, reason: reason}, e.setItem(ctx, ir, stopped(event.Event{Type: event.RunnerStopped, Message: reason}))
}

// flowLimits are cadre.yaml's limits as the interpreter takes them.
func (e *Engine) flowLimits() workflow.FlowLimits {
	lim := e.d.Config.Limits
	return workflow.FlowLimits{AuditPassRating: lim.AuditPassRating, EscalateBelowConfidence: lim.EscalateBelowConfidence,
		MaxReviewRounds: lim.MaxReviewRounds, MaxInsufficientLoops: lim.MaxInsufficientLoops,
		MaxIterations: lim.MaxIterations, MaxAttempts: lim.MaxAttempts, ParallelAgents: lim.ParallelAgents, ApproveGoal: lim.ApproveGoal}
}

// endFlow journals how an item's workflow ended (res, or err: a pause, a
// tampering, a cancellation) and publishes the item's branch and pull
// request when it completed.
func (e *Engine) endFlow(ctx context.Context, ir *itemRun, res workflow.Result, err error) (itemOutcome, error) {
	var te *tamperError
	switch {
	case errors.As(err, &te):
		// The run stops too: other items share the repository's git.
		ir.rs.halt(store.RunFailed, ir.it.ID+": "+te.msg)
		return e.failFlow(ctx, ir, te.msg, "_failed", itemOutcome{failed: true, halt: store.RunFailed, reason: ir.it.ID + ": " + te.msg})
	case errors.Is(err, safefile.ErrUnsafe):
		msg := plantedLink(err)
		return e.failFlow(ctx, ir, msg, "_failed", itemOutcome{failed: true, reason: ir.it.ID + ": " + msg})
	case errors.Is(err, workflow.ErrPaused):
		reason := pauseReason(err)
		return itemOutcome{paused: true, reason: reason}, e.setItem(ctx, ir, paused("", reason))
	case err != nil:
		return itemOutcome{}, err
	}
	switch res.Status {
	case workflow.ResultCompleted, workflow.ResultAnswered:
		return e.completeFlow(ctx, ir, res)
	}
	suffix := "_failed"
	if res.Status == workflow.ResultIncomplete {
		suffix = "_incomplete"
	}
	reason := res.Status + ": " + res.Reason
	return e.failFlow(ctx, ir, reason, suffix, itemOutcome{failed: true, reason: ir.it.ID + ": " + reason})
}

// completeFlow publishes a completed item (its branch, its pull request),
// commits its task file and journals it completed.
func (e *Engine) completeFlow(ctx context.Context, ir *itemRun, res workflow.Result) (itemOutcome, error) {
	now := time.Now()
	if _, err := e.finishIssue(ctx, ir, true, ""); err != nil {
		if ctx.Err() != nil {
			return itemOutcome{}, ctx.Err()
		}
		if errors.Is(err, workflow.ErrPaused) {
			reason := pauseReason(err)
			return itemOutcome{paused: true, reason: reason}, e.setItem(ctx, ir, paused("", reason))
		}
		if isJournalErr(err) {
			return itemOutcome{}, err
		}
		reason := "publish: " + err.Error()
		return itemOutcome{failed: true, reason: ir.it.ID + ": " + reason}, e.setItem(ctx, ir, failedBefore("", reason))
	}
	e.setBoard(ir, map[string]any{"stage": "completed"})
	if err := e.commitBoard(ctx, ir); isJournalErr(err) {
		return itemOutcome{}, err
	} else if err != nil {
		e.publish(ir, event.Event{Type: event.Warning, Message: "commit the task file: " + err.Error()})
	}
	done := change{status: store.ItemCompleted, stage: strp("completed"), reason: strp(strings.Join(res.PhaseFailures, "; ")),
		events: []event.Event{{Type: event.TaskCompleted, Stage: "completed", Message: res.Status}}}
	if err := e.setItem(ctx, ir, done); err != nil {
		return itemOutcome{}, err
	}
	e.archiveCycle(ctx, ir, now, "")
	e.outcomes(ctx, ir, true)
	return itemOutcome{completed: true}, nil
}

// failFlow ends an item failed, saying reason: its board and issue say
// so, the journal records it, its cycle log is archived with suffix.
func (e *Engine) failFlow(ctx context.Context, ir *itemRun, reason, suffix string, out itemOutcome) (itemOutcome, error) {
	now := time.Now()
	e.setBoard(ir, map[string]any{"stage": "failed"})
	if _, err := e.finishIssue(ctx, ir, false, reason); err != nil {
		return itemOutcome{}, err
	}
	c := change{status: store.ItemFailed, stage: strp("failed"), reason: &reason,
		events: []event.Event{{Type: event.TaskFailed, Error: reason}}}
	if err := e.setItem(ctx, ir, c); err != nil {
		return itemOutcome{}, err
	}
	e.archiveCycle(ctx, ir, now, suffix)
	e.outcomes(ctx, ir, false)
	return out, nil
}

// setBoard writes task-file frontmatter for a workflow item (only cadre
// writes it), skipping values already written.
func (e *Engine) setBoard(ir *itemRun, fields map[string]any) {
	ir.boardMu.Lock()
	defer ir.boardMu.Unlock()
	var set []taskfile.Field
	for _, k := range []string{"stage", "mode", "agent"} {
		if v, ok := fields[k]; ok && ir.written[k] != fmt.Sprint(v) {
			set = append(set, taskfile.Field{Key: k, Value: v})
			ir.written[k] = fmt.Sprint(v)
		}
	}
	ir.board.Set(set)
}

func (e *Engine) roleExists(name string) bool {
	_, err := e.d.Roles.Get(name)
	return err == nil
}

// flowExec performs the interpreter's steps for one item.
type flowExec struct {
	e        *Engine
	ir       *itemRun
	baseline map[string]int // command → exit code before the work
	paused   string
	stopped  bool // a step was refused: cadre stop or the run halted

	mu     sync.Mutex
	visits map[string]int // role → invocations so far
}

// Agent runs (or replays) an agent step.
func (fx *flowExec) Agent(ctx context.Context, c workflow.AgentCall) (workflow.Outcome, error) {
	return fx.agent(ctx, c, fx.visit(c.Role))
}

// agent runs (or replays) an agent step that is its role's visit-th.
func (fx *flowExec) agent(ctx context.Context, c workflow.AgentCall, visit int) (workflow.Outcome, error) {
	if err := fx.stopping(); err != nil {
		return workflow.Outcome{}, err
	}
	// As in the stage pipeline: once the run has spent its budget no new
	// agent step starts; the item pauses (each item at its next agent
	// step), and so does the run. The budget is read from the journal,
	// not this process's copy of the options: a Temporal worker keeps
	// that copy while cadre resume --budget-usd raises the budget.
	if reason := fx.e.budgetReached(ctx, fx.ir, c.ID, fx.e.runBudget(ctx, fx.ir)); reason != "" {
		fx.paused = reason
		return workflow.Outcome{}, fmt.Errorf("%s: %w", reason, workflow.ErrPaused)
	}
	sp := agentSpec{ID: c.ID, Role: c.Role, Phase: c.Phase, Workflow: c.Workflow, Attempt: stepN(c.ID), Visit: visit, Work: c.Work,
		Inputs: c.Inputs, Note: c.Note, Signature: c.Signature, Goal: c.Goal, PassRating: c.PassRating, Payload: maps.Clone(c.Payload)}
	if c.Task != nil {
		data, _ := json.Marshal(c.Task) // compact: it goes to the agent
		sp.TaskID, sp.PayloadJSON = c.Task.ID, string(data)
		sp.Payload = map[string]any{"task": c.Task} // a plan task's step has no other payload
	}
	fx.e.setBoard(fx.ir, map[string]any{"agent": c.Role})
	out, err := fx.e.agentStep(ctx, fx.ir, sp)
	if err != nil {
		return workflow.Outcome{}, err
	}
	if out.paused != "" {
		fx.paused = out.paused
		return workflow.Outcome{}, fmt.Errorf("%s: %w", out.paused, workflow.ErrPaused)
	}
	return workflow.Outcome{Failed: out.failure != "", Reason: out.failure, Signal: out.sig, Output: out.output, Text: out.text}, nil
}

// stepN is the n of a step id <...>#<n>: the step's attempt.
func stepN(id string) int {
	n := 0
	if i := strings.LastIndexByte(id, '#'); i >= 0 {
		fmt.Sscan(id[i+1:], &n)
	}
	return max(n, 1)
}

// visit counts the item's invocations of a role, which script scenarios
// match as their attempt: a role's second plan task is its visit 2, while
// its step id (and CADRE_ATTEMPT) says #1.
func (fx *flowExec) visit(role string) int {
	fx.mu.Lock()
	defer fx.mu.Unlock()
	if fx.visits == nil {
		fx.visits = map[string]int{}
	}
	fx.visits[role]++
	return fx.visits[role]
}

// Warn publishes a warning event.
func (fx *flowExec) Warn(msg string) {
	fx.e.publish(fx.ir, event.Event{Type: event.Warning, Message: msg})
}

// actionResult is the journaled result of a deterministic step.
type actionResult struct {
	Commit      string         `json:"commit,omitempty"`
	Nothing     string         `json:"nothing,omitempty"` // a commit step's "nothing to commit"
	Exits       map[string]int `json:"exits,omitempty"`
	Regressions []string       `json:"regressions,omitempty"`
	Output      string         `json:"output,omitempty"`
	Approved    *bool          `json:"approved,omitempty"`
	Signal      *signal.Signal `json:"signal,omitempty"` // gatekeeper
	Note        string         `json:"note,omitempty"`
	Answer      string         `json:"answer,omitempty"` // QUICK's: the item's result
}

// outcome is what the interpreter reads of a completed deterministic step.
func (r actionResult) outcome(ir *itemRun) workflow.Outcome {
	out := workflow.Outcome{Regressions: r.Regressions, Output: r.Output}
	if r.Signal != nil {
		out.Signal = *r.Signal
		out.Text, _ = readText(ir.outDir, r.Output)
	}
	return out
}

// Action runs (or replays) a deterministic step.
func (fx *flowExec) Action(ctx context.Context, c workflow.ActionCall) (workflow.Outcome, error) {
	e, ir := fx.e, fx.ir
	if err := fx.stopping(); err != nil {
		return workflow.Outcome{}, err
	}
	prev, err := e.d.Store.GetStep(ctx, ir.run, c.ID)
	if err == nil && prev.Status == store.StepCompleted {
		var r actionResult
		json.Unmarshal(prev.Result, &r)
		if c.Kind == "baseline" {
			fx.baseline = r.Exits
		}
		return r.outcome(ir), nil
	} else if err != nil && !errors.Is(err, store.ErrNotFound) {
		return workflow.Outcome{}, err
	}
	rec := store.Step{RunID: ir.run, ItemID: ir.it.ID, ID: c.ID, Kind: c.Kind}
	tried := prev.Tries > 0 // started before: a crash may have left its commit unrecorded
	if err := e.d.Store.StartStep(ctx, rec); err != nil {
		return workflow.Outcome{}, journalErr(ir.it.ID, err)
	}
	e.publish(ir, event.Event{Type: event.StepStarted, Phase: c.Phase, Step: c.ID, Message: c.Kind})
	r, failure, err := fx.act(ctx, c, tried)
	if err != nil {
		return workflow.Outcome{}, err
	}
	if failure != "" {
		rec.Status, rec.Error = store.StepFailed, failure
		if err := ir.remote.NoteWIP(context.WithoutCancel(ctx), &rec); err != nil {
			return workflow.Outcome{}, err
		}
		if err := e.finishStep(context.WithoutCancel(ctx), rec); err != nil {
			return workflow.Outcome{}, err
		}
		e.publish(ir, event.Event{Type: event.StepFailed, Phase: c.Phase, Step: c.ID, Error: failure})
		return workflow.Outcome{Failed: true, Reason: failure}, nil
	}
	rec.Status = store.StepCompleted
	rec.Result, _ = json.Marshal(r)
	if err := ir.remote.NoteWIP(ctx, &rec); err != nil {
		return workflow.Outcome{}, err
	}
	if err := e.finishStep(ctx, rec); err != nil {
		return workflow.Outcome{}, err
	}
	e.publish(ir, event.Event{Type: event.StepCompleted, Phase: c.Phase, Step: c.ID, Message: c.Kind, Answer: r.Answer})
	return r.outcome(ir), nil
}

// act performs a deterministic step: its result, or why it failed. An
// error (the context's end, a remote that failed) leaves the step to be
// tried again.
func (fx *flowExec) act(ctx context.Context, c workflow.ActionCall, tried bool) (r actionResult, failure string, err error) {
	switch c.Kind {
	case "baseline", "checks":
		return fx.checks(ctx, c)
	case "commit":
		sha, err := fx.commit(ctx, c, tried)
		if isRemoteErr(err) {
			return r, "", err // the step is tried again
		}
		if err != nil {
			failure = err.Error()
		} else if sha == "" {
			r.Nothing = nothingToCommit
		}
		r.Commit = sha
	case "gatekeeper":
		sig, out, err := fx.gatekeep(ctx, c)
		if ctx.Err() != nil {
			return r, "", ctx.Err()
		}
		if err != nil {
			failure = err.Error()
		}
		r.Signal, r.Output = &sig, out
	case "answer":
		_, out, _ := fx.ir.stepFiles(c.ID)
		if err := writeStepFile(fx.ir.outDir, out, []byte(c.Text+"\n")); err != nil {
			failure = err.Error()
		}
		r.Output, r.Answer = out, c.Text
	default:
		failure = "unknown action " + c.Kind
	}
	return r, failure, nil
}

// checks runs the project's commands for a baseline or checks step. A
// checks step's regressions are the commands that fail now and passed in
// the baseline.
func (fx *flowExec) checks(ctx context.Context, c workflow.ActionCall) (r actionResult, failure string, err error) {
	exits, out, err := fx.runChecks(ctx, c.ID)
	if ctx.Err() != nil {
		return r, "", ctx.Err()
	}
	if err != nil {
		// The next agent reads the summary: without it the step failed.
		return r, err.Error(), nil
	}
	r.Exits, r.Output = exits, out
	if c.Kind == "baseline" {
		fx.baseline = exits
		return r, "", nil
	}
	for _, name := range projectcmd.Names {
		if code, ran := exits[name]; ran && code != 0 && fx.baseline[name] == 0 {
			r.Regressions = append(r.Regressions, name)
		}
	}
	return r, "", nil
}

func oneLine(s string) string { return commitmsg.Line(s, 200) }

// commit commits the item's changes once. A plan task's commit leaves alone
// the files other unfinished tasks declared, so parallel tasks in one tree
// do not commit each other's work.
func (fx *flowExec) commit(ctx context.Context, c workflow.ActionCall, tried bool) (string, error) {
	ir := fx.ir
	// Plan tasks of one wave commit in one worktree: git's index admits one
	// writer at a time.
	ir.gitMu.Lock()
	defer ir.gitMu.Unlock()
	mark := workspace.Mark{Step: c.ID, Run: ir.run}
	if sha, err := fx.e.committedBefore(ctx, ir, mark, tried); err != nil || sha != "" {
		if err == nil {
			sha, err = fx.ir.remote.Push(ctx, sha, mark)
		}
		return sha, err
	}
	if err := ir.board.Flush(); err != nil { // in place the task file is committed too
		return "", fmt.Errorf("update task %s: %w", ir.it.ID, err)
	}
	title := cmp.Or(c.Text, ir.task.Title)
	if c.Task != nil {
		title = cmp.Or(c.Task.Title, c.Task.ID)
	}
	sha, err := ir.repo.Commit(ctx, fx.e.commitSubject(ir, title), mark, workspace.CommitOptions{Except: c.Others, Base: fx.e.baseRef(ctx),
		Check: outsideLinks(ir), Mask: fx.e.commitMask(), Describe: true})
	if err != nil {
		return "", err
	}
	fx.e.d.Crash(CrashCommitted)
	return fx.ir.remote.Push(ctx, sha, mark)
}

// Human returns the recorded answer to an escalation, or records that the
// item waits for one.
func (fx *flowExec) Human(ctx context.Context, c workflow.HumanCall) (workflow.Answer, error) {
	return fx.e.askHuman(ctx, fx.ir, c)
}

// askHuman returns the journaled answer to an escalation, or journals the
// question and returns an error wrapping workflow.ErrPaused. A loop that
// ran out of rounds (HumanIncomplete) archives its cycle log _incomplete
// when it first pauses, so a person reads the whole loop that ran out.
func (e *Engine) askHuman(ctx context.Context, ir *itemRun, c workflow.HumanCall) (workflow.Answer, error) {
	rec, err := e.d.Store.GetStep(ctx, ir.run, c.ID)
	if err == nil && rec.Status == store.StepCompleted {
		var r actionResult
		json.Unmarshal(rec.Result, &r)
		ans := workflow.Answer{Approved: r.Approved != nil && *r.Approved, Note: r.Note}
		ir.cycle.Human(c.ID, c.Reason, ans.Approved, ans.Note)
		return ans, nil
	}
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return workflow.Answer{}, err
	}
	if err != nil {
		if err := e.d.Store.StartStep(ctx, store.Step{RunID: ir.run, ItemID: ir.it.ID, ID: c.ID, Role: c.Role, Kind: "human"}); err != nil {
			return workflow.Answer{}, journalErr(ir.it.ID, err)
		}
		if c.Kind == workflow.HumanIncomplete {
			e.archiveCycle(ctx, ir, time.Now(), "_incomplete")
		}
	}
	return workflow.Answer{}, fmt.Errorf("%s; answer with cadre approve %s %s [--reject] [--note TEXT]: %w", c.Reason, ir.run, ir.it.ID, workflow.ErrPaused)
}

// waitsForHuman says whether an item has a question no human answered yet.
func (e *Engine) waitsForHuman(ctx context.Context, run, item string) bool {
	steps, err := e.d.Store.ItemSteps(ctx, run, item)
	if err != nil {
		return false
	}
	for _, s := range steps {
		if s.ItemID == item && s.Kind == "human" && s.Status == store.StepStarted {
			return true
		}
	}
	return false
}

// pauseReason is a pause error's message without the ErrPaused suffix.
func pauseReason(err error) string {
	return strings.TrimSuffix(err.Error(), ": "+workflow.ErrPaused.Error())
}

// Approve answers an item's waiting escalation.
func Approve(ctx context.Context, st *store.Store, run, item string, approved bool, note string) (string, error) {
	steps, err := st.Steps(ctx, run)
	if err != nil {
		return "", err
	}
	for _, s := range steps {
		if s.ItemID == item && s.Kind == "human" && s.Status == store.StepStarted {
			s.Status = store.StepCompleted
			s.Result, _ = json.Marshal(actionResult{Approved: &approved, Note: note})
			if err := st.FinishStep(ctx, s); err != nil {
				return "", err
			}
			return s.ID, nil
		}
	}
	if _, err := st.GetItem(ctx, run, item); errors.Is(err, store.ErrNotFound) {
		return "", fmt.Errorf("run %s has no item %s (cadre status %s lists its items)", run, item, run)
	}
	return "", fmt.Errorf("item %s of run %s is not waiting for a human", item, run)
}
