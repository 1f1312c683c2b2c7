// Package run starts and resumes cadre runs from Go: the same engine,
// workflows, runners and journal as `cadre run`, `cadre do` and `cadre
// resume`, configured by the repository's cadre.yaml. A run started here
// can be inspected and resumed with the cadre command, and the other way
// round.
package run

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/cadre-dev/cadre/agent"
	"github.com/cadre-dev/cadre/internal/app"
	"github.com/cadre-dev/cadre/internal/engine"
	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/report"
	"github.com/cadre-dev/cadre/internal/runspec"
)

// Options say what to run; zero values mean what the cadre command's
// flags default to.
type Options struct {
	// Targets are task files, directories of them, or GitHub issue refs
	// (42, owner/repo#42); none: cadre.yaml's github.query_* or tasks_dir.
	Targets []string
	// Prompt makes one ad-hoc item of a text (cadre do).
	Prompt string
	// Workflow overrides every item's workflow (see cadre workflows list).
	Workflow string
	// Runner and Model are the default runner and model for every role
	// (per-role settings of cadre.yaml win).
	Runner, Model string
	// Parallel bounds the items at once; Agents the agent steps at once
	// inside one item.
	Parallel, Agents int
	// BudgetUSD stops starting new steps once the run spent this much.
	BudgetUSD float64
	// Timeout bounds each agent step.
	Timeout time.Duration
	// InPlace works in the checkout itself, one item after another.
	InPlace bool
	// Roles are agents that run their roles in this run instead of what cadre.yaml says
	// (role → an agent doing it, built with agent.New; WithRunner,
	// WithModel and WithPrompt apply). Its runner is configured as a
	// runners entry under the runner's name would be, so the run journals,
	// confines and scores it like any other; that name must not be one
	// cadre.yaml already uses for another role. Resume needs the same
	// Roles to continue such a run.
	Roles map[string]*agent.Agent
	// Limits bound the loops of this run over cadre.yaml's limits
	// (max_iterations, max_attempts, ...); Resume applies them too.
	Limits Limits
	// OnEvent, when set, receives every event as it happens: the objects
	// `cadre run --json` prints.
	OnEvent func(Event)
	// Getenv reads the environment (CADRE_* overrides, the GitHub token);
	// nil: os.Getenv.
	Getenv func(string) string
}

// Event is one event of a run, as `cadre run --json` prints it.
type Event = event.Event

// Usage is tokens and cost.
type Usage = event.Usage

// Summary is how a run ended: Status is completed, failed, paused (an
// item waits for cadre approve, or the budget ran out), stopped or
// interrupted; Reason says why when it did not complete.
type Summary struct {
	Run, Status, Reason string
	Items               []Item
	Usage               Usage
	Duration            time.Duration
}

// Item is one item's outcome.
type Item struct {
	ID, Title, Stage, Status, Reason string
	Attempts, Steps                  int
	Usage                            Usage
	Branch, PR                       string // its branch (worktree mode) and pull request URL
}

// Start runs the items of the repository around dir as opts say.
func Start(ctx context.Context, dir string, opts Options) (Summary, error) {
	var sum Summary
	err := withEngine(ctx, dir, opts, func(ws app.Workspace, e *engine.Engine) error {
		eo := runspec.Options{Targets: opts.Targets, Workflow: opts.Workflow, Runner: opts.Runner, Model: opts.Model,
			Timeout: opts.Timeout, InPlace: opts.InPlace, Parallel: opts.Parallel, Agents: opts.Agents,
			BudgetUSD: opts.BudgetUSD, Prompt: opts.Prompt}
		if len(eo.Targets) == 0 && eo.Prompt == "" {
			eo.Query = ws.IssueQuery()
		}
		s, err := e.Start(ctx, eo)
		sum = summary(s)
		return err
	})
	return sum, err
}

// Resume continues run runID (the latest run when empty) of the
// repository around dir; completed steps are never run again. Of opts only
// OnEvent, Getenv, BudgetUSD (a new budget), Roles and Limits apply: the
// run keeps what it was started with, and any other option set is refused.
func Resume(ctx context.Context, dir, runID string, opts Options) (Summary, error) {
	if f := startOnly(opts); f != "" {
		return Summary{}, fmt.Errorf("run: resume: Options.%s applies only to Start (a run keeps what it was started with); leave it unset", f)
	}
	var sum Summary
	err := withEngine(ctx, dir, opts, func(_ app.Workspace, e *engine.Engine) error {
		var ov runspec.Overrides
		if opts.BudgetUSD > 0 {
			ov.BudgetUSD = &opts.BudgetUSD
		}
		s, err := e.ResumeWith(ctx, runID, ov)
		sum = summary(s)
		return err
	})
	return sum, err
}

// startOnly names the first option set that Resume cannot apply, or "".
func startOnly(o Options) string {
	switch {
	case len(o.Targets) > 0:
		return "Targets"
	case o.Prompt != "":
		return "Prompt"
	case o.Workflow != "":
		return "Workflow"
	case o.Runner != "":
		return "Runner"
	case o.Model != "":
		return "Model"
	case o.Parallel != 0:
		return "Parallel"
	case o.Agents != 0:
		return "Agents"
	case o.Timeout != 0:
		return "Timeout"
	case o.InPlace:
		return "InPlace"
	}
	return ""
}

func withEngine(ctx context.Context, dir string, opts Options, fn func(app.Workspace, *engine.Engine) error) error {
	getenv := opts.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	root, err := app.Root(ctx, dir)
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}
	cfg, err := app.LoadConfig(root, getenv)
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}
	if err := opts.Limits.apply(&cfg); err != nil {
		return fmt.Errorf("run: %w", err)
	}
	prompts, err := useAgents(&cfg, opts.Roles)
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}
	ws := app.Workspace{Root: root, Config: cfg}
	st, err := app.OpenStore(ctx, root)
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}
	defer st.Close()
	var sinks []event.Sink
	if opts.OnEvent != nil {
		sinks = append(sinks, event.SinkFunc(opts.OnEvent))
	}
	e, flush, err := app.NewEngine(ctx, ws, st, app.Options{Getenv: getenv, Sinks: sinks, Prompts: prompts})
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}
	defer flush()
	return fn(ws, e)
}

func summary(s report.Summary) Summary {
	out := Summary{Run: s.Run, Status: s.Status, Reason: s.Reason, Usage: s.Usage, Duration: s.Duration}
	for _, it := range s.Items {
		out.Items = append(out.Items, Item{ID: it.ID, Title: it.Title, Stage: it.Stage, Status: it.Status, Reason: it.Reason,
			Attempts: it.Attempts, Steps: it.Steps, Usage: it.Usage, Branch: it.Branch, PR: it.PR})
	}
	return out
}

// Errors callers may tell apart with errors.Is.
var (
	// ErrPreflight: found before the run started (bad target, task file,
	// runner, a dirty tree); nothing was changed.
	ErrPreflight = engine.ErrPreflight
	// ErrNothingToResume: no run, or the run already completed.
	ErrNothingToResume = engine.ErrNothingToResume
)
