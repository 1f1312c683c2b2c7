package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"

	"github.com/cadre-dev/cadre/internal/config"
	"github.com/cadre-dev/cadre/internal/engine"
	"github.com/cadre-dev/cadre/internal/executor"
	"github.com/cadre-dev/cadre/internal/report"
	"github.com/cadre-dev/cadre/internal/runspec"
	"github.com/cadre-dev/cadre/internal/telemetry"
	"github.com/cadre-dev/cadre/internal/temporal"
	"github.com/cadre-dev/cadre/internal/workspace"
)

// TemporalOptions are the Temporal flags: where the Temporal engine's
// server and queue are. Empty ones fall back to cadre.yaml's temporal keys
// (and their CADRE_TEMPORAL_* variables).
type TemporalOptions struct {
	Address   string
	Namespace string
	TaskQueue string
	// Heartbeat is how long a step's worker may go silent before Temporal
	// gives the step to another worker (cadre run only; 0: the default).
	Heartbeat time.Duration
}

// set lists the Temporal flags given, by name.
func (o TemporalOptions) set() []string {
	var names []string
	// --temporal and --temporal-address set one field: named both ways,
	// whichever the user typed.
	for name, v := range map[string]string{"temporal (--temporal-address)": o.Address, "namespace": o.Namespace, "task-queue": o.TaskQueue} {
		if v != "" {
			names = append(names, "--"+name)
		}
	}
	if o.Heartbeat != 0 {
		names = append(names, "--heartbeat-timeout")
	}
	slices.Sort(names)
	return names
}

// check refuses Temporal flags that cannot name a server or a queue, as
// cadre.yaml's temporal keys are, before anything dials.
func (o TemporalOptions) check() error {
	if o.Address != "" {
		host, port, err := net.SplitHostPort(o.Address)
		if n, perr := strconv.Atoi(port); err != nil || host == "" || perr != nil || n < 1 || n > 65535 {
			return usageErr(fmt.Errorf("--temporal-address %q: want HOST:PORT such as 127.0.0.1:7233", o.Address))
		}
	}
	for _, f := range []struct{ name, v, what string }{{"namespace", o.Namespace, "a namespace name"}, {"task-queue", o.TaskQueue, "a task queue name"}} {
		if f.v != "" && strings.TrimSpace(f.v) == "" {
			return usageErr(fmt.Errorf("--%s %q: want %s", f.name, f.v, f.what))
		}
	}
	return nil
}

func addTemporalFlags(cmd *cobra.Command, o *TemporalOptions) {
	fl := cmd.Flags()
	fl.StringVar(&o.Address, "temporal-address", "", "Temporal frontend `HOST:PORT` (default temporal.address, 127.0.0.1:7233)")
	fl.StringVar(&o.Address, "temporal", "", "the same as --temporal-address")
	fl.StringVar(&o.Namespace, "namespace", "", "Temporal namespace (default temporal.namespace, default)")
	fl.StringVar(&o.TaskQueue, "task-queue", "", "Temporal task queue the workers poll (default temporal.task_queue, cadre)")
}

// temporalTarget is where to reach Temporal: each flag given, else where
// the run was recorded to run (recorded may be nil: a new run), else
// cadre.yaml's temporal keys (or their CADRE_TEMPORAL_* variables). A
// run's workflows live where it started them.
func temporalTarget(cfg config.Config, o TemporalOptions, recorded *runspec.TemporalTarget) runspec.TemporalTarget {
	t := runspec.TemporalTarget{Address: cfg.Temporal.Address, Namespace: cfg.Temporal.Namespace, TaskQueue: cfg.Temporal.TaskQueue}
	if recorded != nil {
		t = *recorded
	}
	for _, f := range []struct{ flag, dst *string }{{&o.Address, &t.Address}, {&o.Namespace, &t.Namespace}, {&o.TaskQueue, &t.TaskQueue}} {
		if *f.flag != "" {
			*f.dst = *f.flag
		}
	}
	if o.Heartbeat != 0 {
		t.Heartbeat = o.Heartbeat
	}
	return t
}

