package workflow

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/cadre-dev/cadre/internal/signal"
)

// loop runs l's rounds until its gate passes. A rejection (or, in a round,
// an agent's FAIL) fails the round, and the next round (or the between
// steps) starts from why; when the bound is reached the loop fails the
// item, pauses it as incomplete for a human, or goes on, as l says.
func (in *Interp) loop(ctx context.Context, l *Loop, sc *scope) error {
	if l.Next != "route" || len(in.Goals) < 2 {
		return in.loopGoal(ctx, l, sc)
	}
	// A goal cycle per goal, in order: each starts its rounds again from
	// 1, handed its goal.
	for i, goal := range in.Goals {
		sc.goal = i + 1
		sc.note = strings.TrimSpace(fmt.Sprintf("Goal %d of %d: %s\n\n%s", i+1, len(in.Goals), goal, sc.note))
		if err := in.loopGoal(ctx, l, sc); err != nil {
			return err
		}
	}
	return nil
}

// goalLoop is one goal's rounds of a loop and what they carry from one
// round to the next.
//
// A round reads what came before the loop, the round before it and the
// steps between them (the review a fixer answers, the fix a reviewer
// checks); older rounds are superseded and left out. Once the loop ends,
// the steps after it read the last round and the fix before it, not the
// rounds it superseded.
type goalLoop struct {
	in                  *Interp
	l                   *Loop
	sc                  *scope
	bound, limit        int      // rounds (or between steps) allowed: each time, and now
	betweens            int      // between steps run
	fails, subgoals     int      // rounds failed in a row; subordinate goals passed in a row
	base                int      // sc.inputs from before the loop
	prevDo, prevBetween []string // the last round's outputs and the steps after it
	from                int      // the step of do the next round starts at (routed loops)
}

// loopGoal runs l's rounds for one goal.
func (in *Interp) loopGoal(ctx context.Context, l *Loop, sc *scope) error {
	bound := in.Lim.bound(l.Max + l.MaxBetween) // exactly one is set
	g := &goalLoop{in: in, l: l, sc: sc, bound: bound, limit: bound, base: len(sc.inputs)}
	routed := l.Next == "route" && !in.IgnoreNext
	if routed {
		// The rounds, and the steps between them, follow Next themselves.
		defer func(was bool) { sc.routed = was }(sc.routed)
		sc.routed = true
	}
	for round := 1; ; round++ {
		g.keep(g.prevDo, g.prevBetween)
		start := len(sc.inputs)
		rsc := *sc
		rsc.round, rsc.index, rsc.inRound = round, 0, true
		var err error
		if routed {
			err = in.roundSeq(ctx, l.Do, g.from, &rsc)
		} else {
			err = in.seq(ctx, l.Do, &rsc)
		}
		sc.carry(&rsc)
		var rej *rejected
		switch {
		case errors.As(err, &rej):
			// The round failed: the next one starts from why.
			sc.note = strings.TrimSpace(rej.reason + "\n\n" + sc.note)
		case err != nil:
			return err
		case gate(l.Until, sc.last, sc.pass):
			if done, err := g.passed(ctx, start); done || err != nil {
				return err
			}
			continue
		}
		if done, err := g.failed(ctx, round, start, rej); done || err != nil {
			return err
		}
		if err := g.afterFailed(ctx, round, start, rej); err != nil {
			return err
		}
		if routed {
			g.restart()
		}
	}
}

