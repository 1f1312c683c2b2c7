package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/cadre-dev/cadre/internal/config"
	"github.com/cadre-dev/cadre/internal/engine"
	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/report"
	"github.com/cadre-dev/cadre/internal/runlock"
	"github.com/cadre-dev/cadre/internal/runspec"
	"github.com/cadre-dev/cadre/internal/runstop"
	"github.com/cadre-dev/cadre/internal/store"
	"github.com/cadre-dev/cadre/internal/ui/tui"
)

// liveViewHelp documents the live view in the --help of the commands that
// show it.
const liveViewHelp = `

LIVE VIEW
On a terminal (stderr), a live view shows one row per item: workflow, phase, role → runner/
model, attempt, elapsed, tokens, cost and a bar over the workflow's steps; the footer has the
run's totals, the budget left and the paused items with why. --plain, --json or output that is
not a terminal print one line per event instead. Keys:
  ↑/↓ (k/j)  select an item
  enter      follow the selected item's step log (esc: back)
  a          approve or reject a paused item with a note (tab toggles; as cadre approve)
  q          stop gracefully: running steps finish, no new step starts (as cadre stop)
  Q, ctrl+c  stop now: running steps are cancelled (as cadre stop --now)
The summary table is printed when the view closes.`

// pollEvery is how often the view reads the journal: often enough to feel
// live, rarely enough to cost nothing next to the agents.
const pollEvery = 250 * time.Millisecond

// liveView says whether a running command shows the live view: on a
// terminal, unless --json or --plain asked for lines.
func (f *Factory) liveView(asJSON, plain bool) bool {
	return !asJSON && !plain && isTerminal(f.IO.ErrOut)
}

// runEngine runs start with an engine of ws: under the live view when live,
// else printing lines (or --json) as before.
func (f *Factory) runEngine(ctx context.Context, ws workspaceCtx, asJSON, live bool, budget float64,
	start func(context.Context, *engine.Engine) (report.Summary, error)) (report.Summary, error) {
	return f.runEngineOf(ctx, ws, shown{json: asJSON, live: live, budget: budget}, start)
}

// shown says how a run is shown.
type shown struct {
	json, live bool
	// follow: the run's items run in other processes (Temporal workers),
	// whose events are shown from the journal.
	follow bool
	budget float64
	// approve, when set, takes the live view's answers (a run --serve
	// counts them with the board's); else they are journaled as cadre
	// approve does.
	approve func(ctx context.Context, run, item string, approved bool, note string) error
}

