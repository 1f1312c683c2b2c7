package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/cadre-dev/cadre/internal/app"
	"github.com/cadre-dev/cadre/internal/codehost"
	"github.com/cadre-dev/cadre/internal/engine"
	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/follow"
	"github.com/cadre-dev/cadre/internal/item/intake"
	"github.com/cadre-dev/cadre/internal/report"
	"github.com/cadre-dev/cadre/internal/runlock"
	"github.com/cadre-dev/cadre/internal/runspec"
	"github.com/cadre-dev/cadre/internal/runstop"
	"github.com/cadre-dev/cadre/internal/store"
	"github.com/cadre-dev/cadre/internal/temporal"
	"github.com/cadre-dev/cadre/internal/workspace"
)

// watchRun is the name cadre watch holds the run lock under, and cadre
// stop's stop request for it.
const watchRun = "watch"

// WatchOptions are the flags of cadre watch.
type WatchOptions struct {
	Once     bool
	Interval time.Duration
	Query    codehost.IssueQuery // --label, --assignee, --milestone
	JSON     bool
	Plain    bool
	Engine   string // embedded or temporal
	Temporal TemporalOptions
	Listen   string // --listen: the address webhooks are received at
}

// NewCmdWatch builds cadre watch; runF replaces the run function in tests.
func NewCmdWatch(f *Factory, runF func(context.Context, *Factory, *WatchOptions) error) *cobra.Command {
	opts := &WatchOptions{}
	cmd := &cobra.Command{
		Use:   "watch [--once] [--interval D] [--listen ADDR] [--label L]... [--assignee A] [--milestone M]",
		Short: "Take up new issues and follow cadre's pull requests to merge",
		Long: `Every --interval (default github.poll_interval, 60s): start an item for each issue matching
the intake query (github.watch in cadre.yaml, or the flags) that has none yet, as cadre run N
would; then follow every open pull request cadre opened and react as follow: in cadre.yaml
says: a failed check or a review asking for changes goes to fix-surgeon and the fix is
pushed (each comment answered once, the review asked again), a conflict with the base is
merged, an approved and green pull request is merged when follow.merge says how. A
reaction out of rounds waits for a human (cadre approve RUN ITEM grants the rounds again,
--reject closes the pull request). Merged, an item's worktree and branch are removed.

One watch holds a repository; cadre stop (or Ctrl-C, SIGTERM) stops it after the running
step, cadre stop --now at once. --once makes one pass and waits for what it started.

--listen ADDR receives the forge's webhooks at POST /webhooks/github or /webhooks/gitlab
(signed with the secret in the variable github.webhook_secret_env or gitlab.webhook_secret_env
names; without it the watch is refused): an issue labelled, a check or pipeline finished, a
review, a push to the base, a pull request closed wakes the watch for a pass within a second.
The passes go on as a slow reconcile: every 30m unless --interval or poll_interval says
otherwise. See docs/webhooks.md.` + `

EXIT STATUS
  0  --once: nothing failed (or stopped)
  1  --once: an item or a reaction failed
  2  bad flags or configuration
  3  --once: an item waits for a human`,
		Example: `  cadre watch                      # every minute, until cadre stop
  cadre watch --once --label cadre # one pass, for cron or CI
  cadre watch --interval 5m
  cadre watch --listen :8080       # webhooks, and a pass every 30m besides`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutputFlags(opts.JSON, opts.Plain); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), f, opts)
			}
			return runWatchCmd(cmd.Context(), f, opts)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&opts.Plain, "plain", false, "one line per event on stderr (what watch prints without --json; as run takes it)")
	fl.BoolVar(&opts.Once, "once", false, "one pass, then exit 0, 1 (a failure) or 3 (waits for a human)")
	fl.DurationVar(&opts.Interval, "interval", 0, "time between passes (default github.poll_interval; 30m with --listen)")
	fl.StringVar(&opts.Listen, "listen", "", "receive the forge's webhooks at this address (host:port) and pass at once on each")
	fl.StringSliceVar(&opts.Query.Labels, "label", nil, "take up issues with this label (repeatable)")
	fl.StringVar(&opts.Query.Assignee, "assignee", "", "take up issues assigned to this login")
	fl.StringVar(&opts.Query.Milestone, "milestone", "", "take up issues of this milestone")
	fl.BoolVar(&opts.JSON, "json", false, "print the runs' events as JSON lines")
	fl.StringVar(&opts.Engine, "engine", "", "where items and reactions run: embedded (this process) or temporal (cadre workers) (default engine in cadre.yaml)")
	addTemporalFlags(cmd, &opts.Temporal)
	addHeartbeatFlag(cmd, &opts.Temporal, temporal.DefaultHeartbeat.String())
	return cmd
}

