package eval

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"

	"github.com/cadre-dev/cadre/internal/evalstore"
	"github.com/cadre-dev/cadre/internal/store"
)

// The whole evaluation of a step is the score store's own type, aliased,
// so a program records and reads exactly the rows a run writes.
type (
	// Evaluation is the whole evaluation of one agent step: the
	// gatekeeper's checks, a judge's scores and pass, a reviewer's rating,
	// the outcome (Passed) and the step's usage; each part set is one row
	// of the score store (docs/evaluation.md). Source, Run, Item and Step
	// name the evaluated step.
	Evaluation = evalstore.Full
	// GatekeeperVerdict is a Result with the gatekeeper's step in a run.
	GatekeeperVerdict = evalstore.GatekeeperVerdict
	// JudgeVerdict is a Judgement, whether the judge let the work pass, and
	// the judge's step in a run.
	JudgeVerdict = evalstore.JudgeVerdict
	// ReviewVerdict is a reviewing role's rating (0..1) and verdict.
	ReviewVerdict = evalstore.ReviewVerdict
	// StepUsage is the evaluated step's cost, time and tokens.
	StepUsage = evalstore.Usage
)

// Sources of an Evaluation.
const (
	SourceRun   = store.SourceRun   // a step of a run
	SourceBench = store.SourceBench // a benchmark, or a program's own record
)

// RecordEvaluation adds the whole evaluation ev to the store, as the
// rows a run writes for one step: a gatekeeper row, a judge row, a review
// row, an outcome row carrying the usage, for each part ev has. Source
// defaults to SourceBench, Run to "api", Item to "record" and Step to a
// new id; recording the same step's part again keeps the first record.
func (s *StoreScores) RecordEvaluation(ctx context.Context, ev Evaluation) error {
	if ev.Source == "" {
		ev.Source = SourceBench
	}
	if ev.Run == "" {
		ev.Run = "api"
	}
	if ev.Item == "" {
		ev.Item = "record"
	}
	if ev.Step == "" {
		var id [8]byte
		rand.Read(id[:])
		ev.Step = hex.EncodeToString(id[:])
	}
	rows, err := ev.Rows()
	if err != nil {
		return fmt.Errorf("record %s of %s: %w", ev.Role, ev.Candidate, err)
	}
	if err := s.st.RecordEvaluations(ctx, rows...); err != nil {
		return fmt.Errorf("record %s of %s: %w", ev.Role, ev.Candidate, err)
	}
	return nil
}

// Filter picks recorded evaluations; an empty field matches any.
type Filter struct {
	Role   string
	Source string // SourceRun or SourceBench
	Run    string
}

// Evaluations returns the whole evaluations recorded under f, runs' and
// programs' alike, oldest first: one per evaluated step. Benchmarks'
// single-number records (kind bench, Record's) are not among them.
func (s *StoreScores) Evaluations(ctx context.Context, f Filter) ([]Evaluation, error) {
	evs, err := evalstore.Read(ctx, s.st, store.EvalFilter{Role: f.Role, Source: f.Source, RunID: f.Run})
	if err != nil {
		return nil, fmt.Errorf("read evaluations: %w", err)
	}
	return evs, nil
}
