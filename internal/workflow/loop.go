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

// loopGoal runs l's rounds for one goal.
func (in *Interp) loopGoal(ctx context.Context, l *Loop, sc *scope) error {
	bound := in.Lim.bound(l.Max + l.MaxBetween) // exactly one is set
	limit, betweens := bound, 0
	// A round reads what came before the loop, the round before it and
	// the steps between them (the review a fixer answers, the fix a
	// reviewer checks); older rounds are superseded and left out. Once
	// the loop ends, the steps after it read the last round and the fix
	// before it, not the rounds it superseded.
	base := len(sc.inputs)
	var prevDo, prevBetween []string
	keep := func(lists ...[]string) {
		in := append([]string(nil), sc.inputs[:base]...)
		for _, l := range lists {
			in = append(in, l...)
		}
		sc.inputs = in
	}
	fails, subgoals := 0, 0 // rounds failed in a row; subordinate goals passed in a row
	for round := 1; ; round++ {
		keep(prevDo, prevBetween)
		start := len(sc.inputs)
		rsc := *sc
		rsc.round, rsc.index, rsc.inRound = round, 0, true
		err := in.seq(ctx, l.Do, &rsc)
		sc.carry(&rsc)
		var rej *rejected
		switch {
		case errors.As(err, &rej):
			// The round failed: the next one starts from why.
			sc.note = strings.TrimSpace(rej.reason + "\n\n" + sc.note)
		case err != nil:
			return err
		case gate(l.Until, sc.last, sc.pass):
			goOn := false
			if l.Next == "route" {
				if goOn, err = in.route(ctx, l, sc, &subgoals, bound); err != nil {
					return err
				}
			}
			if !goOn {
				keep(prevBetween, sc.inputs[start:])
				return nil
			}
			// The next round starts on a new subordinate goal, and the
			// rounds that fail in a row are counted again from none, up to
			// the loop's bound (not one a human extended before).
			fails, prevDo, prevBetween = 0, append([]string(nil), sc.inputs[start:]...), nil
			if l.MaxBetween == "" {
				limit = bound
			}
			continue
		}
		fails, subgoals = fails+1, 0
		exhausted := fails >= limit
		if l.MaxBetween != "" {
			exhausted = betweens >= limit
		}
		if exhausted {
			n := round
			if l.MaxBetween == "" {
				n = fails // in a row
			}
			reason := fmt.Sprintf("%s not reached after %d round(s)", l.Until, n)
			if rej != nil {
				reason += "; last: " + rej.reason
			}
			switch l.Exhausted {
			case "continue":
				in.Exec.Warn(reason + "; going on")
				keep(prevBetween, sc.inputs[start:])
				return nil
			case "incomplete":
				ans, err := in.Exec.Human(ctx, HumanCall{ID: in.id(sc, "incomplete"), Kind: HumanIncomplete,
					Reason: reason + "; approve to run more rounds (with your note), reject to end the item"})
				if err != nil {
					return err
				}
				if !ans.Approved {
					return &incomplete{reason + "; ended by a human: " + ans.Note}
				}
				limit += bound
				if ans.Note != "" {
					sc.note = "Human feedback: " + ans.Note + "\n\n" + sc.note
				}
			default:
				if rej != nil {
					return &rejected{reason: reason}
				}
				return &failure{reason}
			}
		}
		prevDo, prevBetween = append([]string(nil), sc.inputs[start:]...), nil
		if rej != nil && rej.fail && len(l.OnFail) > 0 {
			// A working role could not do its part: find out why before
			// the next round plans again; it reads the diagnosis, and the
			// failure it explains.
			why := sc.note
			out, err := in.after(ctx, l.OnFail, sc, round, len(l.Do))
			if err != nil {
				return err
			}
			prevBetween, sc.note = out, strings.TrimSpace(sc.note+"\n\n"+why)
		}
		if len(l.Between) > 0 {
			betweens++
			out, err := in.after(ctx, l.Between, sc, round, len(l.Do))
			if err != nil {
				return err
			}
			prevBetween = append(prevBetween, out...)
		}
	}
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

// route follows a passing round's Next, as seed 002's judge gives it:
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
	if strings.EqualFold(strings.TrimSpace(sc.last.Signal.Next), first) {
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