// watchTally is what passes did, for --once's exit status.
type watchTally struct {
	failed, waiting int
	acted           int // reactions, merges and closes
}

func runWatchCmd(ctx context.Context, f *Factory, opts *WatchOptions) error {
	if opts.Interval < 0 {
		return usageErr(fmt.Errorf("--interval %s: must not be negative", opts.Interval))
	}
	if opts.Listen != "" && opts.Once {
		return usageErr(errors.New("--listen and --once: a single pass has nothing to listen for"))
	}
	ws, err := f.workspace(ctx)
	if err != nil {
		return err
	}
	ro := &RunOptions{Engine: opts.Engine, Temporal: opts.Temporal}
	if err := checkEngineFlag(ro); err != nil {
		return err
	}
	if err := checkHeartbeat(opts.Temporal.Heartbeat); err != nil {
		return err
	}
	engineName, err := runEngineOf(ws.cfg, ro)
	if err != nil {
		return relPath(err, ws.root)
	}
	flagQuery := !opts.Query.Empty()
	if opts.Listen != "" {
		// Refused before the repository is held: a configuration error.
		if _, err := webhookSecret(ws.cfg, f.Getenv); err != nil {
			return usageErr(err)
		}
	}
	lockPath, err := runLock(ctx, ws.root)
	if err != nil {
		return err
	}
	stateDir := filepath.Join(ws.root, workspace.StateDir)
	lock, err := runlock.Acquire(lockPath, runlock.Info{Run: watchRun, PID: os.Getpid(), State: stateDir, Lends: true},
		func(msg string) { fmt.Fprintln(f.IO.ErrOut, "cadre: warning: "+msg) })
	if err != nil {
		return usageErr(err)
	}
	defer lock.Release()
	// A stop asked of an earlier watch must not end this one at once.
	if err := runstop.Withdraw(stateDir, watchRun); err != nil {
		return err
	}
	// A signal stops the watch as cadre stop does, after the running
	// step; a second one (or cadre stop --now) at once.
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	defer stopOnSignals(f, stateDir, lockPath, cancel)()
	w := &watcher{f: f, ws: ws, opts: opts, stateDir: stateDir, flagQuery: flagQuery}
	w.configure()
	defer func() {
		if w.close != nil {
			w.close()
		}
	}()
	if engineName == engineTemporal {
		t := temporalTarget(ws.cfg, opts.Temporal, nil)
		w.temporal = &t
	}
	if opts.Listen != "" {
		if err := w.listen(); err != nil {
			return err
		}
		defer w.hooks.close()
	}
	for {
		t, err := w.pass(ctx)
		if err != nil && (opts.Once || ctx.Err() != nil) {
			return err
		}
		if err != nil {
			// GitHub or the network may be back at the next pass.
			fmt.Fprintf(f.IO.ErrOut, "cadre: watch: warning: %v; trying again in %s\n", err, w.interval)
		}
		if opts.Once {
			switch {
			case t.failed > 0:
				return silentExit(1)
			case t.waiting > 0:
				return silentExit(3)
			}
			return nil
		}
		if !w.next(ctx, t) {
			fmt.Fprintln(f.IO.ErrOut, "cadre: watch stopped")
			return nil
		}
	}
}

// next waits for the pass after t: at once (once a change's deliveries
// are gathered) when t calls for a follow-up, else until one is due or a
// webhook wakes the watch. False: the watch is to stop.
func (w *watcher) next(ctx context.Context, t watchTally) bool {
	if !w.woken {
		w.due = time.Now().Add(w.interval)
	}
	if w.followUp(t) {
		// What the pass did calls for another look now, not at the
		// reconcile: a failed round's pause, the next pull request's
		// conflict with what merged.
		if w.stopped() || !w.settle(ctx) {
			return false
		}
		w.woken = true
		return true
	}
	return w.sleep(ctx)
}

