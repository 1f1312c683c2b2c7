package temporal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	osexec "os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/cadre-dev/cadre/internal/engine"
	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/executor"
	"github.com/cadre-dev/cadre/internal/proc"
	"github.com/cadre-dev/cadre/internal/replica"
	"github.com/cadre-dev/cadre/internal/role"
	"github.com/cadre-dev/cadre/internal/runner"
	"github.com/cadre-dev/cadre/internal/safefile"
	"github.com/cadre-dev/cadre/internal/store"
	flow "github.com/cadre-dev/cadre/internal/workflow"
	"github.com/cadre-dev/cadre/internal/workspace"
)

// Activities perform an item's steps in a worker, through the embedded
// engine's effect code against the journal of the repository the worker
// started in: the run's own journal when the worker shares its home's
// state directory, else a replica of the item's (home.go). A worker keeps
// the items it touched open (their worktrees, their task-file writers)
// until their workflow ends.
type Activities struct {
	Engine   *engine.Engine
	Progress *Progress // the engine's step progress, for heartbeats

	// Home names the journal this worker works on (HomeOf its state
	// directory); ID and Queue name the worker and its own task queue,
	// which the items of runs from elsewhere come back to.
	Home, ID, Queue string
	// Replica keeps the items of runs from elsewhere.
	Replica Replica
	// Origin: the repository has the remote the items' branches travel
	// through, so even the items of runs started here push their branch
	// (and uncommitted changes) after each step, for workers elsewhere to
	// continue them.
	Origin bool

	mu       sync.Mutex
	runs     map[string]*engine.RunSteps
	items    map[ItemRef]*engine.ItemSteps
	hydrated map[ItemRef]int           // the export each remote item was last hydrated from
	turns    map[ItemRef]chan struct{} // one step of a remote item at a time

	// inflight counts the activities running, so a stopping worker can
	// wait for them before it closes the journal they write to.
	inflight sync.WaitGroup

	// beat sends one heartbeat of the activity in ctx and returns
	// Temporal's answer; nil: through the activity's client. Tests hold
	// it to play a worker whose heartbeats come late.
	beat func(ctx context.Context, details string) error
}

// wait waits up to d for the running activities to return.
func (a *Activities) wait(d time.Duration) {
	done := make(chan struct{})
	go func() { a.inflight.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
	}
}

// Replica is the engine's side of an item of a run from elsewhere.
type Replica interface {
	// Hydrate brings the item's journal (and the files its steps read)
	// to the home's snapshot, dropping what this worker did not send home.
	Hydrate(ctx context.Context, snap json.RawMessage) error
	// Take returns what the item's steps changed since the last take.
	Take(ctx context.Context, s *engine.ItemSteps) (json.RawMessage, error)
	// Seq is the number of the item's batches the replica counts: its
	// snapshot's and those taken since.
	Seq(ctx context.Context, run, item string) (int64, error)
}

// EngineReplica is the engine's replica of items from elsewhere.
type EngineReplica struct{ Engine *engine.Engine }

func (r EngineReplica) Hydrate(ctx context.Context, data json.RawMessage) error {
	var snap replica.Snapshot
	if err := json.Unmarshal(data, &snap); err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	return r.Engine.Replica().Hydrate(ctx, snap)
}

func (r EngineReplica) Seq(ctx context.Context, run, item string) (int64, error) {
	return r.Engine.Replica().Seq(ctx, run, item)
}

func (r EngineReplica) Take(ctx context.Context, s *engine.ItemSteps) (json.RawMessage, error) {
	b, err := s.TakeBatch(ctx)
	if err != nil {
		return nil, err
	}
	return json.Marshal(b)
}

// remoteName is the git remote through which the items' branches travel
// between machines: the one a clone names its origin.
const remoteName = "origin"

// item opens (once per worker) the steps of an item; remote: its branch
// travels through the origin.
func (a *Activities) item(ctx context.Context, ref ItemRef, remote bool) (*engine.ItemSteps, error) {
	ref = ref.key()
	a.mu.Lock()
	defer a.mu.Unlock()
	if s := a.items[ref]; s != nil {
		return s, nil
	}
	if a.runs == nil {
		a.runs, a.items = map[string]*engine.RunSteps{}, map[ItemRef]*engine.ItemSteps{}
	}
	rs := a.runs[ref.Run]
	if rs == nil {
		var err error
		var opts []executor.OpenOptions
		if remote {
			opts = append(opts, executor.OpenOptions{Remote: remoteName})
		}
		if rs, err = a.Engine.OpenRun(ctx, ref.Run, opts...); err != nil {
			return nil, err
		}
		a.runs[ref.Run] = rs
	}
	s, err := rs.OpenItem(ctx, ref.Item)
	if err != nil {
		return nil, err
	}
	a.items[ref] = s
	return s, nil
}

