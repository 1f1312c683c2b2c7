package cli

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"time"

	"github.com/spf13/cobra"

	"github.com/cadre-dev/cadre/internal/role"
	"github.com/cadre-dev/cadre/internal/store"
	"github.com/cadre-dev/cadre/internal/workspace"
)

// ScoresOptions are the arguments of cadre scores.
type ScoresOptions struct {
	Role   string
	Source string // "", run or bench
	JSON   bool
}

// NewCmdScores builds cadre scores.
func NewCmdScores(f *Factory, runF func(context.Context, *Factory, *ScoresOptions) error) *cobra.Command {
	opts := &ScoresOptions{}
	cmd := &cobra.Command{
		Use:   "scores [ROLE] [--json] [--source run|bench]",
		Short: "How well each runner and model has done each role: pass rate, quality, cost, time",
		Long: `Show the score store: the evaluations recorded for this repository by runs and by
cadre bench, one table per role, one line per runner/model, best first.

SAMPLES counts evaluations. PASS is the share of pass/fail verdicts that passed
(gatekeeper checks, reviews, outcomes); SCORE the mean quality on 0-10 (judges,
reviews, benchmarks); COST and LATENCY the mean per evaluated step. "-" means
nothing of that kind was recorded. --json prints the same rows with scores on 0..1.` + exitStatusSimple,
		Example: `  cadre scores
  cadre scores code-writer
  cadre scores --source bench --json | jq '.rows[] | {candidate, mean_score}'`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.Role = args[0]
			}
			if opts.Source != "" && opts.Source != store.SourceRun && opts.Source != store.SourceBench {
				return usageErr(fmt.Errorf("--source %q: want run or bench", opts.Source))
			}
			if runF != nil {
				return runF(cmd.Context(), f, opts)
			}
			return runScores(cmd.Context(), f, opts)
		},
	}
	cmd.Flags().StringVar(&opts.Source, "source", "", "only evaluations from real runs (run) or from cadre bench (bench)")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print JSON on stdout")
	return cmd
}

// scoreJSON is one row of cadre scores --json. Rates and means are null
// when nothing of their kind was recorded, so 0 always means zero.
type scoreJSON struct {
	Role          string   `json:"role"`
	Candidate     string   `json:"candidate"` // as a selector lists it: runner or runner/model
	Runner        string   `json:"runner"`
	Model         string   `json:"model"`
	Samples       int      `json:"samples"`
	Checked       int      `json:"checked"`
	Passed        int      `json:"passed"`
	PassRate      *float64 `json:"pass_rate"`
	Scored        int      `json:"scored"`
	MeanScore     *float64 `json:"mean_score"` // 0..1
	MeanCostUSD   *float64 `json:"mean_cost_usd"`
	MeanLatencyMS *float64 `json:"mean_latency_ms"`
	InputTokens   int64    `json:"input_tokens"`
	OutputTokens  int64    `json:"output_tokens"`
}

func runScores(ctx context.Context, f *Factory, opts *ScoresOptions) error {
	root, err := f.repoRoot(ctx)
	if err != nil {
		return err
	}
	var rows []store.EvalStat
	// No journal means nothing recorded; reading must not create one.
	if hasJournal(root) {
		st, err := openStore(ctx, root)
		if err != nil {
			return err
		}
		defer st.Close()
		rows, err = st.EvalStats(ctx, store.EvalFilter{Role: opts.Role, Source: opts.Source})
		if err != nil {
			return err
		}
	}
	if len(rows) == 0 && opts.Role != "" {
		// A role that has no evaluations and does not exist is a typo.
		roles, err := role.Load(filepath.Join(root, workspace.StateDir, "roles"))
		if err != nil {
			return usageErr(relPath(err, root))
		}
		if _, err := roles.Get(opts.Role); err != nil {
			return usageErr(fmt.Errorf("no role %q (cadre roles list shows them)", opts.Role))
		}
	}
	sortScores(rows)
	if opts.JSON {
		out := make([]scoreJSON, 0, len(rows))
		for _, r := range rows {
			out = append(out, toScoreJSON(r))
		}
		return printJSON(f.IO.Out, map[string]any{"role": opts.Role, "source": opts.Source, "rows": out})
	}
	if len(rows) == 0 {
		fmt.Fprintln(f.IO.ErrOut, noScores(opts))
		return nil
	}
	printScores(f.IO.Out, rows)
	return nil
}