// followUp says whether, with --listen, pass t is to be followed by a
// woken pass at once: one that acted (a reaction, a merge, a close) is,
// and one where something failed is, once, so that a failed round is
// paused for a person without waiting for the reconcile, and an error
// that lasts is not asked about again and again.
func (w *watcher) followUp(t watchTally) bool {
	if w.hooks == nil {
		return false
	}
	switch {
	case t.acted > 0:
		w.retried = false
		return true
	case t.failed > 0 && !w.retried:
		w.retried = true
		return true
	}
	w.retried = false
	return false
}

// sleep waits until the next pass is due, or until a webhook wakes the
// watch (w.woken), or until it is asked to stop (it reports false): a
// signal, or cadre stop, looked for every second. Woken passes do not put
// off the one due.
func (w *watcher) sleep(ctx context.Context) bool {
	deadline := w.due
	w.woken = false
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var wake <-chan struct{}
	if w.hooks != nil {
		wake = w.hooks.wake
	}
	for !w.stopped() {
		left := time.Until(deadline)
		if left <= 0 {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-tick.C:
			if runstop.TakeWake(w.stateDir, watchRun) {
				// cadre approve or retry: a pass on the journal, which a
				// woken one is with --listen.
				w.woken = w.hooks != nil
				return true
			}
		case <-time.After(left):
		case <-wake:
			w.woken = true
			return w.settle(ctx)
		}
	}
	return false
}

// stopOnSignals makes SIGINT and SIGTERM stop the watch gracefully: a
// stop request for it and for the run it started, if one runs (it holds
// the lock in the watch's place). A second signal, or one after cadre
// stop --now, cancels. The returned function stops listening.
func stopOnSignals(f *Factory, stateDir, lockPath string, cancel func()) func() {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		asked := false
		for {
			select {
			case <-done:
				return
			case <-sigs:
			}
			if asked || runstop.NowRequested(stateDir, watchRun) {
				cancel()
				return
			}
			asked = true
			err := runstop.Request(stateDir, watchRun)
			if h, ok := runlock.Holder(lockPath); ok && h.Run != watchRun && err == nil {
				err = runstop.Request(stateDir, h.Run)
			}
			if err != nil {
				// No graceful stop without its request: stop at once.
				fmt.Fprintln(f.IO.ErrOut, "cadre: watch: "+err.Error()+"; stopping at once")
				cancel()
				return
			}
			fmt.Fprintln(f.IO.ErrOut, "cadre: watch: stopping after the running step (again: at once)")
		}
	}()
	return func() {
		signal.Stop(sigs)
		close(done)
	}
}

// watcher makes cadre watch's passes.
type watcher struct {
	f        *Factory
	ws       workspaceCtx
	opts     *WatchOptions
	stateDir string
	temporal *runspec.TemporalTarget // the Temporal engine's, nil on the embedded one

	fl    *app.Following // made at the first pass that follows (following)
	close func()         // closes fl and what it holds
	hooks *listener      // --listen's, nil without

	// flagQuery: the issue query came from flags, not github.watch.
	flagQuery bool
	interval  time.Duration // between passes: --interval, or github.poll_interval
	passes    int
	due       time.Time // when the next pass is due
	// woken says the pass is a webhook's: it acts on what deliveries told
	// without listing the pull requests; retried, that it follows up one
	// where something failed (followUp).
	woken, retried bool
	badConfig      string // the last invalid cadre.yaml's error, said once
}

// configure takes the interval and issue query from the configuration
// where no flag gives them.
func (w *watcher) configure() {
	w.interval = w.opts.Interval
	if w.interval == 0 {
		w.interval = time.Duration(w.ws.cfg.Host().PollInterval)
		if key := w.ws.cfg.HostKey() + ".poll_interval"; w.opts.Listen != "" && w.ws.cfg.Where(key) == key {
			// Webhooks say what changed: the passes only reconcile.
			w.interval = listenReconcile
		}
	}
	if !w.flagQuery {
		q := w.ws.cfg.Host().Watch
		w.opts.Query = codehost.IssueQuery{Labels: q.Labels, Assignee: q.Assignee, Milestone: q.Milestone}
	}
}

