package reply

import (
	"errors"
	"testing"

	"github.com/cadre-dev/cadre/internal/eval"
	"github.com/cadre-dev/cadre/internal/signal"
)

// TestJudge: a usable judgement rates the reply and stands in for a
// missing block, PASS from the pass rating up; an unusable one is to be
// re-asked; without one the block decides.
func TestJudge(t *testing.T) {
	rubric := eval.Rubric{"correctness": "it works"}
	noBlock := errors.New("no SIGNAL BLOCK")
	judgement := func(overall string) string {
		return `{"scores":{"correctness":` + overall + `},"overall":` + overall + `,"reasoning":"r"}`
	}
	tests := []struct {
		name       string
		output     string
		perr       error
		wantResult signal.Result
		wantRating int // 0: none
		wantErr    bool
		wantReask  bool
	}{
		{"judgement alone passes", judgement("8"), noBlock, signal.Pass, 8, false, false},
		{"judgement alone below the pass rating", judgement("5"), noBlock, signal.Insufficient, 5, false, false},
		{"judgement rates over the block", judgement("4"), nil, signal.Pass, 4, false, false},
		{"unusable judgement", `{"scores":{"correctness":11},"overall":8}`, nil, signal.Pass, 0, true, true},
		{"no judgement, no block", "I like it.", noBlock, "", 0, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sig := signal.Signal{Result: signal.Pass}
			if tt.perr != nil {
				sig = signal.Signal{}
			}
			got := Judge(tt.output, sig, tt.perr, rubric, 7)
			if got.Signal.Result != tt.wantResult {
				t.Errorf("result %q, want %q", got.Signal.Result, tt.wantResult)
			}
			if rating := got.Signal.Rating; (tt.wantRating == 0) != (rating == nil) || (rating != nil && *rating != tt.wantRating) {
				t.Errorf("rating %v, want %d", rating, tt.wantRating)
			}
			if (got.Err != nil) != tt.wantErr || (got.Reask != nil) != tt.wantReask || (got.Judgement != nil) != (tt.wantRating != 0) {
				t.Errorf("err %v, reask %v, judgement %v", got.Err, got.Reask, got.Judgement)
			}
		})
	}
}