// roundSeq runs a routed loop's round from its step from, each step's
// Next sending it on, ahead past working steps, or back: then the round
// ends unpassed, and the next starts where that Next says (see restart).
func (in *Interp) roundSeq(ctx context.Context, do []Node, from int, sc *scope) error {
	sc.index = agentsBefore(do, from)
	for i := from; i < len(do); {
		if err := in.node(ctx, do[i], sc); err != nil {
			return err
		}
		h := hop{}
		if do[i].Role != "" {
			h = roundHop(do, i, sc.last.Signal.Next)
		}
		if h.warn != "" {
			in.Exec.Warn(refused(sc.last, h.warn))
		}
		switch h.kind {
		case hopSkip:
			i, sc.index = h.to, agentsBefore(do, h.to)
		case hopBack:
			return &rejected{reason: fmt.Sprintf("the %s sent the round back to the %s (Next: %s)",
				do[i].Role, do[h.to].Role, strings.TrimSpace(sc.last.Signal.Next))}
		default:
			i++
		}
	}
	return nil
}

// restart sets the step the next round starts at after one that did not
// pass, from the Next of the last step that ran (the judge's, the one
// that sent the round back, or the diagnoser's).
func (g *goalLoop) restart() {
	from, why := restartAt(g.l.Do, g.sc.last.Signal.Next)
	if why != "" {
		g.in.Exec.Warn(refused(g.sc.last, why))
	}
	g.from = from
}

// keep sets the scope's inputs to those from before the loop and lists.
func (g *goalLoop) keep(lists ...[]string) {
	in := append([]string(nil), g.sc.inputs[:g.base]...)
	for _, l := range lists {
		in = append(in, l...)
	}
	g.sc.inputs = in
}

// passed follows a round, begun at input start, that passed the gate. It
// says whether the loop is done; if not, the next round starts on a new
// subordinate goal.
func (g *goalLoop) passed(ctx context.Context, start int) (bool, error) {
	goOn := false
	if g.l.Next == "route" {
		var err error
		if goOn, err = g.in.route(ctx, g.l, g.sc, &g.subgoals, g.bound); err != nil {
			return true, err
		}
	}
	if !goOn {
		g.keep(g.prevBetween, g.sc.inputs[start:])
		return true, nil
	}
	// The next round starts on a new subordinate goal, and the rounds that
	// fail in a row are counted again from none, up to the loop's bound
	// (not one a human extended before).
	g.fails, g.prevDo, g.prevBetween, g.from = 0, append([]string(nil), g.sc.inputs[start:]...), nil, 0
	if g.l.MaxBetween == "" {
		g.limit = g.bound
	}
	return false, nil
}

// failed counts a failed round (rejected as rej, or nil where it missed
// the gate) and, once the bound is reached, fails the item, pauses it for
// a human who may grant more rounds, or ends the loop, as the loop says.
// It says whether the loop is done.
func (g *goalLoop) failed(ctx context.Context, round, start int, rej *rejected) (bool, error) {
	l, sc := g.l, g.sc
	g.fails, g.subgoals = g.fails+1, 0
	exhausted := g.fails >= g.limit
	if l.MaxBetween != "" {
		exhausted = g.betweens >= g.limit
	}
	if !exhausted {
		return false, nil
	}
	n := round
	if l.MaxBetween == "" {
		n = g.fails // in a row
	}
	reason := fmt.Sprintf("%s not reached after %d round(s)", l.Until, n)
	if rej != nil {
		reason += "; last: " + rej.reason
	}
	switch l.Exhausted {
	case "continue":
		g.in.Exec.Warn(reason + "; going on")
		g.keep(g.prevBetween, sc.inputs[start:])
		return true, nil
	case "incomplete":
		ans, err := g.in.Exec.Human(ctx, HumanCall{ID: g.in.id(sc, "incomplete"), Kind: HumanIncomplete,
			Reason: reason + "; approve to run more rounds (with your note), reject to end the item"})
		if err != nil {
			return true, err
		}
		if !ans.Approved {
			return true, &incomplete{reason + "; ended by a human: " + ans.Note}
		}
		g.limit += g.bound
		if ans.Note != "" {
			sc.note = "Human feedback: " + ans.Note + "\n\n" + sc.note
		}
		return false, nil
	}
	if rej != nil {
		return true, &rejected{reason: reason}
	}
	return true, &failure{reason}
}

