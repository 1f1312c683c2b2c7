package eval_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cadre-dev/cadre/eval"
	"github.com/cadre-dev/cadre/internal/store"
)

// The selector reads a repository's score store the way runner: auto
// does: a bare runner counts all its models; a repository without a store
// is a clear error.
func TestSelectorOverStoreScores(t *testing.T) {
	ctx := context.Background()
	repo := t.TempDir()
	if _, err := eval.OpenScores(ctx, repo); err == nil || !strings.Contains(err.Error(), "no score store at") {
		t.Fatalf("OpenScores of an empty dir: %v", err)
	}
	st, err := store.Open(ctx, filepath.Join(repo, ".cadre", "cadre.db"))
	if err != nil {
		t.Fatal(err)
	}
	score := func(f float64) *float64 { return &f }
	var evs []store.Evaluation
	for i, r := range []struct {
		runner, model string
		score         float64
	}{{"claude", "sonnet", 0.9}, {"claude", "opus", 0.8}, {"codex", "", 0.3}, {"codex", "", 0.4}} {
		evs = append(evs, store.Evaluation{Source: store.SourceBench, RunID: "b", StepID: "s" + string(rune('a'+i)),
			Role: "executor", Runner: r.runner, Model: r.model, Kind: store.KindBench, Score: score(r.score)})
	}
	if err := st.RecordEvaluations(ctx, evs...); err != nil {
		t.Fatal(err)
	}
	st.Close()
	scores, err := eval.OpenScores(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	defer scores.Close()
	runner, model, reason, err := eval.Selector{Scores: scores, Candidates: []string{"codex", "claude"}, MinSamples: 2}.Select(ctx, "executor")
	if err != nil || runner != "claude" || model != "" || !strings.Contains(reason, "0.85 quality") {
		t.Errorf("Select = %s %q (%s) %v, want claude with 0.85 quality over its two models", runner, model, reason, err)
	}
	runner, model, _, err = eval.Selector{Scores: scores, Candidates: []string{"codex", "claude/opus"}, MinSamples: 2}.Select(ctx, "executor")
	if err != nil || runner != "claude" || model != "opus" {
		t.Errorf("Select = %s/%s %v; claude/opus has one sample of 2, so it is tried next", runner, model, err)
	}
}