// span is one activity on an item.
type span struct {
	a      *Activities
	s      *engine.ItemSteps // nil until the item is open
	ref    ItemRef
	step   string // "" for the item's own activities (its begin, its end)
	remote bool   // the run's home is elsewhere: the item is a replica's
	homed  bool   // the run has a home (runs recorded before have none)
	stop   func()
}

// begin starts an activity on ref's item: counted in flight, heartbeating
// step's progress on its lease (lease.go), the item hydrated when it is a
// run's from elsewhere and this worker's replica is behind, the item
// opened. The activity works in the returned context, which ends with
// the lease; the span's end ends it.
func (a *Activities) begin(ctx context.Context, ref ItemRef, step string) (context.Context, *engine.ItemSteps, *span, error) {
	a.inflight.Add(1)
	l, stop := a.heartbeat(ctx, ref.Run, step)
	ctx = l
	sp := &span{a: a, ref: ref.key(), step: step, remote: ref.Sync != nil && ref.Sync.Home != a.Home, homed: ref.Sync != nil, stop: func() { stop(); a.inflight.Done() }}
	if sp.remote && !a.Origin {
		// Retrying cannot help: the clone lacks what the item's branch
		// travels through.
		sp.stop()
		return nil, nil, nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf(
			"item %s: this worker's repository has no remote origin, through which the items of runs started on other machines travel: add it (git remote add origin URL) or run the worker in the run's repository", ref.Item),
			ErrTypeNoOrigin, nil)
	}
	if sp.remote {
		// One step of a remote item at a time here, whatever its
		// workflow sends (a step it gave up on when cancelled may still
		// run): two would take batches under each other.
		turn := a.turn(sp.ref)
		select {
		case turn <- struct{}{}:
		case <-ctx.Done():
			err := sp.lost(ctx, ctx.Err())
			sp.stop()
			return nil, nil, nil, err
		}
		stop := sp.stop
		sp.stop = func() { <-turn; stop() }
		if err := a.hydrate(ctx, ref); err != nil {
			err = sp.lost(ctx, err)
			sp.stop()
			return nil, nil, nil, err
		}
	}
	// An item of a run with a home may move between this machine and
	// others: its branch goes through the origin wherever it runs.
	s, err := a.item(ctx, ref, sp.remote || (ref.Sync != nil && a.Origin))
	if err != nil {
		_, err = sp.end(ctx, err)
		return nil, nil, nil, err
	}
	sp.s = s
	return ctx, s, sp, nil
}

// lost is err, or, when the activity's lease was lost, the loss: the
// step stopped because it may be another worker's now, not for err.
func (sp *span) lost(ctx context.Context, err error) error {
	if l, ok := ctx.(*lease); ok && err != nil {
		what := "item " + sp.ref.Item
		if sp.step != "" {
			what = "step " + sp.step
		}
		if lerr := lostErr(l, what); lerr != nil {
			return lerr
		}
	}
	return err
}

// end ends the activity: what it changed in a replica goes in its result,
// or, when it failed for good (a pause, a stop, a tampered tree), in its
// failure. A failure Temporal retries leaves its changes for the next take.
func (sp *span) end(ctx context.Context, err error) (Synced, error) {
	defer sp.stop()
	err = sp.lost(ctx, err)
	sy, err := sp.result(ctx, err)
	sp.retrying(ctx, err)
	return sy, err
}

// result is the activity's result and failure, for end.
func (sp *span) result(ctx context.Context, err error) (Synced, error) {
	var sy Synced
	if sp.remote {
		err = stepFailure(err, nil)
		var ae *temporal.ApplicationError
		if sp.s != nil && (err == nil || (errors.As(err, &ae) && ae.NonRetryable())) {
			batch, terr := sp.a.Replica.Take(ctx, sp.s)
			if terr != nil {
				return Synced{}, fmt.Errorf("journal of %s: %w", sp.ref.Item, terr)
			}
			sy = Synced{Worker: sp.a.ID, Queue: sp.a.Queue, Batch: batch}
			if err != nil {
				err = stepFailure(err, &sy)
			}
		}
		return sy, err
	}
	if sp.homed {
		// The item's next steps come back to this worker while it lives:
		// its worktree is here.
		sy.Queue = sp.a.Queue
	}
	return sy, stepFailure(err, nil)
}

