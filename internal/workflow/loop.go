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
			keep(prevBetween, sc.inputs[start:])
			return nil
		}
		exhausted := round >= limit
		if l.MaxBetween != "" {
			exhausted = betweens >= limit
		}
		if exhausted {
			reason := fmt.Sprintf("%s not reached after %d round(s)", l.Until, round)
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
					return &rejected{reason}
				}
				return &failure{reason}
			}
		}
		prevDo, prevBetween = append([]string(nil), sc.inputs[start:]...), nil
		if len(l.Between) > 0 {
			betweens++
			mid := len(sc.inputs)
			bsc := *sc
			bsc.round, bsc.index = round, len(l.Do)
			err := in.seq(ctx, l.Between, &bsc)
			sc.carry(&bsc)
			if err != nil {
				return err
			}
			prevBetween = append([]string(nil), sc.inputs[mid:]...)
		}
	}
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
