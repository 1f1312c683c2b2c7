package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/store"
)

// Verify runs the named project commands (follow.verify) in the item's
// tree under its confinement, as step id of kind "verify", and says why
// the tree does not pass ("" when it does). A verification the journal
// has as completed is replayed; one that failed is run again, as the tree
// may have changed since.
func (s *ItemSteps) Verify(ctx context.Context, id string, names []string) (string, error) {
	if err := s.provision(ctx); err != nil {
		return "", err
	}
	e, ir := s.e, s.ir
	prev, err := e.d.Store.GetStep(ctx, ir.run, id)
	if err == nil && prev.Status == store.StepCompleted {
		return "", nil
	} else if err != nil && !errors.Is(err, store.ErrNotFound) {
		return "", err
	}
	rec := store.Step{RunID: ir.run, ItemID: ir.it.ID, ID: id, Kind: "verify"}
	if err := e.d.Store.StartStep(ctx, rec); err != nil {
		return "", journalErr(ir.it.ID, err)
	}
	e.publish(ir, event.Event{Type: event.StepStarted, Phase: "follow", Step: id, Message: "verify"})
	// The commands run what the item's agents wrote: as they do, they run
	// confined or not at all.
	failure := e.unconfinedRefusal(ir.it)
	var exits map[string]int
	var out string
	if failure == "" {
		exits, out, failure = s.runVerify(ctx, id, names)
	}
	if ctx.Err() != nil {
		return "", ctx.Err()
	}
	if failure != "" {
		rec.Status, rec.Error = store.StepFailed, failure
		if err := e.finishStep(context.WithoutCancel(ctx), rec); err != nil {
			return "", err
		}
		e.publish(ir, event.Event{Type: event.StepFailed, Phase: "follow", Step: id, Error: failure})
		return failure, nil
	}
	rec.Status = store.StepCompleted
	rec.Result, _ = json.Marshal(actionResult{Exits: exits, Output: out})
	if err := e.finishStep(ctx, rec); err != nil {
		return "", err
	}
	ran := slices.Sorted(maps.Keys(exits))
	e.publish(ir, event.Event{Type: event.StepCompleted, Phase: "follow", Step: id, Message: "verify: " + strings.Join(ran, ", ")})
	return "", nil
}

// runVerify runs the named commands and says why they fail ("" when they
// pass), with their exit codes and the summary's path.
func (s *ItemSteps) runVerify(ctx context.Context, id string, names []string) (map[string]int, string, string) {
	exits, sum, out, err := s.fx.runCommands(ctx, id, names)
	if err != nil {
		return nil, "", err.Error()
	}
	if err := writeStepFile(s.ir.outDir, out, []byte(sum)); err != nil {
		return exits, out, err.Error()
	}
	var bad []string
	for _, name := range names {
		if code, ran := exits[name]; ran && code != 0 {
			bad = append(bad, fmt.Sprintf("%s exited %d", name, code))
		}
	}
	if len(bad) > 0 {
		return exits, out, strings.Join(bad, ", ") + " (see " + out + ")"
	}
	return exits, out, ""
}
