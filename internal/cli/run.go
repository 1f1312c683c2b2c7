package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/cadre-dev/cadre/internal/app"
	"github.com/cadre-dev/cadre/internal/codehost"
	"github.com/cadre-dev/cadre/internal/config"
	"github.com/cadre-dev/cadre/internal/dryrun"
	"github.com/cadre-dev/cadre/internal/engine"
	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/item/intake"
	"github.com/cadre-dev/cadre/internal/report"
	"github.com/cadre-dev/cadre/internal/runspec"
	"github.com/cadre-dev/cadre/internal/store"
)

// RunOptions are the flags and arguments of cadre run.
type RunOptions struct {
	Targets  []string
	Workflow string
	Runner   string
	Model    string
	Column   string
	Timeout  time.Duration
	InPlace  bool
	Parallel int
	Agents   int
	Budget   float64
	JSON     bool
	Plain    bool // lines instead of the live view on a terminal
	DryRun   bool
	Query    codehost.IssueQuery
	Prompt   string // cadre do
	Again    bool   // issues with an open or merged pull request run again
	Sandbox  string // --sandbox: bwrap, none or auto, over sandbox.mode
	Serve    ServeFlags
	Engine   string // embedded or temporal
	Temporal TemporalOptions
}

// NewCmdRun builds cadre run; runF replaces the run function in tests.
func NewCmdRun(f *Factory, runF func(context.Context, *Factory, *RunOptions) error) *cobra.Command {
	opts := &RunOptions{}
	cmd := &cobra.Command{
		Use:   "run [flags] [TARGET...]",
		Short: "Run task files through their workflow",
		Long: `Run task files (or directories of them) through the stage pipeline (workflow runner):
planner, coder and auditor by stage, with the engine owning every frontmatter change. With
no TARGET, every task file under tasks_dir runs. GitHub issues (42, #42, owner/repo#42, or --label/--milestone/
--assignee queries) run defaults.workflow and end as a pushed branch and a pull request that
closes the issue; GITHUB_TOKEN (or github.token_env, or gh auth token) gives the access. On
GitLab (forge.type, or an origin remote on a GitLab host) the issues are 42, #42,
group/sub/project#42 or their /-/issues/ or /-/work_items/ URLs, each ending as a merge request;
GITLAB_TOKEN (or gitlab.token_env) gives the access.

By default each item works in its own git worktree (.cadre/worktrees/<item>) on its own
branch (cadre/<item>-<title>), up to --parallel items at once; the task files in this
checkout are the board: cadre updates their frontmatter and commits nothing here. With
--in-place the tasks run one after another in this checkout, each committed when it
completes.` + liveViewHelp + exitStatusRunning,
		Example: `  cadre run                                # every task under tasks/, each in its worktree
  cadre run --parallel 5 --budget-usd 10   # five at once, stop starting steps at $10
  cadre run --in-place                     # one after another, in this checkout
  cadre run --in-place tasks/add-login.md  # one task
  cadre run 42 '#57' owner/repo#61         # GitHub issues: a branch and a pull request each
  cadre run acme/platform/widget#7         # a GitLab issue: a branch and a merge request
  cadre run --label cadre --limit 5        # the repository's issues labelled cadre
  cadre run --in-place --column code       # every task now in stage code
  cadre run --in-place --json | jq .type   # machine-readable events
  cadre run --plain 2>run.log              # one line per event instead of the live view
  cadre run --serve                        # with the web board on 127.0.0.1:7420`,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Targets = serveAddrArg(cmd, &opts.Serve, args)
			if err := checkEngineFlag(opts); err != nil {
				return err
			}
			if err := checkServeFlags(cmd, opts.Serve, opts.DryRun); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), f, opts)
			}
			return runRun(cmd.Context(), f, opts)
		},
	}
	addRunFlags(cmd, opts)
	cmd.Flags().BoolVar(&opts.Again, "again", false, "work on issues whose pull request is already open or merged, from the start")
	addEngineFlags(cmd, opts)
	return cmd
}

