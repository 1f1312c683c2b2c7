package agent

import (
	"context"
	"fmt"

	"github.com/cadre-dev/cadre/internal/signal"
	"github.com/cadre-dev/cadre/internal/workflow"
)

// Decision is the triage role's routing of a task (docs/workflows.md#triage), resolved as
// `cadre run --workflow auto` resolves it.
type Decision struct {
	// Workflow is the workflow to run: quick, simple, standard, full, debug,
	// research, review, test, a workflow of WithRoleDir's repository, or
	// custom (Roles in order).
	Workflow string
	// Roles are the workflow's roles in first-use order.
	Roles     []string
	Reasoning string
	// Answer is triage's direct answer for quick; "" otherwise.
	Answer string
	// Warning says why triage's own choice was not taken (no usable JSON,
	// an unknown workflow, quick without an answer): the workflow is then
	// standard. "" when it was taken.
	Warning string
	// Response is the triage agent's reply.
	Response Response
}

// Triage asks the triage role, through r, which workflow fits task. Like
// the engine, it falls back to standard (with Decision.Warning) when the
// reply is unusable; err is only for a runner that could not answer.
// opts are those of New: WithRoleDir also makes that repository's
// .cadre/workflows known (its parent's workflows directory).
func Triage(ctx context.Context, r Runner, task string, opts ...Option) (Decision, error) {
	a, err := New(roleTriage, r, opts...)
	if err != nil {
		return Decision{}, err
	}
	resp, err := a.Invoke(ctx, task, "")
	if err != nil {
		return Decision{Response: resp}, fmt.Errorf("triage: %w", err)
	}
	isRole := func(name string) bool {
		_, err := a.roles.Get(name)
		return err == nil
	}
	defs, err := workflow.LoadDefs(workflowDir(a.cfg.roleDir), isRole)
	if err != nil {
		return Decision{Response: resp}, fmt.Errorf("triage: %w", err)
	}
	def, warning := workflow.Route(resp.Text, defs, isRole)
	if def == nil {
		return Decision{Response: resp}, fmt.Errorf("triage: no standard workflow to fall back to (%s)", warning)
	}
	d := Decision{Workflow: def.Name, Roles: def.Roles(), Warning: warning, Response: resp}
	if t, err := signal.ParseTriage(resp.Text); err == nil {
		d.Reasoning = t.Reasoning
		if t.Answer != nil && def.Name == "quick" {
			d.Answer = *t.Answer
		}
	}
	return d, nil
}