// afterFailed runs the steps after a failed round, begun at input start:
// its on_fail steps where a working role failed, then its between steps.
func (g *goalLoop) afterFailed(ctx context.Context, round, start int, rej *rejected) error {
	l, sc := g.l, g.sc
	g.prevDo, g.prevBetween = append([]string(nil), sc.inputs[start:]...), nil
	if rej != nil && rej.fail && len(l.OnFail) > 0 {
		// A working role could not do its part: find out why before the
		// next round plans again; it reads the diagnosis, and the failure
		// it explains.
		why := sc.note
		out, err := g.in.after(ctx, l.OnFail, sc, round, len(l.Do))
		if err != nil {
			return err
		}
		g.prevBetween, sc.note = out, strings.TrimSpace(sc.note+"\n\n"+why)
	}
	if len(l.Between) > 0 {
		g.betweens++
		out, err := g.in.after(ctx, l.Between, sc, round, len(l.Do))
		if err != nil {
			return err
		}
		g.prevBetween = append(g.prevBetween, out...)
	}
	return nil
}

// after runs steps after a loop's round (its between or on_fail steps), in
// sc, and returns their outputs.
func (in *Interp) after(ctx context.Context, steps []Node, sc *scope, round, index int) ([]string, error) {
	mid := len(sc.inputs)
	asc := *sc
	asc.round, asc.index = round, index
	err := in.seq(ctx, steps, &asc)
	sc.carry(&asc)
	return append([]string(nil), sc.inputs[mid:]...), err
}

// route follows a passing round's Next, as the loop's judge gives it:
// the loop's first role (the planner) starts the next round on a new
// subordinate goal, at most bound of them in a row; anything else (Done)
// means the goal is met, and a human approves it unless
// limits.approve_goal is off or the judge asked for one already (Next:
// Human, which its step's escalation put to a human, who approved it to
// get here). Rejected with a note, the note goes to the planner and
// the loop goes on; without one the item ends. It says whether the loop
// goes on.
func (in *Interp) route(ctx context.Context, l *Loop, sc *scope, subgoals *int, bound int) (bool, error) {
	first := l.Do[0].Role
	again, why := passedNext(l.Do, sc.last.Signal.Next)
	if why != "" && !in.IgnoreNext {
		in.Exec.Warn(refused(sc.last, why))
	}
	if again {
		if *subgoals < bound {
			*subgoals++
			return true, nil
		}
		in.Exec.Warn(fmt.Sprintf("%d subordinate goals passed in a row: the goal is taken as met", bound))
	}
	if !in.Lim.ApproveGoal || strings.EqualFold(strings.TrimSpace(sc.last.Signal.Next), "human") {
		return false, nil
	}
	ans, err := in.Exec.Human(ctx, HumanCall{ID: in.id(sc, "goal"), Kind: HumanGoal, Step: sc.last.Step, Role: sc.last.Role,
		Reason: "the goal is met (" + firstNonEmpty(sc.last.Signal.LoopSummary, sc.last.Signal.Context) +
			"): approve to complete it, or reject with a note for the " + first})
	if err != nil {
		return false, err
	}
	switch {
	case ans.Approved:
		return false, nil
	case strings.TrimSpace(ans.Note) == "":
		return false, &ended{"the goal was rejected by a human"}
	}
	sc.note = "Human feedback: " + ans.Note + "\n\n" + sc.note
	*subgoals = 0
	return true, nil
}

// gate says whether out passes until; pass is the workflow's pass rating.
func gate(until string, out Outcome, pass int) bool {
	switch until {
	case "verdict-pass":
		return out.Signal.Verdict == signal.VerdictPass
	case "result-pass":
		return out.Signal.Result == signal.Pass
	case "rating-pass":
		return out.Signal.Rating != nil && *out.Signal.Rating >= pass
	case "checks-pass":
		return len(out.Regressions) == 0 && !out.Failed
	case "review-pass":
		return true // a rejecting reviewer ended the round before the gate
	}
	return false
}
