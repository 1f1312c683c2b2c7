package eval

import (
	"math"
	"strings"
	"testing"
)

var (
	claude = Candidate{Runner: "claude", Model: "sonnet"}
	codex  = Candidate{Runner: "codex"}
	ollama = Candidate{Runner: "ollama", Model: "qwen3"}
)

func TestParseCandidate(t *testing.T) {
	tests := []struct {
		in   string
		want Candidate
		err  string
	}{
		{"claude", Candidate{Runner: "claude"}, ""},
		{" claude/sonnet ", Candidate{Runner: "claude", Model: "sonnet"}, ""},
		{"openai/meta-llama/llama-3.1-8b", Candidate{Runner: "openai", Model: "meta-llama/llama-3.1-8b"}, ""},
		{"", Candidate{}, `candidate "": want "runner" or "runner/model"`},
		{"claude/", Candidate{}, `no model after "/"`},
		{"/sonnet", Candidate{}, `runner "" is not a runner name`},
		{"Claude Code/x", Candidate{}, `runner "Claude Code" is not a runner name`},
		{"claude/son net", Candidate{}, "white space"},
	}
	for _, tt := range tests {
		got, err := ParseCandidate(tt.in)
		if tt.err == "" {
			if err != nil || got != tt.want {
				t.Errorf("ParseCandidate(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
			}
			if got.String() != strings.TrimSpace(tt.in) {
				t.Errorf("String() = %q, want %q", got.String(), strings.TrimSpace(tt.in))
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("ParseCandidate(%q) error %v, want %q", tt.in, err, tt.err)
		}
	}
	cs, err := ParseCandidates([]string{"claude/sonnet", "codex"})
	if err != nil || len(cs) != 2 || cs[0] != claude || cs[1] != codex {
		t.Errorf("ParseCandidates = %v, %v", cs, err)
	}
	if _, err := ParseCandidates([]string{"codex", "x/"}); err == nil || !strings.HasPrefix(err.Error(), "candidates[1]: ") {
		t.Errorf("error %v does not name the entry", err)
	}
}

func TestSelect(t *testing.T) {
	three := []Candidate{claude, codex, ollama}
	tests := []struct {
		name   string
		sel    Selector
		cands  []Candidate
		stats  map[Candidate]Stats
		want   Candidate
		reason string // substring of the Reason
	}{
		{
			"no data: the first candidate", Selector{MinSamples: 3, Explore: 1}, three, nil,
			claude, "claude/sonnet: 0 of 3 samples so far; trying candidates without enough data first",
		},
		{
			"the first under-sampled candidate in listed order beats a good record",
			Selector{MinSamples: 3},
			three,
			map[Candidate]Stats{claude: {Samples: 50, MeanQuality: 0.95}, codex: {Samples: 2, MeanQuality: 0.1}},
			codex, "codex: 2 of 3 samples",
		},
		{
			"min samples below one still tries an unsampled candidate",
			Selector{MinSamples: 0},
			[]Candidate{claude, codex},
			map[Candidate]Stats{claude: {Samples: 5, MeanQuality: 0.9}},
			codex, "codex: 0 of 1 samples",
		},
		{
			"one candidate with data",
			Selector{MinSamples: 3, Explore: 0.1},
			[]Candidate{claude},
			map[Candidate]Stats{claude: {Samples: 14, MeanQuality: 0.82, MeanCostUSD: 0.031}},
			claude, "claude/sonnet: 0.82 quality at $0.031 per step over 14 samples (score 0.61, explore 0.04)",
		},
		{
			"ties go to the first listed",
			Selector{MinSamples: 1, Explore: 0.5},
			three,
			map[Candidate]Stats{claude: {Samples: 9, MeanQuality: 0.7}, codex: {Samples: 9, MeanQuality: 0.7}, ollama: {Samples: 9, MeanQuality: 0.7}},
			claude, "next codex",
		},
		{
			"ties go to the first listed, whichever that is",
			Selector{MinSamples: 1, Explore: 0.5},
			[]Candidate{ollama, codex, claude},
			map[Candidate]Stats{claude: {Samples: 9, MeanQuality: 0.7}, codex: {Samples: 9, MeanQuality: 0.7}, ollama: {Samples: 9, MeanQuality: 0.7}},
			ollama, "next codex",
		},
		{
			"better quality wins without exploration",
			Selector{MinSamples: 1},
			three,
			map[Candidate]Stats{claude: {Samples: 5, MeanQuality: 0.6}, codex: {Samples: 5, MeanQuality: 0.8}, ollama: {Samples: 5, MeanQuality: 0.7}},
			codex, "next ollama/qwen3 (score 0.70)",
		},
		{
			"duplicates count once",
			Selector{MinSamples: 1},
			[]Candidate{claude, claude, codex},
			map[Candidate]Stats{claude: {Samples: 4, MeanQuality: 0.5}, codex: {Samples: 4, MeanQuality: 0.6}},
			codex, "next claude/sonnet",
		},
		{
			"unusable figures are sanitised, not propagated",
			Selector{MinSamples: 1},
			[]Candidate{claude, codex},
			map[Candidate]Stats{claude: {Samples: 4, MeanQuality: math.NaN(), MeanCostUSD: math.Inf(1)}, codex: {Samples: 4, MeanQuality: 2, MeanCostUSD: -1}},
			codex, "codex: 1.00 quality at $0.000",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.sel.Select(tt.cands, tt.stats)
			if err != nil {
				t.Fatal(err)
			}
			if got.Candidate != tt.want || !strings.Contains(got.Reason, tt.reason) || strings.Contains(got.Reason, "\n") {
				t.Errorf("Select = %+v, want %v with reason containing %q", got, tt.want, tt.reason)
			}
			if math.IsNaN(got.Score) {
				t.Errorf("NaN score")
			}
		})
	}
	if _, err := (Selector{}).Select(nil, nil); err == nil {
		t.Error("no candidates accepted")
	}
}

func TestSelectCostWeighting(t *testing.T) {
	tests := []struct {
		name       string
		a, b       Stats // for claude and codex, listed in that order
		want       Candidate
		wantReason string
	}{
		{"equal quality: the cheaper wins even when listed second",
			Stats{Samples: 10, MeanQuality: 0.8, MeanCostUSD: 0.05}, Stats{Samples: 10, MeanQuality: 0.8, MeanCostUSD: 0.04}, codex, ""},
		{"equal quality: a free runner wins and nothing divides by zero",
			Stats{Samples: 10, MeanQuality: 0.8, MeanCostUSD: 0.05}, Stats{Samples: 10, MeanQuality: 0.8}, codex, "$0.000"},
		{"all free: quality alone decides",
			Stats{Samples: 10, MeanQuality: 0.7}, Stats{Samples: 10, MeanQuality: 0.6}, claude, "(score 0.70"},
		{"much better quality beats slightly cheaper",
			Stats{Samples: 10, MeanQuality: 0.9, MeanCostUSD: 0.10}, Stats{Samples: 10, MeanQuality: 0.6, MeanCostUSD: 0.09}, claude, ""},
		{"slightly better quality at ten times the cost loses",
			Stats{Samples: 10, MeanQuality: 0.82, MeanCostUSD: 1.0}, Stats{Samples: 10, MeanQuality: 0.80, MeanCostUSD: 0.1}, codex, ""},
		{"the penalty is relative, so units do not matter",
			Stats{Samples: 10, MeanQuality: 0.9, MeanCostUSD: 100}, Stats{Samples: 10, MeanQuality: 0.6, MeanCostUSD: 90}, claude, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Selector{MinSamples: 3}.Select([]Candidate{claude, codex}, map[Candidate]Stats{claude: tt.a, codex: tt.b})
			if err != nil {
				t.Fatal(err)
			}
			if got.Candidate != tt.want || !strings.Contains(got.Reason, tt.wantReason) {
				t.Errorf("Select = %+v, want %v (reason containing %q)", got, tt.want, tt.wantReason)
			}
		})
	}
}

