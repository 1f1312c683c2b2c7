package temporal

import (
	"context"
	"errors"
	"slices"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/cadre-dev/cadre/internal/executor"
	"github.com/cadre-dev/cadre/internal/store"
	flow "github.com/cadre-dev/cadre/internal/workflow"
)

// Workflows holds what the item workflow reads besides its input: the
// repository's workflow definitions and roles. Every worker of a task
// queue must load the same ones (the same repository): a workflow that
// moves to a worker with other definitions would decide differently.
type Workflows struct {
	Defs  *flow.Registry
	Roles func(string) bool
	// History says when an item's workflow continues as new (zero:
	// DefaultHistoryLimits).
	History HistoryLimits
}

// Item runs one item's workflow: the interpreter (or, for the runner
// workflow, workflow.Next) decides, activities act. An end that halts
// the run is told to the run's other items.
func (w *Workflows) Item(ctx workflow.Context, in ItemInput) (executor.Ended, error) {
	x := newExec(in)
	x.limits = w.History
	if x.limits == (HistoryLimits{}) {
		x.limits = DefaultHistoryLimits
	}
	ended, err := w.item(ctx, x)
	if err != nil {
		return ended, err
	}
	x.haltSiblings(ctx, ended)
	return ended, nil
}

func (w *Workflows) item(ctx workflow.Context, x *exec) (executor.Ended, error) {
	var begun executor.Begun
	if c := x.in.Carry; c != nil {
		// A run continued from another: the item began there.
		begun = c.Begun
		x.restore(c)
	} else {
		var br BeginResult
		if err := x.act(ctx, x.journalCtx(ctx), ActBegin, func(r ItemRef) any { return r }, &br); err != nil {
			if ctx.Err() != nil {
				return x.beginStopped(ctx, err)
			}
			return x.beginFailed(ctx, err)
		}
		begun = br.Begun
	}
	if begun.Status != "" {
		return executor.Ended{Status: begun.Status, Reason: begun.Reason}, nil
	}
	x.begun = &begun
	x.items = begun.Items
	if begun.Workflow == flow.PipelineWorkflow {
		return x.pipeline(ctx, begun)
	}
	def, ok := w.Defs.Get(begun.Workflow)
	if !ok {
		return x.end(ctx, executor.Ending{Result: flow.Result{Status: flow.ResultFailed, Reason: "unknown workflow " + begun.Workflow + " on this worker"}})
	}
	if err := workflow.SetQueryHandler(ctx, QueryPending, x.pendingCalls); err != nil {
		return executor.Ended{}, err
	}
	x.receive(ctx)
	interp := &flow.Interp{Item: x.ref.Item, Defs: w.Defs, Exec: x, Lim: begun.Limits, Goals: begun.Goals, Roles: w.Roles, Fanout: fanout,
		IgnoreNext: workflow.GetVersion(ctx, versionRouteNext, workflow.DefaultVersion, 1) == workflow.DefaultVersion}
	res, err := interp.Run(withWorkflow(ctx), def)
	ending := executor.Ending{Result: res, Paused: x.paused, Tampered: x.tampered, Planted: x.planted}
	switch {
	case ctx.Err() != nil:
		// Cancelled (cadre stop --now): journal the item stopped, then
		// end the workflow cancelled.
		ending = executor.Ending{Stopped: true}
		dctx, _ := workflow.NewDisconnectedContext(ctx)
		if _, err := x.end(dctx, ending); err != nil {
			return executor.Ended{}, err
		}
		return executor.Ended{}, ctx.Err()
	case x.stopping && (errors.Is(err, errStopping) || errors.Is(err, errContinue)):
		// Stopped by request (cadre stop): the running steps finished.
		return x.end(ctx, executor.Ending{Stopped: true})
	case x.paused != "" || x.tampered != "" || x.planted != "":
	case x.continuing && errors.Is(err, errContinue):
		// The history is large: the running steps finished, the next run
		// takes up from here.
		return x.continueAsNew(ctx, nil, nil)
	case err != nil:
		// A step failed past its retries (the journal, a lost worktree),
		// or on the setup: the item fails, saying why.
		ending.Result = flow.Result{Status: flow.ResultFailed, Reason: why(err)}
	}
	return x.end(ctx, ending)
}

