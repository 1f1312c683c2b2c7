package workflow

import (
	"fmt"
	"strings"
)

// A step's Next names who runs after it. Inside the round of a loop with
// next: route (the loop workflow's planner → actor → judge) it is
// followed: a later step of the round (skipping working steps between),
// an earlier one (the round ends and the next starts there), Done (after
// the round's last step) or Human. Everywhere else the definition fixes
// the order, so a Next is only checked: one naming neither a role of the
// workflow, Done nor Human is refused. Nothing an agent writes there is
// silently dropped: a refused Next is a warning naming the step and what
// the workflow allows.

// Next values that are not roles, as nextName spells them.
const (
	nextDone  = "done"
	nextHuman = "human"
)

// nextName is a Next as it is compared: trimmed and in lower case.
func nextName(s string) string { return strings.ToLower(strings.TrimSpace(s)) }

// hopKind is what a routed round does after one of its steps.
type hopKind int

const (
	hopOn   hopKind = iota // on to the round's next step
	hopSkip                // on to a later step, skipping the ones between
	hopBack                // the round ends; the next one starts at an earlier step
)

// hop is where a step's Next sends a routed round: to step to, for
// hopSkip and hopBack. warn says why the Next was refused ("" when it was
// followed); a refused Next leaves the round to its definition.
type hop struct {
	kind hopKind
	to   int
	warn string
}

// roundHop decides where a routed round goes after its step i, which
// ended without a rejection, said next. The round's last step (the judge)
// is left to the loop's gate: a pass routes there (see route), a failure
// restarts where its Next says (see restartAt).
func roundHop(do []Node, i int, next string) hop {
	n := nextName(next)
	if n == "" || n == nextHuman || i == len(do)-1 {
		return hop{} // Human was put to a person as the step ended
	}
	if n == nextDone {
		return hop{warn: "Done ends only a round's last step, " + stepName(do[len(do)-1]) + allowedInRound(do)}
	}
	j := roleIndex(do, n)
	switch {
	case j < 0:
		return hop{warn: "it is no step of the round" + allowedInRound(do)}
	case j == i+1:
		return hop{}
	case j > i:
		// Skipping a review or a check would let unreviewed work pass.
		for _, s := range do[i+1 : j] {
			if s.Role == "" || IsReviewing(s.Role) {
				return hop{warn: "the " + stepName(s) + " is never skipped" + allowedInRound(do)}
			}
		}
		return hop{kind: hopSkip, to: j}
	}
	return hop{kind: hopBack, to: j}
}

// restartAt is the step the next round of a routed loop starts at after
// a round that did not pass, as the last step's Next says: the round's
// first step unless it names another, never Done (rejected work is never
// done).
func restartAt(do []Node, next string) (int, string) {
	switch n := nextName(next); n {
	case "", nextHuman:
		return 0, ""
	case nextDone:
		return 0, "the round did not pass, so the goal is not done; the next round starts at the " + stepName(do[0]) + allowedInRound(do)
	default:
		if j := roleIndex(do, n); j >= 0 {
			return j, ""
		}
	}
	return 0, "it is no step of the round; the next round starts at the " + stepName(do[0]) + allowedInRound(do)
}

// passedNext reads a passing round's Next: whether it starts another
// round on a new subordinate goal (the round's first role), and why it
// was refused when it names neither that, Done nor Human (the goal is then
// taken as met, as with Done).
func passedNext(do []Node, next string) (again bool, warn string) {
	switch n := nextName(next); {
	case n == nextName(do[0].Role):
		return true, ""
	case n == "" || n == nextDone || n == nextHuman:
		return false, ""
	}
	return false, "after a passing round Next may name the " + do[0].Role + " (a new subordinate goal), Done or Human; the goal is taken as met"
}

// fixedNext checks the Next of a step outside a routed round, where the
// workflow's order decides: it says why next is refused, or "" when it
// names a role of the workflow, Done or Human.
func fixedNext(wf string, roles []string, next string) string {
	n := nextName(next)
	if n == "" || n == nextDone || n == nextHuman || containsFold(roles, n) {
		return ""
	}
	return fmt.Sprintf("%s runs its steps in order; a step's Next may name %s, Done or Human", wf, strings.Join(roles, ", "))
}

// checkNext warns of the Next of a step outside a routed round when the
// workflow does not allow it (see fixedNext).
func (in *Interp) checkNext(sc *scope, out Outcome) {
	if sc.routed || in.IgnoreNext || sc.roles == nil {
		return
	}
	if why := fixedNext(sc.wf, sc.roles, out.Signal.Next); why != "" {
		in.Exec.Warn(refused(out, why))
	}
}

// nextRoles are the roles a step of def may name as its Next: def's own,
// or, when def hands the item to another workflow (triage's routed
// step), any (nil), since triage names the first role of the one it chose.
func nextRoles(def *Def) []string {
	routes := false
	def.walk(func(n Node) { routes = routes || n.Run == "routed" })
	if routes {
		return nil
	}
	return def.Roles()
}

// refused is the warning for a step's refused Next.
func refused(o Outcome, why string) string {
	return fmt.Sprintf("step %s (%s): Next: %s is not followed: %s", o.Step, o.Role, strings.TrimSpace(o.Signal.Next), why)
}

// allowedInRound lists where a routed round's steps may send it.
func allowedInRound(do []Node) string {
	var roles []string
	for _, n := range do {
		if n.Role != "" && !contains(roles, n.Role) {
			roles = append(roles, n.Role)
		}
	}
	return fmt.Sprintf(" (the round allows %s, Done after the %s, or Human)", strings.Join(roles, ", "), stepName(do[len(do)-1]))
}

// roleIndex is the first step of do in role n (lower case), or -1.
func roleIndex(do []Node, n string) int {
	for j, s := range do {
		if s.Role != "" && nextName(s.Role) == n {
			return j
		}
	}
	return -1
}

// agentsBefore counts the agent steps of do before step j: a round's
// steps are signed by their place among them.
func agentsBefore(do []Node, j int) int {
	n := 0
	for _, s := range do[:j] {
		if s.Role != "" {
			n++
		}
	}
	return n
}

// stepName names a step of a round: its role, or its action.
func stepName(n Node) string {
	if n.Role != "" {
		return n.Role
	}
	if n.Run != "" {
		return n.Run
	}
	return "step"
}

func containsFold(list []string, n string) bool {
	for _, s := range list {
		if nextName(s) == n {
			return true
		}
	}
	return false
}
