package eval

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestStatsFor(t *testing.T) {
	recs := []Record{
		{Runner: "claude", Model: "sonnet", Scored: 3, MeanScore: 0.8, Costed: 2, MeanCostUSD: 0.10},
		{Runner: "claude", Model: "opus", Scored: 1, MeanScore: 0.4, Costed: 1, MeanCostUSD: 0.40},
		{Runner: "claude", Model: "", Scored: 4, MeanScore: 0.5, Costed: 0},
		{Runner: "codex", Model: "", Scored: 0, Costed: 5, MeanCostUSD: 1},
		{Runner: "ollama", Model: "qwen3", Scored: 2, MeanScore: 0.6},
	}
	tests := []struct {
		name  string
		cands []Candidate
		want  map[Candidate]Stats
	}{
		{
			name:  "a runner without a model takes every model's rows",
			cands: []Candidate{{Runner: "claude"}},
			// (3·0.8 + 1·0.4 + 4·0.5) / 8; cost (2·0.10 + 1·0.40) / 3
			want: map[Candidate]Stats{{Runner: "claude"}: {Samples: 8, MeanQuality: 0.6, MeanCostUSD: 0.2}},
		},
		{
			name:  "a runner/model takes only that model's rows",
			cands: []Candidate{{Runner: "claude", Model: "sonnet"}, {Runner: "claude", Model: "opus"}},
			want: map[Candidate]Stats{
				{Runner: "claude", Model: "sonnet"}: {Samples: 3, MeanQuality: 0.8, MeanCostUSD: 0.10},
				{Runner: "claude", Model: "opus"}:   {Samples: 1, MeanQuality: 0.4, MeanCostUSD: 0.40},
			},
		},
		{
			name:  "a model the records do not hold, and a runner with no scored rows, are left out",
			cands: []Candidate{{Runner: "claude", Model: "haiku"}, {Runner: "codex"}, {Runner: "gemini"}},
			want:  map[Candidate]Stats{},
		},
		{
			name:  "no cost recorded means free",
			cands: []Candidate{{Runner: "ollama"}, {Runner: "ollama", Model: "qwen3"}},
			want: map[Candidate]Stats{
				{Runner: "ollama"}:                 {Samples: 2, MeanQuality: 0.6},
				{Runner: "ollama", Model: "qwen3"}: {Samples: 2, MeanQuality: 0.6},
			},
		},
	}
	approx := cmp.Comparer(func(a, b float64) bool { return math.Abs(a-b) < 1e-9 })
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := StatsFor(tt.cands, recs)
			if diff := cmp.Diff(tt.want, got, approx); diff != "" {
				t.Errorf("StatsFor (-want +got):\n%s", diff)
			}
		})
	}
}
