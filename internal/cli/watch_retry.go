package cli

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/cadre-dev/cadre/internal/report"
	"github.com/cadre-dev/cadre/internal/runspec"
	"github.com/cadre-dev/cadre/internal/runstop"
	"github.com/cadre-dev/cadre/internal/store"
	"github.com/cadre-dev/cadre/internal/workspace"
)

// A cadre retry while cadre watch holds the repository is handed to the
// watch: the retry is journaled as asked (runspec.AskRetry) and the watch
// takes it up at the start of its next pass, resuming the item's run as
// cadre retry would. Anywhere else the lock is held, the retry is refused
// (exit 2) with nothing changed: the resume grants it only once it holds
// the lock.

// handToWatch asks the watch holding the repository of ws from this
// checkout, if one does (itself, or a run it started), to retry item of
// run at its next pass, and says so: handed. It changes nothing when no
// watch holds the repository, or one of another checkout does, whose
// journal is another.
func handToWatch(ctx context.Context, f *Factory, ws workspaceCtx, st *store.Store, run, item string) (handed bool, err error) {
	h, ok := holder(ctx, ws.root)
	if !ok || (h.Run != watchRun && h.Lender != watchRun) || elsewhere(h, filepath.Join(ws.root, workspace.StateDir)) {
		return false, nil
	}
	asked, err := runspec.AskRetry(ctx, st, run, item)
	if err != nil {
		return false, err
	}
	wakeWatch(f, ws.root)
	if asked {
		fmt.Fprintf(f.IO.ErrOut, "cadre: cadre watch (pid %d) holds the repository: it retries %s of run %s at its next pass\n", h.PID, item, run)
	} else {
		fmt.Fprintf(f.IO.ErrOut, "cadre: the retry of %s of run %s is asked already: cadre watch (pid %d) takes it up at its next pass\n", item, run, h.PID)
	}
	return true, nil
}

// wakeWatch asks a running cadre watch of the repository at root for a
// pass now; none running, the request waits for the next to start, which
// makes a pass at once anyway.
func wakeWatch(f *Factory, root string) {
	if err := runstop.Wake(filepath.Join(root, workspace.StateDir), watchRun); err != nil {
		fmt.Fprintf(f.IO.ErrOut, "cadre: warning: %v: cadre watch goes on at its next pass by the clock\n", err)
	}
}

// retries takes up the retries cadre retry handed to the watch, each
// once: their runs are resumed with the items given their attempts again,
// as cadre retry does. An asked retry whose item is no longer failed or
// stopped is dropped, saying why.
func (w *watcher) retries(ctx context.Context, t *watchTally) error {
	st, err := openStore(ctx, w.ws.root)
	if err != nil {
		return err
	}
	asked, err := runspec.Asked(ctx, st)
	var runs []string
	items := map[string][]string{}
	for _, s := range asked {
		if err != nil {
			break
		}
		if why := runspec.CheckRetry(ctx, st, s.RunID, s.ItemID); why != nil {
			fmt.Fprintf(w.f.IO.ErrOut, "cadre: watch: not retrying %s of run %s: %v\n", s.ItemID, s.RunID, why)
			err = runspec.Drop(ctx, st, s, why)
			continue
		}
		if _, ok := items[s.RunID]; !ok {
			runs = append(runs, s.RunID)
		}
		items[s.RunID] = append(items[s.RunID], s.ItemID)
	}
	if cerr := st.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	for _, run := range runs {
		if w.stopped() || ctx.Err() != nil {
			return nil
		}
		fmt.Fprintf(w.f.IO.ErrOut, "cadre: watch: retrying %s of run %s, as cadre retry asked\n", strings.Join(items[run], ", "), run)
		sum, err := resumeRun(ctx, w.f, w.ws, &ResumeOptions{Run: run, Budget: -1, JSON: w.opts.JSON, Plain: true, Retry: items[run]})
		if err := w.ranRun(sum, t); err != nil {
			return err
		}
		if err != nil && !errors.Is(err, context.Canceled) {
			return err
		}
	}
	return nil
}

// ranRun reports a run the watch made, counts its failed and waiting
// items for --once, and stops the watch when cadre stop reached the run.
func (w *watcher) ranRun(sum report.Summary, t *watchTally) error {
	if sum.Run == "" {
		return nil
	}
	if !w.opts.JSON {
		printSummary(w.f.IO.ErrOut, sum)
	}
	for _, it := range sum.Items {
		switch it.Status {
		case store.ItemFailed:
			t.failed++
			fmt.Fprintf(w.f.IO.ErrOut, "cadre: %s failed in %s; go on with: cadre retry %s %s\n", it.ID, workPlace(it), sum.Run, it.ID)
		case store.ItemPaused:
			t.waiting++
		}
	}
	if runstop.Requested(w.stateDir, sum.Run) {
		// cadre stop reached the run the watch started or resumed: the
		// watch stops too.
		if err := runstop.Request(w.stateDir, watchRun); err != nil {
			return err
		}
		fmt.Fprintf(w.f.IO.ErrOut, "cadre: run %s stopped; continue with: cadre resume %s\n", sum.Run, sum.Run)
	}
	return nil
}

// interrupted resumes the runs an earlier watch's intake started and did
// not see end (its process killed): journaled running while this watch
// holds the repository, so no process runs them. Intake takes up only
// issues without an item, so nothing else would. A run on Temporal goes
// on in its workflows, and is left to them.
func (w *watcher) interrupted(ctx context.Context, t *watchTally) error {
	st, err := openStore(ctx, w.ws.root)
	if err != nil {
		return err
	}
	runs, err := st.Runs(ctx)
	var dead []string
	for _, r := range runs {
		if err != nil || r.Status != store.RunRunning {
			continue
		}
		if _, o, serr := runspec.Stored(ctx, st, r.ID); serr == nil && o.Watch && o.Temporal == nil {
			dead = append(dead, r.ID)
		}
	}
	if cerr := st.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	for _, run := range dead {
		if w.stopped() || ctx.Err() != nil {
			return nil
		}
		fmt.Fprintf(w.f.IO.ErrOut, "cadre: watch: resuming run %s, which an earlier watch started and did not see end\n", run)
		sum, err := resumeRun(ctx, w.f, w.ws, &ResumeOptions{Run: run, Budget: -1, JSON: w.opts.JSON, Plain: true})
		if err := w.ranRun(sum, t); err != nil {
			return err
		}
		if err != nil && !errors.Is(err, context.Canceled) {
			return err
		}
	}
	return nil
}