func runRun(ctx context.Context, f *Factory, opts *RunOptions) error {
	for _, fl := range []struct {
		name string
		val  any
		neg  bool
	}{{"--parallel", opts.Parallel, opts.Parallel < 0}, {"--agents", opts.Agents, opts.Agents < 0},
		{"--budget-usd", opts.Budget, opts.Budget < 0}, {"--limit", opts.Query.Limit, opts.Query.Limit < 0}} {
		if fl.neg {
			return usageErr(fmt.Errorf("%s %v: must not be negative", fl.name, fl.val))
		}
	}
	if st := opts.Query.State; st != "" && st != "open" && st != "closed" && st != "all" {
		return usageErr(fmt.Errorf("--state %q: want open, closed or all", st))
	}
	if opts.Timeout < 0 {
		// A negative duration would run every step with no timeout at all.
		return usageErr(fmt.Errorf("--timeout %s: must not be negative (0 keeps defaults.timeout)", opts.Timeout))
	}
	if err := checkOutputFlags(opts.JSON, opts.Plain); err != nil {
		return err
	}
	if opts.InPlace && opts.Parallel > 1 {
		// One checkout holds one item's changes at a time.
		return usageErr(fmt.Errorf("--parallel %d: --in-place runs the tasks one after another in this checkout; drop --in-place to run them at once in worktrees", opts.Parallel))
	}
	ws, err := f.workspace(ctx)
	if err != nil {
		return err
	}
	if ws.cfg, err = withSandboxFlag(ws.cfg, opts.Sandbox); err != nil {
		return err
	}
	engineName, err := runEngineOf(ws.cfg, opts)
	if err != nil {
		return relPath(err, ws.root)
	}
	if opts.Runner == config.Auto && len(ws.cfg.Selector.Candidates) == 0 {
		// Refused here, before a dry run could approve it, rather than
		// failing the run as an unknown runner.
		return usageErr(fmt.Errorf("--runner %s: the model selector needs selector.candidates in cadre.yaml to choose from, e.g. selector: {candidates: [claude, codex]}", config.Auto))
	}
	if len(opts.Targets) == 0 && opts.Query.Empty() && opts.Prompt == "" {
		opts.Query = app.Workspace{Root: ws.root, Config: ws.cfg}.IssueQuery()
	}
	if opts.Again && opts.Query.Empty() && !slices.ContainsFunc(opts.Targets, intake.IsIssueRef) {
		return usageErr(errors.New("--again works on GitHub issues whose pull request is open or merged: none of the targets is an issue (task files always run)"))
	}
	eo := runspec.Options{Targets: opts.Targets, Column: opts.Column, Workflow: opts.Workflow,
		Runner: opts.Runner, Model: opts.Model, Timeout: opts.Timeout, InPlace: opts.InPlace,
		Parallel: opts.Parallel, Agents: opts.Agents, BudgetUSD: opts.Budget, Query: opts.Query, Prompt: opts.Prompt, Again: opts.Again}
	if opts.DryRun {
		return f.withEngine(ctx, ws, opts.JSON, func(e *engine.Engine) error {
			plan, err := e.DryRun(ctx, eo)
			if err != nil {
				return relPath(err, ws.root)
			}
			if !opts.JSON {
				fmt.Fprintln(f.IO.Out, sandboxChoice(ctx, ws.cfg.Sandbox, f.Getenv))
			}
			printPlan(f, plan, opts.JSON)
			return nil
		})
	}
	budget := eo.Settings(ws.cfg).Budget
	if opts.Prompt != "" && !opts.JSON && cmp.Or(opts.Workflow, ws.cfg.Defaults.Workflow) == "auto" {
		// The triage step costs an agent step: say why it runs.
		fmt.Fprintln(f.IO.ErrOut, "cadre: workflow auto: a triage step first chooses the workflow for this prompt (--workflow quick, simple, … or defaults.workflow skips it)")
	}
	if engineName == engineTemporal {
		t := temporalTarget(ws.cfg, opts.Temporal, nil)
		eo.Temporal = &t
		sum, err := runTemporal(ctx, f, ws, eo, f.liveView(opts.JSON, opts.Plain), budget, opts.JSON, nil)
		return finishRun(f, sum, relPath(err, ws.root), opts.JSON)
	}
	if opts.Serve.Addr != "" {
		return f.runServed(ctx, ws, opts.Serve, shown{json: opts.JSON, live: f.liveView(opts.JSON, opts.Plain), budget: budget}, func(ctx context.Context, e *engine.Engine) (report.Summary, error) {
			return e.Start(ctx, eo)
		})
	}
	sum, err := f.runEngine(ctx, ws, opts.JSON, f.liveView(opts.JSON, opts.Plain), budget,
		func(ctx context.Context, e *engine.Engine) (report.Summary, error) { return e.Start(ctx, eo) })
	return finishRun(f, sum, relPath(err, ws.root), opts.JSON)
}

// eventSink is the --json printer or the line printer.
func (f *Factory) eventSink(asJSON bool) event.Sink {
	if asJSON {
		return jsonSink(f.IO.Out)
	}
	return lineSink(f.IO.ErrOut)
}

