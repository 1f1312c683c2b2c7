package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/cadre-dev/cadre/internal/signal"
)

// The interpreter runs a Def for one item. It decides everything from the
// outcomes its Exec returns and does no I/O itself, so it is deterministic:
// run again over a journal that replays completed steps, it asks for the
// same steps with the same ids and continues where the journal ends. That
// is how resume works, and how table tests drive every rule with a fake.

// Interp runs workflow definitions for one item.
type Interp struct {
	Item string
	Defs *Registry
	Exec Exec
	Lim  FlowLimits
	// Goals, when there are several (a task file's ordered ## Goals), are
	// run in order as goal cycles: a routed loop runs once per goal.
	Goals []string
	Roles func(string) bool // role exists, for triage's custom sequences
	// Fanout runs fn for 0..n-1 at once with the goroutine version's semantics (first error
	// in index order; a failure cancels the siblings, a pause does not).
	// nil runs goroutines; a Temporal workflow sets its own, because
	// workflow code may only run concurrently on the SDK's coroutines.
	Fanout func(ctx context.Context, n int, fn func(context.Context, int) error) error
	// IgnoreNext has steps' Next neither routed nor checked (only Human
	// and a passing round's first role or Done are read), as before Next
	// routed: a Temporal history recorded then replays as it ran.
	IgnoreNext bool

	mu       sync.Mutex
	counters map[string]int
	plan     *signal.Plan
	pending  map[string][]string // unfinished plan tasks → their declared files
}

// scope is what a sequence of steps shares: the outputs so far, the last
// outcome and the hand-off note.
type scope struct {
	wf, phase string
	task      *signal.PlanTask
	inputs    []string
	last      Outcome
	note      string
	round     int
	goal      int      // the goal cycle (0: the only one), for signatures
	index     int      // position of the step within its loop round, for signatures
	inRound   bool     // inside a loop's do: a FAIL or a rejection ends the round
	pass      int      // the workflow's pass rating for reviewers
	roles     []string // the workflow's roles, which a step's Next may name (nil: any)
	routed    bool     // in a routed loop, whose rounds follow Next themselves
	work      *Work    // the last working step
	review    *Work    // the last review since it (not a judge's)
}

// carry takes over what an inner sequence produced.
func (sc *scope) carry(in *scope) {
	sc.inputs, sc.last, sc.note, sc.work, sc.review = in.inputs, in.last, in.note, in.work, in.review
}

// checked is the work a gatekeeper checks and a reviewer rates: the last
// working step, or, where no agent worked (the review workflow), the last
// review.
func (sc *scope) checked() *Work {
	if sc.work != nil {
		return sc.work
	}
	return sc.review
}

// failure is a step or node failure inside a phase.
type failure struct{ reason string }

func (f *failure) Error() string { return f.reason }

// rejected is a reviewer's rejection (or, inside a loop round, an agent's
// FAIL). A loop takes it as a failed round and sends the work back;
// anywhere else it fails the item, even in a non-critical phase: rejected
// work is never committed as done.
type rejected struct {
	reason string
	fail   bool // a working role's FAIL, not a reviewer's rejection
}

func (e *rejected) Error() string { return e.reason }

// ended fails the item at once, whatever the phase: a human rejected it.
type ended struct{ reason string }

func (e *ended) Error() string { return e.reason }

// incomplete ends the item at once as incomplete.
type incomplete struct{ reason string }

func (e *incomplete) Error() string { return e.reason }

// routedEnd ends the item with the result of a routed workflow.
type routedEnd struct{ res Result }

func (e *routedEnd) Error() string { return e.res.Reason }

// Run executes def to its end. The error is only for ctx cancellation or a
// pause for a human (wrapping ErrPaused); workflow failures are in Result.
func (in *Interp) Run(ctx context.Context, def *Def) (Result, error) {
	in.counters = map[string]int{}
	sc := &scope{wf: def.Name, pass: in.passRating(def), roles: nextRoles(def)}
	return in.runDef(ctx, def, sc)
}

// passRating is the rating a reviewer must give for def's work to pass.
func (in *Interp) passRating(def *Def) int {
	if def.PassRating > 0 {
		return def.PassRating
	}
	return in.Lim.AuditPassRating
}