// runEngineOf is runEngine, shown as sh says.
func (f *Factory) runEngineOf(ctx context.Context, ws workspaceCtx, sh shown,
	start func(context.Context, *engine.Engine) (report.Summary, error)) (report.Summary, error) {
	asJSON, live, follow, budget := sh.json, sh.live, sh.follow, sh.budget
	st, err := openStore(ctx, ws.root)
	if err != nil {
		return report.Summary{}, err
	}
	defer st.Close()
	// show shows the run's events on out; with follow, its item events
	// come from the journal until the returned stop.
	show := func(out event.Sink) (event.Sink, func(context.Context) func()) {
		if !follow {
			return out, func(context.Context) func() { return func() {} }
		}
		fl := &itemFollower{st: st, out: out}
		// From the journal's end: a resumed run's earlier events were
		// shown by the process that ran them (cadre status has them).
		if seq, err := st.LastEventSeq(ctx); err == nil {
			fl.seq = seq
		}
		return fl, fl.follow
	}
	if !live {
		sink, tail := show(f.eventSink(asJSON))
		e, flush, err := f.newEngine(ctx, ws, st, sink)
		if err != nil {
			return report.Summary{}, err
		}
		defer flush()
		stop := tail(ctx)
		sum, err := start(ctx, e)
		stop()
		return sum, err
	}
	feed := tui.NewFeed(4096)
	acts := &runActions{f: f, st: st, approve: sh.approve}
	sink, tail := show(event.SinkFunc(func(ev event.Event) {
		acts.setRun(ev.Run)
		feed.Handle(ev)
	}))
	e, flush, err := f.newEngine(ctx, ws, st, sink)
	if err != nil {
		return report.Summary{}, err
	}
	defer flush()
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	acts.stateDir, acts.cancel = e.StateDir(), cancel
	// Unreadable, the lock leaves Stop acting on this process's run alone.
	acts.lock, _ = e.RunLock(ctx)
	flows, _ := f.workflows(ctx) // without them the bars only count steps as they come
	v := startView(f, tui.Config{Budget: budget, Actions: acts, Steps: tui.StepsFunc(flows)})
	defer func() {
		// A panic of the run must not leave the terminal raw.
		if r := recover(); r != nil {
			v.p.Kill()
			<-v.done
			panic(r)
		}
	}()
	feedCtx, stopFeed := context.WithCancel(context.Background())
	fed := make(chan struct{})
	go func() { defer close(fed); feed.Run(feedCtx, v.p.Send) }()
	polled := make(chan struct{})
	go func() { defer close(polled); v.poll(feedCtx, st, acts.runID) }()

	stopFollow := tail(ctx)
	sum, err := start(runCtx, e)
	stopFollow()

	stopFeed()
	<-fed
	<-polled
	if id := acts.runID(); id != "" {
		if sn, serr := readSnapshot(context.WithoutCancel(ctx), st, id); serr == nil {
			v.p.Send(tui.SnapshotMsg(sn))
		}
	}
	v.p.Send(tui.DoneMsg{})
	if verr := <-v.done; verr != nil && !errors.Is(verr, tea.ErrProgramKilled) {
		fmt.Fprintf(f.IO.ErrOut, "cadre: live view: %v\n", verr)
	}
	return sum, err
}

// view is a running tea program and its end.
type view struct {
	p    *tea.Program
	done chan error
}

// startView runs the live view on the command's stderr. The process's
// signal handling stays as it is (SIGINT/SIGTERM cancel the run and the
// run's end closes the view); in raw mode ctrl+c reaches the view as a key.
func startView(f *Factory, cfg tui.Config) *view {
	v := &view{done: make(chan error, 1)}
	v.p = tea.NewProgram(tui.New(cfg), tea.WithOutput(f.IO.ErrOut), tea.WithoutSignalHandler())
	go func() {
		_, err := v.p.Run()
		v.done <- err
	}()
	return v
}

// poll sends a journal snapshot of the run every pollEvery until ctx ends.
func (v *view) poll(ctx context.Context, st *store.Store, run func() string) {
	t := time.NewTicker(pollEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if id := run(); id != "" {
			if sn, err := readSnapshot(ctx, st, id); err == nil {
				v.p.Send(tui.SnapshotMsg(sn))
			}
		}
	}
}

// readSnapshot reads a run's state from the journal for the view.
func readSnapshot(ctx context.Context, st *store.Store, run string) (tui.Snapshot, error) {
	sum, err := report.Summarize(ctx, st, run)
	if err != nil {
		return tui.Snapshot{}, fmt.Errorf("read run %s: %w", run, err)
	}
	sn := tui.Snapshot{Run: run, Status: sum.Status, Usage: sum.Usage}
	for _, it := range sum.Items {
		sn.Items = append(sn.Items, tui.ItemSnapshot{ID: it.ID, Title: it.Title, Stage: it.Stage, Status: it.Status,
			Reason: it.Reason, CurrentStep: it.CurrentStep, Attempts: it.Attempts, StepsDone: it.Done, Usage: it.Usage})
	}
	return sn, nil
}

// runActions are the view's keys acting on a run of this process.
type runActions struct {
	f        *Factory
	st       *store.Store
	stateDir string
	lock     string             // the repository's run lock
	cancel   context.CancelFunc // cancels the running steps
	approve  func(ctx context.Context, run, item string, approved bool, note string) error
	log      transcript
	mu       sync.Mutex
	run      string
}

