package engine

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/item/taskfile"
	"github.com/cadre-dev/cadre/internal/report"
	"github.com/cadre-dev/cadre/internal/runner"
	"github.com/cadre-dev/cadre/internal/runstop"
	"github.com/cadre-dev/cadre/internal/store"
)

// runState is what the items of one run share.
type runState struct {
	id      string
	opts    Options
	resumed bool
	// files: the run's items run in several processes (OpenRun), which
	// learn of a halt from the run's halt and stop files only; this
	// process's halt in memory would outlive the run's attempt.
	files bool
	done  map[string]chan struct{} // closed when an item ends (or is never started)

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

// haltedWhy is the run's halt status and its reason.
func (rs *runState) haltedWhy() (string, string) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.haltStatus, rs.haltReason
}

func (rs *runState) fail(reason string) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.failed == "" {
		rs.failed = reason
	}
}

// beginRun journals run as running and returns the state its items share.
func (e *Engine) beginRun(ctx context.Context, runID string, opts Options, resumed bool) (*runState, []store.Item, error) {
	if err := e.d.Store.SetRunStatus(ctx, runID, store.RunRunning, e.d.PID); err != nil {
		return nil, nil, err
	}
	e.d.Bus.Publish(event.Event{Run: runID, Type: event.RunStarted, Message: map[bool]string{false: "started", true: "resumed"}[resumed]})
	items, err := e.d.Store.Items(ctx, runID)
	if err != nil {
		return nil, nil, err
	}
	rs := &runState{id: runID, opts: opts, resumed: resumed, done: map[string]chan struct{}{}, ok: map[string]bool{}}
	for _, it := range items {
		rs.done[it.ID] = make(chan struct{})
	}
	e.limitDuration(ctx, rs)
	return rs, items, nil
}

// limitDuration stops the run as cadre stop does (running steps finish, no
// new one starts; cadre resume goes on) once it has run
// limits.max_run_duration in this process, and says so in a warning event
// naming the limit. The watch ends with the run's items, or with ctx.
func (e *Engine) limitDuration(ctx context.Context, rs *runState) {
	d := time.Duration(e.d.Config.Limits.MaxRunDuration)
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	go func() {
		defer t.Stop()
		ended := make(chan struct{})
		go func() {
			defer close(ended)
			for _, ch := range rs.done {
				select {
				case <-ch:
				case <-ctx.Done():
					return
				}
			}
		}()
		select {
		case <-t.C:
		case <-ended:
			return
		}
		if ctx.Err() != nil {
			return
		}
		reason := fmt.Sprintf("limits.max_run_duration (%s) reached", d)
		rs.halt(store.RunStopped, reason)
		msg := reason + ": the run stops after its running steps; continue with cadre resume " + rs.id
		if err := runstop.Request(e.StateDir(), rs.id); err != nil {
			msg += " (" + err.Error() + ")"
		}
		e.d.Bus.Publish(event.Event{Run: rs.id, Type: event.Warning, Message: msg})
	}()
}

// summary is how the run ended once its items have: halted, else failed,
// else paused, else completed.
func (rs *runState) summary() report.Summary {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	sum := report.Summary{Run: rs.id, Status: store.RunCompleted}
	switch {
	case rs.haltStatus != "":
		sum.Status, sum.Reason = rs.haltStatus, rs.haltReason
	case rs.failed != "":
		sum.Status, sum.Reason = store.RunFailed, rs.failed
	case rs.paused != "":
		sum.Status, sum.Reason = store.RunPaused, rs.paused
	}
	return sum
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