// addHeartbeatFlag declares --heartbeat-timeout, of cadre run and resume.
func addHeartbeatFlag(cmd *cobra.Command, o *TemporalOptions, what string) {
	cmd.Flags().DurationVar(&o.Heartbeat, "heartbeat-timeout", 0,
		fmt.Sprintf("how long a worker may go silent before its running step moves to another worker (default %s)", what))
}

// checkHeartbeat refuses a heartbeat timeout too short to keep.
func checkHeartbeat(h time.Duration) error {
	if h != 0 && h < time.Second {
		return usageErr(fmt.Errorf("--heartbeat-timeout %s: want at least 1s", h))
	}
	return nil
}

// NewCmdWorker builds cadre worker.
func NewCmdWorker(f *Factory) *cobra.Command {
	o := &TemporalOptions{}
	var slots int
	cmd := &cobra.Command{
		Use:   "worker --temporal-address HOST:PORT --task-queue Q",
		Short: "Perform the steps of runs started with --engine temporal",
		Long: `Poll a Temporal task queue and run the item workflows and steps of runs started with
cadre run --engine temporal, for the repository in the current directory. Start one or
more; each runs at most --parallel steps at once (default limits.parallel_issues ×
limits.parallel_agents, the most agents the embedded engine runs on one machine), the
others waiting on the queue. When one dies, another continues its items from their last
journaled step.

A worker started in the repository a run was started in shares its journal (.cadre) and
worktrees. A worker elsewhere (another clone, another machine) keeps a replica: it takes
an item's journal from the machine that started the run, fetches the item's branch from
origin, pushes it after every committed step, and sends each step's journal back; the
item's later steps come back to it while it lives. See docs/workers.md.

EXIT STATUS
  0  stopped (Ctrl-C or SIGTERM)
  1  the worker lost its connection or could not start
  2  usage or config error`,
		Example: `  cadre worker --temporal-address 127.0.0.1:7233 --task-queue cadre`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runWorker(cmd.Context(), f, o, slots)
		},
	}
	addTemporalFlags(cmd, o)
	cmd.Flags().IntVar(&slots, "parallel", 0, "steps this worker runs at once (default limits.parallel_issues × limits.parallel_agents)")
	return cmd
}