func (a *runActions) setRun(id string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.run == "" {
		a.run = id
	}
}

func (a *runActions) runID() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.run
}

// Stop is cadre stop in this process: the stop request the engine reads
// before each step, and with now the run's context cancelled as SIGTERM
// would.
func (a *runActions) Stop(now bool) error {
	run := a.runID()
	if run == "" {
		if h, ok := runlock.Holder(a.lock); ok && !elsewhere(h, a.stateDir) {
			run = h.Run
		}
	}
	if run != "" {
		if err := runstop.Request(a.stateDir, run); err != nil {
			return fmt.Errorf("stop run %s: %w", run, err)
		}
	}
	if now || run == "" {
		a.cancel()
	}
	return nil
}

func (a *runActions) Approve(item string, approved bool, note string) error {
	if a.approve != nil {
		return a.approve(context.Background(), a.runID(), item, approved, note)
	}
	return approveFromView(a.f, a.st, a.runID(), item, approved, note)
}

func (a *runActions) Log(item, step string) (string, error) {
	return a.log.read(a.st, a.stateDir, a.runID(), item, step)
}

// transcript is what the live view's log follower shows of a step: its
// agent's messages and tool calls with their targets, as the runner read
// them from the CLI's stream and --plain prints them (the journal's
// stepProgress events); the raw log's tail for a runner that reports
// none (exec, script), whose log is plain text. The follower asks again
// at every poll: each read takes only the events journaled since the
// last one of the same step.
type transcript struct {
	mu   sync.Mutex
	key  string // run, item and step of text
	seq  int64  // the last event read
	text strings.Builder
}

func (t *transcript) read(st *store.Store, stateDir, run, item, step string) (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if key := run + "\x00" + item + "\x00" + step; key != t.key {
		t.key, t.seq = key, 0
		t.text.Reset()
	}
	evs, seq, err := st.Events(context.Background(), run, t.seq)
	if err == nil {
		t.seq = seq
		for _, e := range decodeEvents(evs) {
			if e.Type == event.StepProgress && e.Item == item && e.Step == step {
				fmt.Fprintf(&t.text, "%s  %s\n", e.Time.Local().Format("15:04:05"), e.Message)
			}
		}
	}
	if t.text.Len() > 0 {
		return t.text.String(), nil
	}
	return tailFile(engine.StepLogPath(stateDir, run, item, step), 64<<10)
}

// approveFromView is cadre approve for the views: the answer journaled
// and, for a run on Temporal, handed to the item's waiting workflow,
// which reads no journal for it.
func approveFromView(f *Factory, st *store.Store, run, item string, approved bool, note string) error {
	ctx := context.Background()
	step, err := engine.Approve(ctx, st, run, item, approved, note)
	if err != nil {
		return fmt.Errorf("approve %s: %w", item, err)
	}
	_, err = f.signalApproval(ctx, st, run, item, step, approved, note)
	return err
}

// tailFile returns the last n bytes of path.
func tailFile(path string, n int64) (string, error) {
	fh, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("read log: %w", err)
	}
	defer fh.Close()
	info, err := fh.Stat()
	if err != nil {
		return "", fmt.Errorf("read log: %w", err)
	}
	off := max(info.Size()-n, 0)
	buf := make([]byte, info.Size()-off)
	if _, err := fh.ReadAt(buf, off); err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("read log: %w", err)
	}
	return string(buf), nil
}

// runBudget is the budget a stored run goes by: its own, else cadre.yaml's.
func runBudget(ctx context.Context, st *store.Store, run string, cfg config.Config) float64 {
	_, o, err := runspec.Stored(ctx, st, run)
	if err != nil {
		o = runspec.Options{}
	}
	return o.Settings(cfg).Budget
}
