package eval

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sync"

	ieval "github.com/cadre-dev/cadre/internal/eval"
	"github.com/cadre-dev/cadre/internal/evalstore"
	"github.com/cadre-dev/cadre/internal/store"
)

// Scores are recorded evaluations the Selector picks from. StoreScores
// reads a repository's score store (what `runner: auto` reads);
// MemoryScores keeps them in memory.
type Scores interface {
	// Stats returns, for each of cands, the evaluations recorded for role.
	Stats(ctx context.Context, role string, cands []Candidate) (map[Candidate]Stats, error)
}

// Selector picks the runner and model that do a role best for the money:
// UCB1 over mean quality minus a relative cost penalty, trying candidates
// without enough samples first (the formula `runner: auto` uses,
// documented in docs/library.md and docs/evaluation.md).
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
	stats, err := s.Scores.Stats(ctx, role, cands)
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

// Stats returns the means of role's evaluations recorded for each of
// cands (a candidate matches what was recorded under it exactly).
func (m *MemoryScores) Stats(_ context.Context, role string, cands []Candidate) (map[Candidate]Stats, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[Candidate]Stats{}
	for _, c := range cands {
		if x, ok := m.sums[role][c]; ok {
			out[c] = Stats{Samples: x.n, MeanQuality: x.quality / float64(x.n), MeanCostUSD: x.cost / float64(x.n)}
		}
	}
	return out, nil
}

// StoreScores reads the score store of a repository: the evaluations its
// runs and benchmarks recorded (`cadre scores` shows them). A candidate
// "claude" counts every model claude ran with; "claude/sonnet" only sonnet.
type StoreScores struct {
	st *store.Store
}

// OpenScores opens the score store of the repository at repoDir
// (.cadre/cadre.db); it must exist (a run or a bench made it). Close it
// when done.
func OpenScores(ctx context.Context, repoDir string) (*StoreScores, error) {
	path := filepath.Join(repoDir, ".cadre", "cadre.db")
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("open scores: no score store at %s (run cadre first): %w", path, err)
	}
	st, err := store.Open(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("open scores: %w", err)
	}
	return &StoreScores{st: st}, nil
}

// CreateScores opens the score store of the repository at repoDir, making
// it (.cadre/cadre.db) when missing, for a program that records its own
// evaluations (Record). repoDir must exist.
func CreateScores(ctx context.Context, repoDir string) (*StoreScores, error) {
	if fi, err := os.Stat(repoDir); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("create scores: %s is not a directory", repoDir)
	}
	st, err := store.Open(ctx, filepath.Join(repoDir, ".cadre", "cadre.db"))
	if err != nil {
		return nil, fmt.Errorf("create scores: %w", err)
	}
	return &StoreScores{st: st}, nil
}

// Record adds one evaluation of c doing role to the store, as
// MemoryScores.Record does in memory: quality 0..1 (clamped) and the cost
// in USD. It is kept as a benchmark's result (cadre scores --source bench
// shows it) and counts for runner auto and Stats from then on.
func (s *StoreScores) Record(ctx context.Context, role string, c Candidate, quality, costUSD float64) error {
	if role == "" || c.Runner == "" {
		return fmt.Errorf("record: a role and a candidate runner are required")
	}
	if math.IsNaN(quality) {
		return fmt.Errorf("record %s of %s: quality is not a number", role, c)
	}
	q := math.Min(math.Max(quality, 0), 1)
	// Each record is an evaluation of its own: the journal keeps one per
	// (run, item, step, kind).
	var id [8]byte
	rand.Read(id[:])
	err := s.st.RecordEvaluation(ctx, store.Evaluation{Source: store.SourceBench, RunID: "api", ItemID: "record", StepID: hex.EncodeToString(id[:]),
		Role: role, Runner: c.Runner, Model: c.Model, Kind: store.KindBench, Score: &q,
		Usage: &store.EvalUsage{CostUSD: math.Max(costUSD, 0)}})
	if err != nil {
		return fmt.Errorf("record %s of %s: %w", role, c, err)
	}
	return nil
}

// Stats returns role's recorded evaluations for each of cands.
func (s *StoreScores) Stats(ctx context.Context, role string, cands []Candidate) (map[Candidate]Stats, error) {
	return evalstore.Stats(ctx, s.st, role, cands)
}

// Close closes the store.
func (s *StoreScores) Close() error { return s.st.Close() }