// finishRun prints the run's outcome and maps it to the exit code.
func finishRun(f *Factory, sum report.Summary, err error, asJSON bool) error {
	if sum.Run == "" {
		return err
	}
	if !asJSON {
		printSummary(f.IO.ErrOut, sum)
		printAnswers(f.IO.Out, sum)
	}
	if errors.Is(err, context.Canceled) {
		fmt.Fprintf(f.IO.ErrOut, "cadre: interrupted; continue with: cadre resume %s\n", sum.Run)
		return silentExit(130)
	}
	if err != nil {
		return err
	}
	switch sum.Status {
	case store.RunCompleted:
		return nil
	case store.RunStopped, store.RunInterrupted:
		fmt.Fprintf(f.IO.ErrOut, "cadre: run %s stopped; continue with: cadre resume %s\n", sum.Run, sum.Run)
		return silentExit(130)
	case store.RunPaused:
		fmt.Fprintf(f.IO.ErrOut, "cadre: run %s paused: %s\n", sum.Run, sum.Reason)
		return silentExit(3)
	}
	fmt.Fprintf(f.IO.ErrOut, "cadre: run %s %s: %s\n", sum.Run, sum.Status, sum.Reason)
	for _, it := range sum.Items {
		if it.Status != store.ItemFailed {
			continue
		}
		fmt.Fprintf(f.IO.ErrOut, "cadre: %s failed in %s; go on with: cadre retry %s %s\n", it.ID, workPlace(it), sum.Run, it.ID)
	}
	return silentExit(1)
}

// printAnswers writes the answers of QUICK items, their results, on
// stdout: alone for one item, each after its item's id for several.
func printAnswers(w io.Writer, sum report.Summary) {
	var answered []report.ItemSummary
	for _, it := range sum.Items {
		if it.Answer != "" {
			answered = append(answered, it)
		}
	}
	for _, it := range answered {
		if len(answered) == 1 {
			fmt.Fprintln(w, strings.TrimRight(it.Answer, "\n"))
			continue
		}
		fmt.Fprintf(w, "%s: %s\n", it.ID, strings.TrimRight(it.Answer, "\n"))
	}
}

// printSummary writes the table of items: task, final stage, attempts,
// steps, tokens, cost.
func printSummary(w io.Writer, sum report.Summary) {
	fmt.Fprintf(w, "\nrun %s: %s\n", sum.Run, sum.Status)
	idW := 24 // wider for long ids: the columns stay in line
	for _, it := range sum.Items {
		idW = max(idW, utf8.RuneCountInString(it.ID))
	}
	fmt.Fprintf(w, "%-*s %-10s %-9s %8s %5s %14s %9s\n", idW, "TASK", "STAGE", "STATUS", "ATTEMPTS", "STEPS", "TOKENS(in/out)", "COST")
	for _, it := range sum.Items {
		fmt.Fprintf(w, "%-*s %-10s %-9s %8d %5d %14s %9s\n", idW, it.ID, it.Stage, it.Status, it.Attempts, it.Done,
			fmt.Sprintf("%d/%d", it.Usage.InputTokens, it.Usage.OutputTokens), fmt.Sprintf("$%.4f", it.Usage.CostUSD))
	}
	fmt.Fprintf(w, "%-*s %-10s %-9s %8s %5s %14s %9s\n", idW, "total", "", "", "", "",
		fmt.Sprintf("%d/%d", sum.Usage.InputTokens, sum.Usage.OutputTokens), fmt.Sprintf("$%.4f", sum.Usage.CostUSD))
}

// addRunFlags declares the flags run and do share.
func addRunFlags(cmd *cobra.Command, opts *RunOptions) {
	fl := cmd.Flags()
	fl.StringVar(&opts.Workflow, "workflow", "", "workflow to run (task files: runner)")
	fl.StringVar(&opts.Runner, "runner", "", "default runner for every role (per-role settings win)")
	fl.StringVar(&opts.Model, "model", "", "default model for every role (per-role settings win)")
	fl.StringVar(&opts.Column, "column", "", "run every task currently in `STAGE`")
	fl.DurationVar(&opts.Timeout, "timeout", 0, "per agent step (default defaults.timeout)")
	fl.BoolVar(&opts.InPlace, "in-place", false, "work in the current checkout, one task after another")
	fl.IntVar(&opts.Parallel, "parallel", 0, "items at once (default limits.parallel_issues)")
	fl.IntVar(&opts.Agents, "agents", 0, "agent steps at once inside one item (default limits.parallel_agents)")
	fl.Float64Var(&opts.Budget, "budget-usd", 0, "stop starting new steps once the run has spent `X` dollars")
	fl.StringSliceVar(&opts.Query.Labels, "label", nil, "work on the repository's issues with this `LABEL` (repeatable)")
	fl.StringVar(&opts.Query.Milestone, "milestone", "", "work on the issues of this milestone (number or title)")
	fl.StringVar(&opts.Query.Assignee, "assignee", "", "work on the issues assigned to this login")
	fl.StringVar(&opts.Query.State, "state", "", "issue state for the query: open (default), closed or all")
	fl.IntVar(&opts.Query.Limit, "limit", 0, "at most `N` issues from the query (default 30)")
	fl.BoolVar(&opts.JSON, "json", false, "JSON-lines events on stdout")
	fl.BoolVar(&opts.Plain, "plain", false, "one line per event on stderr instead of the live view")
	addSandboxFlag(cmd, &opts.Sandbox)
	fl.BoolVar(&opts.DryRun, "dry-run", false, "print, per item, the workflow and each role's runner and model; run nothing")
	addServeFlags(cmd, &opts.Serve)
}

