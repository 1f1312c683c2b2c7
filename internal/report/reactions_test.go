package report

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/cadre-dev/cadre/internal/store"
)

func TestReactionsCountKindsAndCost(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "cadre.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.CreateRun(ctx, store.Run{ID: "r", Status: store.RunCompleted}, store.Item{RunID: "r", ID: "7"}); err != nil {
		t.Fatal(err)
	}
	step := func(id, kind, role, status string, cost float64) {
		t.Helper()
		s := store.Step{RunID: "r", ItemID: "7", ID: id, Kind: kind, Role: role}
		if err := st.StartStep(ctx, s); err != nil {
			t.Fatal(err)
		}
		s.Status, s.Usage = status, store.Usage{InputTokens: 10, CostUSD: cost}
		if err := st.FinishStep(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	step("7/implement/coder#1", "agent", "coder", store.StepCompleted, 1)
	step("7/follow/ci_failed#1", "reaction", "", store.StepCompleted, 0)
	step("7/follow/ci_failed#1/fix-surgeon#1", "agent", "fix-surgeon", store.StepCompleted, 0.25)
	step("7/follow/ci_failed#2", "reaction", "", store.StepFailed, 0)
	step("7/follow/ci_failed#2/fix-surgeon#1", "agent", "fix-surgeon", store.StepFailed, 0.5)
	step("7/follow/conflict#1", "reaction", "", store.StepCompleted, 0)
	step("7/follow/conflict#1/feedback", "feedback", "", store.StepCompleted, 0)
	got, err := Reactions(ctx, st, "r")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Kind != "ci_failed" || got[1].Kind != "conflict" {
		t.Fatalf("reactions %+v, want ci_failed and conflict", got)
	}
	if ci := got[0]; ci.Count != 2 || ci.Failed != 1 || ci.Usage.CostUSD != 0.75 || ci.Usage.InputTokens != 20 {
		t.Errorf("ci_failed %+v, want 2 reactions, 1 failed, $0.75, 20 tokens in", ci)
	}
	if c := got[1]; c.Count != 1 || c.Failed != 0 || c.Usage.CostUSD != 0 {
		t.Errorf("conflict %+v, want 1 reaction at no cost", c)
	}
}
