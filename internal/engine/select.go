package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/cadre-dev/cadre/internal/config"
	"github.com/cadre-dev/cadre/internal/eval"
	"github.com/cadre-dev/cadre/internal/evalstore"
	"github.com/cadre-dev/cadre/internal/store"
)

// choice is the model selector's pick for one step, journaled so a resumed
// run asks the same runner again.
type choice struct {
	Runner string `json:"runner"`
	Model  string `json:"model"`
	Reason string `json:"reason"`
}

// candidates are the selector's candidates from cadre.yaml.
func (e *Engine) candidates() ([]eval.Candidate, error) {
	cands, err := eval.ParseCandidates(e.d.Config.Selector.Candidates)
	if err != nil {
		return nil, fmt.Errorf("%s: selector.candidates: %w", e.d.Config.Where("selector.candidates"), err)
	}
	if len(cands) == 0 {
		return nil, fmt.Errorf("runner auto needs selector.candidates in cadre.yaml")
	}
	return cands, nil
}

// choose asks the model selector which runner and model serve role, from
// the score store's evaluations of that role (the model selector, docs/evaluation.md).
func (e *Engine) choose(ctx context.Context, role string) (choice, error) {
	cands, err := e.candidates()
	if err != nil {
		return choice{}, err
	}
	stats, err := evalstore.Stats(ctx, e.d.Store, role, cands)
	if err != nil {
		return choice{}, fmt.Errorf("read scores of %s: %w", role, err)
	}
	sel := eval.Selector{MinSamples: e.d.Config.Selector.MinSamples, Explore: e.d.Config.Selector.Explore}
	c, err := sel.Select(cands, stats)
	if err != nil {
		return choice{}, fmt.Errorf("select a runner for %s: %w", role, err)
	}
	model := c.Candidate.Model
	if model == "" {
		model = e.d.Config.Runners[c.Candidate.Runner].Model
	}
	return choice{Runner: c.Candidate.Runner, Model: model, Reason: c.Reason}, nil
}

// pick resolves runner auto for a step: the journaled choice when the step
// was chosen for before (a resumed run), else a new one, journaled with its
// reason before the step starts.
func (e *Engine) pick(ctx context.Context, ir *itemRun, sp agentSpec) (choice, error) {
	id := sp.ID + "/select"
	rec, err := e.d.Store.GetStep(ctx, ir.run, id)
	if err == nil && rec.Status == store.StepCompleted {
		var c choice
		if err := json.Unmarshal(rec.Result, &c); err == nil && c.Runner != "" {
			return c, nil
		}
	} else if err != nil && !errors.Is(err, store.ErrNotFound) {
		return choice{}, err
	}
	c, err := e.choose(ctx, sp.Role)
	if err != nil {
		return choice{}, err
	}
	st := store.Step{RunID: ir.run, ItemID: ir.it.ID, ID: id, Role: sp.Role, Runner: c.Runner, Model: c.Model, Kind: "select"}
	if err := e.d.Store.StartStep(ctx, st); err != nil {
		return choice{}, err
	}
	st.Status = store.StepCompleted
	st.Result, _ = json.Marshal(c)
	if err := e.d.Store.FinishStep(ctx, st); err != nil {
		return choice{}, err
	}
	return c, nil
}

// isAuto says whether a runner name asks the model selector.
func isAuto(name string) bool { return name == config.Auto }

// addPick keeps a journaled choice as its role's latest.
func addPick(is *ItemSummary, st store.Step) {
	var c choice
	if json.Unmarshal(st.Result, &c) != nil {
		return
	}
	p := Pick{Step: strings.TrimSuffix(st.ID, "/select"), Role: st.Role, Runner: c.Runner, Model: c.Model, Reason: c.Reason}
	for i := range is.Picks {
		if is.Picks[i].Role == p.Role {
			is.Picks[i] = p
			return
		}
	}
	is.Picks = append(is.Picks, p)
}