// reload reads cadre.yaml again, so that a change needs no restart: a
// valid one replaces the configuration (and the follower, made again with
// it at the next follow); an invalid one leaves the last good one, with a
// warning naming where, said once per error.
func (w *watcher) reload() {
	cfg, err := app.LoadConfig(w.ws.root, w.f.Getenv)
	if err != nil {
		if msg := relPath(err, w.ws.root).Error(); msg != w.badConfig {
			w.badConfig = msg
			fmt.Fprintf(w.f.IO.ErrOut, "cadre: watch: warning: %s; going on with the configuration read before\n", msg)
		}
		return
	}
	w.badConfig = ""
	if reflect.DeepEqual(cfg, w.ws.cfg) {
		return
	}
	fmt.Fprintln(w.f.IO.ErrOut, "cadre: watch: cadre.yaml changed; this pass uses it")
	w.ws.cfg = cfg
	w.configure()
	if w.close != nil {
		w.close()
		w.fl, w.close = nil, nil
	}
}

// stopped says whether cadre stop asked the watch to stop.
func (w *watcher) stopped() bool { return runstop.Requested(w.stateDir, watchRun) }

// pass takes up new issues, then follows the open pull requests once.
func (w *watcher) pass(ctx context.Context) (watchTally, error) {
	var t watchTally
	if w.passes++; w.passes > 1 {
		w.reload()
	}
	if err := w.retries(ctx, &t); err != nil { // those cadre retry handed over
		return t, err
	}
	if err := w.interrupted(ctx, &t); err != nil {
		return t, err
	}
	// Made first: intake asks through its code host, whose answers are kept.
	fl, err := w.following(ctx)
	if err != nil {
		return t, err
	}
	w.journalHooks(ctx, fl)
	if !w.opts.Query.Empty() {
		if err := w.intake(ctx, &t, w.forgeIssues); err != nil {
			return t, err
		}
	}
	if tr := w.ws.cfg.Tracker; tr.Type != "" && !tr.Watch.Empty() {
		if err := w.intake(ctx, &t, w.trackerIssues); err != nil {
			return t, err
		}
	}
	if w.stopped() || ctx.Err() != nil {
		return t, nil
	}
	return t, w.follow(ctx, &t)
}

// forgeIssues lists the forge's issues the query selects.
func (w *watcher) forgeIssues(ctx context.Context) ([]codehost.Issue, error) {
	gh := w.f.newForge(w.ws)
	if w.fl != nil {
		gh = w.fl.Host // its answers are kept: an unchanged list costs nothing
	}
	issues, err := gh.Issues(ctx, w.opts.Query)
	if err != nil {
		return nil, fmt.Errorf("watch: list issues (%s): %w", w.opts.Query, err)
	}
	return issues, nil
}

// trackerIssues lists the tracker's issues tracker.watch selects.
func (w *watcher) trackerIssues(ctx context.Context) ([]codehost.Issue, error) {
	tw := w.ws.cfg.Tracker.Watch
	tr := app.NewTracker(w.ws.cfg, w.f.Getenv, nil)
	// Issues already taken up may still match: look past them.
	issues, err := tr.Search(ctx, codehost.TrackerQuery{JQL: tw.JQL, Labels: tw.Labels, State: tw.State, Limit: 100})
	if err != nil {
		return nil, fmt.Errorf("watch: list %s issues (tracker.watch): %w", w.ws.cfg.Tracker.Type, err)
	}
	return issues, nil
}

// intake starts one run for the issues list gives that have no item yet.
func (w *watcher) intake(ctx context.Context, t *watchTally, list func(context.Context) ([]codehost.Issue, error)) error {
	issues, err := list(ctx)
	if err != nil {
		return err
	}
	st, err := openStore(ctx, w.ws.root)
	if err != nil {
		return err
	}
	var fresh []string
	for _, is := range issues {
		id := intake.IssueItemID(w.ws.cfg.Repository, is)
		if _, err := st.LatestRunOf(ctx, id); errors.Is(err, store.ErrNotFound) {
			fresh = append(fresh, issueRef(is))
		} else if err != nil {
			st.Close()
			return err
		}
	}
	st.Close()
	if len(fresh) == 0 {
		return nil
	}
	fmt.Fprintf(w.f.IO.ErrOut, "cadre: watch: taking up %s\n", strings.Join(fresh, ", "))
	eo := runspec.Options{Targets: fresh, Watch: true}
	var sum report.Summary
	if w.temporal != nil {
		eo.Temporal = w.temporal
		sum, err = runTemporal(ctx, w.f, w.ws, eo, false, eo.Settings(w.ws.cfg).Budget, w.opts.JSON, nil)
	} else {
		sum, err = w.f.runEngine(ctx, w.ws, w.opts.JSON, false, eo.Settings(w.ws.cfg).Budget,
			func(ctx context.Context, e *engine.Engine) (report.Summary, error) { return e.Start(ctx, eo) })
	}
	if rerr := w.ranRun(sum, t); rerr != nil {
		return rerr
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		return relPath(err, w.ws.root)
	}
	return nil
}

