package cli

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/cadre-dev/cadre/internal/engine"
	"github.com/cadre-dev/cadre/internal/runlock"
	"github.com/cadre-dev/cadre/internal/runstop"
	"github.com/cadre-dev/cadre/internal/store"
	"github.com/cadre-dev/cadre/internal/ui/web"
)

// boardActions carry out the board's buttons. In cadre run --serve the
// process's own run loop resumes after approvals (see runServed); in
// cadre serve (standalone) an approved run that no process runs is
// resumed here, and one that another process runs is resumed here once
// that process has exited paused.
type boardActions struct {
	f          *Factory
	ws         workspaceCtx
	st         *store.Store
	lock       string // the repository's run lock
	standalone bool

	mu       sync.Mutex
	answered int             // approvals so far: a run loop resumes when it changed
	wake     chan struct{}   // signalled at each approval and stop
	stopped  map[string]bool // runs whose waiting for approvals was stopped
	pending  map[string]bool // runs answered while another process ran them
	resumes  sync.WaitGroup  // runs this process resumes
	resuming map[string]bool // runs being resumed here now
}

func newBoardActions(ctx context.Context, f *Factory, ws workspaceCtx, st *store.Store, standalone bool) *boardActions {
	lock, _ := runLock(ctx, ws.root) // unreadable: no run of another process is seen active
	return &boardActions{f: f, ws: ws, st: st, lock: lock, standalone: standalone, wake: make(chan struct{}, 1),
		stopped: map[string]bool{}, pending: map[string]bool{}, resuming: map[string]bool{}}
}

func (a *boardActions) signal() {
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

// Approve journals the answer, as cadre approve does.
func (a *boardActions) Approve(ctx context.Context, run, item string, approved bool, note string) error {
	step, err := engine.Approve(ctx, a.st, run, item, approved, note)
	if err != nil {
		if _, gerr := a.st.GetItem(ctx, run, item); gerr != nil {
			return gerr
		}
		return fmt.Errorf("%w: %w", web.ErrConflict, err)
	}
	// A run on Temporal waits in its item's workflow, which takes the
	// answer as a signal and goes on: there is nothing to resume here.
	goes, err := a.f.signalApproval(ctx, a.st, run, item, step, approved, note)
	if err != nil {
		return err
	}
	a.mu.Lock()
	a.answered++
	if a.standalone && !goes {
		a.pending[run] = true
	}
	a.mu.Unlock()
	a.signal()
	return nil
}

// Stop asks the active run to start no new step; a run --serve waiting
// for approvals stops waiting.
func (a *boardActions) Stop(ctx context.Context, run string) error {
	h, ok := runlock.Holder(a.lock)
	active := h.Run
	// A run on Temporal is stopped through its workflows, also once the
	// process that started it is gone, as cadre stop does.
	if _, onTemporal, err := a.f.stopOnTemporal(ctx, a.st, stateDirOf(a.ws), run, ok && active == run, false); onTemporal || err != nil {
		return err
	}
	if ok && active == run {
		return runstop.Request(stateDirOf(a.ws), run)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.standalone {
		a.stopped[run] = true
		a.signal()
		return nil
	}
	return fmt.Errorf("%w: run %s is not running", web.ErrConflict, run)
}

func (a *boardActions) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.answered
}

func (a *boardActions) stopWaiting(run string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.stopped[run]
}

// watch resumes, until ctx ends, the runs answered on this board once no
// other process runs them (standalone cadre serve).
func (a *boardActions) watch(ctx context.Context) error {
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-a.wake:
		case <-t.C:
		}
		if _, active := runlock.Holder(a.lock); active {
			continue // that process goes on with the answers itself, or exits first
		}
		a.mu.Lock()
		for run := range a.pending {
			if a.resuming[run] {
				continue
			}
			delete(a.pending, run)
			a.resuming[run] = true
			a.resumes.Add(1)
			go a.resume(ctx, run)
		}
		a.mu.Unlock()
	}
}

// resume continues run in this process, again while answers come in
// during it, and reports how it ended.
func (a *boardActions) resume(ctx context.Context, run string) {
	defer a.resumes.Done()
	defer func() {
		a.mu.Lock()
		delete(a.resuming, run)
		a.mu.Unlock()
	}()
	r, err := a.st.GetRun(ctx, run)
	if err != nil || r.Status == store.RunCompleted {
		return
	}
	// One board may serve several repositories: say which one this is.
	fmt.Fprintf(a.f.IO.ErrOut, "cadre: resuming run %s of %s after an answer on the board\n", run, a.ws.root)
	e, flush, err := a.f.newEngine(ctx, a.ws, a.st, a.f.eventSink(false))
	if err != nil {
		fmt.Fprintf(a.f.IO.ErrOut, "cadre: resume %s: %v\n", run, err)
		return
	}
	defer flush()
	for {
		seen := a.count()
		sum, err := e.Resume(ctx, run)
		if err != nil {
			fmt.Fprintf(a.f.IO.ErrOut, "cadre: resume %s: %v\n", run, err)
			return
		}
		if sum.Status == store.RunPaused && a.count() != seen {
			continue // answered while it ran: the answers wait in the journal
		}
		a.mu.Lock()
		delete(a.pending, run) // what this resume consumed
		a.mu.Unlock()
		fmt.Fprintf(a.f.IO.ErrOut, "cadre: run %s of %s %s\n", run, a.ws.root, sum.Status)
		return
	}
}

// wait waits for the runs this process resumes.
func (a *boardActions) wait() { a.resumes.Wait() }