// versionRouteNext marks the workflows whose steps' Next routes the
// loop's rounds (a planner's Next: judge skips the actor): histories
// recorded before it ran every step of a round, whatever its Next said,
// and replay so.
const versionRouteNext = "route-next"

// versionBeginStopped marks the workflows that journal an item stopped
// when they are cancelled (cadre stop --now) while it begins: histories
// recorded before it ended such a workflow cancelled, its item left
// pending or running, which cadre status showed as if it still ran.
const versionBeginStopped = "begin-stopped"

// beginStopped ends an item whose workflow was cancelled during its
// Begin: once Begin has ended (its journal step is waited for), the item
// is journaled stopped, as the embedded engine journals an item stopped
// before its first step, and cadre resume starts it again. The workflow
// ends cancelled.
func (x *exec) beginStopped(ctx workflow.Context, err error) (executor.Ended, error) {
	if workflow.GetVersion(ctx, versionBeginStopped, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return executor.Ended{}, err
	}
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	if _, err := x.end(dctx, executor.Ending{Stopped: true}); err != nil {
		return executor.Ended{}, err
	}
	return executor.Ended{}, ctx.Err()
}

// versionBeginFailed marks the workflows that journal an item failed
// when its Begin fails for good: histories recorded before it ended such
// a workflow failed, its item unended.
const versionBeginFailed = "begin-failed"

// beginFailed ends an item whose Begin failed past its retries (its
// worktree, its remote, the worker's setup): the run's home journals it
// failed, as the embedded engine an item whose worktree cannot be made,
// and the run goes on with its other items. The home does it because the
// item's workers may be what failed. A run without a home (recorded
// before homes) has no activity outside its items' workers: its workflow
// fails as before.
func (x *exec) beginFailed(ctx workflow.Context, err error) (executor.Ended, error) {
	if x.in.Home == "" {
		return executor.Ended{}, err
	}
	if workflow.GetVersion(ctx, versionBeginFailed, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return executor.Ended{}, err
	}
	var ended executor.Ended
	in := FailInput{ItemRef: x.ref, Reason: "could not begin: " + why(err)}
	if err := workflow.ExecuteActivity(x.homeCtx(ctx), ActFail, in).Get(ctx, &ended); err != nil {
		return executor.Ended{}, err
	}
	return ended, nil
}

// why is what an item's end says of a failed activity: the failure's own
// message, without the event ids and worker that Temporal's wrapping adds.
func why(err error) string {
	var ae *temporal.ApplicationError
	if errors.As(err, &ae) {
		return ae.Message()
	}
	return err.Error()
}

// exec is the interpreter's Exec inside the workflow: each effect is an
// activity. Its state changes only on the workflow's coroutines, one at a
// time, so it needs no lock and replays identically.
type exec struct {
	ref      ItemRef
	in       ItemInput
	visits   map[string]int
	warnings []string
	paused   string
	tampered string
	planted  string // a step's planted link: the item fails alone

	stopping bool              // cadre stop, or another item's halt, asked for no new step
	halt     *executor.RunHalt // the other item's halt, when that was it
	budget   bool              // paused is the stage pipeline's budget: the run pauses
	items    []string          // the run's items, to tell of this one's halt

	// The item's journal on workers elsewhere (home.go): who made each
	// change so far, the change each remote worker's replica was last
	// brought up to date at, the worker keeping the item, the replicas'
	// batches applied home, and whether a step is under way.
	by      []string
	at      map[string]int
	sticky  string
	applied int64
	acting  bool

	waiting []flow.HumanCall     // questions without an answer yet, oldest first
	answers map[string]*Approval // answers to questions, by call id
	early   []Approval           // approvals that came while no question waited

	// Continuing as new (continue.go): the limits, whether this run
	// stops to continue, or will not; the steps it did itself; the
	// item's Begin; what the run before carried; the steps done and
	// questions answered or asked, by call id, for the next run.
	limits     HistoryLimits
	continuing bool
	noContinue bool
	live       int
	begun      *executor.Begun
	halted     bool // the stage pipeline's: the run halted
	carried    *Carry
	done       map[string]flow.Outcome
	answered   map[string]flow.Answer
	asked      map[string]bool
}