// targetFlags are cadre run's flags that pick its items: task files by
// stage, issues by query.
var targetFlags = []string{"column", "label", "milestone", "assignee", "state", "limit"}

// NewCmdDo builds cadre do: one ad-hoc item from a prompt.
func NewCmdDo(f *Factory, runF func(context.Context, *Factory, *RunOptions) error) *cobra.Command {
	opts := &RunOptions{}
	cmd := &cobra.Command{
		Use:   "do \"PROMPT\" [flags]",
		Short: "Work on one ad-hoc item described by a prompt",
		Long: `Run one item whose description is PROMPT, with defaults.workflow (auto: a triage agent
chooses), in its own worktree and branch like any other item. Takes the flags of cadre run, except those
that pick task files or issues (--column, --label, --milestone, --assignee, --state, --limit).` + liveViewHelp + exitStatusRunning,
		Example: `  cadre do "Add a --verbose flag to the CLI"
  cadre do --workflow simple --runner codex "Fix the typo in README.md"`,
		Args: cobra.RangeArgs(1, 2), // two: --serve HOST:PORT "PROMPT"
		RunE: func(cmd *cobra.Command, args []string) error {
			if args = serveAddrArg(cmd, &opts.Serve, args); len(args) != 1 {
				return usageErr(fmt.Errorf("cadre do takes one prompt, got %d arguments: quote the prompt", len(args)))
			}
			opts.Prompt = args[0]
			if strings.TrimSpace(opts.Prompt) == "" {
				return usageErr(errors.New("the prompt is empty: say what to do"))
			}
			for _, name := range targetFlags {
				if cmd.Flags().Changed(name) {
					return usageErr(fmt.Errorf("--%s picks the %s cadre run works on; cadre do works on its prompt alone: drop --%s",
						name, map[bool]string{true: "task files", false: "issues"}[name == "column"], name))
				}
			}
			if err := checkEngineFlag(opts); err != nil {
				return err
			}
			if err := checkServeFlags(cmd, opts.Serve, opts.DryRun); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), f, opts)
			}
			return runRun(cmd.Context(), f, opts)
		},
	}
	addRunFlags(cmd, opts)
	// Accepted only to be refused by name: a prompt is the item, there
	// is nothing for them to pick.
	for _, name := range targetFlags {
		cmd.Flags().MarkHidden(name)
	}
	// engine: temporal in cadre.yaml applies to cadre do as to cadre run,
	// so --engine embedded must be there to override it.
	addEngineFlags(cmd, opts)
	return cmd
}

// printPlan shows a dry run: per item, its workflow and each role's runner.
func printPlan(f *Factory, plan []dryrun.Item, asJSON bool) {
	if asJSON {
		enc := json.NewEncoder(f.IO.Out)
		for _, p := range plan {
			if p.Roles == nil {
				p.Roles = []dryrun.Role{}
			}
			enc.Encode(p)
		}
		return
	}
	for _, p := range plan {
		fmt.Fprintf(f.IO.Out, "%s  %s  workflow %s, stage %s\n", p.ID, p.Title, p.Workflow, p.Stage)
		if p.Network != "" {
			trust := map[bool]string{true: "trusted", false: "untrusted"}[p.Trusted]
			fmt.Fprintf(f.IO.Out, "  network %s (%s item)\n", p.Network, trust)
		}
		if p.Note != "" {
			fmt.Fprintf(f.IO.Out, "  (%s)\n", p.Note)
		}
		for _, r := range p.Roles {
			model := r.Model
			if model == "" {
				model = "(runner default)"
			}
			fmt.Fprintf(f.IO.Out, "  %-24s %-12s %-24s from %s\n", r.Role, r.Runner, model, r.From)
			if r.Reason != "" {
				fmt.Fprintf(f.IO.Out, "    %s\n", r.Reason)
			}
		}
	}
}

// checkOutputFlags refuses --json with --plain, which it would override.
func checkOutputFlags(asJSON, plain bool) error {
	if asJSON && plain {
		return usageErr(errors.New("--json and --plain: pick one (--json prints JSON lines on stdout, --plain text lines on stderr)"))
	}
	return nil
}

// workPlace is where a failed item's work waits: its worktree, or this
// checkout for an item that ran in place.
func workPlace(it report.ItemSummary) string {
	if it.Branch == "" {
		return "this checkout"
	}
	return "its worktree " + filepath.Join(".cadre", "worktrees", it.ID)
}
