package follow

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/cadre-dev/cadre/internal/signal"
	"github.com/cadre-dev/cadre/internal/store"
	flow "github.com/cadre-dev/cadre/internal/workflow"
)

// FixCalls are the steps of reaction id's fix, as an executor performs
// them: fix-surgeon's agent step with the note in its prompt and the
// feedback in its context file, the visit it is of its role for the item,
// and the commit.
func FixCalls(ctx context.Context, st *store.Store, it Item, id, note string, fb Feedback) (flow.AgentCall, int, flow.ActionCall, error) {
	step := id + "/fix-surgeon#1"
	// Its visit is the item's fix-surgeon steps before it, and this one.
	steps, err := st.ItemSteps(ctx, it.Run, it.ID)
	if err != nil {
		return flow.AgentCall{}, 0, flow.ActionCall{}, journalErr(err)
	}
	visit := 1
	for _, s := range steps {
		if s.Role == "fix-surgeon" && s.ID != step {
			visit++
		}
	}
	msg := fmt.Sprintf("Fix the failing checks of #%d", it.PR)
	switch {
	case fb.Kind == ChangesRequested:
		msg = fmt.Sprintf("Address the review of #%d", it.PR)
	case fb.Kind == Conflict && fb.Base != nil:
		msg = fmt.Sprintf("Merge %s into %s, conflicts resolved", fb.Base.Branch, it.Branch)
	}
	agent := flow.AgentCall{ID: step, Role: "fix-surgeon", Workflow: "follow", Phase: "follow", Note: note,
		Payload: map[string]any{"feedback": fb}}
	commit := flow.ActionCall{ID: id + "/commit", Kind: "commit", Phase: "follow", Text: msg}
	return agent, visit, commit, nil
}

// FixedOf is what a fix did: its agent step's outcome, and the commit
// the journal has for it.
func FixedOf(ctx context.Context, st *store.Store, it Item, id string, out flow.Outcome) (Fixed, error) {
	if out.Failed {
		return Fixed{Failed: out.Reason, Result: string(out.Signal.Result)}, nil
	}
	if !Commits(out) {
		return Fixed{Result: string(out.Signal.Result), Output: out.Text}, nil
	}
	rec, err := st.GetStep(ctx, it.Run, id+"/commit")
	if err != nil {
		return Fixed{}, err
	}
	if rec.Status != store.StepCompleted {
		return Fixed{Failed: "commit: " + rec.Error}, nil
	}
	var res struct {
		Commit string `json:"commit"`
	}
	json.Unmarshal(rec.Result, &res)
	return Fixed{Result: string(out.Signal.Result), Commit: res.Commit, Output: out.Text}, nil
}

// Commits says whether a fix's agent step is followed by its commit: only
// when it answered SUCCESS (a FAIL's changes are not what it vouches for).
func Commits(out flow.Outcome) bool {
	return !out.Failed && out.Signal.Result == signal.Success
}