func newExec(in ItemInput) *exec {
	if in.Heartbeat <= 0 {
		in.Heartbeat = DefaultHeartbeat
	}
	if in.Grace <= 0 {
		in.Grace = DefaultGrace
	}
	return &exec{ref: ItemRef{Run: in.Run, Item: in.Item}, in: in, visits: map[string]int{}, answers: map[string]*Approval{},
		done: map[string]flow.Outcome{}, answered: map[string]flow.Answer{}, asked: map[string]bool{}}
}

// retry is today's policy for a step: the runner's own decorator retries
// rate limits inside the step; Temporal retries the step when its worker
// is lost or the journal fails, never a quota (the item pauses) nor a
// tampered tree.
var retry = &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute,
	MaximumAttempts: 10, NonRetryableErrorTypes: []string{ErrTypePaused, ErrTypeBudget, ErrTypeTampered}}

// stepCtx is the activity context of a step that runs an agent or the
// project's commands: it heartbeats, so a lost worker's step moves on.
func (x *exec) stepCtx(ctx workflow.Context, commands int) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Duration(commands)*x.in.StepTimeout + x.in.Grace,
		HeartbeatTimeout:    x.in.Heartbeat,
		RetryPolicy:         retry,
		// A cancelled step ends (its agent's process group killed) before
		// the item is journaled stopped.
		WaitForCancellation: true,
	})
}

// journalCtx is the activity context of a step that journals, and at
// the item's start and end provisions its worktree or publishes it. It
// heartbeats too: without a heartbeat timeout, such a step held by a
// worker that died would wait out its whole start-to-close timeout. A
// cancelled one (cadre stop --now) is waited for, so the item is
// journaled stopped only after it wrote what it was writing (a question,
// an answer, the item running), never under it.
func (x *exec) journalCtx(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: x.in.Grace,
		HeartbeatTimeout: x.in.Heartbeat, RetryPolicy: retry, WaitForCancellation: x.journalWaits(ctx)})
}

// versionJournalWait marks the workflows that wait for a cancelled
// journal step to end: histories recorded before it went on (journaled
// the item stopped) as soon as it was asked to stop.
const versionJournalWait = "journal-waits"

// journalWaits says whether the workflow waits for its cancelled journal
// steps. The SDK keeps the version its first call (at Begin) found, so a
// workflow decides alike throughout.
func (x *exec) journalWaits(ctx workflow.Context) bool {
	return workflow.GetVersion(ctx, versionJournalWait, workflow.DefaultVersion, 1) == 1
}

// errStopping ends the item's flow once cadre stop asked for no new step.
// It wraps flow.ErrPaused, so a fan-out lets its running siblings finish
// instead of cancelling them.
var errStopping = errors.Join(errors.New("stopped by request"), flow.ErrPaused)

// receive takes the signals of the workflow's lifetime.
func (x *exec) receive(ctx workflow.Context) {
	workflow.Go(ctx, x.receiveApprovals)
	workflow.Go(ctx, x.receiveStop)
	workflow.Go(ctx, x.receiveHalt)
}

// receiveStop takes the stop signal.
func (x *exec) receiveStop(ctx workflow.Context) {
	if workflow.GetSignalChannel(ctx, SignalStop).Receive(ctx, nil) {
		x.stopping = true
	}
}

// receiveHalt takes another item's halt of the run: as the stop signal,
// no new step starts, and the item's end carries the halt.
func (x *exec) receiveHalt(ctx workflow.Context) {
	var h executor.RunHalt
	if workflow.GetSignalChannel(ctx, SignalHalt).Receive(ctx, &h) {
		x.halt, x.stopping = &h, true
	}
}

