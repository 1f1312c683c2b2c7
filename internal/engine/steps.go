package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/executor"
	"github.com/cadre-dev/cadre/internal/item/taskfile"
	"github.com/cadre-dev/cadre/internal/store"
	"github.com/cadre-dev/cadre/internal/workflow"
)

// An executor that runs the interpreter itself (the Temporal workflow)
// performs an item's effects one call at a time through ItemSteps: the
// embedded engine's own agentStep, Action and askHuman, journaled in the
// same store, so each effect has one implementation and a step that
// completed is replayed, never redone, whichever process asks for it.

// RunSteps is what the step executors of one stored run share: its
// options, runners and circuit breaker.
type RunSteps struct {
	e      *Engine
	rs     *runState
	remote string // executor.OpenOptions.Remote
}

// OpenRun returns the shared state of a journaled run, its items worked
// on as opt says (at most one executor.OpenOptions).
func (e *Engine) OpenRun(ctx context.Context, runID string, opt ...executor.OpenOptions) (*RunSteps, error) {
	r, err := e.d.Store.GetRun(ctx, runID)
	if err != nil {
		return nil, fmt.Errorf("open run %s: %w", runID, err)
	}
	var opts Options
	if err := json.Unmarshal(r.Options, &opts); err != nil {
		return nil, fmt.Errorf("open run %s: options: %w", runID, err)
	}
	// resumed: a worker may take over an item another one began, whose
	// worktree then holds this run's own uncommitted changes.
	rs := &runState{id: runID, opts: opts, resumed: true, files: true, done: map[string]chan struct{}{}, ok: map[string]bool{}}
	// The run's own items are the dependencies its driver awaits; Begin
	// checks only the others (unmetDeps), as the embedded engine does.
	items, err := e.d.Store.Items(ctx, runID)
	if err != nil {
		return nil, fmt.Errorf("open run %s: %w", runID, err)
	}
	for _, it := range items {
		rs.done[it.ID] = nil
	}
	out := &RunSteps{e: e, rs: rs}
	if len(opt) > 1 {
		return nil, fmt.Errorf("open run %s: more than one executor.OpenOptions", runID)
	}
	if len(opt) == 1 && opt[0].Remote != "" {
		if err := e.checkRemote(ctx, opts, opt[0].Remote); err != nil {
			return nil, fmt.Errorf("open run %s: %w", runID, err)
		}
		out.remote = opt[0].Remote
	}
	return out, nil
}

// ItemSteps performs the steps of one item of a run.
type ItemSteps struct {
	e       *Engine
	ir      *itemRun
	fx      *flowExec
	loadErr error

	mu    sync.Mutex
	ready bool // the item's tree is provisioned
}

// OpenItem prepares an item of the run for its steps. Close it when done.
func (r *RunSteps) OpenItem(ctx context.Context, itemID string) (*ItemSteps, error) {
	e, rs := r.e, r.rs
	it, err := e.d.Store.GetItem(ctx, rs.id, itemID)
	if err != nil {
		return nil, fmt.Errorf("open item %s: %w", itemID, err)
	}
	s := &ItemSteps{e: e}
	task, err := taskfile.Load(it.Ref)
	if err != nil {
		// Begin fails the item with this, as the embedded engine does.
		s.loadErr = executor.Permanent(errors.New(relErr(err, e.d.Root)))
		task = &taskfile.Task{ID: it.ID, Title: it.Title, Path: it.Ref}
	}
	ir := e.newItemRun(rs, it, task)
	e.learnCredential(ctx, ir)
	if r.remote != "" {
		ir.remote = e.remoteItem(ir, r.remote)
	}
	// The item's steps may run in several workers: each appends to the
	// one cycle log file, which Begin starts.
	e.startCycle(ir, e.workflowOf(rs.opts, task), true)
	s.ir, s.fx = ir, &flowExec{e: e, ir: ir}
	return s, nil
}

// Close flushes the item's task file.
func (s *ItemSteps) Close() error {
	return s.ir.board.Close()
}

// Begin checks the item, gives it its worktree (a declarative
// workflow's; the stage pipeline's first stage provisions its own) and
// journals it running, as the embedded engine does (begin). It is
// idempotent: an executor may call it again after a crash.
func (s *ItemSteps) Begin(ctx context.Context) (executor.Begun, error) {
	b, err := s.e.begin(ctx, s.ir, s.loadErr, s.provision, false)
	return b.Begun, err
}

