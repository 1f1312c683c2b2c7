package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cadre-dev/cadre/internal/engine"
	"github.com/cadre-dev/cadre/internal/executor"
	"github.com/cadre-dev/cadre/internal/report"
	"github.com/cadre-dev/cadre/internal/runspec"
	"github.com/cadre-dev/cadre/internal/store"
)

// ResumeOptions are the arguments of cadre resume.
type ResumeOptions struct {
	Run      string
	Budget   float64
	Parallel int
	JSON     bool
	Plain    bool   // lines instead of the live view on a terminal
	Sandbox  string // --sandbox: bwrap, none or auto, over sandbox.mode
	Serve    ServeFlags
	Temporal TemporalOptions // for a run started on the Temporal engine
	Retry    []string        // cadre retry's items, granted once the run holds the lock
}

// NewCmdResume builds cadre resume.
func NewCmdResume(f *Factory, runF func(context.Context, *Factory, *ResumeOptions) error) *cobra.Command {
	opts := &ResumeOptions{}
	cmd := &cobra.Command{
		Use:   "resume [RUN]",
		Short: "Continue the latest (or given) run; completed steps are never re-run",
		Long: `Continue a run that was interrupted, stopped or killed. Steps the journal records as
completed are replayed from their recorded results, never run again; a commit already made
is found by its Cadre-Step trailer and not repeated. Without RUN, the run continued is the
latest the journal says is running though no process runs it (one killed, even when a later
run has taken over its lock since), or else the latest run.

A run started with --engine temporal goes on there: the workflows of its unfinished items
start again (or are attached to while they still run) on the Temporal server, namespace and
task queue it was started on, with its --heartbeat-timeout, unless --temporal-address/
--namespace/--task-queue/--heartbeat-timeout say otherwise; cadre workers perform the steps.` + liveViewHelp + exitStatusRunning,
		Example: `  cadre resume                      # the latest run (a killed one first)
  cadre resume 20261122-101500-ab12 # a given run
  cadre resume --budget-usd 20      # a run paused at its budget, with a higher one
  cadre resume --serve              # with the web board: answer paused items there`,
		Args: cobra.MaximumNArgs(2), // two: --serve HOST:PORT RUN
		RunE: func(cmd *cobra.Command, args []string) error {
			if args = serveAddrArg(cmd, &opts.Serve, args); len(args) > 1 {
				return usageErr(fmt.Errorf("cadre resume takes at most one RUN, got %d arguments", len(args)))
			}
			if len(args) == 1 {
				opts.Run = args[0]
			}
			if err := checkServeFlags(cmd, opts.Serve, false); err != nil {
				return err
			}
			if err := checkOutputFlags(opts.JSON, opts.Plain); err != nil {
				return err
			}
			if cmd.Flags().Changed("budget-usd") && opts.Budget < 0 {
				// -1 is the flag's "not given": any negative would be ignored.
				return usageErr(fmt.Errorf("--budget-usd %g: want 0 (no limit) or more", opts.Budget))
			}
			if runF != nil {
				return runF(cmd.Context(), f, opts)
			}
			return runResume(cmd.Context(), f, opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "JSON-lines events on stdout")
	cmd.Flags().BoolVar(&opts.Plain, "plain", false, "one line per event on stderr instead of the live view")
	cmd.Flags().Float64Var(&opts.Budget, "budget-usd", -1, "a new budget for the run (`X` dollars; 0 = no limit, limits.budget_usd's either)")
	cmd.Flags().IntVar(&opts.Parallel, "parallel", 0, "items at once (default: as the run started)")
	addSandboxFlag(cmd, &opts.Sandbox)
	addServeFlags(cmd, &opts.Serve)
	addTemporalFlags(cmd, &opts.Temporal)
	addHeartbeatFlag(cmd, &opts.Temporal, "as the run started")
	return cmd
}

func runResume(ctx context.Context, f *Factory, opts *ResumeOptions) error {
	ws, err := f.workspace(ctx)
	if err != nil {
		return err
	}
	sum, err := resumeRun(ctx, f, ws, opts)
	return finishRun(f, sum, err, opts.JSON)
}

// resumeRun continues the run opts names, in the checkout of ws, and
// returns its summary; none when it did not start (err says why).
func resumeRun(ctx context.Context, f *Factory, ws workspaceCtx, opts *ResumeOptions) (report.Summary, error) {
	var err error
	if ws.cfg, err = withSandboxFlag(ws.cfg, opts.Sandbox); err != nil {
		return report.Summary{}, err
	}
	var ov runspec.Overrides
	if opts.Budget >= 0 {
		ov.BudgetUSD = &opts.Budget
	}
	ov.Parallel, ov.Retry = opts.Parallel, opts.Retry
	stored, err := storedOptions(ctx, ws, opts.Run)
	if err != nil {
		return report.Summary{}, err
	}
	if stored.InPlace && opts.Parallel > 1 {
		return report.Summary{}, usageErr(fmt.Errorf("--parallel %d: the run works in place, one task after another in this checkout", opts.Parallel))
	}
	// The live view's budget: the new one, else the run's own (NoBudget:
	// none), else cadre.yaml's.
	resumed := stored
	if ov.BudgetUSD != nil {
		resumed.BudgetUSD = *ov.BudgetUSD
		if resumed.BudgetUSD == 0 {
			resumed.BudgetUSD = runspec.NoBudget // cadre resume --budget-usd 0 lifts the limit
		}
	}
	budget := resumed.Settings(ws.cfg).Budget
	if recorded := stored.Temporal; recorded == nil {
		if set := opts.Temporal.set(); len(set) > 0 {
			return report.Summary{}, usageErr(fmt.Errorf("%s: the run did not start on the Temporal engine", set[0]))
		}
	} else {
		if opts.Serve.Addr != "" {
			return report.Summary{}, usageErr(errors.New("--serve runs on the embedded engine only: this run is on Temporal; watch it with cadre serve"))
		}
		if err := checkHeartbeat(opts.Temporal.Heartbeat); err != nil {
			return report.Summary{}, err
		}
		if err := opts.Temporal.check(); err != nil {
			return report.Summary{}, err
		}
		if err := temporalIgnores(opts.Sandbox, opts.Parallel, "the run started on it"); err != nil {
			return report.Summary{}, err
		}
		live := f.liveView(opts.JSON, opts.Plain)
		t := temporalTarget(ws.cfg, opts.Temporal, recorded)
		sum, err := runTemporal(ctx, f, ws, runspec.Options{Temporal: &t, Timeout: stored.Timeout}, live, budget, opts.JSON,
			func(ctx context.Context, e *engine.Engine, drive executor.Driver) (report.Summary, error) {
				return e.ResumeDriven(ctx, opts.Run, ov, drive)
			})
		return sum, relPath(err, ws.root)
	}
	if opts.Serve.Addr != "" {
		return report.Summary{}, f.runServed(ctx, ws, opts.Serve, shown{json: opts.JSON, live: f.liveView(opts.JSON, opts.Plain), budget: budget}, func(ctx context.Context, e *engine.Engine) (report.Summary, error) {
			return e.ResumeWith(ctx, opts.Run, ov)
		})
	}
	live := f.liveView(opts.JSON, opts.Plain)
	sum, err := f.runEngine(ctx, ws, opts.JSON, live, budget,
		func(ctx context.Context, e *engine.Engine) (report.Summary, error) {
			return e.ResumeWith(ctx, opts.Run, ov)
		})
	return sum, relPath(err, ws.root)
}

// storedOptions are the options run (the latest when "") started with;
// none when there is no such run (resume then says so).
func storedOptions(ctx context.Context, ws workspaceCtx, run string) (runspec.Options, error) {
	if !hasJournal(ws.root) {
		return runspec.Options{}, nil
	}
	st, err := openStore(ctx, ws.root)
	if err != nil {
		return runspec.Options{}, err
	}
	defer st.Close()
	_, opts, err := runspec.Stored(ctx, st, run)
	if errors.Is(err, store.ErrNotFound) {
		return runspec.Options{}, nil
	}
	return opts, err
}