// retrying journals a warning when err is a failure Temporal will try
// again: without it the run shows the step starting over and over with no
// reason while its retries back off for minutes (the worker's log alone
// said why). A remote replica's warning goes home with its next batch,
// unless the replica is hydrated again before.
func (sp *span) retrying(ctx context.Context, err error) {
	var ae *temporal.ApplicationError
	if err == nil || sp.s == nil || ctx.Err() != nil || !activity.IsActivity(ctx) || (errors.As(err, &ae) && ae.NonRetryable()) {
		return
	}
	what := "item " + sp.ref.Item
	if sp.step != "" {
		what = "step " + sp.step
	}
	attempt := activity.GetInfo(ctx).Attempt
	if retry.MaximumAttempts > 0 && attempt >= retry.MaximumAttempts {
		return // the last attempt: the item fails with err
	}
	sp.s.Warn(fmt.Sprintf("%s failed on worker %s (attempt %d of %d), trying again: %v", what, sp.a.ID, attempt, retry.MaximumAttempts, err))
}

// turn is the item's token of one step at a time.
func (a *Activities) turn(ref ItemRef) chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.turns == nil {
		a.turns = map[ItemRef]chan struct{}{}
	}
	if a.turns[ref] == nil {
		a.turns[ref] = make(chan struct{}, 1)
	}
	return a.turns[ref]
}

// hydrate brings a remote item's replica to the home's snapshot unless
// it is fresh: this worker made every change since it was last brought up
// to date, and every batch it took reached home. The caller holds the
// item's turn, so no sibling step runs on the replica it replaces.
func (a *Activities) hydrate(ctx context.Context, ref ItemRef) error {
	if a.Replica == nil {
		return temporal.NewNonRetryableApplicationError("this worker keeps no replica for runs started on another machine", ErrTypeSetup, nil)
	}
	seq, err := a.Replica.Seq(ctx, ref.Run, ref.Item)
	synced := err == nil && seq == ref.Sync.Seq // else never hydrated here, or a batch was lost
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("journal of item %s: %w", ref.Item, err)
	}
	if synced && slices.Contains(ref.Sync.Fresh, a.ID) {
		return nil
	}
	if ref.Sync.Snap == nil {
		why := "never hydrated here"
		switch {
		case err == nil && !synced:
			why = fmt.Sprintf("its replica counts %d batches, the home %d", seq, ref.Sync.Seq)
		case err == nil:
			why = "steps ran elsewhere since"
		}
		return errCold(ref.Item, why)
	}
	key := ref.key()
	a.mu.Lock()
	defer a.mu.Unlock()
	if at, ok := a.hydrated[key]; ok && at >= ref.Sync.At && synced {
		return nil // a sibling step brought it there
	}
	if s := a.items[key]; s != nil {
		delete(a.items, key)
		if err := s.Close(); err != nil {
			s.Warn("update task file: " + err.Error())
		}
	}
	delete(a.runs, ref.Run) // its options may have changed (cadre resume)
	if err := a.Replica.Hydrate(ctx, ref.Sync.Snap); err != nil {
		return fmt.Errorf("hydrate item %s from its home: %w", ref.Item, err)
	}
	if a.hydrated == nil {
		a.hydrated = map[ItemRef]int{}
	}
	a.hydrated[key] = ref.Sync.At
	return nil
}

// Begin checks the item and gives it its worktree.
func (a *Activities) Begin(ctx context.Context, in ItemRef) (BeginResult, error) {
	ctx, s, sp, err := a.begin(ctx, in, "")
	if err != nil {
		return BeginResult{}, err
	}
	b, err := s.Begin(ctx)
	sy, err := sp.end(ctx, err)
	res := BeginResult{Begun: b, Synced: sy}
	return res, fits(in, "begin", res, err)
}

// Agent performs (or replays) an agent step, heartbeating its progress.
func (a *Activities) Agent(ctx context.Context, in AgentInput) (StepResult, error) {
	ctx, s, sp, err := a.begin(ctx, in.ItemRef, in.Call.ID)
	if err != nil {
		return StepResult{}, err
	}
	out, err := s.Agent(ctx, in.Call, in.Visit)
	sy, err := sp.end(ctx, err)
	res := StepResult{Outcome: out, Synced: sy}
	return res, fits(in.ItemRef, in.Call.ID, res, err)
}

