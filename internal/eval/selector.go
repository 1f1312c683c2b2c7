package eval

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strings"
)

// Candidate is a runner, optionally with a model, that may do a role.
type Candidate struct {
	Runner string
	Model  string // "" for the runner's default model
}

// String returns the candidate as configured: "runner" or "runner/model".
func (c Candidate) String() string {
	if c.Model == "" {
		return c.Runner
	}
	return c.Runner + "/" + c.Model
}

var runnerNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*$`)

// ParseCandidate reads "runner" or "runner/model". The model is everything
// after the first "/", since model names may hold slashes themselves
// ("openai/meta-llama/llama-3.1-8b" on an OpenAI-compatible server).
func ParseCandidate(s string) (Candidate, error) {
	t := strings.TrimSpace(s)
	runner, model, hasModel := strings.Cut(t, "/")
	switch {
	case t == "":
		return Candidate{}, errors.New(`candidate "": want "runner" or "runner/model"`)
	case !runnerNameRE.MatchString(runner):
		return Candidate{}, fmt.Errorf("candidate %q: runner %q is not a runner name (lower-case letters, digits, '-', '_')", s, runner)
	case hasModel && model == "":
		return Candidate{}, fmt.Errorf("candidate %q: no model after \"/\"", s)
	case strings.ContainsFunc(model, func(r rune) bool { return r <= ' ' }):
		return Candidate{}, fmt.Errorf("candidate %q: the model name holds white space", s)
	}
	return Candidate{Runner: runner, Model: model}, nil
}

// ParseCandidates reads a selector's candidate list; the error names the
// position of the first bad entry.
func ParseCandidates(ss []string) ([]Candidate, error) {
	out := make([]Candidate, 0, len(ss))
	for i, s := range ss {
		c, err := ParseCandidate(s)
		if err != nil {
			return nil, fmt.Errorf("candidates[%d]: %w", i, err)
		}
		out = append(out, c)
	}
	return out, nil
}

// Stats are a candidate's recorded evaluations for one role.
type Stats struct {
	Samples     int     // evaluations recorded
	MeanQuality float64 // 0..1, e.g. the judge's overall/10, 0 when the gatekeeper failed
	MeanCostUSD float64 // mean cost of one step; 0 for free runners
}

// CostWeight is the most quality the dearest candidate gives up for its
// cost (see the package doc). A quarter means a candidate must be more than
// 0.25 better in quality to be worth any price.
const CostWeight = 0.25

// Selector picks a candidate for a role from recorded evaluations: UCB1
// over quality minus relative cost (see the package doc for the formula
// and why).
type Selector struct {
	// MinSamples is how many samples a candidate needs before it competes
	// on its record; candidates with fewer are tried first. Values below 1
	// count as 1, since UCB1 cannot score a candidate without samples.
	MinSamples int
	// Explore weighs the exploration bonus; 0 always exploits the best
	// record. Negative values count as 0.
	Explore float64
}

// Choice is a Selector's pick and why.
type Choice struct {
	Candidate Candidate
	Reason    string  // one line, for the journal and `cadre scores`
	Score     float64 // value plus bonus; 0 when picked for lack of data
	Bonus     float64 // the exploration part of Score
}

// Select picks among cands using stats (keyed by candidate; a candidate
// without an entry has no samples). Duplicate candidates count once.
func (s Selector) Select(cands []Candidate, stats map[Candidate]Stats) (Choice, error) {
	if len(cands) == 0 {
		return Choice{}, errors.New("select: no candidates")
	}
	minSamples := max(s.MinSamples, 1)
	var (
		uniq    []Candidate
		st      = map[Candidate]Stats{}
		total   int
		maxCost float64
	)
	for _, c := range cands {
		if _, dup := st[c]; dup {
			continue
		}
		x := sanitize(stats[c])
		uniq = append(uniq, c)
		st[c] = x
		total += x.Samples
		maxCost = math.Max(maxCost, x.MeanCostUSD)
	}
	// Every candidate gets MinSamples before records are compared: one
	// lucky or unlucky run says little, and UCB1 needs a sample per arm.
	for _, c := range uniq {
		if n := st[c].Samples; n < minSamples {
			return Choice{Candidate: c, Reason: fmt.Sprintf(
				"%s: %d of %d samples so far; trying candidates without enough data first, in listed order", c, n, minSamples)}, nil
		}
	}
	explore := math.Max(s.Explore, 0)
	var best, second *Choice
	for _, c := range uniq {
		x := st[c]
		bonus := ucbBonus(explore, total, x.Samples)
		ch := Choice{Candidate: c, Score: value(x, maxCost) + bonus, Bonus: bonus}
		// Strictly greater, with a little slack for rounding, so ties go
		// to the candidate listed first.
		switch {
		case best == nil || ch.Score > best.Score+1e-12:
			second, best = best, &ch
		case second == nil || ch.Score > second.Score+1e-12:
			second = &ch
		}
	}
	x := st[best.Candidate]
	best.Reason = fmt.Sprintf("%s: %.2f quality at $%.3f per step over %d samples (score %.2f, explore %.2f)",
		best.Candidate, x.MeanQuality, x.MeanCostUSD, x.Samples, best.Score, best.Bonus)
	if second != nil {
		best.Reason += fmt.Sprintf("; next %s (score %.2f)", second.Candidate, second.Score)
	}
	return *best, nil
}

// value is what a candidate's record is worth: its quality less a cost
// penalty relative to the dearest candidate. Relative, so free runners
// need no division and the penalty is at most CostWeight.
func value(x Stats, maxCost float64) float64 {
	if maxCost <= 0 {
		return x.MeanQuality
	}
	return x.MeanQuality - CostWeight*x.MeanCostUSD/maxCost
}

// ucbBonus is UCB1's exploration term, explore·sqrt(ln N / n): large while
// a candidate has few of the N samples, shrinking as it gains them, so a
// candidate that looked worse early still gets retried now and then, but
// ever more rarely.
func ucbBonus(explore float64, total, samples int) float64 {
	if explore <= 0 || samples <= 0 || total <= 1 {
		return 0
	}
	return explore * math.Sqrt(math.Log(float64(total))/float64(samples))
}

// sanitize keeps recorded figures in range: the store is data from past
// runs and may hold anything; a NaN would make every comparison false.
func sanitize(x Stats) Stats {
	x.Samples = max(x.Samples, 0)
	if math.IsNaN(x.MeanQuality) {
		x.MeanQuality = 0
	}
	x.MeanQuality = math.Min(math.Max(x.MeanQuality, 0), 1)
	if math.IsNaN(x.MeanCostUSD) || math.IsInf(x.MeanCostUSD, 0) || x.MeanCostUSD < 0 {
		x.MeanCostUSD = 0 // unusable: no cost known, as for a runner that reports none
	}
	return x
}
