package workflow

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml"
)

//go:embed builtin/*.yaml
var builtinDefs embed.FS

// Def is a declarative workflow: phases of steps over roles.
type Def struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
	// PassRating is the Rating a reviewing role must give for the work to
	// pass (0: limits.audit_pass_rating).
	PassRating int     `yaml:"pass_rating"`
	Phases     []Phase `yaml:"phases"`

	Source string `yaml:"-"` // "built-in" or the file it came from
}

// Phase is a named group of steps. A failure in a critical phase fails the
// item; in a non-critical one it is recorded and the next phase runs.
type Phase struct {
	Name     string `yaml:"name"`
	Critical bool   `yaml:"critical"`
	Steps    []Node `yaml:"steps"`
}

// Node is one step of a workflow; exactly one of its kinds is set.
type Node struct {
	Role     string `yaml:"role"`     // run an agent in this role
	Parallel []Node `yaml:"parallel"` // run these at once
	ForEach  string `yaml:"foreach"`  // "plan": run Do once per plan task, in dependency waves
	Loop     *Loop  `yaml:"loop"`     // repeat until a gate passes, bounded
	Run      string `yaml:"run"`      // a deterministic action, see Actions
	Do       []Node `yaml:"do"`       // body of foreach
}

// Loop repeats Do until its gate passes. Exactly one bound is set: Max
// bounds the runs of Do; MaxBetween bounds the runs of Between (so Do runs
// at most MaxBetween+1 times). A bound names a limit of cadre.yaml
// (max_review_rounds, max_insufficient_loops, max_iterations, max_attempts)
// or is a number.
type Loop struct {
	Until      string `yaml:"until"` // a gate, see Gates
	Max        string `yaml:"max"`
	MaxBetween string `yaml:"max_between"`
	Do         []Node `yaml:"do"`
	Between    []Node `yaml:"between"` // after a failed gate, before the next round
	// Exhausted says what happens when the bound is reached: fail (the
	// default), continue (only for loops without reviewing roles: rejected
	// work is never committed), or incomplete (pause for a human).
	Exhausted string `yaml:"exhausted"`
	// Next, "route", has a passing round go where its last agent's Next
	// says (the judge's, in the loop workflow): the round's first role
	// starts the next round on a new subordinate goal (at most the bound
	// of them in a row); anything else ends the loop with the goal met,
	// which a human approves unless limits.approve_goal is off.
	Next string `yaml:"next"`
	// OnFail runs when a working role ended a round with FAIL, before
	// the next round, which reads what it produced (the diagnoser's root
	// cause, for the planner).
	OnFail []Node `yaml:"on_fail"`
}

// Gates a loop can wait for.
var Gates = map[string]string{
	"verdict-pass": "the last agent's Verdict is pass",
	"result-pass":  "the last agent's Result is PASS",
	"rating-pass":  "the last agent's Rating reaches the workflow's pass_rating (else limits.audit_pass_rating)",
	"checks-pass":  "the last checks found no regression against the baseline",
	"review-pass":  "every reviewing role of the round accepted the work",
}

// Actions are the deterministic steps.
var Actions = map[string]string{
	"baseline": "run the project's install/build/test/lint commands and remember which pass",
	"checks":   "run them again; a command that passed at the baseline and fails now is a regression",
	"commit":   "commit the item's (or the plan task's) changes in its worktree",
	"gatekeeper": "check the last agent's work without a model: its SIGNAL BLOCK, plan, diff " +
		"(non-empty, inside the task's files, no forbidden path) and the build/test commands; a failed check rejects it",
	"answer": "record the triage role's direct answer as the item's result (no code change)",
	"routed": "run the workflow the triage role chose (or its custom role sequence)",
}

var limitNames = []string{"max_review_rounds", "max_insufficient_loops", "max_iterations", "max_attempts"}

// Registry holds the workflows available to a run.
type Registry struct {
	defs map[string]*Def
}

// LoadDefs returns the built-in workflows, overridden or extended by
// NAME.yaml files in dir (dir may not exist). roleExists validates role
// names; every definition is validated.
func LoadDefs(dir string, roleExists func(string) bool) (*Registry, error) {
	r := &Registry{defs: map[string]*Def{}}
	entries, err := fs.ReadDir(builtinDefs, "builtin")
	if err != nil {
		return nil, fmt.Errorf("read built-in workflows: %w", err)
	}
	for _, e := range entries {
		data, err := builtinDefs.ReadFile("builtin/" + e.Name())
		if err != nil {
			return nil, err
		}
		if err := r.add(e.Name(), "built-in", data); err != nil {
			return nil, err
		}
	}
	if dir != "" {
		files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
		more, _ := filepath.Glob(filepath.Join(dir, "*.yml"))
		for _, f := range append(files, more...) {
			data, err := os.ReadFile(f)
			if err != nil {
				return nil, fmt.Errorf("read workflow: %w", err)
			}
			if err := r.add(filepath.Base(f), f, data); err != nil {
				return nil, err
			}
		}
	}
	for _, name := range r.Names() {
		if err := r.defs[name].Validate(roleExists); err != nil {
			return nil, err
		}
	}
	return r, nil
}