// FailStart journals item failed, saying reason, when an executor could
// not begin it (its Begin failing past its retries, or on a setup no
// retry cures), as the embedded engine journals an item whose worktree
// cannot be made: failed, its run going on with its other items. It
// needs neither the item's task file nor its worktree, so the process
// keeping the run's journal can do it whatever failed elsewhere. An item
// that already ended keeps its end: a retried call changes nothing twice.
func (e *Engine) FailStart(ctx context.Context, run, item, reason string) (executor.Ended, error) {
	it, err := e.d.Store.GetItem(ctx, run, item)
	if err != nil {
		return executor.Ended{}, fmt.Errorf("fail item %s: %w", item, err)
	}
	switch it.Status {
	case store.ItemCompleted, store.ItemFailed, store.ItemSkipped:
		return executor.Ended{Status: it.Status, Reason: it.Error}, nil
	}
	if err := e.transit(ctx, run, item, failedBefore("", reason)); err != nil {
		return executor.Ended{}, err
	}
	return executor.Ended{Status: store.ItemFailed, Reason: reason}, nil
}

// provision gives the item its worktree once per ItemSteps: in this
// process, the first call of any step.
func (s *ItemSteps) provision(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.loadErr != nil {
		return s.loadErr
	}
	if s.ready {
		// Another worker may have continued the item since.
		return s.ir.remote.CatchUp(ctx)
	}
	if s.ir.opts.InPlace {
		return nil
	}
	if err := s.e.provision(ctx, s.ir); err != nil {
		return err
	}
	s.ready = true
	return nil
}

// Agent performs (or replays) an agent step, the visit-th of its role for
// the item: the caller counts visits, because a step may run in another
// process than the item's earlier ones. A pause (a runner's quota) is an
// error wrapping workflow.ErrPaused, a tampered tree one wrapping
// executor.ErrTampered.
func (s *ItemSteps) Agent(ctx context.Context, c workflow.AgentCall, visit int) (workflow.Outcome, error) {
	if err := s.provision(ctx); err != nil {
		return workflow.Outcome{}, err
	}
	s.ir.forgetWritten() // the item's previous step may have run in another process
	// fx.agent refuses the step (stop, halt, budget) before the task file
	// says a new agent.
	out, err := s.fx.agent(ctx, c, visit)
	return out, stepErr(err)
}

// Action performs (or replays) a deterministic step.
func (s *ItemSteps) Action(ctx context.Context, c workflow.ActionCall) (workflow.Outcome, error) {
	if err := s.provision(ctx); err != nil {
		return workflow.Outcome{}, err
	}
	if c.Kind == "checks" && s.fx.baseline == nil {
		// The baseline may have run in another process: its exit codes
		// are in the journal.
		if err := s.loadBaseline(ctx); err != nil {
			return workflow.Outcome{}, err
		}
	}
	out, err := s.fx.Action(ctx, c)
	return out, stepErr(err)
}

func (s *ItemSteps) loadBaseline(ctx context.Context) error {
	steps, err := s.e.d.Store.ItemSteps(ctx, s.ir.run, s.ir.it.ID)
	if err != nil {
		return fmt.Errorf("load baseline of %s: %w", s.ir.it.ID, err)
	}
	for _, st := range steps {
		if st.ItemID == s.ir.it.ID && st.Kind == "baseline" && st.Status == store.StepCompleted {
			var r actionResult
			if err := json.Unmarshal(st.Result, &r); err != nil {
				return fmt.Errorf("load baseline of %s: %w", s.ir.it.ID, err)
			}
			s.fx.baseline = r.Exits
		}
	}
	return nil
}

// stepErr is err as an executor takes it: a refused step is executor.ErrStopping
// rather than a pause, a tampered tree wraps executor.ErrTampered.
func stepErr(err error) error {
	if errors.Is(err, errStopping) {
		return executor.ErrStopping
	}
	return tampered(err)
}

func tampered(err error) error {
	if te := (*tamperError)(nil); errors.As(err, &te) {
		return fmt.Errorf("%s: %w", te.msg, executor.ErrTampered)
	}
	return err
}

// Ask journals an escalation and the item as waiting for a human, unless
// the journal already has the answer (cadre approve), which it returns.
func (s *ItemSteps) Ask(ctx context.Context, c workflow.HumanCall) (ans workflow.Answer, answered bool, err error) {
	e, ir := s.e, s.ir
	ans, err = e.askHuman(ctx, ir, c)
	if errors.Is(err, workflow.ErrPaused) {
		return workflow.Answer{}, false, e.setItem(ctx, ir, paused("", pauseReason(err)))
	}
	return ans, err == nil, err
}

// Answer journals a human's answer to the escalation c (given another way
// than through the journal: a Temporal signal), and the item running again.
func (s *ItemSteps) Answer(ctx context.Context, c workflow.HumanCall, ans workflow.Answer) error {
	e, ir := s.e, s.ir
	rec, err := e.d.Store.GetStep(ctx, ir.run, c.ID)
	if err != nil {
		return fmt.Errorf("answer %s: %w", c.ID, err)
	}
	if rec.Status != store.StepCompleted {
		rec.Status = store.StepCompleted
		rec.Result, _ = json.Marshal(actionResult{Approved: &ans.Approved, Note: ans.Note})
		if err := e.finishStep(ctx, rec); err != nil {
			return err
		}
	}
	ir.cycle.Human(c.ID, c.Reason, ans.Approved, ans.Note)
	return e.setItem(ctx, ir, change{status: store.ItemRunning, reason: strp(""),
		events: []event.Event{{Type: event.ItemResumed, Message: "answered: " + c.ID}}})
}

