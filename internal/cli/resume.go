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
is found by its Cadre-Step trailer and not repeated.` + exitStatusRunning,
		Example: `  cadre resume                      # the latest run
  cadre resume 20261122-101500-ab12 # a given run
  cadre resume --budget-usd 20      # a run paused at its budget, with a higher one
  cadre resume --serve              # with the web board: answer paused items there`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.Run = args[0]
			}
			if runF != nil {
				return runF(cmd.Context(), f, opts)
			}
			return runResume(cmd.Context(), f, opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "JSON-lines events on stdout")
	cmd.Flags().Float64Var(&opts.Budget, "budget-usd", -1, "a new budget for the run (`X` dollars; 0 = no limit)")
	cmd.Flags().IntVar(&opts.Parallel, "parallel", 0, "items at once (default: as the run started)")
	addServeFlags(cmd, &opts.Serve)
	return cmd
}

func runResume(ctx context.Context, f *Factory, opts *ResumeOptions) error {
	ws, err := f.workspace(ctx)
	if err != nil {
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
	var sum engine.Summary
	err = f.withEngine(ctx, ws, opts.JSON, func(e *engine.Engine) error {
		var err error
		sum, err = e.ResumeWith(ctx, opts.Run, ov)
		return err
	})
	return finishRun(f, sum, relPath(err, ws.root), opts.JSON)
}