func (in *Interp) runDef(ctx context.Context, def *Def, sc *scope) (Result, error) {
	res := Result{Status: ResultCompleted}
	for _, p := range def.Phases {
		psc := *sc
		psc.phase = p.Name
		err := in.seq(ctx, p.Steps, &psc)
		sc.carry(&psc)
		var f *failure
		var inc *incomplete
		var re *routedEnd
		var rej *rejected
		var end *ended
		switch {
		case err == nil:
		case errors.As(err, &rej):
			return Result{Status: ResultFailed, Reason: fmt.Sprintf("phase %s: %s", p.Name, rej.reason), PhaseFailures: res.PhaseFailures}, nil
		case errors.As(err, &end):
			return Result{Status: ResultFailed, Reason: fmt.Sprintf("phase %s: %s", p.Name, end.reason), PhaseFailures: res.PhaseFailures}, nil
		case errors.As(err, &re):
			re.res.PhaseFailures = append(res.PhaseFailures, re.res.PhaseFailures...)
			return re.res, nil
		case errors.As(err, &inc):
			return Result{Status: ResultIncomplete, Reason: inc.reason, PhaseFailures: res.PhaseFailures}, nil
		case errors.As(err, &f):
			if p.Critical {
				return Result{Status: ResultFailed, Reason: fmt.Sprintf("phase %s: %s", p.Name, f.reason), PhaseFailures: res.PhaseFailures}, nil
			}
			res.PhaseFailures = append(res.PhaseFailures, p.Name+": "+f.reason)
			in.Exec.Warn(fmt.Sprintf("non-critical phase %s failed: %s", p.Name, f.reason))
		default:
			return res, err
		}
	}
	return res, nil
}

// id returns the next stable id for a step of kind (a role or an action).
func (in *Interp) id(sc *scope, kind string) string {
	key := in.Item + "/" + sc.phase
	if sc.task != nil {
		key += "/" + sc.task.ID
	}
	key += "/" + kind
	in.mu.Lock()
	defer in.mu.Unlock()
	in.counters[key]++
	return fmt.Sprintf("%s#%d", key, in.counters[key])
}

func (in *Interp) seq(ctx context.Context, nodes []Node, sc *scope) error {
	for _, n := range nodes {
		if err := in.node(ctx, n, sc); err != nil {
			return err
		}
	}
	return nil
}

func (in *Interp) node(ctx context.Context, n Node, sc *scope) error {
	switch {
	case n.Role != "":
		return in.agent(ctx, n.Role, sc)
	case len(n.Parallel) > 0:
		return in.parallel(ctx, n.Parallel, sc)
	case n.ForEach != "":
		return in.forEach(ctx, n.Do, sc)
	case n.Loop != nil:
		return in.loop(ctx, n.Loop, sc)
	case n.Run == "routed":
		return in.routed(ctx, sc)
	default:
		return in.action(ctx, n.Run, sc)
	}
}

func (in *Interp) agent(ctx context.Context, role string, sc *scope) error {
	sc.index++
	note := sc.note
	var out Outcome
	for {
		id := in.id(sc, role)
		call := AgentCall{ID: id, Role: role, Workflow: sc.wf, Phase: sc.phase, Task: sc.task,
			Inputs: append([]string(nil), sc.inputs...), Note: note, Round: sc.round,
			Signature: fmt.Sprintf("%d:%d:%d", max(sc.goal, 1), max(sc.round, 1), sc.index)}
		if sc.goal > 0 {
			call.Goal = in.Goals[sc.goal-1]
		}
		if IsReviewing(role) {
			call.Work, call.PassRating = sc.checked(), sc.pass
		}
		var err error
		out, err = in.Exec.Agent(ctx, call)
		if err != nil {
			return err
		}
		out.Step, out.Role = id, role
		sc.last = out
		if out.Failed {
			return &failure{fmt.Sprintf("%s: %s", role, out.Reason)}
		}
		if out.Output != "" {
			sc.inputs = append(sc.inputs, out.Output)
		}
		sc.note = out.Signal.Context
		why := Escalation(role, out.Signal, in.Lim.EscalateBelowConfidence)
		if why == "" {
			break
		}
		ans, err := in.Exec.Human(ctx, HumanCall{ID: id + "/human", Kind: HumanEscalation, Step: id, Role: role, Reason: why})
		if err != nil {
			return err
		}
		if !ans.Approved {
			return &ended{fmt.Sprintf("%s; rejected by a human: %s", why, ans.Note)}
		}
		if out.Signal.Result == signal.ClarificationNeeded {
			// The agent could not do its work without an answer: ask it
			// again with the human's.
			answer := ans.Note
			if answer == "" {
				answer = "(no answer: proceed with your best judgement)"
			}
			note = fmt.Sprintf("Human clarification: %s\n\nYour question was: %s", answer, out.Signal.Context)
			continue
		}
		if ans.Note != "" {
			sc.note = "Human feedback: " + ans.Note + "\n\n" + sc.note
		}
		break
	}
	in.checkNext(sc, out)
	if role == "implementation-planner" || role == "adjudicator" {
		if err := in.takePlan(role, out); err != nil {
			return err
		}
	}
	w := &Work{Step: out.Step, Role: role, Output: out.Output, Text: out.Text}
	switch {
	case !IsReviewing(role):
		sc.work, sc.review = w, nil
	case role != "judge":
		sc.review = w
	}
	if why := Rejection(role, out.Signal, sc.pass); why != "" {
		return &rejected{reason: why}
	}
	if out.Signal.Result == signal.Fail && !IsReviewing(role) {
		why := fmt.Sprintf("%s reported FAIL: %s", role, out.Signal.LoopSummary)
		if sc.inRound {
			return &rejected{why, true} // the failure goes back to the loop's first role
		}
		return &failure{why}
	}
	return nil
}