func (r *Registry) add(file, source string, data []byte) error {
	var d Def
	if err := yaml.UnmarshalWithOptions(data, &d, yaml.DisallowUnknownField()); err != nil {
		msg := strings.TrimSpace(err.Error())
		var ye yaml.Error
		if errors.As(err, &ye) {
			// file:line as cadre.yaml's errors, not the library's "[line:column]".
			msg = strings.TrimSpace(ye.GetMessage())
			if tk := ye.GetToken(); tk != nil && tk.Position != nil {
				source = fmt.Sprintf("%s:%d", source, tk.Position.Line)
			}
		}
		if i := strings.IndexByte(msg, '\n'); i >= 0 {
			msg = msg[:i]
		}
		return fmt.Errorf("%s: %s", source, msg)
	}
	stem := strings.TrimSuffix(strings.TrimSuffix(file, ".yaml"), ".yml")
	if d.Name == "" {
		d.Name = stem
	}
	if d.Name != stem {
		return fmt.Errorf("%s: name %q must match the file name %q", source, d.Name, stem)
	}
	if d.Name == PipelineWorkflow {
		return fmt.Errorf("%s: %q is the task-file stage pipeline and cannot be redefined", source, PipelineWorkflow)
	}
	d.Source = source
	r.defs[d.Name] = &d
	return nil
}

// PipelineWorkflow is the stage pipeline's name on the wire (Next decides it).
const PipelineWorkflow = "runner"

// Get returns the named workflow.
func (r *Registry) Get(name string) (*Def, bool) {
	d, ok := r.defs[name]
	return d, ok
}

