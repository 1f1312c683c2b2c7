package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/cadre-dev/cadre/internal/report"
	"github.com/cadre-dev/cadre/internal/store"
)

// ReportOptions are the arguments of cadre report.
type ReportOptions struct {
	Run  string
	By   string
	JSON bool
}

// NewCmdReport builds cadre report.
func NewCmdReport(f *Factory, runF func(context.Context, *Factory, *ReportOptions) error) *cobra.Command {
	opts := &ReportOptions{}
	cmd := &cobra.Command{
		Use:   "report [RUN] [--by role|runner|model|item] [--json]",
		Short: "Tokens, cost and time of a run's agent steps, grouped",
		Long: `Account for the latest run (or RUN): agent steps, failures, tokens, cost and agent time, grouped by role, runner, model or item.

With --by model, when the run's steps were evaluated, SCORE is each model's mean quality
(0-10) and EVALS the number of scored evaluations (eval_mean_score on 0..1 and
eval_samples in --json); see cadre scores for the record across runs.` + exitStatusSimple,
		Example: `  cadre report
  cadre report --by runner
  cadre report --by item --json
  cadre report --by model`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.Run = args[0]
			}
			if runF != nil {
				return runF(cmd.Context(), f, opts)
			}
			return runReport(cmd.Context(), f, opts)
		},
	}
	cmd.Flags().StringVar(&opts.By, "by", "role", "group by role, runner, model or item")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print JSON on stdout")
	return cmd
}

func runReport(ctx context.Context, f *Factory, opts *ReportOptions) error {
	st, id, err := f.openRun(ctx, opts.Run)
	if err != nil {
		return err
	}
	defer st.Close()
	rows, err := report.Rows(ctx, st, id, opts.By)
	if err != nil {
		return usageErr(err)
	}
	reactions, err := report.Reactions(ctx, st, id)
	if err != nil {
		return err
	}
	if opts.JSON {
		return printJSON(f.IO.Out, map[string]any{"run": id, "by": opts.By, "rows": rows, "reactions": reactions})
	}
	fmt.Fprintf(f.IO.Out, "run %s by %s\n", id, opts.By)
	// The quality columns appear only when the run was evaluated.
	evals := false
	for _, r := range rows {
		evals = evals || r.EvalSamples > 0
	}
	line := func(key string, r report.Row) {
		fmt.Fprintf(f.IO.Out, "%-24s %5d %6d %10d %10d %12s %10s", key, r.Steps, r.Failed, r.Usage.InputTokens, r.Usage.OutputTokens, cost(r.Usage.CostUSD, r.Usage.CostEstimated), r.Duration.Round(time.Millisecond))
		if evals {
			score := "-"
			if r.EvalMeanScore != nil {
				score = fmt.Sprintf("%.1f", 10*(*r.EvalMeanScore))
			}
			fmt.Fprintf(f.IO.Out, " %5s %5d", score, r.EvalSamples)
		}
		fmt.Fprintln(f.IO.Out)
	}
	fmt.Fprintf(f.IO.Out, "%-24s %5s %6s %10s %10s %12s %10s", "KEY", "STEPS", "FAILED", "IN", "OUT", "COST", "TIME")
	if evals {
		fmt.Fprintf(f.IO.Out, " %5s %5s", "SCORE", "EVALS")
	}
	fmt.Fprintln(f.IO.Out)
	var (
		tot      report.Row
		scoreSum float64
	)
	for _, r := range rows {
		line(r.Key, r)
		tot.Steps += r.Steps
		tot.Failed += r.Failed
		tot.Usage = tot.Usage.Add(r.Usage)
		tot.Duration += r.Duration
		if r.EvalMeanScore != nil {
			tot.EvalSamples += r.EvalSamples
			scoreSum += *r.EvalMeanScore * float64(r.EvalSamples)
		}
	}
	if tot.EvalSamples > 0 {
		mean := scoreSum / float64(tot.EvalSamples)
		tot.EvalMeanScore = &mean
	}
	line("total", tot)
	if len(reactions) > 0 {
		// Included above, by the agent steps of each reaction.
		fmt.Fprintf(f.IO.Out, "\ncadre watch's reactions to the pull requests:\n%-24s %5s %6s %10s %10s %12s\n", "REACTION", "COUNT", "FAILED", "IN", "OUT", "COST")
		for _, r := range reactions {
			fmt.Fprintf(f.IO.Out, "%-24s %5d %6d %10d %10d %12s\n", r.Kind, r.Count, r.Failed, r.Usage.InputTokens, r.Usage.OutputTokens, cost(r.Usage.CostUSD, r.Usage.CostEstimated))
		}
	}
	return nil
}

// cost formats dollars, marking estimated figures with "~".
func cost(usd float64, estimated bool) string {
	if estimated {
		return fmt.Sprintf("~$%.4f", usd)
	}
	return fmt.Sprintf("$%.4f", usd)
}

// openRun opens the journal and resolves the run id (latest when empty).
func (f *Factory) openRun(ctx context.Context, id string) (*store.Store, string, error) {
	st, id, _, err := f.openRunAt(ctx, id)
	return st, id, err
}

// openRunAt is openRun that also returns the repository root.
func (f *Factory) openRunAt(ctx context.Context, id string) (*store.Store, string, string, error) {
	root, err := f.repoRoot(ctx)
	if err != nil {
		return nil, "", "", err
	}
	if !hasJournal(root) {
		return nil, "", "", usageErr(fmt.Errorf("no runs yet in %s (start one with cadre run)", root))
	}
	st, err := openStore(ctx, root)
	if err != nil {
		return nil, "", "", err
	}
	if id == "" {
		r, err := st.LatestRun(ctx)
		if err != nil {
			st.Close()
			if errors.Is(err, store.ErrNotFound) {
				return nil, "", "", usageErr(fmt.Errorf("no runs yet in %s (start one with cadre run)", root))
			}
			return nil, "", "", err
		}
		return st, r.ID, root, nil
	}
	if _, err := st.GetRun(ctx, id); err != nil {
		st.Close()
		if errors.Is(err, store.ErrNotFound) {
			return nil, "", "", usageErr(fmt.Errorf("no run %q (cadre status shows the latest)", id))
		}
		return nil, "", "", err
	}
	return st, id, root, nil
}