// versionHalt marks the workflows whose end tells the run's other items
// of its halt: histories recorded before it replay without the signals.
const versionHalt = "halt-siblings"

// haltSiblings tells the run's other items that this item's end halted
// the run (failed or paused it), so that they start no new step even when
// the process that started the run is gone and their workers do not see
// the run's halt file. An item that only obeyed another's halt tells no
// one: the halting item did.
func (x *exec) haltSiblings(ctx workflow.Context, ended executor.Ended) {
	if x.halt != nil || (ended.Halt != store.RunFailed && ended.Halt != store.RunPaused) {
		return
	}
	if workflow.GetVersion(ctx, versionHalt, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return
	}
	h := executor.RunHalt{Status: ended.Halt, Reason: ended.HaltReason}
	var sent []workflow.Future
	for _, it := range x.items {
		if it != x.ref.Item {
			sent = append(sent, workflow.SignalExternalWorkflow(ctx, WorkflowID(x.ref.Run, it), "", SignalHalt, h))
		}
	}
	for _, f := range sent {
		// An item whose workflow ended, or has not started (the run's
		// starter keeps it from starting), needs no telling.
		_ = f.Get(ctx, nil)
	}
}

func (x *exec) Agent(ctx context.Context, c flow.AgentCall) (flow.Outcome, error) {
	if o, ok := x.done[c.ID]; ok {
		// Done in an earlier run (its visit counted there).
		return o, nil
	}
	if x.stopping {
		return flow.Outcome{}, errStopping
	}
	wctx := workflowOf(ctx)
	if x.continues(wctx) {
		return flow.Outcome{}, errContinue
	}
	x.visits[c.Role]++
	visit := x.visits[c.Role]
	var out StepResult
	err := x.act(wctx, x.stepCtx(wctx, 1), ActAgent, func(r ItemRef) any { return AgentInput{ItemRef: r, Call: c, Visit: visit} }, &out)
	return x.did(c.ID, out.Outcome, err)
}

func (x *exec) Action(ctx context.Context, c flow.ActionCall) (flow.Outcome, error) {
	if o, ok := x.done[c.ID]; ok {
		return o, nil
	}
	if x.stopping {
		return flow.Outcome{}, errStopping
	}
	wctx := workflowOf(ctx)
	if x.continues(wctx) {
		return flow.Outcome{}, errContinue
	}
	// checks run up to four commands, a gatekeeper one agent.
	var out StepResult
	err := x.act(wctx, x.stepCtx(wctx, 4), ActAction, func(r ItemRef) any { return ActionInput{ItemRef: r, Call: c} }, &out)
	return x.did(c.ID, out.Outcome, err)
}

// did notes a step this run performed, and its outcome for a next run.
func (x *exec) did(id string, o flow.Outcome, err error) (flow.Outcome, error) {
	x.live++
	if err != nil {
		return o, x.stepErr(err)
	}
	x.done[id] = o
	return o, nil
}

// stepErr turns a step's failure into what the interpreter expects: a
// pause wraps flow.ErrPaused; the rest ends the item.
func (x *exec) stepErr(err error) error {
	var ae *temporal.ApplicationError
	if !errors.As(err, &ae) {
		return err
	}
	switch ae.Type() {
	case ErrTypeStopping:
		// As the stop signal: no new step starts, the running ones finish.
		x.stopping = true
		return errStopping
	case ErrTypePaused, ErrTypeBudget:
		if x.paused == "" {
			x.paused, x.budget = ae.Message(), ae.Type() == ErrTypeBudget
		}
		return errors.Join(err, flow.ErrPaused)
	case ErrTypeTampered:
		if x.tampered == "" {
			x.tampered = ae.Message()
		}
	case ErrTypePlanted:
		if x.planted == "" {
			x.planted = ae.Message()
		}
	}
	return err
}

