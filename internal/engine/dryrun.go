package engine

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/cadre-dev/cadre/internal/workflow"
)

// PlannedItem is what a run would do for one item (cadre run --dry-run).
// Its JSON (cadre run --dry-run --json) has lower-case keys, as the
// events and cadre status --json have.
type PlannedItem struct {
	ID       string        `json:"id"`
	Title    string        `json:"title"`
	Workflow string        `json:"workflow"`
	Stage    string        `json:"stage"`
	Roles    []PlannedRole `json:"roles"`          // never null: [] when none
	Note     string        `json:"note,omitempty"` // why it would not run, when it would not
	// Trusted says whether the item's tree is trusted (sandbox.trust_repo);
	// Network is the network its confined agents get, "" unconfined.
	Trusted bool   `json:"trusted"`
	Network string `json:"network,omitempty"`
}

// PlannedRole is one role of the item's workflow and how it is reached.
type PlannedRole struct {
	Role   string `json:"role"`
	Runner string `json:"runner"`
	Model  string `json:"model"` // "" for the runner's default
	From   string `json:"from"`
	Reason string `json:"reason,omitempty"` // runner auto: the selector's reason
}

// DryRun says, per item, which workflow would run and which roles it would
// invoke with which runner and model; it starts nothing and calls no agent.
// Issue targets are listed as they are, without fetching them.
func (e *Engine) DryRun(ctx context.Context, opts Options) ([]PlannedItem, error) {
	var files, issues []string
	for _, t := range opts.Targets {
		if isIssueRef(t) && !exists(t) {
			issues = append(issues, t)
		} else {
			files = append(files, t)
		}
	}
	if err := e.checkWorkflows(opts); err != nil {
		return nil, err
	}
	var out []PlannedItem
	// Prompts and issues run --workflow, else defaults.workflow.
	generated := opts.Workflow
	if generated == "" {
		generated = e.d.Config.Defaults.Workflow
	}
	if opts.Prompt != "" {
		out = append(out, e.planItem(ctx, opts, "do", shorten(opts.Prompt, 72), generated, "code", false))
	}
	// A run with an issue query works on the issues it finds instead of
	// the task files under tasks_dir.
	if len(files) > 0 || (len(issues) == 0 && opts.Prompt == "" && opts.Query.Empty()) {
		o := opts
		o.Targets, o.Query, o.Prompt = files, IssueQuery{}, ""
		tasks, err := e.loadTargets(ctx, "dry-run", o)
		if err != nil {
			return nil, err
		}
		for _, t := range tasks {
			out = append(out, e.planItem(ctx, opts, t.ID, t.Title, e.workflowOf(opts, t), t.Stage, false))
		}
	}
	for _, ref := range issues {
		out = append(out, e.planItem(ctx, opts, ref, "(GitHub issue, not fetched)", generated, "code", true))
	}
	if !opts.Query.Empty() {
		out = append(out, e.planItem(ctx, opts, "query", "(GitHub issues "+opts.Query.String()+", not fetched)", generated, "code", true))
	}
	// The run refuses a runner it cannot build before it starts; a dry run
	// that printed a plan for it would promise a run that cannot happen.
	if err := e.checkRunners(opts); err != nil {
		return nil, err
	}
	return out, nil
}

// planItem plans one item; issues says it is one or more GitHub issues,
// not fetched, whose authors are not known yet.
func (e *Engine) planItem(ctx context.Context, opts Options, id, title, wf, stage string, issues bool) PlannedItem {
	p := PlannedItem{ID: id, Title: title, Workflow: wf, Stage: stage}
	p.Trusted, p.Network = e.plannedConfinement(issues)
	var roles []string
	if wf == workflow.PipelineWorkflow {
		for _, st := range workflow.Remaining(stage) {
			roles = append(roles, map[string]string{workflow.StagePlan: workflow.RolePlanner, workflow.StageCode: workflow.RoleCoder, workflow.StageAudit: workflow.RoleAuditor}[st])
		}
		if len(roles) == 0 {
			p.Note = "stage " + stage + ": nothing to do"
		}
	} else if def, ok := e.d.Workflows.Get(wf); ok {
		roles = def.Roles()
		if wf == "auto" {
			p.Note = "triage chooses the rest"
		}
	} else {
		p.Note = fmt.Sprintf("unknown workflow %q", wf)
	}
	for _, r := range roles {
		name, model, from := e.runnerFor(opts, r)
		pr := PlannedRole{Role: r, Runner: name, Model: model, From: strings.ReplaceAll(from, e.d.Root+"/", "")}
		if isAuto(name) {
			// What the selector would choose now; the run chooses again
			// per step, with the scores recorded by then.
			if c, err := e.choose(ctx, r); err == nil {
				pr.Runner, pr.Model, pr.Reason = c.Runner, c.Model, "auto: "+c.Reason
			} else {
				pr.Reason = "auto: " + err.Error()
			}
		}
		p.Roles = append(p.Roles, pr)
	}
	return p
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