// Warn publishes a warning of the item's workflow.
func (s *ItemSteps) Warn(msg string) {
	s.e.publish(s.ir, event.Event{Type: event.Warning, Message: msg})
}

// End journals how the item's workflow ended exactly as the embedded
// engine does, publishing its branch and pull request when it completed.
func (s *ItemSteps) End(ctx context.Context, end executor.Ending) (executor.Ended, error) {
	e, ir := s.e, s.ir
	if end.Pipeline != nil {
		out, err := s.endPipeline(ctx, end)
		if err != nil {
			return executor.Ended{}, err
		}
		return s.ended(ctx, obeyed(out, end.Halted))
	}
	if end.Stopped {
		if h := end.Halted; h != nil {
			if err := e.setItem(ctx, ir, stopped(event.Event{Type: event.RunnerStopped, Message: h.Reason})); err != nil {
				return executor.Ended{}, err
			}
			return executor.Ended{Status: store.ItemStopped, Reason: "stopped by request", Halt: h.Status, HaltReason: h.Reason}, nil
		}
		if err := e.setItem(ctx, ir, stopped()); err != nil {
			return executor.Ended{}, err
		}
		return executor.Ended{Status: store.ItemStopped, Reason: "stopped by request"}, nil
	}
	var err error
	switch {
	case end.Tampered != "":
		err = &tamperError{end.Tampered}
	case end.Planted != "":
		err = planted(end.Planted)
	case end.Paused != "":
		err = fmt.Errorf("%s: %w", end.Paused, workflow.ErrPaused)
	case end.Result.Status == workflow.ResultCompleted || end.Result.Status == workflow.ResultAnswered:
		// Publishing pushes the item's tree, which this process may not
		// have opened: its other steps may have run in another worker.
		// Unprovisioned, the item's tree is the main checkout.
		if err := s.provision(ctx); err != nil {
			return executor.Ended{}, fmt.Errorf("publish %s: %w", ir.it.ID, err)
		}
	}
	out, err := e.endFlow(ctx, ir, end.Result, err)
	if err != nil {
		return executor.Ended{}, err
	}
	return s.ended(ctx, obeyed(out, end.Halted))
}

// obeyed is the outcome of an item that stopped for another item's halt
// h: the run halts as h says, as the embedded engine's stopItem reads the
// run's halt.
func obeyed(out itemOutcome, h *executor.RunHalt) itemOutcome {
	if h != nil && out.halt == store.RunStopped {
		out.halt, out.reason = h.Status, h.Reason
	}
	return out
}

// ended reads the item's journaled end; an end that fails the run (a hard
// stop, a tampered tree) is told to the run's items in other processes.
func (s *ItemSteps) ended(ctx context.Context, out itemOutcome) (executor.Ended, error) {
	e, ir := s.e, s.ir
	if out.halt == store.RunFailed {
		if err := e.haltRun(ir.run, out.reason); err != nil {
			return executor.Ended{}, err
		}
	}
	it, err := e.d.Store.GetItem(ctx, ir.run, ir.it.ID)
	if err != nil {
		return executor.Ended{}, err
	}
	ended := executor.Ended{Status: it.Status, Reason: it.Error, Halt: out.halt}
	if out.halt != "" {
		ended.HaltReason = out.reason
	}
	if it.Status == store.ItemCompleted {
		ir.remote.DropWIP(ctx)
	}
	return ended, nil
}

// pipelineLimits are cadre.yaml's limits as the stage pipeline takes them.
func (e *Engine) pipelineLimits() workflow.Limits {
	lim := e.d.Config.Limits
	return workflow.Limits{AuditPassRating: lim.AuditPassRating, MaxAttempts: lim.MaxAttempts, EscalateBelowConfidence: lim.EscalateBelowConfidence}
}

// itemLimits are the pipeline's limits for ir: max_attempts once more for
// each retry the journal grants it.
func (e *Engine) itemLimits(ir *itemRun) workflow.Limits {
	lim := e.pipelineLimits()
	lim.MaxAttempts *= 1 + ir.grants
	return lim
}

// Workflows are the engine's workflow definitions.
func (e *Engine) Workflows() *workflow.Registry { return e.d.Workflows }

// RoleExists says whether the repository defines role name.
func (e *Engine) RoleExists(name string) bool { return e.roleExists(name) }