// Human journals the question, then waits for the approve signal (or
// finds the answer already journaled), and journals the answer.
func (x *exec) Human(ctx context.Context, c flow.HumanCall) (flow.Answer, error) {
	if ans, ok := x.answered[c.ID]; ok {
		return ans, nil // answered in an earlier run
	}
	wctx := workflowOf(ctx)
	if !x.asked[c.ID] {
		var asked Asked
		if err := x.act(wctx, x.journalCtx(wctx), ActAsk, func(r ItemRef) any { return HumanInput{ItemRef: r, Call: c} }, &asked); err != nil {
			return flow.Answer{}, err
		}
		if asked.Answered {
			x.answered[c.ID] = asked.Answer
			return asked.Answer, nil
		}
		x.asked[c.ID] = true
	}
	x.waiting = append(x.waiting, c)
	x.deliver()
	if err := workflow.Await(wctx, func() bool { return x.answers[c.ID] != nil || x.stopping || x.continuing }); err != nil {
		return flow.Answer{}, err
	}
	if x.answers[c.ID] == nil {
		x.waiting = slices.DeleteFunc(x.waiting, func(w flow.HumanCall) bool { return w.ID == c.ID })
		if x.continuing && !x.stopping {
			return flow.Answer{}, errContinue // the next run waits on, without asking again
		}
		return flow.Answer{}, errStopping // the question stays journaled for resume
	}
	a := x.answers[c.ID]
	ans := flow.Answer{Approved: a.Approved, Note: a.Note}
	if err := x.act(wctx, x.journalCtx(wctx), ActAnswer, func(r ItemRef) any { return AnswerInput{ItemRef: r, Call: c, Answer: ans} }, &AnswerResult{}); err != nil {
		return flow.Answer{}, err
	}
	x.answered[c.ID] = ans
	return ans, nil
}

// receiveApprovals takes approve signals for the workflow's lifetime.
func (x *exec) receiveApprovals(ctx workflow.Context) {
	ch := workflow.GetSignalChannel(ctx, SignalApprove)
	for {
		var a Approval
		if !ch.Receive(ctx, &a) {
			return
		}
		x.early = append(x.early, a)
		x.deliver()
	}
}

// deliver hands the approvals received to the questions waiting: by call
// id, else to the oldest. An approval nothing waits for yet is kept for
// the next question, so one sent early is not lost.
func (x *exec) deliver() {
	var keep []Approval
	for _, a := range x.early {
		i := -1
		for j, c := range x.waiting {
			if a.Call == "" || a.Call == c.ID {
				i = j
				break
			}
		}
		if i < 0 {
			keep = append(keep, a)
			continue
		}
		x.answers[x.waiting[i].ID] = &a
		x.waiting = append(x.waiting[:i:i], x.waiting[i+1:]...)
	}
	x.early = keep
}

func (x *exec) pendingCalls() ([]flow.HumanCall, error) {
	return append([]flow.HumanCall{}, x.waiting...), nil
}

// Warn keeps the warning for the item's end: journaling it needs an
// activity, and the interpreter's Warn has no context to run one.
func (x *exec) Warn(msg string) { x.warnings = append(x.warnings, msg) }

func (x *exec) end(ctx workflow.Context, e executor.Ending) (executor.Ended, error) {
	e.Halted = x.halt
	var res EndResult
	err := x.act(ctx, x.journalCtx(ctx), ActEnd, func(r ItemRef) any { return EndInput{ItemRef: r, Ending: e, Warnings: x.warnings} }, &res)
	return res.Ended, err
}