func runWorker(ctx context.Context, f *Factory, o *TemporalOptions, slots int) error {
	if slots < 0 {
		return usageErr(fmt.Errorf("--parallel %d: want at least 1", slots))
	}
	ws, err := f.workspace(ctx)
	if err != nil {
		return err
	}
	if err := o.check(); err != nil {
		return err
	}
	if slots == 0 {
		slots = max(1, ws.cfg.Limits.ParallelIssues*ws.cfg.Limits.ParallelAgents)
	}
	origin, err := checkOrigin(ctx, ws.root)
	if err != nil {
		return err
	}
	if !origin {
		fmt.Fprintf(f.IO.ErrOut, "cadre: warning: %s has no remote origin: the items of runs started in another repository fail here (add it: git remote add origin URL)\n", ws.root)
	}
	t := temporalTarget(ws.cfg, *o, nil)
	c, err := f.dialTemporal(ctx, ws.cfg, t)
	if err != nil {
		return err
	}
	defer c.Close()
	st, err := openStore(ctx, ws.root)
	if err != nil {
		return err
	}
	defer st.Close()
	progress := &temporal.Progress{}
	e, flush, err := f.newEngine(ctx, ws, st, f.eventSink(false), progress)
	if err != nil {
		return err
	}
	defer flush()
	fmt.Fprintf(f.IO.ErrOut, "cadre: worker for %s polling %s on %s, %d steps at once\n", ws.root, t.TaskQueue, t.Address, slots)
	remote := temporal.Remote{Home: temporal.HomeOf(e.StateDir()), Journal: temporal.EngineJournal{Engine: e},
		Replica: temporal.EngineReplica{Engine: e}, Origin: origin}
	if err := temporal.Serve(ctx, c, t.TaskQueue, e, progress, slots, remote); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// dialTemporal connects to Temporal at t, tracing workflows and their
// steps when telemetry is on (the engine's telemetry then starts the
// tracer the interceptors use).
func (f *Factory) dialTemporal(ctx context.Context, cfg config.Config, t runspec.TemporalTarget) (client.Client, error) {
	var ics []interceptor.ClientInterceptor
	if telemetry.Enabled(cfg.Telemetry, f.Getenv) {
		var err error
		if ics, err = temporal.TraceInterceptors(telemetry.RunContext); err != nil {
			return nil, err
		}
	}
	return temporal.DialWith(ctx, t.Address, t.Namespace, f.IO.ErrOut, ics)
}

// checkOrigin says whether the repository at root has a remote origin,
// and refuses one whose URL is a relative path: every item on Temporal
// fetches and pushes its branch through origin from its worktree, where
// git would resolve such a path elsewhere, failing each step.
func checkOrigin(ctx context.Context, root string) (bool, error) {
	repo := &workspace.Repo{Dir: root}
	if _, err := repo.Git(ctx, "remote", "get-url", "origin"); err != nil {
		return false, nil
	}
	for _, args := range [][]string{{"remote", "get-url", "origin"}, {"remote", "get-url", "--push", "origin"}} {
		out, err := repo.Git(ctx, args...)
		if err != nil {
			return false, fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
		}
		if u := strings.TrimSpace(out); relativePath(u) {
			return false, usageErr(fmt.Errorf("remote origin's URL %q is a relative path, which git resolves from each item's worktree: make it absolute (git remote set-url origin %s)",
				u, filepath.Join(root, u)))
		}
	}
	return true, nil
}

// relativePath says whether a remote's URL is a relative local path: not
// a URL (scheme://), not git's scp-like host:path (a colon before any
// slash), not absolute.
func relativePath(u string) bool {
	if u == "" || strings.Contains(u, "://") || filepath.IsAbs(u) {
		return false
	}
	if i := strings.IndexByte(u, ':'); i >= 0 && !strings.Contains(u[:i], "/") {
		return false
	}
	return true
}

// runTemporal runs eo's items as Temporal workflows at eo.Temporal,
// journaled here; resume, when set, continues that run instead.
func runTemporal(ctx context.Context, f *Factory, ws workspaceCtx, eo runspec.Options, live bool, budget float64, asJSON bool,
	resume func(context.Context, *engine.Engine, executor.Driver) (report.Summary, error)) (report.Summary, error) {
	if ws.cfg.Limits.WorktreePool > 0 {
		// Each worker checks out the worktrees of the steps it takes;
		// a pool in this process would prepare worktrees no item takes.
		return report.Summary{}, usageErr(fmt.Errorf("%s: the worktree pool works on the embedded engine only, not on Temporal: set it to 0 for this run (CADRE_LIMITS_WORKTREE_POOL=0)",
			ws.cfg.Where("limits.worktree_pool")))
	}
	t := eo.Temporal
	c, err := f.dialTemporal(ctx, ws.cfg, *t)
	if err != nil {
		return report.Summary{}, usageErr(err)
	}
	defer c.Close()
	s := &temporal.Starter{Client: c, TaskQueue: t.TaskQueue, StepTimeout: eo.Settings(ws.cfg).Timeout, Heartbeat: t.Heartbeat}
	return f.runEngineOf(ctx, ws, shown{json: asJSON, live: live, follow: true, budget: budget}, func(ctx context.Context, e *engine.Engine) (report.Summary, error) {
		// This journal is the run's journal of truth: workers on other
		// machines fetch its items from it and send their steps back.
		s.Home = temporal.HomeOf(e.StateDir())
		stop, err := temporal.StartHome(c, s.Home, temporal.EngineJournal{Engine: e})
		if err != nil {
			return report.Summary{}, err
		}
		defer stop()
		if resume != nil {
			return resume(ctx, e, s.Drive)
		}
		return e.StartWith(ctx, eo, s.Drive)
	})
}

// Engines cadre run can use.
const (
	engineEmbedded = "embedded"
	engineTemporal = "temporal"
)

// addEngineFlags declares cadre run's --engine and its Temporal flags.
func addEngineFlags(cmd *cobra.Command, opts *RunOptions) {
	cmd.Flags().StringVar(&opts.Engine, "engine", "", "where items run: embedded (this process) or temporal (cadre workers) (default engine in cadre.yaml, embedded)")
	addTemporalFlags(cmd, &opts.Temporal)
	addHeartbeatFlag(cmd, &opts.Temporal, temporal.DefaultHeartbeat.String())
}

// checkEngineFlag refuses an engine cadre does not have.
func checkEngineFlag(opts *RunOptions) error {
	switch opts.Engine {
	case "", engineEmbedded, engineTemporal:
		return nil
	}
	return usageErr(fmt.Errorf("--engine %q: want embedded or temporal", opts.Engine))
}

// runEngineOf is the engine a run uses: --engine, else cadre.yaml's
// engine. It refuses Temporal flags without the Temporal engine, which
// would otherwise be ignored silently, and what only the embedded engine
// does.
func runEngineOf(cfg config.Config, opts *RunOptions) (string, error) {
	name, from := opts.Engine, "--engine temporal"
	if name == "" {
		name, from = cfg.Engine, cfg.Where("engine")+" is temporal"
	}
	switch name {
	case engineEmbedded:
		if set := opts.Temporal.set(); len(set) > 0 {
			return "", usageErr(fmt.Errorf("%s needs --engine temporal (or engine: temporal in cadre.yaml)", set[0]))
		}
	case engineTemporal:
		if opts.DryRun {
			return "", usageErr(fmt.Errorf("--dry-run runs on the embedded engine only (%s): add --engine embedded", from))
		}
		if opts.Serve.Addr != "" {
			return "", usageErr(fmt.Errorf("--serve runs on the embedded engine only (%s): add --engine embedded, and watch a Temporal run with cadre serve", from))
		}
		if err := checkHeartbeat(opts.Temporal.Heartbeat); err != nil {
			return "", err
		}
		if err := opts.Temporal.check(); err != nil {
			return "", err
		}
		if err := temporalIgnores(opts.Sandbox, opts.Parallel, from); err != nil {
			return "", err
		}
		if opts.InPlace {
			// Said before dialing: a server that is not up yet is not
			// what stands in the way.
			return "", usageErr(fmt.Errorf("--in-place works in this checkout, which only the embedded engine can do (%s): add --engine embedded", from))
		}
		if cfg.Limits.MaxRunDuration > 0 {
			return "", usageErr(fmt.Errorf("%s: limits.max_run_duration stops runs of the embedded engine only (%s): unset it, or add --engine embedded",
				cfg.Where("limits.max_run_duration"), from))
		}
	}
	return name, nil
}

// temporalIgnores refuses the flags of this process that a run on
// Temporal would ignore: its workers run the steps, confined as their
// own cadre.yaml says, and each item's workflow starts at once (what runs
// at the same time is up to the workers).
func temporalIgnores(sandbox string, parallel int, from string) error {
	if sandbox != "" {
		return usageErr(fmt.Errorf("--sandbox on the Temporal engine (%s): the workers confine the agents as their sandbox.mode says; start them with CADRE_SANDBOX_MODE=%s instead", from, sandbox))
	}
	if parallel != 0 {
		return usageErr(fmt.Errorf("--parallel on the Temporal engine (%s): every item's workflow starts at once and the workers run them; start more or fewer workers instead", from))
	}
	return nil
}
