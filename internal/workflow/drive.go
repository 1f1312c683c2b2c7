package workflow

import (
	"context"
	"fmt"
)

// Stager performs the stage pipeline's effects for one item, in whichever
// executor runs it (the embedded engine, a Temporal workflow). Drive
// decides; a Stager only acts.
type Stager interface {
	// Stopping says whether the item must start no new stage: cadre stop
	// came, or another item halted the run.
	Stopping() bool
	// Stage performs (or replays from the journal) the step of decision
	// d, made in state s, and returns what the step produced.
	Stage(ctx context.Context, s State, d Decision) (Event, error)
	// Ask puts decision d's question to a human and returns the answer.
	Ask(ctx context.Context, s State, d Decision) (Answer, error)
}

// Drive runs the stage pipeline from state s and its decision d until a
// decision ends the item (Complete, HardStop or Stopped, returned with
// the state it was made in), or an effect fails: then the state and
// decision it failed in are returned with its error. Before each
// decision, a Stopping item is told so (a Stop event), so the running
// step finishes and no new stage starts.
func Drive(ctx context.Context, lim Limits, x Stager, s State, d Decision) (State, Decision, error) {
	next := func(s State, ev Event) (State, Decision) {
		if !s.Stopping && x.Stopping() {
			s, _ = Next(lim, s, Event{Kind: Stop})
		}
		return Next(lim, s, ev)
	}
	for {
		switch d.Kind {
		case RunStep:
			ev, err := x.Stage(ctx, s, d)
			if err != nil {
				return s, d, err
			}
			s, d = next(s, ev)
		case AskHuman:
			ans, err := x.Ask(ctx, s, d)
			if err != nil {
				return s, d, err
			}
			s, d = next(s, Event{Kind: Answered, Human: &ans})
		case Complete, HardStop, Stopped:
			return s, d, nil
		default:
			return s, d, fmt.Errorf("item %s: unexpected decision %v", s.Item, d.Kind)
		}
	}
}

// Begin is the stage pipeline's first decision for an item, told first
// when it must start no new stage.
func Begin(lim Limits, item, stage string, attempts int, stopping bool) (State, Decision) {
	s := Initial(item, stage, attempts)
	if stopping {
		s, _ = Next(lim, s, Event{Kind: Stop})
	}
	return Next(lim, s, Event{Kind: Start})
}
