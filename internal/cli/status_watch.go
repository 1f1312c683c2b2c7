package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"syscall"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/cadre-dev/cadre/internal/config"
	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/report"
	"github.com/cadre-dev/cadre/internal/runlock"
	"github.com/cadre-dev/cadre/internal/runstop"
	"github.com/cadre-dev/cadre/internal/store"
	"github.com/cadre-dev/cadre/internal/ui/tui"
	"github.com/cadre-dev/cadre/internal/workspace"
)

// runWatch follows a run, possibly of another process, through the
// journal: its events after the last one read, and a snapshot, every
// pollEvery. On a terminal it shows the live view until q; elsewhere it
// prints one line per event until the run is no longer active.
func runWatch(ctx context.Context, f *Factory, opts *StatusOptions) error {
	st, id, root, err := f.openRunAt(ctx, opts.Run)
	if err != nil {
		return err
	}
	defer st.Close()
	stateDir := filepath.Join(root, workspace.StateDir)
	lock, err := runLock(ctx, root)
	if err != nil {
		return err
	}
	if !isTerminal(f.IO.ErrOut) {
		return watchLines(ctx, f, st, lock, id)
	}
	var cfg config.Config
	if ws, err := f.workspace(ctx); err == nil {
		cfg = ws.cfg
	}
	flows, _ := f.workflows(ctx)
	v := startView(f, tui.Config{Run: id, Watch: true, Budget: runBudget(ctx, st, id, cfg),
		Actions: &watchActions{f: f, st: st, stateDir: stateDir, lock: lock, run: id}, Steps: tui.StepsFunc(flows)})
	pollCtx, stop := context.WithCancel(ctx)
	polled := make(chan struct{})
	prs := &prLines{f: f, st: st, run: id}
	go func() {
		defer close(polled)
		followJournal(pollCtx, st, lock, id, func(evs []event.Event) { v.p.Send(tui.EventsMsg(evs)) },
			func(sn tui.Snapshot, over bool) {
				prs.fill(pollCtx, &sn)
				v.p.Send(tui.SnapshotMsg(sn))
				if over {
					v.p.Send(tui.DoneMsg{})
				}
			})
	}()
	var verr error
	select {
	case verr = <-v.done:
	case <-ctx.Done():
		v.p.Quit()
		verr = <-v.done
	}
	stop()
	<-polled
	if verr != nil && !errors.Is(verr, tea.ErrProgramKilled) {
		return fmt.Errorf("watch run %s: %w", id, verr)
	}
	return nil
}

// followJournal reads run's new events and a snapshot every pollEvery until
// ctx ends; over says the run no longer holds the lock file at lock.
func followJournal(ctx context.Context, st *store.Store, lock, run string, events func([]event.Event), snap func(tui.Snapshot, bool)) {
	var (
		seq  int64
		last string // the type of the last event read
		gone bool   // a previous poll found the lock released
	)
	for {
		// The lock is read before the journal, and the journal is written
		// in batches that can trail the lock's release: the run is over
		// once its runCompleted is read, or a poll after the release
		// finds nothing new (a killed run never says runCompleted).
		h, _ := runlock.Holder(lock)
		released := h.Run != run
		evs, next, err := st.Events(ctx, run, seq)
		if err == nil {
			seq = next
			if out := decodeEvents(evs); len(out) > 0 {
				events(out)
				last = out[len(out)-1].Type
			}
		}
		over := released && (last == event.RunCompleted || (gone && len(evs) == 0))
		gone = released
		if sn, err := readSnapshot(ctx, st, run); err == nil {
			snap(sn, over)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(pollEvery):
		}
	}
}

// decodeEvents turns journal entries back into bus events.
func decodeEvents(evs []store.Event) []event.Event {
	out := make([]event.Event, 0, len(evs))
	for _, e := range evs {
		var ev event.Event
		if json.Unmarshal(e.Data, &ev) != nil {
			ev = event.Event{Time: e.Time, Run: e.RunID, Type: e.Type, Item: e.ItemID}
		}
		out = append(out, ev)
	}
	return out
}

// watchLines prints the run's journaled events as cadre run prints them,
// from the first, until the run is no longer active.
func watchLines(ctx context.Context, f *Factory, st *store.Store, lock, run string) error {
	pollCtx, stop := context.WithCancel(ctx)
	defer stop()
	followJournal(pollCtx, st, lock, run, func(evs []event.Event) {
		for _, e := range evs {
			fmt.Fprintln(f.IO.ErrOut, formatLine(e))
		}
	}, func(sn tui.Snapshot, over bool) {
		if over {
			stop()
		}
	})
	return ctx.Err()
}

// watchActions are the watcher's keys acting on a run of another process,
// through the journal and the run's lock, as cadre stop and approve do.
type watchActions struct {
	f        *Factory
	st       *store.Store
	stateDir string
	lock     string // the repository's run lock
	run      string
	log      transcript
}

func (a *watchActions) Stop(now bool) error {
	h, ok := runlock.Holder(a.lock)
	active, pid := h.Run, h.PID
	// A run on Temporal is stopped through its workflows, also once the
	// process that started it is gone, as cadre stop does.
	if _, onTemporal, err := a.f.stopOnTemporal(context.Background(), a.st, a.stateDir, a.run, ok && active == a.run, now); onTemporal || err != nil {
		return err
	}
	if !ok || active != a.run {
		return fmt.Errorf("stop: run %s is not active", a.run)
	}
	if err := runstop.Request(a.stateDir, a.run); err != nil {
		return fmt.Errorf("stop run %s: %w", a.run, err)
	}
	if now {
		if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
			return fmt.Errorf("signal run %s (pid %d): %w", a.run, pid, err)
		}
	}
	return nil
}

func (a *watchActions) Approve(item string, approved bool, note string) error {
	return approveFromView(a.f, a.st, a.run, item, approved, note)
}

func (a *watchActions) Log(item, step string) (string, error) {
	return a.log.read(a.st, a.stateDir, a.run, item, step)
}

// prLines tells the live view where the run's pull requests stand, asked
// of GitHub at most every prEvery: the journal is read far more often.
type prLines struct {
	f     *Factory
	st    *store.Store
	run   string
	at    time.Time
	lines map[string]string
}

const prEvery = 30 * time.Second

func (p *prLines) fill(ctx context.Context, sn *tui.Snapshot) {
	if p.lines == nil || time.Since(p.at) >= prEvery {
		p.at, p.lines = time.Now(), map[string]string{}
		if sum, err := report.Summarize(ctx, p.st, p.run); err == nil {
			// A warning on the terminal would tear the view: the
			// journal's ends stand in.
			prs := p.f.prStatusesOf(ctx, sum, func(string) {})
			ends(ctx, p.st, p.run, sum, prs)
			for _, it := range sum.Items {
				if it.PRNumber > 0 {
					p.lines[it.ID] = fmt.Sprintf("#%d %s%s", it.PRNumber, itemState(it, prs[it.ID]), prLine(prs[it.ID]))
				}
			}
		}
	}
	for i := range sn.Items {
		sn.Items[i].PR = p.lines[sn.Items[i].ID]
	}
}