// Names lists the workflows, sorted.
func (r *Registry) Names() []string {
	out := make([]string, 0, len(r.defs))
	for k := range r.defs {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Validate checks a definition: known roles, gates and actions, one kind per
// node, bounded loops, no step that can never run.
func (d *Def) Validate(roleExists func(string) bool) error {
	where := d.Source + ": workflow " + d.Name
	if d.PassRating < 0 || d.PassRating > 10 {
		return fmt.Errorf("%s: pass_rating %d: want 1-10 (or leave it out for limits.audit_pass_rating)", where, d.PassRating)
	}
	if len(d.Phases) == 0 {
		return fmt.Errorf("%s: no phases", where)
	}
	seen := map[string]bool{}
	for i, p := range d.Phases {
		at := fmt.Sprintf("%s: phases[%d]", where, i)
		if p.Name == "" {
			return fmt.Errorf("%s: phase has no name", at)
		}
		if seen[p.Name] {
			return fmt.Errorf("%s: phase name %q is used twice", at, p.Name)
		}
		seen[p.Name] = true
		if err := validateNodes(at+" ("+p.Name+")", p.Steps, roleExists, false); err != nil {
			return err
		}
	}
	return nil
}

func validateNodes(at string, nodes []Node, roleExists func(string) bool, inTask bool) error {
	if len(nodes) == 0 {
		return fmt.Errorf("%s: no steps", at)
	}
	for i, n := range nodes {
		here := fmt.Sprintf("%s.steps[%d]", at, i)
		kinds := 0
		for _, set := range []bool{n.Role != "", len(n.Parallel) > 0, n.ForEach != "", n.Loop != nil, n.Run != ""} {
			if set {
				kinds++
			}
		}
		if kinds != 1 {
			return fmt.Errorf("%s: set exactly one of role, parallel, foreach, loop, run", here)
		}
		if len(n.Do) > 0 && n.ForEach == "" {
			return fmt.Errorf("%s: do belongs to foreach (a loop has its own do)", here)
		}
		switch {
		case n.Role != "":
			if roleExists != nil && !roleExists(n.Role) {
				return fmt.Errorf("%s: unknown role %q (see cadre roles list, or add .cadre/roles/%s.md)", here, n.Role, n.Role)
			}
		case len(n.Parallel) > 0:
			if err := validateNodes(here+".parallel", n.Parallel, roleExists, inTask); err != nil {
				return err
			}
		case n.ForEach != "":
			if n.ForEach != "plan" {
				return fmt.Errorf("%s: foreach %q: only \"plan\" (the implementation plan's tasks) is supported", here, n.ForEach)
			}
			if inTask {
				return fmt.Errorf("%s: foreach inside foreach is not supported", here)
			}
			if err := validateNodes(here+".do", n.Do, roleExists, true); err != nil {
				return err
			}
		case n.Loop != nil:
			if err := validateLoop(here+".loop", n.Loop, roleExists, inTask); err != nil {
				return err
			}
		default:
			if _, ok := Actions[n.Run]; !ok {
				return fmt.Errorf("%s: unknown action %q (want one of %s)", here, n.Run, strings.Join(sortedKeys(Actions), ", "))
			}
			if n.Run == "routed" && i != len(nodes)-1 {
				return fmt.Errorf("%s: steps after \"run: routed\" can never run (the routed workflow ends the item)", here)
			}
		}
	}
	return nil
}

func validateLoop(at string, l *Loop, roleExists func(string) bool, inTask bool) error {
	if _, ok := Gates[l.Until]; !ok {
		return fmt.Errorf("%s: until %q: want one of %s", at, l.Until, strings.Join(sortedKeys(Gates), ", "))
	}
	if (l.Max == "") == (l.MaxBetween == "") {
		return fmt.Errorf("%s: a loop needs exactly one bound: max or max_between", at)
	}
	for _, b := range []string{l.Max, l.MaxBetween} {
		if b == "" {
			continue
		}
		if n, err := strconv.Atoi(b); err == nil {
			if n < 1 {
				return fmt.Errorf("%s: bound %d must be at least 1", at, n)
			}
			if l.Max != "" && n == 1 && len(l.Between) > 0 {
				return fmt.Errorf("%s: between can never run when max is 1", at)
			}
			continue
		}
		if !contains(limitNames, b) {
			return fmt.Errorf("%s: bound %q: want a number or one of %s", at, b, strings.Join(limitNames, ", "))
		}
	}
	switch l.Exhausted {
	case "", "fail", "incomplete":
	case "continue":
		if r := reviewingIn(l.Do, l.Between); r != "" {
			return fmt.Errorf("%s: exhausted: continue would commit work the %s rejected: use fail or incomplete", at, r)
		}
	default:
		return fmt.Errorf("%s: exhausted %q: want fail, continue or incomplete", at, l.Exhausted)
	}
	if l.MaxBetween != "" && len(l.Between) == 0 {
		return fmt.Errorf("%s: max_between bounds the between steps, and there are none: use max", at)
	}
	if l.Until == "review-pass" && reviewingIn(l.Do) == "" {
		return fmt.Errorf("%s: until review-pass needs a reviewing role (%s) in do", at, strings.Join(Reviewing, ", "))
	}
	switch {
	case l.Next != "" && l.Next != "route":
		return fmt.Errorf("%s: next %q: want route (or leave it out)", at, l.Next)
	case l.Next == "route" && (len(l.Do) == 0 || l.Do[0].Role == ""):
		return fmt.Errorf("%s: next: route needs a role first in do, the one a passing round's Next names to go on", at)
	}
	if err := validateNodes(at+".do", l.Do, roleExists, inTask); err != nil {
		return err
	}
	if len(l.OnFail) > 0 {
		if err := validateNodes(at+".on_fail", l.OnFail, roleExists, inTask); err != nil {
			return err
		}
	}
	if len(l.Between) > 0 {
		return validateNodes(at+".between", l.Between, roleExists, inTask)
	}
	return nil
}

// reviewingIn returns the first reviewing role in nodes, or "".
func reviewingIn(nodes ...[]Node) string {
	for _, ns := range nodes {
		for _, n := range ns {
			if n.Role != "" && IsReviewing(n.Role) {
				return n.Role
			}
			if n.Run == "gatekeeper" {
				return "gatekeeper"
			}
			inner := [][]Node{n.Parallel, n.Do}
			if n.Loop != nil {
				inner = append(inner, n.Loop.Do, n.Loop.Between, n.Loop.OnFail)
			}
			if r := reviewingIn(inner...); r != "" {
				return r
			}
		}
	}
	return ""
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Gates lists what gates a definition's work, in first-use order: its
// reviewing roles and, when it runs one, the gatekeeper.
func (d *Def) Gates() []string {
	var out []string
	d.walk(func(n Node) {
		if (n.Role != "" && IsReviewing(n.Role) || n.Run == "gatekeeper") && !contains(out, n.Role+n.Run) {
			out = append(out, n.Role+n.Run)
		}
	})
	return out
}

// Roles lists the roles a definition invokes, in first-use order.
func (d *Def) Roles() []string {
	var out []string
	d.walk(func(n Node) {
		if n.Role != "" && !contains(out, n.Role) {
			out = append(out, n.Role)
		}
	})
	return out
}

// walk visits every node of d, depth first, in definition order.
func (d *Def) walk(visit func(Node)) {
	var rec func([]Node)
	rec = func(ns []Node) {
		for _, n := range ns {
			visit(n)
			rec(n.Parallel)
			rec(n.Do)
			if n.Loop != nil {
				rec(n.Loop.Do)
				rec(n.Loop.Between)
				rec(n.Loop.OnFail)
			}
		}
	}
	for _, p := range d.Phases {
		rec(p.Steps)
	}
}