// runner drives the stage pipeline with workflow.Drive, the loop the
// embedded engine drives it with: workflow.Next, pure and deterministic,
// decides here in workflow code, and each decision's effect is an
// activity (a stage's agent step with the task file's frontmatter, the
// question to a human, the item's end: its commit, or the hard stop that
// halts the run). A stop (the stop signal, or cadre stop or another
// item's hard stop as a stage reports them) reaches workflow.Next as a
// Stop event before its next decision: the running step finishes and no
// new stage starts.
func (x *exec) pipeline(ctx workflow.Context, b executor.Begun) (executor.Ended, error) {
	if err := workflow.SetQueryHandler(ctx, QueryPending, x.pendingCalls); err != nil {
		return executor.Ended{}, err
	}
	x.receive(ctx)
	lim := flow.Limits{AuditPassRating: b.Limits.AuditPassRating, MaxAttempts: b.Limits.MaxAttempts,
		EscalateBelowConfidence: b.Limits.EscalateBelowConfidence}
	x.halted = b.Halted
	var s flow.State
	var d flow.Decision
	if c := x.carried; c != nil && c.State != nil && c.Decision != nil {
		// Continued from another run: its state and next decision.
		s, d = *c.State, *c.Decision
		x.halted = c.Halted
	} else {
		s, d = flow.Begin(lim, x.ref.Item, b.Stage, b.Attempts, x.Stopping())
	}
	s, d, err := flow.Drive(withWorkflow(ctx), lim, x, s, d)
	switch {
	case errors.Is(err, errContinue):
		// The history is large: the next run takes up from this decision.
		return x.continueAsNew(ctx, &s, &d)
	case err != nil:
		return x.pipelineFailed(ctx, s, err)
	}
	// Complete, HardStop or Stopped: the item's end says which.
	return x.end(ctx, executor.Ending{Pipeline: &executor.PipelineEnding{State: s, Decision: d}})
}

// Stopping says whether the item starts no new stage: the stop signal,
// another item's halt, or a stage that found the run halted.
func (x *exec) Stopping() bool { return x.halted || x.stopping }

// Stage runs a stage's step as an activity, unless the history is large
// enough to continue as new first (errContinue).
func (x *exec) Stage(ctx context.Context, s flow.State, d flow.Decision) (flow.Event, error) {
	wctx := workflowOf(ctx)
	if !x.stopping && !x.halted && x.continues(wctx) {
		return flow.Event{}, errContinue
	}
	var got StageResult
	err := x.act(wctx, x.stepCtx(wctx, 1), ActStage, func(r ItemRef) any { return StageInput{ItemRef: r, State: s, Decision: d} }, &got)
	x.live++
	if err != nil {
		return flow.Event{}, err
	}
	x.halted = x.halted || got.Halted
	return got.Event, nil
}

// Ask puts a stage's question to a human (see Human).
func (x *exec) Ask(ctx context.Context, _ flow.State, d flow.Decision) (flow.Answer, error) {
	return x.Human(ctx, d.Human)
}

// pipelineFailed ends a stage-pipeline item whose step or question failed:
// cancelled (cadre stop --now), stopped while it waited for a human,
// paused (a quota), its tree tampered with, or a step failing past its
// retries, which is a hard stop.
func (x *exec) pipelineFailed(ctx workflow.Context, s flow.State, err error) (executor.Ended, error) {
	end := executor.Ending{Pipeline: &executor.PipelineEnding{State: s}}
	switch {
	case ctx.Err() != nil:
		end.Stopped = true
		dctx, _ := workflow.NewDisconnectedContext(ctx)
		if _, err := x.end(dctx, end); err != nil {
			return executor.Ended{}, err
		}
		return executor.Ended{}, ctx.Err()
	case x.stopping && errors.Is(err, errStopping):
		end.Pipeline.Decision = flow.Decision{Kind: flow.Stopped, Reason: "stopped while waiting for a human"}
		return x.end(ctx, end)
	}
	if errors.Is(x.stepErr(err), errStopping) {
		// The stage was refused: cadre stop (its stop file) or another
		// item's hard stop (the halt file) came since the last stage.
		end.Pipeline.Decision = flow.Decision{Kind: flow.Stopped, Reason: "stopped by request"}
		return x.end(ctx, end)
	}
	switch {
	case x.tampered != "":
		end.Tampered = x.tampered
	case x.planted != "":
		end.Planted = x.planted
	case x.paused != "":
		end.Paused, end.Budget = x.paused, x.budget
	default:
		end.Pipeline.Decision = flow.Decision{Kind: flow.HardStop, Reason: why(err)}
	}
	return x.end(ctx, end)
}