// noScores says what was looked for and how evaluations get recorded.
func noScores(opts *ScoresOptions) string {
	what := "no evaluations recorded"
	if opts.Role != "" {
		what += " for role " + opts.Role
	}
	switch opts.Source {
	case store.SourceRun:
		what += " from runs"
	case store.SourceBench:
		what += " from cadre bench"
	}
	return what + " yet (runs and cadre bench record them)"
}

// sortScores orders rows by role, then best first: higher mean score,
// higher pass rate, lower cost, then by name so the order is stable. A
// row without scores ranks below any scored one.
func sortScores(rows []store.EvalStat) {
	sort.SliceStable(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		switch {
		case a.Role != b.Role:
			return a.Role < b.Role
		case (a.Scored > 0) != (b.Scored > 0):
			return a.Scored > 0
		case a.MeanScore != b.MeanScore:
			return a.MeanScore > b.MeanScore
		case a.PassRate() != b.PassRate():
			return a.PassRate() > b.PassRate()
		case a.MeanCostUSD != b.MeanCostUSD:
			return a.MeanCostUSD < b.MeanCostUSD
		}
		return candidate(a) < candidate(b)
	})
}

func candidate(r store.EvalStat) string {
	if r.Model == "" {
		return r.Runner
	}
	return r.Runner + "/" + r.Model
}

func printScores(w io.Writer, rows []store.EvalStat) {
	const line = "%-32s %7s %5s %5s %10s %9s\n"
	for i, r := range rows {
		if i == 0 || r.Role != rows[i-1].Role {
			roleHeading(w, i == 0, r.Role, line, "RUNNER/MODEL", "SAMPLES", "PASS", "SCORE", "COST", "LATENCY")
		}
		pass, score, usd, latency := "-", "-", "-", "-"
		if r.Checked > 0 {
			pass = fmt.Sprintf("%.0f%%", 100*r.PassRate())
		}
		if r.Scored > 0 {
			score = fmt.Sprintf("%.1f", 10*r.MeanScore)
		}
		if r.Costed > 0 {
			usd = fmt.Sprintf("$%.4f", r.MeanCostUSD)
			latency = latencyText(r.MeanLatencyMS)
		}
		fmt.Fprintf(w, line, candidate(r), fmt.Sprint(r.Samples), pass, score, usd, latency)
	}
}

// roleHeading starts one role's table in a listing grouped by role: a
// blank line after the previous table, then "role NAME" and the column
// header, printed with line.
func roleHeading(w io.Writer, first bool, role, line string, cols ...any) {
	if !first {
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "role %s\n", role)
	fmt.Fprintf(w, line, cols...)
}

// latencyText shows a mean latency in milliseconds to a tenth of a second.
func latencyText(ms float64) string {
	return time.Duration(ms * float64(time.Millisecond)).Round(100 * time.Millisecond).String()
}

func toScoreJSON(r store.EvalStat) scoreJSON {
	num := func(ok bool, v float64) *float64 {
		if !ok {
			return nil
		}
		return &v
	}
	return scoreJSON{Role: r.Role, Candidate: candidate(r), Runner: r.Runner, Model: r.Model,
		Samples: r.Samples, Checked: r.Checked, Passed: r.Passed, PassRate: num(r.Checked > 0, r.PassRate()),
		Scored: r.Scored, MeanScore: num(r.Scored > 0, r.MeanScore),
		MeanCostUSD: num(r.Costed > 0, r.MeanCostUSD), MeanLatencyMS: num(r.Costed > 0, r.MeanLatencyMS),
		InputTokens: r.InputTokens, OutputTokens: r.OutputTokens}
}