// issueRef names is as a run target: its tracker key, or repo#N.
func issueRef(is codehost.Issue) string {
	if is.Key != "" {
		return is.Key
	}
	return fmt.Sprintf("%s#%d", is.Repo, is.Number)
}

// report says in one line what a pass did with the pull requests.
func (w *watcher) report(t follow.Tally) {
	out := w.f.IO.ErrOut
	if t.Followed == 0 {
		what := fmt.Sprintf("no issue query (%s.watch, tracker.watch, --label, --assignee, --milestone) to take up new issues by", w.ws.cfg.HostKey())
		switch tr := w.ws.cfg.Tracker; {
		case !w.opts.Query.Empty():
			what = "issues: " + w.opts.Query.String()
		case tr.Type != "" && !tr.Watch.Empty():
			what = "issues: " + tr.Type + "'s, by tracker.watch"
		}
		fmt.Fprintf(out, "cadre: watch: no pull request of cadre's to follow; %s\n", what)
		return
	}
	fmt.Fprintf(out, "cadre: watch: %d pull request(s) followed: %d reaction(s), %d merged, %d closed, %d waiting for a human, %d failed\n",
		t.Followed, t.Reacted, t.Merged, t.Closed, len(t.Waiting), len(t.Failed))
}

// follow follows every open pull request cadre opened, once.
func (w *watcher) follow(ctx context.Context, t *watchTally) error {
	fl, err := w.following(ctx)
	if err != nil {
		return err
	}
	pass := fl.Pass
	if w.woken {
		pass = fl.Woken
	}
	tally, err := pass(ctx)
	if kerr := fl.Host.KeepAnswers(); kerr != nil {
		// The next process asks for everything anew.
		fmt.Fprintf(w.f.IO.ErrOut, "cadre: watch: warning: keep the code host's answers: %v\n", kerr)
	}
	t.failed += len(tally.Failed)
	t.waiting += len(tally.Waiting)
	t.acted += tally.Reacted + tally.Merged + tally.Closed
	w.report(tally)
	if err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// following is the watch's follower, made at its first pass and kept for
// the next ones: its code host client keeps the answers its conditional
// requests revalidate (an unchanged one then costs no rate limit), and
// the engine, its sandbox probed, is made once.
func (w *watcher) following(ctx context.Context) (*app.Following, error) {
	if w.fl != nil {
		return w.fl, nil
	}
	st, err := openStore(ctx, w.ws.root)
	if err != nil {
		return nil, err
	}
	say := func(it follow.Item, msg string) {
		if it.ID == "" {
			fmt.Fprintf(w.f.IO.ErrOut, "cadre: watch: warning: %s\n", msg)
			return
		}
		fmt.Fprintf(w.f.IO.ErrOut, "cadre: %s: %s\n", it.ID, msg)
	}
	fl, closeAll, err := app.NewFollowing(ctx, app.Workspace{Root: w.ws.root, Config: w.ws.cfg}, st,
		app.Options{Getenv: w.f.Getenv, Runners: w.f.Runners, Crash: w.f.Crash, Sinks: []event.Sink{w.f.eventSink(w.opts.JSON)}, Warn: w.f.IO.ErrOut}, say)
	if err != nil {
		st.Close()
		return nil, usageErr(relPath(err, w.ws.root))
	}
	closers := []func(){func() { st.Close() }, closeAll}
	if t := w.temporal; t != nil {
		// The reactions' fixes run on the workers, as the items' steps.
		c, err := w.f.dialTemporal(ctx, w.ws.cfg, *t)
		if err != nil {
			closeAll()
			st.Close()
			return nil, usageErr(err)
		}
		closers = append(closers, c.Close)
		fl.Steps = temporal.FollowSteps{Client: c, TaskQueue: t.TaskQueue, Store: st,
			StepTimeout: runspec.Options{}.Settings(w.ws.cfg).Timeout, Heartbeat: t.Heartbeat}
	}
	fl.Stopped = w.stopped
	if w.hooks != nil {
		// A delivery lost is caught up with at the pass after the next.
		fl.Trust = w.interval
	}
	w.fl = fl
	w.close = func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	return fl, nil
}