func TestUCBBonus(t *testing.T) {
	const explore, total = 0.5, 1000
	prev := math.Inf(1)
	for n := 1; n <= total; n++ {
		b := ucbBonus(explore, total, n)
		if b >= prev {
			t.Fatalf("bonus(%d) = %v does not shrink from %v", n, b, prev)
		}
		if limit := explore * math.Sqrt(math.Log(total)); b < 0 || b > limit {
			t.Fatalf("bonus(%d) = %v outside [0, %v]", n, b, limit)
		}
		prev = b
	}
	for _, tt := range []struct {
		explore  float64
		total, n int
		want     float64
		name     string
	}{
		{0, 100, 1, 0, "no exploration"},
		{1, 1, 1, 0, "a single sample has nothing to compare"},
		{1, 100, 0, 0, "no samples is handled by MinSamples, not by an infinite bonus"},
		{1, 100, 25, math.Sqrt(math.Log(100) / 25), "UCB1"},
	} {
		if got := ucbBonus(tt.explore, tt.total, tt.n); math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("%s: ucbBonus(%v, %d, %d) = %v, want %v", tt.name, tt.explore, tt.total, tt.n, got, tt.want)
		}
	}
}

// TestSelectExplorationIsBounded runs the selector against two candidates
// whose true quality differs by gap, feeding each pick back as a sample.
// The worse candidate must be retried beyond MinSamples while exploration
// is on (the bonus lifts it), but no more than UCB1's bound: once
// explore·sqrt(ln N / n) < gap it can no longer win, so
// n ≤ explore²·ln N / gap² (+1 for the pick that crosses it).
func TestSelectExplorationIsBounded(t *testing.T) {
	const (
		rounds = 2000
		gap    = 0.2
	)
	run := func(explore float64) (worseSamples int) {
		sel := Selector{MinSamples: 3, Explore: explore}
		stats := map[Candidate]Stats{
			claude: {MeanQuality: 0.8, MeanCostUSD: 0.02},
			codex:  {MeanQuality: 0.8 - gap, MeanCostUSD: 0.02},
		}
		for i := 0; i < rounds; i++ {
			ch, err := sel.Select([]Candidate{claude, codex}, stats)
			if err != nil {
				t.Fatal(err)
			}
			s := stats[ch.Candidate]
			s.Samples++
			stats[ch.Candidate] = s
			// The bonus at each pick is within UCB1's bound for the
			// samples the candidate had then.
			if bound := explore * math.Sqrt(math.Log(rounds)/float64(max(s.Samples-1, 1))); ch.Bonus > bound+1e-12 {
				t.Fatalf("round %d: bonus %v above %v", i, ch.Bonus, bound)
			}
		}
		return stats[codex].Samples
	}
	if n := run(0); n != 3 {
		t.Errorf("without exploration the worse candidate ran %d times, want exactly MinSamples (3)", n)
	}
	explore := 0.5
	n := run(explore)
	limit := int(math.Ceil(explore*explore*math.Log(rounds)/(gap*gap))) + 1
	if n <= 3 || n > limit {
		t.Errorf("with explore %v the worse candidate ran %d times, want more than 3 and at most %d", explore, n, limit)
	}
}
