// Package dryrun says what a run would do without starting it (cadre run
// --dry-run): per item, which workflow would run and which roles it would
// invoke with which runner and model. It loads the items as the run would
// (package intake), resolves their roles as the run would (package
// roster), and refuses what the run would refuse; it calls no agent, and
// it lists issue targets as they are, without fetching them.
package dryrun

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/cadre-dev/cadre/internal/codehost"
	"github.com/cadre-dev/cadre/internal/item/intake"
	"github.com/cadre-dev/cadre/internal/item/taskfile"
	"github.com/cadre-dev/cadre/internal/roster"
	"github.com/cadre-dev/cadre/internal/sandbox"
	"github.com/cadre-dev/cadre/internal/workflow"
)

// Item is what a run would do for one item. Its JSON (cadre run
// --dry-run --json) has lower-case keys, as the events and cadre status
// --json have.
type Item struct {
	ID       string `json:"id"`
	Title    string `json:"title"`
	Workflow string `json:"workflow"`
	Stage    string `json:"stage"`
	Roles    []Role `json:"roles"`          // never null: [] when none
	Note     string `json:"note,omitempty"` // why it would not run, when it would not
	// Trusted says whether the item's tree is trusted (sandbox.trust_repo);
	// Network is the network its confined agents get, "" unconfined.
	Trusted bool   `json:"trusted"`
	Network string `json:"network,omitempty"`
}

// Role is one role of the item's workflow and how it is reached.
type Role struct {
	Role   string `json:"role"`
	Runner string `json:"runner"`
	Model  string `json:"model"` // "" for the runner's default
	From   string `json:"from"`
	Reason string `json:"reason,omitempty"` // runner auto: the selector's reason
}

// Planner plans runs of one repository.
type Planner struct {
	Intake *intake.Loader
	Roster *roster.Roster
	Flags  roster.Flags // the run's --runner and --model
	// Locate: the run would look for the runners' programs here (not on
	// Temporal, whose workers run the agents).
	Locate bool
	// WorkflowOf names the workflow a task file's item runs.
	WorkflowOf func(*taskfile.Task) string
	// Sandbox confines the run's agents; nil runs them unconfined.
	Sandbox *sandbox.Policy
}

// Plan says what a run of w would do, item by item. Its errors are those
// the run would refuse to start with.
func (p *Planner) Plan(ctx context.Context, w intake.Want) ([]Item, error) {
	var files, issues []string
	for _, t := range w.Targets {
		if intake.IsIssueRef(t) && !exists(t) {
			issues = append(issues, t)
		} else {
			files = append(files, t)
		}
	}
	if err := p.Intake.CheckWorkflows(w.Workflow); err != nil {
		return nil, err
	}
	var out []Item
	// Prompts and issues run --workflow, else defaults.workflow.
	generated := w.Workflow
	if generated == "" {
		generated = p.Intake.Config.Defaults.Workflow
	}
	if w.Prompt != "" {
		out = append(out, p.item(ctx, "do", intake.PromptTitle(w.Prompt), generated, "code", false))
	}
	// A run with an issue query works on the issues it finds instead of
	// the task files under tasks_dir.
	if len(files) > 0 || (len(issues) == 0 && w.Prompt == "" && w.Query.Empty()) {
		o := w
		o.Targets, o.Query, o.Prompt = files, codehost.IssueQuery{}, ""
		tasks, err := p.Intake.Load(ctx, "dry-run", o)
		if err != nil {
			return nil, err
		}
		for _, t := range tasks {
			out = append(out, p.item(ctx, t.ID, t.Title, p.WorkflowOf(t), t.Stage, false))
		}
	}
	for _, ref := range issues {
		out = append(out, p.item(ctx, ref, "(GitHub issue, not fetched)", generated, "code", true))
	}
	if !w.Query.Empty() {
		out = append(out, p.item(ctx, "query", "(GitHub issues "+w.Query.String()+", not fetched)", generated, "code", true))
	}
	// The run refuses a runner it cannot build before it starts; a dry run
	// that printed a plan for it would promise a run that cannot happen.
	if err := p.Roster.Check(p.Flags, p.Locate); err != nil {
		return nil, err
	}
	return out, nil
}

// item plans one item running workflow wf from stage; issue says it is
// one or more GitHub issues, whose authors are not known yet.
func (p *Planner) item(ctx context.Context, id, title, wf, stage string, issue bool) Item {
	it := Item{ID: id, Title: title, Workflow: wf, Stage: stage}
	it.Trusted, it.Network = p.confinement(issue)
	var roles []string
	if wf == workflow.PipelineWorkflow {
		for _, st := range workflow.Remaining(stage) {
			roles = append(roles, workflow.StageRole(st))
		}
		if len(roles) == 0 {
			it.Note = "stage " + stage + ": nothing to do"
		}
	} else if def, ok := p.Intake.Workflows.Get(wf); ok {
		roles = def.Roles()
		if wf == "auto" {
			it.Note = "triage chooses the rest"
		}
	} else {
		it.Note = fmt.Sprintf("unknown workflow %q", wf)
	}
	for _, r := range roles {
		name, model, from := p.Roster.For(p.Flags, r)
		pr := Role{Role: r, Runner: name, Model: model, From: strings.ReplaceAll(from, p.Intake.Root+"/", "")}
		if roster.IsAuto(name) {
			// What the selector would choose now; the run chooses again
			// per step, with the scores recorded by then.
			if c, err := p.Roster.Choose(ctx, r); err == nil {
				pr.Runner, pr.Model, pr.Reason = c.Runner, c.Model, "auto: "+c.Reason
			} else {
				pr.Reason = "auto: " + err.Error()
			}
		}
		it.Roles = append(it.Roles, pr)
	}
	return it
}

// confinement is whether an item's tree is trusted (sandbox.trust_repo)
// and the network its confined agents get ("" unconfined). An issue not
// fetched yet counts as a stranger's: its author is unknown.
func (p *Planner) confinement(issue bool) (trusted bool, network string) {
	trusted = p.Intake.Config.Sandbox.TrustsRepo(issue)
	if p.Sandbox == nil {
		return trusted, ""
	}
	return trusted, p.Sandbox.ForItem(trusted, "").Network
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