// takePlan reads the plan from the planner's output; the adjudicator may
// replace it with a corrected one.
func (in *Interp) takePlan(role string, out Outcome) error {
	p, err := signal.ParsePlan(out.Text)
	if err != nil {
		if role == "adjudicator" && errors.Is(err, signal.ErrNoJSON) {
			return nil // kept the planner's plan
		}
		return &failure{fmt.Sprintf("%s: %v (see %s)", role, err, out.Output)}
	}
	in.mu.Lock()
	in.plan = &p
	in.mu.Unlock()
	return nil
}

func (in *Interp) action(ctx context.Context, kind string, sc *scope) error {
	call := ActionCall{ID: in.id(sc, kind), Kind: kind, Phase: sc.phase, Task: sc.task, Round: sc.round}
	if kind == "answer" {
		t, err := signal.ParseTriage(sc.last.Text)
		if err != nil || t.Answer == nil {
			return &failure{"no direct answer from the triage role (run quick through --workflow auto)"}
		}
		call.Text = *t.Answer
	}
	if kind == "commit" && sc.task != nil {
		call.Others = in.othersFiles(sc.task.ID)
	}
	if kind == "gatekeeper" {
		if sc.checked() == nil {
			return &failure{"gatekeeper: no agent's work to check before it"}
		}
		call.Work = sc.checked()
	}
	out, err := in.Exec.Action(ctx, call)
	if err != nil {
		return err
	}
	sc.last = out
	if out.Failed {
		return &failure{fmt.Sprintf("%s: %s", kind, out.Reason)}
	}
	if kind == "gatekeeper" {
		if out.Output != "" {
			sc.inputs = append(sc.inputs, out.Output)
		}
		sc.note = out.Signal.Context
		if why := Rejection(kind, out.Signal, sc.pass); why != "" {
			return &rejected{reason: why}
		}
		return nil
	}
	if kind == "checks" && len(out.Regressions) > 0 {
		data, _ := json.Marshal(map[string]any{"regressions": out.Regressions})
		sc.note = string(data)
	}
	// The baseline is what the checks compare against: its result reaches
	// agents through the checks' output, which shows each command's
	// baseline exit code, not as an input of its own.
	if out.Output != "" && kind != "baseline" {
		sc.inputs = append(sc.inputs, out.Output)
	}
	return nil
}

// routed runs what the triage role chose (see Route).
func (in *Interp) routed(ctx context.Context, sc *scope) error {
	def, warning := Route(sc.last.Text, in.Defs, in.Roles)
	if warning != "" {
		in.Exec.Warn(warning)
	}
	if def == nil {
		return &failure{"no workflow to route to"}
	}
	sub := *sc
	sub.wf, sub.pass, sub.roles = def.Name, in.passRating(def), nextRoles(def)
	res, err := in.runDef(ctx, def, &sub)
	if err != nil {
		return err
	}
	if def.Name == "quick" && res.Status == ResultCompleted {
		res.Status = ResultAnswered
	}
	return &routedEnd{res}
}

// Route turns a triage reply into the workflow to run (docs/workflows.md#triage): quick when
// it answered directly, a known workflow by name, valid roles as a custom
// sequence, anything else standard with a warning saying why. def is nil
// only when defs has no standard workflow to fall back to. isRole reports a
// known role; nil knows none.
func Route(text string, defs *Registry, isRole func(string) bool) (def *Def, warning string) {
	t, err := signal.ParseTriage(text)
	name := t.Workflow
	if err != nil {
		warning = fmt.Sprintf("triage gave no usable decision (%v); running standard", err)
		name = "standard"
	}
	switch d, ok := defs.Get(name); {
	case name == "quick" && t.Answer == nil:
		def, _ = defs.Get("standard")
		return def, "triage chose quick but gave no answer; running standard"
	case name == "quick":
		return d, warning
	case ok && name != "auto":
		return d, warning
	case len(t.Roles) > 0 && allRoles(t.Roles, isRole):
		return customDef(t.Roles), warning
	}
	if err == nil {
		warning = fmt.Sprintf("triage chose %q, which is neither a workflow nor a list of known roles; running standard", t.Workflow)
	}
	def, _ = defs.Get("standard")
	return def, warning
}

func allRoles(roles []string, isRole func(string) bool) bool {
	for _, r := range roles {
		if isRole == nil || !isRole(r) {
			return false
		}
	}
	return true
}

// customDef is triage's CUSTOM workflow: its roles in order, then a commit.
func customDef(roles []string) *Def {
	d := &Def{Name: "custom", Description: "roles chosen by triage: " + strings.Join(roles, ", ")}
	p := Phase{Name: "work", Critical: true}
	for _, r := range roles {
		p.Steps = append(p.Steps, Node{Role: r})
	}
	p.Steps = append(p.Steps, Node{Run: "commit"})
	d.Phases = []Phase{p}
	return d
}
