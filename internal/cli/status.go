package cli

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/cadre-dev/cadre/internal/codehost"
	"github.com/cadre-dev/cadre/internal/follow"
	"github.com/cadre-dev/cadre/internal/item/intake"
	"github.com/cadre-dev/cadre/internal/report"
	"github.com/cadre-dev/cadre/internal/runspec"
	"github.com/cadre-dev/cadre/internal/store"
)

// StatusOptions are the arguments of cadre status.
type StatusOptions struct {
	Run   string
	JSON  bool
	Watch bool
}

// NewCmdStatus builds cadre status.
func NewCmdStatus(f *Factory, runF func(context.Context, *Factory, *StatusOptions) error) *cobra.Command {
	opts := &StatusOptions{}
	cmd := &cobra.Command{
		Use:   "status [RUN] [--json]",
		Short: "Show a run's items: stage, current step, attempts, tokens, cost, branch, pull request",
		Long: `Show the latest run (or RUN) as recorded in the journal. Safe while a run is going on.

Under each item: the branch its work is on (none when it ran in place) and,
once published, its pull request.

With --watch, follow the run live from the journal: on a terminal, the live view of cadre run
(rows per item, bars, totals, paused items; enter follows a step's log), where q leaves the
view and the run goes on, Q stops the run now (as cadre stop --now) and a answers a paused
item (as cadre approve); elsewhere, the run's event lines until it ends.` + exitStatusSimple,
		Example: `  cadre status
  cadre status --json | jq '.items[] | {id, stage}'
  cadre status --watch              # the live view of the active (or latest) run`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.Run = args[0]
			}
			if runF != nil {
				return runF(cmd.Context(), f, opts)
			}
			return runStatus(cmd.Context(), f, opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print JSON on stdout")
	cmd.Flags().BoolVar(&opts.Watch, "watch", false, "follow the run live (the live view on a terminal, else its event lines until it ends)")
	return cmd
}

// statusJSON is the --json shape of cadre status.
type statusJSON struct {
	Run     string           `json:"run"`
	Status  string           `json:"status"`
	Active  bool             `json:"active"`
	Started time.Time        `json:"started"`
	Elapsed string           `json:"elapsed"`
	Usage   any              `json:"usage"`
	Items   []statusItemJSON `json:"items"`
}

type statusItemJSON struct {
	ID          string `json:"id"`
	Title       string `json:"title"`
	Stage       string `json:"stage"`
	Status      string `json:"status"`
	CurrentStep string `json:"current_step,omitempty"`
	Attempts    int    `json:"attempts"`
	Steps       int    `json:"steps"`
	Usage       any    `json:"usage"`
	Error       string `json:"error,omitempty"`
	Branch      string `json:"branch"` // "" when the item worked in place
	// Issue names the issue the item came from: a tracker's key
	// (PROJ-123), or repo#N; IssueURL is its page.
	Issue    string `json:"issue,omitempty"`
	IssueURL string `json:"issue_url,omitempty"`
	PR       string `json:"pr_url"` // "" until its pull request is open
	// Where the pull request stands (pr_state, checks, review,
	// mergeable), when GitHub could be asked.
	*codehost.PRStatus
	Picks []report.Pick `json:"selector_picks,omitempty"`
}

func runStatus(ctx context.Context, f *Factory, opts *StatusOptions) error {
	if opts.Watch {
		if opts.JSON {
			return usageErr(fmt.Errorf("--watch and --json do not go together: follow the events with cadre run --json, or poll cadre status --json"))
		}
		return runWatch(ctx, f, opts)
	}
	st, id, root, err := f.openRunAt(ctx, opts.Run)
	if err != nil {
		return err
	}
	defer st.Close()
	sum, err := report.Summarize(ctx, st, id)
	if err != nil {
		return err
	}
	h, _ := holder(ctx, root)
	active := h.Run
	end := sum.Updated
	if active == id {
		end = time.Now()
	}
	elapsed := end.Sub(sum.Started).Round(time.Second).String()
	prs := f.prStatuses(ctx, sum)
	ends(ctx, st, id, sum, prs)
	issues := issuesOf(ctx, st, id, sum)
	if opts.JSON {
		out := statusJSON{Run: id, Status: sum.Status, Active: active == id, Started: sum.Started, Elapsed: elapsed, Usage: sum.Usage}
		for _, it := range sum.Items {
			out.Items = append(out.Items, statusItemJSON{ID: it.ID, Title: it.Title, Stage: it.Stage, Status: itemState(it, prs[it.ID]),
				CurrentStep: it.CurrentStep, Attempts: it.Attempts, Steps: it.Steps, Usage: it.Usage, Error: it.Reason,
				Branch: it.Branch, Issue: issues[it.ID].name, IssueURL: issues[it.ID].url, PR: it.PR, PRStatus: prs[it.ID], Picks: it.Picks})
		}
		return printJSON(f.IO.Out, out)
	}
	state := sum.Status
	switch {
	case active == id:
		state += " (active)"
	case sum.Status == store.RunRunning:
		// Journaled running, and no process holds its lock: it died (a
		// kill, a closed pipe) before it could record how it ended. A run
		// on Temporal goes on in its workflows without its starter.
		if _, o, err := runspec.Stored(ctx, st, id); err == nil && o.Temporal == nil {
			state += " (no process runs it: continue with cadre resume " + id + ")"
		}
	}
	fmt.Fprintf(f.IO.Out, "run %s: %s, elapsed %s, tokens %d/%d, cost $%.4f\n", id, state, elapsed,
		sum.Usage.InputTokens, sum.Usage.OutputTokens, sum.Usage.CostUSD)
	idW, stepW := 24, 30 // wider for long ids: the columns stay in line
	for _, it := range sum.Items {
		idW, stepW = max(idW, utf8.RuneCountInString(it.ID)), max(stepW, utf8.RuneCountInString(it.CurrentStep))
	}
	fmt.Fprintf(f.IO.Out, "%-*s %-10s %-9s %-*s %8s %5s %14s %9s\n", idW, "ITEM", "STAGE", "STATUS", stepW, "CURRENT STEP", "ATTEMPTS", "STEPS", "TOKENS(in/out)", "COST")
	for _, it := range sum.Items {
		cur := it.CurrentStep
		if cur == "" {
			cur = "-"
		}
		fmt.Fprintf(f.IO.Out, "%-*s %-10s %-9s %-*s %8d %5d %14s %9s\n", idW, it.ID, it.Stage, itemState(it, prs[it.ID]), stepW, cur, it.Attempts, it.Done,
			fmt.Sprintf("%d/%d", it.Usage.InputTokens, it.Usage.OutputTokens), fmt.Sprintf("$%.4f", it.Usage.CostUSD))
		// Where the work is goes on its own line: branch names and URLs are
		// too long for the table's columns.
		switch {
		case it.PR != "" && issues[it.ID].key:
			fmt.Fprintf(f.IO.Out, "  %s, branch %s, pull request %s%s\n", issues[it.ID].name, it.Branch, it.PR, prLine(prs[it.ID]))
		case it.PR != "":
			fmt.Fprintf(f.IO.Out, "  branch %s, pull request %s%s\n", it.Branch, it.PR, prLine(prs[it.ID]))
		case it.Branch != "":
			fmt.Fprintf(f.IO.Out, "  branch %s\n", it.Branch)
		}
		if it.Reason != "" {
			fmt.Fprintf(f.IO.Out, "  %s\n", it.Reason)
		}
		if it.Status == store.ItemFailed {
			fmt.Fprintf(f.IO.Out, "  its work is in %s; go on with: cadre retry %s %s\n", workPlace(it), id, it.ID)
		}
		for _, p := range it.Picks {
			fmt.Fprintf(f.IO.Out, "  auto: %s chose %s (%s)\n", p.Role, p.Runner+map[bool]string{true: "/" + p.Model, false: ""}[p.Model != ""], p.Reason)
		}
	}
	return nil
}

// issueName is how status names an item's issue.
type issueName struct {
	name, url string
	key       bool // a tracker's key
}

// issuesOf names the issue each item of run came from, as its record has
// it; items of task files and prompts have none.
func issuesOf(ctx context.Context, st *store.Store, run string, sum report.Summary) map[string]issueName {
	out := map[string]issueName{}
	for _, it := range sum.Items {
		rec, err := st.GetItem(ctx, run, it.ID)
		if err != nil {
			continue
		}
		if is, ok := intake.IssueOf(rec); ok {
			n := issueName{name: fmt.Sprintf("%s#%d", is.Repo, is.Number), url: is.URL}
			if is.Key != "" {
				n = issueName{name: is.Key, url: is.URL, key: true}
			}
			out[it.ID] = n
		}
	}
	return out
}

// ends fills in, for the items cadre watch ended (merged or closed) whose
// pull request GitHub did not tell about, the end the journal has.
func ends(ctx context.Context, st *store.Store, run string, sum report.Summary, prs map[string]*codehost.PRStatus) {
	for _, it := range sum.Items {
		if prs[it.ID] != nil || it.PRNumber == 0 {
			continue
		}
		if state := follow.Ended(ctx, st, run, it.ID); state != "" {
			prs[it.ID] = &codehost.PRStatus{State: state}
		}
	}
}

// itemState is an item's status as people read it: a completed item
// whose pull request is open is following (cadre watch follows it), one
// whose pull request was merged or closed is merged or closed.
func itemState(it report.ItemSummary, ps *codehost.PRStatus) string {
	if it.Status != store.ItemCompleted || ps == nil {
		return it.Status
	}
	switch ps.State {
	case "open":
		return "following"
	case "merged", "closed":
		return ps.State
	}
	return it.Status
}

// prStatuses asks GitHub where each published item's pull request stands.
// Without access (no token, no network) status still shows the journal:
// one warning says why the pull requests' state is missing.
func (f *Factory) prStatuses(ctx context.Context, sum report.Summary) map[string]*codehost.PRStatus {
	return f.prStatusesOf(ctx, sum, func(msg string) { fmt.Fprintln(f.IO.ErrOut, "cadre: warning: "+msg) })
}

// prStatusesOf is prStatuses telling warn why the state is missing.
func (f *Factory) prStatusesOf(ctx context.Context, sum report.Summary, warn func(string)) map[string]*codehost.PRStatus {
	out := map[string]*codehost.PRStatus{}
	var gh interface {
		PRStatus(ctx context.Context, number int) (codehost.PRStatus, error)
	}
	for _, it := range sum.Items {
		if it.PRNumber == 0 {
			continue
		}
		if gh == nil {
			ws, err := f.workspace(ctx)
			if err != nil {
				warn(fmt.Sprintf("pull requests' state unknown: %v", err))
				return out
			}
			gh = f.newForge(ws)
		}
		ps, err := gh.PRStatus(ctx, it.PRNumber)
		if err != nil {
			warn("pull requests' state unknown: " + strings.ReplaceAll(err.Error(), "\n", " "))
			return out
		}
		out[it.ID] = &ps
	}
	return out
}

// prLine is a pull request's state as status prints it after its URL.
func prLine(ps *codehost.PRStatus) string {
	if ps == nil {
		return ""
	}
	merges := "mergeability unknown"
	if ps.Mergeable != nil {
		merges = map[bool]string{true: "merges cleanly", false: "conflicts with its base"}[*ps.Mergeable]
	}
	if ps.State != "open" {
		return " (" + ps.State + ")"
	}
	return fmt.Sprintf(" (open, checks %s, review %s, %s)", ps.Checks, strings.ReplaceAll(ps.Review, "_", " "), merges)
}
