package dryrun

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cadre-dev/cadre/internal/config"
	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/item/intake"
	"github.com/cadre-dev/cadre/internal/item/taskfile"
	"github.com/cadre-dev/cadre/internal/role"
	"github.com/cadre-dev/cadre/internal/roster"
	"github.com/cadre-dev/cadre/internal/runner"
	"github.com/cadre-dev/cadre/internal/sandbox"
	"github.com/cadre-dev/cadre/internal/workflow"
)

type fake struct{}

func (fake) Name() string              { return "fake" }
func (fake) Capabilities() runner.Caps { return runner.Caps{} }
func (fake) Run(context.Context, runner.Invocation) (runner.Result, error) {
	return runner.Result{}, nil
}

// planner plans in a repository with tasks a (stage plan) and b
// (completed), every role on the runner fake.
func planner(t *testing.T) *Planner {
	t.Helper()
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "tasks"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{"a.md": "---\nstage: plan\n---\n# A\n", "b.md": "---\nstage: completed\n---\n# B\n"} {
		if err := os.WriteFile(filepath.Join(root, "tasks", name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	flows, err := workflow.LoadDefs("", nil)
	if err != nil {
		t.Fatal(err)
	}
	roles, err := role.Load("")
	if err != nil {
		t.Fatal(err)
	}
	reg := runner.NewRegistry()
	reg.Register("fake", func(runner.Settings) (runner.Runner, error) { return fake{}, nil })
	cfg := config.Default()
	cfg.Defaults.Runner, cfg.Defaults.Workflow = "fake", "standard"
	return &Planner{
		Intake:     &intake.Loader{Root: root, StateDir: filepath.Join(root, ".cadre"), Config: cfg, Workflows: flows},
		Roster:     &roster.Roster{Config: cfg, Runners: reg, Roles: roles, Root: root, Bus: event.NewBus(nil), State: &roster.State{}},
		Flags:      roster.Flags{Model: "m1"},
		Locate:     true,
		WorkflowOf: func(*taskfile.Task) string { return workflow.PipelineWorkflow },
	}
}

// TestPlan: the prompt's item, the task files in order with the stage
// pipeline's remaining roles, and the issues named without fetching them;
// every role on its runner, --model where the role names none.
func TestPlan(t *testing.T) {
	p := planner(t)
	plan, err := p.Plan(context.Background(), intake.Want{Targets: []string{filepath.Join(p.Intake.Root, "tasks"), "#7"}, Prompt: "fix\nit"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, it := range plan {
		line := it.ID + " " + it.Workflow + " " + it.Stage + ":"
		for _, r := range it.Roles {
			line += " " + r.Role + "@" + r.Runner + "/" + r.Model
		}
		if it.Note != "" {
			line += " (" + it.Note + ")"
		}
		got = append(got, line)
	}
	want := []string{
		"do standard code:", // its roles follow
		"a runner plan: planner@fake/m1 coder@fake/m1 auditor@fake/m1",
		"b runner completed: (stage completed: nothing to do)",
		"#7 standard code:",
	}
	if len(got) != len(want) {
		t.Fatalf("plan:\n%s\nwant %d items", strings.Join(got, "\n"), len(want))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("item %d: %q, want it to start %q", i, got[i], want[i])
		}
	}
	if plan[0].Title != "fix it" || plan[3].Title != "(GitHub issue, not fetched)" {
		t.Errorf("titles %q, %q", plan[0].Title, plan[3].Title)
	}
}

// TestPlanRefuses: a runner the run could not build refuses the plan, as
// it would the run.
func TestPlanRefuses(t *testing.T) {
	p := planner(t)
	p.Flags.Runner = "nosuch"
	_, err := p.Plan(context.Background(), intake.Want{})
	if err == nil || !strings.Contains(err.Error(), `--runner: unknown runner "nosuch"`) {
		t.Errorf("err = %v, want the unknown runner from --runner", err)
	}
}

// TestPlanConfinement: a task file of the repository is trusted and its
// agents get the sandbox's network; an issue not fetched yet counts as a
// stranger's and gets the untrusted network; without a sandbox, none.
func TestPlanConfinement(t *testing.T) {
	p := planner(t)
	want := func(plan []Item, trusted bool, network string) {
		t.Helper()
		for _, it := range plan {
			wantTrusted := trusted && it.ID != "#7"
			wantNet := network
			if it.ID == "#7" && network != "" {
				wantNet = sandbox.NetModelOnly
			}
			if it.Trusted != wantTrusted || it.Network != wantNet {
				t.Errorf("%s: trusted %v, network %q; want %v, %q", it.ID, it.Trusted, it.Network, wantTrusted, wantNet)
			}
		}
	}
	w := intake.Want{Targets: []string{filepath.Join(p.Intake.Root, "tasks", "a.md"), "#7"}}
	plan, err := p.Plan(context.Background(), w)
	if err != nil {
		t.Fatal(err)
	}
	want(plan, true, "")
	p.Sandbox = &sandbox.Policy{Network: sandbox.NetAllow, Untrusted: sandbox.NetModelOnly}
	if plan, err = p.Plan(context.Background(), w); err != nil {
		t.Fatal(err)
	}
	want(plan, true, sandbox.NetAllow)
}