// Action performs (or replays) a deterministic step, heartbeating.
func (a *Activities) Action(ctx context.Context, in ActionInput) (StepResult, error) {
	ctx, s, sp, err := a.begin(ctx, in.ItemRef, in.Call.ID)
	if err != nil {
		return StepResult{}, err
	}
	out, err := s.Action(ctx, in.Call)
	sy, err := sp.end(ctx, err)
	res := StepResult{Outcome: out, Synced: sy}
	return res, fits(in.ItemRef, in.Call.ID, res, err)
}

// Stage performs (or replays) a step of the stage pipeline, heartbeating.
func (a *Activities) Stage(ctx context.Context, in StageInput) (StageResult, error) {
	ctx, s, sp, err := a.begin(ctx, in.ItemRef, in.Decision.Step.ID)
	if err != nil {
		return StageResult{}, err
	}
	out, err := s.Stage(ctx, in.State, in.Decision)
	sy, err := sp.end(ctx, err)
	res := StageResult{Staged: out, Synced: sy}
	return res, fits(in.ItemRef, in.Decision.Step.ID, res, err)
}

// Ask journals a question to a human, or returns its journaled answer.
func (a *Activities) Ask(ctx context.Context, in HumanInput) (Asked, error) {
	ctx, s, sp, err := a.begin(ctx, in.ItemRef, "")
	if err != nil {
		return Asked{}, err
	}
	ans, ok, err := s.Ask(ctx, in.Call)
	sy, err := sp.end(ctx, err)
	return Asked{Answered: ok, Answer: ans, Synced: sy}, err
}

// Answer journals a human's answer.
func (a *Activities) Answer(ctx context.Context, in AnswerInput) (AnswerResult, error) {
	ctx, s, sp, err := a.begin(ctx, in.ItemRef, "")
	if err != nil {
		return AnswerResult{}, err
	}
	err = s.Answer(ctx, in.Call, in.Answer)
	sy, err := sp.end(ctx, err)
	return AnswerResult{Synced: sy}, err
}

// End journals the item's end and closes it in this worker.
func (a *Activities) End(ctx context.Context, in EndInput) (EndResult, error) {
	ctx, s, sp, err := a.begin(ctx, in.ItemRef, "")
	if err != nil {
		return EndResult{}, err
	}
	for _, w := range in.Warnings {
		s.Warn(w)
	}
	ended, err := s.End(ctx, in.Ending)
	// The batch is taken before the item closes here: it holds the
	// task file's last write.
	sy, err := sp.end(ctx, err)
	if err == nil {
		a.mu.Lock()
		delete(a.items, sp.ref)
		delete(a.hydrated, sp.ref)
		a.mu.Unlock()
		if cerr := s.Close(); cerr != nil {
			s.Warn("update task file: " + cerr.Error())
		}
	}
	return EndResult{Ended: ended, Synced: sy}, err
}

// stepFailure marks the failures Temporal must not retry; sy, when set,
// goes with the failure: what the step changed in a replica.
func stepFailure(err error, sy *Synced) error {
	var details []any
	if sy != nil {
		details = []any{*sy}
	}
	if bp := (*executor.BudgetPause)(nil); errors.As(err, &bp) {
		return temporal.NewNonRetryableApplicationError(bp.Reason, ErrTypeBudget, nil, details...)
	}
	var ae *temporal.ApplicationError
	switch {
	case errors.As(err, &ae):
		if sy != nil && ae.NonRetryable() {
			return temporal.NewNonRetryableApplicationError(ae.Message(), ae.Type(), nil, details...)
		}
	case errors.Is(err, executor.ErrStopping):
		return temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeStopping, nil, details...)
	case errors.Is(err, flow.ErrPaused):
		msg := strings.TrimSuffix(err.Error(), ": "+flow.ErrPaused.Error())
		return temporal.NewNonRetryableApplicationError(msg, ErrTypePaused, nil, details...)
	case errors.Is(err, executor.ErrTampered):
		return temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeTampered, nil, details...)
	case errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT):
		// The machine's fault, not the work's: a retry soon meets the
		// same full disk (and may repeat paid work), so the item waits,
		// resumable, for a person to free space.
		return temporal.NewNonRetryableApplicationError(err.Error()+"; free disk space, then cadre resume continues", ErrTypePaused, nil, details...)
	case errors.Is(err, safefile.ErrUnsafe):
		// The link stays where the agent planted it: no retry passes it.
		return temporal.NewNonRetryableApplicationError(err.Error(), ErrTypePlanted, nil, details...)
	case setupErr(err):
		return temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeSetup, nil, details...)
	}
	return err
}

