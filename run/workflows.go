package run

import "github.com/cadre-dev/cadre/internal/workflow"

// Workflow describes a built-in workflow: its name (what
// Options.Workflow takes), what it does, and the roles it invokes in the
// order they first act.
type Workflow struct {
	Name        string
	Description string
	Roles       []string
}

// Workflows lists the built-in workflows, sorted by name. A repository's
// .cadre/workflows may add or override some (cadre workflows list shows
// them).
func Workflows() []Workflow {
	reg, err := workflow.LoadDefs("", nil)
	if err != nil {
		return nil // the built-ins are embedded and checked by the tests
	}
	var out []Workflow
	for _, name := range reg.Names() {
		d, _ := reg.Get(name)
		out = append(out, Workflow{Name: d.Name, Description: d.Description, Roles: d.Roles()})
	}
	return out
}
