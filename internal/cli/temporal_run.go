package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/cadre-dev/cadre/internal/runspec"
	"github.com/cadre-dev/cadre/internal/runstop"
	"github.com/cadre-dev/cadre/internal/store"
	"github.com/cadre-dev/cadre/internal/temporal"
)

// dialWait bounds how long approve and stop try to reach Temporal.
const dialWait = 15 * time.Second

// dialRecorded connects to where a Temporal run's workflows are: where
// the run was recorded to run. That needs no cadre.yaml, so a board
// serving another repository (cadre serve --repo) reaches them too.
func (f *Factory) dialRecorded(ctx context.Context, recorded *runspec.TemporalTarget) (client.Client, error) {
	ctx, cancel := context.WithTimeout(ctx, dialWait)
	defer cancel()
	return temporal.Dial(ctx, recorded.Address, recorded.Namespace, f.IO.ErrOut)
}

// notRunning says whether err means the workflow is not running (never
// started, or ended): there is nothing to tell it.
func notRunning(err error) bool {
	var nf *serviceerror.NotFound
	return errors.As(err, &nf)
}

// signalApproval hands a journaled answer to the item's waiting workflow;
// it reports whether a running workflow took it.
func (f *Factory) signalApproval(ctx context.Context, st *store.Store, run, item, step string, approved bool, note string) (bool, error) {
	_, ro, err := runspec.Stored(ctx, st, run)
	if err != nil || ro.Temporal == nil {
		return false, err
	}
	c, err := f.dialRecorded(ctx, ro.Temporal)
	if err != nil {
		return false, err
	}
	defer c.Close()
	err = c.SignalWorkflow(ctx, temporal.WorkflowID(run, item), "", temporal.SignalApprove,
		temporal.Approval{Approved: approved, Note: note, Call: step})
	if notRunning(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("signal the workflow of %s (the answer is journaled; cadre resume %s hands it over): %w", item, run, err)
	}
	return true, nil
}

// stopOnTemporal is cadre stop for a run on the Temporal engine that may
// still run there (the process that started it active, or gone with the
// run recorded running): the stop request, then the signal (with now the
// cancellation) to its items' workflows. onTemporal is false, and nothing
// done, for any other run.
func (f *Factory) stopOnTemporal(ctx context.Context, st *store.Store, stateDir, run string, active, now bool) (n int, onTemporal bool, err error) {
	r, ro, err := runspec.Stored(ctx, st, run)
	if err != nil {
		return 0, false, err
	}
	if ro.Temporal == nil || (!active && r.Status != store.RunRunning) {
		return 0, false, nil
	}
	if err := runstop.Request(stateDir, run); err != nil {
		return 0, true, err
	}
	n, err = f.stopTemporal(ctx, st, run, ro.Temporal, now)
	return n, true, err
}

// stopTemporal asks the workflows of run's unfinished items to stop: to
// start no new step, or with now to cancel their running steps too. Each
// journals its item stopped as it ends.
func (f *Factory) stopTemporal(ctx context.Context, st *store.Store, run string, t *runspec.TemporalTarget, now bool) (int, error) {
	items, err := st.Items(ctx, run)
	if err != nil {
		return 0, err
	}
	c, err := f.dialRecorded(ctx, t)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	n := 0
	for _, it := range items {
		switch it.Status {
		case store.ItemCompleted, store.ItemSkipped, store.ItemFailed, store.ItemStopped:
			continue
		}
		id := temporal.WorkflowID(run, it.ID)
		if now {
			err = c.CancelWorkflow(ctx, id, "")
		} else {
			err = c.SignalWorkflow(ctx, id, "", temporal.SignalStop, nil)
		}
		switch {
		case notRunning(err):
			// Not started yet (it waits for another item): the run's stop
			// request keeps it from starting.
		case err != nil:
			return n, fmt.Errorf("stop the workflow of %s: %w", it.ID, err)
		default:
			n++
		}
	}
	return n, nil
}
