package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/cadre-dev/cadre/internal/executor"
	"github.com/cadre-dev/cadre/internal/report"
	"github.com/cadre-dev/cadre/internal/runspec"
	"github.com/cadre-dev/cadre/internal/runstop"
	"github.com/cadre-dev/cadre/internal/store"
)

// StartWith begins a new run of opts like Start, but drive runs each item,
// all at once except that an item waits for the items it depends on. This
// process keeps the run's lock and its journal entry, so cadre status and
// report read the run as any other.
func (e *Engine) StartWith(ctx context.Context, opts Options, drive executor.Driver) (report.Summary, error) {
	if opts.InPlace {
		return report.Summary{}, fmt.Errorf("%w: --in-place works in this checkout, which only the embedded engine can do", ErrPreflight)
	}
	runID, release, err := e.create(ctx, opts)
	if err != nil {
		return report.Summary{}, err
	}
	defer release()
	return e.drive(ctx, runID, opts, false, drive)
}

// ResumeDriven continues run runID (the latest when "") like ResumeWith,
// but drive runs each item that has not ended: a run started with
// StartWith goes on in the executor it started in. Completed steps replay
// from the journal there, as in a resumed embedded run.
func (e *Engine) ResumeDriven(ctx context.Context, runID string, ov runspec.Overrides, drive executor.Driver) (report.Summary, error) {
	id, opts, release, err := e.reopen(ctx, runID, ov)
	if err != nil {
		return report.Summary{}, err
	}
	defer release()
	// The halt of the run's last attempt is over: its items go on.
	if err := runstop.Lift(e.StateDir(), id); err != nil {
		return report.Summary{}, fmt.Errorf("resume %s: %w", id, err)
	}
	return e.drive(ctx, id, opts, true, drive)
}

// drive runs the items of a journaled run through drive, all at once
// except that an item waits for the items it depends on.
func (e *Engine) drive(ctx context.Context, runID string, opts Options, resumed bool, drive executor.Driver) (report.Summary, error) {
	start := time.Now()
	rs, items, err := e.beginRun(ctx, runID, opts, resumed)
	if err != nil {
		return report.Summary{}, err
	}
	var wg sync.WaitGroup
	errs := make([]error, len(items))
	for i, it := range items {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(rs.done[it.ID])
			if it.Status == store.ItemCompleted || it.Status == store.ItemSkipped {
				rs.markOK(it.ID, it.Status == store.ItemCompleted)
				return
			}
			if reason := rs.waitDeps(ctx, it.ID, e.depsOf(it)); reason != "" {
				errs[i] = e.transit(ctx, runID, it.ID, skipped(reason))
				return
			}
			h, why := rs.haltedWhy()
			if h == store.RunPaused {
				// Another item's budget pause paused the run while this
				// one waited: it does not start, as on the embedded engine.
				return
			}
			if h != store.RunFailed {
				why = e.haltReason(runID)
			}
			if why != "" {
				// Another item's hard stop halted the run before this
				// one started (it waited for another).
				errs[i] = e.transit(ctx, runID, it.ID, stopped())
				rs.halt(store.RunFailed, why)
				return
			}
			if e.stopRequested(runID) {
				// cadre stop came before this item started (it waited
				// for another): it stays to do, for resume.
				errs[i] = e.transit(ctx, runID, it.ID, stopped())
				rs.halt(store.RunStopped, "stopped by request")
				return
			}
			err := drive(ctx, runID, it)
			if h := (*executor.RunHalt)(nil); errors.As(err, &h) {
				rs.halt(h.Status, h.Reason)
				err = nil
			}
			if err != nil {
				errs[i] = fmt.Errorf("item %s: %w", it.ID, err)
				return
			}
			got, err := e.d.Store.GetItem(ctx, runID, it.ID)
			if err != nil {
				errs[i] = err
				return
			}
			rs.markOK(it.ID, got.Status == store.ItemCompleted)
			switch got.Status {
			case store.ItemFailed:
				if why := e.haltReason(runID); why != "" {
					// A hard stop (or a tampered tree) halts the run,
					// as in the embedded engine.
					rs.halt(store.RunFailed, why)
				} else {
					rs.fail(it.ID + ": " + got.Error)
				}
			case store.ItemPaused:
				rs.pause(it.ID + ": " + got.Error)
			case store.ItemStopped:
				rs.halt(store.RunStopped, "stopped by request")
			}
		}()
	}
	wg.Wait()
	var runErr error
	for _, err := range errs {
		if err != nil {
			runErr = err
			break
		}
	}
	return e.finish(ctx, runID, rs.summary(), start, runErr)
}
