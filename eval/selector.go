package eval

import (
	"context"
	"fmt"
	"math"
	"sync"

	ieval "github.com/cadre-dev/cadre/internal/eval"
)

// Scores are recorded evaluations the Selector picks from. The cadre score
// store implements it; MemoryScores is an in-memory one.
type Scores interface {
	// Stats returns, per candidate, the evaluations recorded for role.
	Stats(ctx context.Context, role string) (map[Candidate]Stats, error)
}

// Selector picks the runner and model that do a role best for the money:
// UCB1 over mean quality minus a relative cost penalty, trying candidates
// without enough samples first (seed 003's ModelSelector; the formula is
// the one `runner: auto` uses, documented in docs/library.md).
type Selector struct {
	Scores Scores
	// Candidates are "runner" or "runner/model", as in cadre.yaml's
	// selector.candidates.
	Candidates []string
	// MinSamples each candidate needs before it competes on its record
	// (at least 1).
	MinSamples int
	// Explore weighs the exploration bonus; 0 always takes the best record.
	Explore float64
}

// Select picks a candidate for role and says why in one line.
func (s Selector) Select(ctx context.Context, role string) (runner, model, reason string, err error) {
	cands, err := ieval.ParseCandidates(s.Candidates)
	if err != nil {
		return "", "", "", fmt.Errorf("select for %s: %w", role, err)
	}
	if s.Scores == nil {
		return "", "", "", fmt.Errorf("select for %s: no Scores", role)
	}
	stats, err := s.Scores.Stats(ctx, role)
	if err != nil {
		return "", "", "", fmt.Errorf("select for %s: %w", role, err)
	}
	ch, err := ieval.Selector{MinSamples: s.MinSamples, Explore: s.Explore}.Select(cands, stats)
	if err != nil {
		return "", "", "", fmt.Errorf("select for %s: %w", role, err)
	}
	return ch.Candidate.Runner, ch.Candidate.Model, ch.Reason, nil
}

// MemoryScores keeps evaluations in memory; safe for concurrent use. The
// zero value is ready.
type MemoryScores struct {
	mu   sync.Mutex
	sums map[string]map[Candidate]sum
}

type sum struct {
	n             int
	quality, cost float64
}

// Record adds one evaluation of c doing role: quality 0..1 (a judgement's
// Quality, 0 when the gatekeeper failed) and the step's cost in USD.
func (m *MemoryScores) Record(role string, c Candidate, quality, costUSD float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.sums == nil {
		m.sums = map[string]map[Candidate]sum{}
	}
	if m.sums[role] == nil {
		m.sums[role] = map[Candidate]sum{}
	}
	x := m.sums[role][c]
	x.n++
	x.quality += math.Min(math.Max(quality, 0), 1)
	x.cost += math.Max(costUSD, 0)
	m.sums[role][c] = x
}

// Stats returns the means of role's evaluations per candidate.
func (m *MemoryScores) Stats(_ context.Context, role string) (map[Candidate]Stats, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[Candidate]Stats{}
	for c, x := range m.sums[role] {
		out[c] = Stats{Samples: x.n, MeanQuality: x.quality / float64(x.n), MeanCostUSD: x.cost / float64(x.n)}
	}
	return out, nil
}
