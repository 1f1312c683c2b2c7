package engine

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/cadre-dev/cadre/internal/report"
	"github.com/cadre-dev/cadre/internal/roster"
	"github.com/cadre-dev/cadre/internal/store"
)

// pick resolves runner auto for a step: the journaled choice when the step
// was chosen for before (a resumed run), else a new one, journaled with its
// reason before the step starts.
func (e *Engine) pick(ctx context.Context, ir *itemRun, sp agentSpec) (roster.Choice, error) {
	id := sp.ID + "/" + report.KindSelect
	rec, err := e.d.Store.GetStep(ctx, ir.run, id)
	if err == nil && rec.Status == store.StepCompleted {
		var c roster.Choice
		if err := json.Unmarshal(rec.Result, &c); err == nil && c.Runner != "" {
			return c, nil
		}
	} else if err != nil && !errors.Is(err, store.ErrNotFound) {
		return roster.Choice{}, err
	}
	c, err := e.choose(ctx, sp.Role)
	if err != nil {
		return roster.Choice{}, err
	}
	st := store.Step{RunID: ir.run, ItemID: ir.it.ID, ID: id, Role: sp.Role, Runner: c.Runner, Model: c.Model, Kind: report.KindSelect}
	if err := e.d.Store.StartStep(ctx, st); err != nil {
		return roster.Choice{}, err
	}
	st.Status = store.StepCompleted
	st.Result, _ = json.Marshal(c)
	if err := e.d.Store.FinishStep(ctx, st); err != nil {
		return roster.Choice{}, err
	}
	return c, nil
}
