package cli

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/cadre-dev/cadre/internal/bench"
)

// benchProgress shows a benchmark's progress on stderr: a bar redrawn in
// place on a terminal, one line per finished run otherwise (a log or a CI
// console keeps every line).
type benchProgress struct {
	w    io.Writer
	tty  bool
	drew bool
}

func newBenchProgress(w io.Writer, tty bool) *benchProgress { return &benchProgress{w: w, tty: tty} }

const barWidth = 20

func (p *benchProgress) report(pr bench.Progress) {
	j := pr.Job
	what := fmt.Sprintf("%s/%s %s", j.Case.Role, j.Case.Name, j.Runner)
	if j.Rep > 1 {
		what += fmt.Sprintf("#%d", j.Rep)
	}
	if p.tty {
		filled := 0
		if pr.Total > 0 {
			filled = barWidth * pr.Done / pr.Total
		}
		fmt.Fprintf(p.w, "\r\x1b[K[%s%s] %d/%d %s", strings.Repeat("#", filled), strings.Repeat(".", barWidth-filled), pr.Done, pr.Total, what)
		p.drew = true
		if pr.Err != nil {
			fmt.Fprintf(p.w, "\r\x1b[K%s: %v\n", what, pr.Err) // an error stays on screen
		}
		return
	}
	fmt.Fprintf(p.w, "[%d/%d] %s: %s\n", pr.Done, pr.Total, what, outcomeLine(pr))
}

// end finishes the bar's line so later output starts on a new one.
func (p *benchProgress) end() {
	if p.drew {
		fmt.Fprintln(p.w)
	}
}

// outcomeLine says in a few words how one run went.
func outcomeLine(pr bench.Progress) string {
	o := pr.Outcome
	if pr.Err != nil {
		return "not evaluated: " + pr.Err.Error()
	}
	cost := fmt.Sprintf("$%.4f, %s", o.Usage.CostUSD, o.AgentTime.Round(100*time.Millisecond))
	if o.Passed {
		return fmt.Sprintf("passed, score %.1f, %s", 10*o.Score, cost)
	}
	var failed []string
	for _, c := range o.Detail.Checks {
		if !c.Passed {
			failed = append(failed, c.Name)
		}
	}
	if len(failed) == 0 {
		return "failed, " + cost
	}
	return fmt.Sprintf("failed %s, %s", strings.Join(failed, ", "), cost)
}

// printBoard prints the leaderboard: one table per role, best first.
func printBoard(w io.Writer, rows []bench.Row) {
	const line = "%-32s %5s %5s %5s %10s %9s\n"
	for i, r := range rows {
		if i == 0 || r.Role != rows[i-1].Role {
			roleHeading(w, i == 0, r.Role, line, "RUNNER/MODEL", "RUNS", "PASS", "SCORE", "COST", "LATENCY")
		}
		fmt.Fprintf(w, line, r.Candidate(), fmt.Sprint(r.Cases), fmt.Sprintf("%.0f%%", 100*r.PassRate),
			fmt.Sprintf("%.1f", 10*r.MeanScore), fmt.Sprintf("$%.4f", r.MeanCostUSD), latencyText(r.MeanLatencyMS))
	}
	if len(rows) == 0 {
		fmt.Fprintln(w, "no results")
	}
}

// benchJSON is the --json shape of cadre bench.
type benchJSON struct {
	Run     string         `json:"run"`
	Resumed bool           `json:"resumed"`
	Runs    int            `json:"runs"`
	Failed  int            `json:"failed"`
	Rows    []benchRowJSON `json:"rows"`
}

type benchRowJSON struct {
	Role          string  `json:"role"`
	Candidate     string  `json:"candidate"`
	Runner        string  `json:"runner"`
	Model         string  `json:"model"`
	Cases         int     `json:"cases"`
	PassRate      float64 `json:"pass_rate"`
	MeanScore     float64 `json:"mean_score"` // 0..1
	MeanCostUSD   float64 `json:"mean_cost_usd"`
	MeanLatencyMS float64 `json:"mean_latency_ms"`
}

func printBoardJSON(w io.Writer, run bench.Run, sum bench.Summary, rows []bench.Row) error {
	out := benchJSON{Run: run.ID, Resumed: run.Resumed, Runs: sum.Total, Failed: sum.Failed, Rows: []benchRowJSON{}}
	for _, r := range rows {
		out.Rows = append(out.Rows, benchRowJSON{Role: r.Role, Candidate: r.Candidate(), Runner: r.Runner, Model: r.Model,
			Cases: r.Cases, PassRate: r.PassRate, MeanScore: r.MeanScore, MeanCostUSD: r.MeanCostUSD, MeanLatencyMS: r.MeanLatencyMS})
	}
	return printJSON(w, out)
}
