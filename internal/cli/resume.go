package cli

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/cadre-dev/cadre/internal/engine"
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
}

// NewCmdResume builds cadre resume.
func NewCmdResume(f *Factory, runF func(context.Context, *Factory, *ResumeOptions) error) *cobra.Command {
	opts := &ResumeOptions{}
	cmd := &cobra.Command{
		Use:   "resume [RUN]",
		Short: "Continue the latest (or given) run; completed steps are never re-run",
		Long: `Continue a run that was interrupted, stopped or killed. Steps the journal records as
completed are replayed from their recorded results, never run again; a commit already made
is found by its Cadre-Step trailer and not repeated.` + liveViewHelp + "\n" + exitStatusRunning,
		Example: `  cadre resume                      # the latest run
  cadre resume 20261122-101500-ab12 # a given run
  cadre resume --budget-usd 20      # a run paused at its budget, with a higher one
  cadre resume --serve              # with the web board: answer paused items there`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.Run = args[0]
			}
			if err := checkServeFlags(cmd, opts.Serve, false); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), f, opts)
			}
			return runResume(cmd.Context(), f, opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "JSON-lines events on stdout")
	cmd.Flags().BoolVar(&opts.Plain, "plain", false, "one line per event on stderr instead of the live view")
	cmd.Flags().Float64Var(&opts.Budget, "budget-usd", -1, "a new budget for the run (`X` dollars; 0 = no limit)")
	cmd.Flags().IntVar(&opts.Parallel, "parallel", 0, "items at once (default: as the run started)")
	addSandboxFlag(cmd, &opts.Sandbox)
	addServeFlags(cmd, &opts.Serve)
	return cmd
}

func runResume(ctx context.Context, f *Factory, opts *ResumeOptions) error {
	ws, err := f.workspace(ctx)
	if err != nil {
		return err
	}
	if ws.cfg, err = withSandboxFlag(ws.cfg, opts.Sandbox); err != nil {
		return err
	}
	var ov engine.ResumeOverrides
	if opts.Budget >= 0 {
		ov.BudgetUSD = &opts.Budget
	}
	ov.Parallel = opts.Parallel
	if opts.Serve.Addr != "" {
		return f.runServed(ctx, ws, opts.Serve, opts.JSON, func(ctx context.Context, e *engine.Engine) (engine.Summary, error) {
			return e.ResumeWith(ctx, opts.Run, ov)
		})
	}
	live := f.liveView(opts.JSON, opts.Plain)
	budget := ws.cfg.Limits.BudgetUSD
	if ov.BudgetUSD != nil {
		budget = *ov.BudgetUSD
	} else if live {
		budget = storedBudget(ctx, ws, opts.Run, budget)
	}
	sum, err := f.runEngine(ctx, ws, opts.JSON, live, budget,
		func(ctx context.Context, e *engine.Engine) (engine.Summary, error) {
			return e.ResumeWith(ctx, opts.Run, ov)
		})
	return finishRun(f, sum, relPath(err, ws.root), opts.JSON)
}

// storedBudget is the budget run (the latest when "") was started with,
// for the view's footer; fallback when it cannot be read.
func storedBudget(ctx context.Context, ws workspaceCtx, run string, fallback float64) float64 {
	if !hasJournal(ws.root) {
		return fallback
	}
	st, err := openStore(ctx, ws.root)
	if err != nil {
		return fallback
	}
	defer st.Close()
	if run == "" {
		r, err := st.LatestRun(ctx)
		if err != nil {
			return fallback
		}
		run = r.ID
	}
	return runBudget(ctx, st, run, fallback)
}
