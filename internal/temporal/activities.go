package temporal

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/cadre-dev/cadre/internal/engine"
	"github.com/cadre-dev/cadre/internal/event"
	flow "github.com/cadre-dev/cadre/internal/workflow"
)

// Activities perform an item's steps in a worker, through the embedded
// engine's effect code against the repository's journal. For now a worker
// works in the repository of the directory it started in, so the workers
// of one task queue share a machine, its repository and its journal;
// a worker keeps the items it touched open (their worktrees, their
// task-file writers) until their workflow ends.
type Activities struct {
	Engine   *engine.Engine
	Progress *Progress // the engine's step progress, for heartbeats

	mu    sync.Mutex
	runs  map[string]*engine.RunSteps
	items map[ItemRef]*engine.ItemSteps

	// inflight counts the activities running, so a stopping worker can
	// wait for them before it closes the journal they write to.
	inflight sync.WaitGroup
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

// item opens (once per worker) the steps of an item.
func (a *Activities) item(ctx context.Context, ref ItemRef) (*engine.ItemSteps, error) {
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
		if rs, err = a.Engine.OpenRun(ctx, ref.Run); err != nil {
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

// begin starts an activity on ref's item: counted in flight, heartbeating
// step's progress, the item opened. The returned function ends it.
func (a *Activities) begin(ctx context.Context, ref ItemRef, step string) (*engine.ItemSteps, func(), error) {
	a.inflight.Add(1)
	stop := a.heartbeat(ctx, ref.Run, step)
	end := func() { stop(); a.inflight.Done() }
	s, err := a.item(ctx, ref)
	if err != nil {
		end()
		return nil, nil, err
	}
	return s, end, nil
}

// Begin checks the item and gives it its worktree.
func (a *Activities) Begin(ctx context.Context, in ItemRef) (engine.Begun, error) {
	s, end, err := a.begin(ctx, in, "")
	if err != nil {
		return engine.Begun{}, err
	}
	defer end()
	return s.Begin(ctx)
}

// Agent performs (or replays) an agent step, heartbeating its progress.
func (a *Activities) Agent(ctx context.Context, in AgentInput) (flow.Outcome, error) {
	s, end, err := a.begin(ctx, in.ItemRef, in.Call.ID)
	if err != nil {
		return flow.Outcome{}, err
	}
	defer end()
	out, err := s.Agent(ctx, in.Call, in.Visit)
	return out, stepFailure(err)
}

// Action performs (or replays) a deterministic step, heartbeating.
func (a *Activities) Action(ctx context.Context, in ActionInput) (flow.Outcome, error) {
	s, end, err := a.begin(ctx, in.ItemRef, in.Call.ID)
	if err != nil {
		return flow.Outcome{}, err
	}
	defer end()
	out, err := s.Action(ctx, in.Call)
	return out, stepFailure(err)
}

// Stage performs (or replays) a step of the runner workflow, heartbeating.
func (a *Activities) Stage(ctx context.Context, in StageInput) (engine.Staged, error) {
	s, end, err := a.begin(ctx, in.ItemRef, in.Decision.Step.ID)
	if err != nil {
		return engine.Staged{}, err
	}
	defer end()
	out, err := s.Stage(ctx, in.State, in.Decision)
	return out, stepFailure(err)
}

// Ask journals a question to a human, or returns its journaled answer.
func (a *Activities) Ask(ctx context.Context, in HumanInput) (Asked, error) {
	s, end, err := a.begin(ctx, in.ItemRef, "")
	if err != nil {
		return Asked{}, err
	}
	defer end()
	ans, ok, err := s.Ask(ctx, in.Call)
	return Asked{Answered: ok, Answer: ans}, err
}

// Answer journals a human's answer.
func (a *Activities) Answer(ctx context.Context, in AnswerInput) error {
	s, end, err := a.begin(ctx, in.ItemRef, "")
	if err != nil {
		return err
	}
	defer end()
	return s.Answer(ctx, in.Call, in.Answer)
}

// End journals the item's end and closes it in this worker.
func (a *Activities) End(ctx context.Context, in EndInput) (engine.Ended, error) {
	s, end, err := a.begin(ctx, in.ItemRef, "")
	if err != nil {
		return engine.Ended{}, err
	}
	defer end()
	for _, w := range in.Warnings {
		s.Warn(w)
	}
	ended, err := s.End(ctx, in.Ending)
	if err != nil {
		return engine.Ended{}, err
	}
	a.mu.Lock()
	delete(a.items, in.ItemRef)
	a.mu.Unlock()
	if err := s.Close(); err != nil {
		s.Warn("update task file: " + err.Error())
	}
	return ended, nil
}

// stepFailure marks the failures Temporal must not retry.
func stepFailure(err error) error {
	if bp := (*engine.BudgetPause)(nil); errors.As(err, &bp) {
		return temporal.NewNonRetryableApplicationError(bp.Reason, ErrTypeBudget, nil)
	}
	switch {
	case errors.Is(err, engine.ErrStopping):
		return temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeStopping, nil)
	case errors.Is(err, flow.ErrPaused):
		msg := strings.TrimSuffix(err.Error(), ": "+flow.ErrPaused.Error())
		return temporal.NewNonRetryableApplicationError(msg, ErrTypePaused, nil)
	case errors.Is(err, engine.ErrTampered):
		return temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeTampered, nil)
	}
	return err
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
// quicker than one interval sends none. Heartbeats are also how a step
// learns that its workflow was cancelled.
func (a *Activities) heartbeat(ctx context.Context, run, step string) func() {
	done, ended := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ended)
		t := time.NewTicker(heartbeatInterval(activity.GetInfo(ctx).HeartbeatTimeout))
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			activity.RecordHeartbeat(ctx, a.Progress.Last(run, step))
		}
	}()
	return func() {
		close(done)
		<-ended
	}
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