// setupErr says whether err is one of the setup's, by its type: a runner
// or role that does not exist, a program not installed, credentials
// missing or refused, a sandbox that cannot work here, a leftover worktree
// that needs a person, a task file that will not load, a remote missing
// (executor.ErrPermanent). Retrying cannot cure them; a busy journal, the
// network or a lost worker may pass, and stay retried.
func setupErr(err error) bool {
	return errors.Is(err, runner.ErrUnknown) || errors.Is(err, role.ErrUnknown) || errors.Is(err, osexec.ErrNotFound) ||
		errors.Is(err, proc.ErrNoSandbox) || runner.KindOf(err) == runner.KindAuth || errors.Is(err, workspace.ErrDirtyWorktree) ||
		errors.Is(err, engine.ErrPreflight) || errors.Is(err, executor.ErrPermanent)
}

// heartbeatEvery is how often a running step tells Temporal it is alive,
// at most: a third of its heartbeat timeout when that is shorter, so a
// short timeout (a fast failover) does not take live steps away.
const heartbeatEvery = 2 * time.Second

func heartbeatInterval(timeout time.Duration) time.Duration {
	if timeout > 0 && timeout/3 < heartbeatEvery {
		return timeout / 3
	}
	return heartbeatEvery
}

// heartbeat sends the step's latest progress as heartbeats until the
// returned function is called, which waits for the last one: a heartbeat
// sent after the activity returned fails (its context is gone). A step
// quicker than one interval sends none. Each heartbeat waits for
// Temporal's answer: an accepted one renews the step's lease, a refused
// one ends it, and a cancellation (the workflow's, a person's pause or
// reset) goes to the SDK, which cancels the activity as such. An answer
// that does not come (a loaded server, the network) does not end the
// step by itself: the lease does, if none comes in time.
func (a *Activities) heartbeat(ctx context.Context, run, step string) (*lease, func()) {
	timeout := time.Duration(0)
	if activity.IsActivity(ctx) {
		timeout = activity.GetInfo(ctx).HeartbeatTimeout
	}
	l := newLease(ctx, timeout)
	// An answer still awaited when the activity ends does not hold its
	// end: its heartbeat is cancelled.
	beats, stopBeats := context.WithCancel(l.Context)
	done, ended := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ended)
		t := time.NewTicker(heartbeatInterval(timeout))
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-beats.Done():
				return
			case <-t.C:
			}
			details := a.Progress.Last(run, step)
			if timeout <= 0 {
				// No heartbeat timeout: nothing hands the step to
				// another worker, and the SDK's heartbeat carries a
				// cancellation.
				activity.RecordHeartbeat(ctx, details)
				continue
			}
			sent := time.Now()
			err := a.send(beats, l, details)
			switch {
			case err == nil:
				l.renew(sent)
			case refused(err):
				l.lose(fmt.Errorf("temporal refused its heartbeat (%w): this attempt timed out or went to another worker", err))
			case cancelling(err):
				activity.RecordHeartbeat(ctx, details)
			}
		}
	}()
	return l, func() {
		close(done)
		stopBeats()
		<-ended
		l.end()
	}
}

// send sends one heartbeat in ctx, waiting for Temporal's answer no
// longer than l lasts.
func (a *Activities) send(ctx context.Context, l *lease, details string) error {
	ctx, cancel := context.WithDeadline(ctx, time.Unix(0, l.until.Load()))
	defer cancel()
	if a.beat != nil {
		return a.beat(ctx, details)
	}
	return activity.GetClient(ctx).RecordActivityHeartbeat(ctx, activity.GetInfo(ctx).TaskToken, details)
}

// Progress keeps the last progress note of each running step, from the
// engine's events.
type Progress struct {
	mu   sync.Mutex
	last map[string]string
}

// Handle is the event.Sink method.
func (p *Progress) Handle(ev event.Event) {
	if p == nil || ev.Step == "" {
		return
	}
	key := ev.Run + "\x00" + ev.Step
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.last == nil {
		p.last = map[string]string{}
	}
	switch ev.Type {
	case event.StepProgress, event.StepStarted:
		p.last[key] = fmt.Sprintf("%s: %s", ev.Type, ev.Message)
	case event.StepCompleted, event.StepFailed:
		delete(p.last, key)
	}
}

// Last is a step's latest progress note.
func (p *Progress) Last(run, step string) string {
	if p == nil {
		return ""
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.last[run+"\x00"+step]
}
