package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"
)

// Evaluation sources.
const (
	SourceRun   = "run"   // an evaluation of a step of a real run
	SourceBench = "bench" // a benchmark case (cadre bench)
)

// Evaluation kinds.
const (
	KindGatekeeper = "gatekeeper" // deterministic checks of the response
	KindJudge      = "judge"      // a judge role's rubric scores
	KindReview     = "review"     // a reviewing role's rating or verdict of a worker step
	KindOutcome    = "outcome"    // the item completed or failed (later: its pull request merged)
	KindMerged     = "merged"     // the item's pull request was merged (passed) or closed unmerged
	KindBench      = "bench"      // a benchmark case's result
)

// Evaluation is one verdict on one step's work. Role, Runner and Model are
// those of the evaluated step (the worker), not of the evaluator.
type Evaluation struct {
	ID        int64 // assigned by the store; ignored by RecordEvaluation
	CreatedAt time.Time
	Source    string // run|bench
	RunID     string
	ItemID    string
	StepID    string // the evaluated step; may be empty for an item-level outcome
	Role      string
	Runner    string
	Model     string // "" for the runner's default model
	Kind      string // gatekeeper|judge|review|outcome|merged|bench
	Passed    *bool  // nil when this kind gives no pass/fail verdict
	// Score is quality on 0..1 (a judge's overall/10, a gatekeeper's share
	// of passed checks); nil when this kind gives no score.
	Score  *float64
	Detail json.RawMessage // checks, per-criterion scores, reasoning
	// Usage is the evaluated step's cost, time and tokens, or nil. When one
	// step is evaluated several ways, give its usage to one of them only:
	// means are then per step and token sums count each step once.
	Usage *EvalUsage
}

// EvalUsage is what the evaluated step consumed.
type EvalUsage struct {
	CostUSD                   float64
	LatencyMS                 int64
	InputTokens, OutputTokens int64
}

// EvalFilter narrows EvalStats and Evaluations; empty fields match all.
type EvalFilter struct {
	Role   string
	Source string // run|bench
	RunID  string
}

// EvalStat aggregates the evaluations of one (role, runner, model).
type EvalStat struct {
	Role, Runner, Model string
	Samples             int     // evaluations
	Checked             int     // of which gave a pass/fail verdict
	Passed              int     // of which passed
	Scored              int     // evaluations with a score
	MeanScore           float64 // 0..1 over the scored ones; 0 when none
	Costed              int     // evaluations carrying the step's usage
	MeanCostUSD         float64 // over the costed ones
	MeanLatencyMS       float64 // over the costed ones
	InputTokens         int64
	OutputTokens        int64
}

// PassRate is Passed/Checked, or -1 when nothing was checked: a rate of 0
// would claim every check failed.
func (s EvalStat) PassRate() float64 {
	if s.Checked == 0 {
		return -1
	}
	return float64(s.Passed) / float64(s.Checked)
}

// RecordEvaluation stores e. Recording the same evaluation again (same
// source, run, item, step and kind, as when a resumed run replays a step)
// keeps the first and returns nil. A zero CreatedAt means now.
func (s *Store) RecordEvaluation(ctx context.Context, e Evaluation) error {
	return s.RecordEvaluations(ctx, e)
}

// RecordEvaluations stores evs in one transaction, each as RecordEvaluation
// would: a benchmark's results land together or not at all, and thousands
// of rows cost one commit rather than one each.
func (s *Store) RecordEvaluations(ctx context.Context, evs ...Evaluation) error {
	if err := s.fault(OpEvaluations); err != nil {
		return fmt.Errorf("record evaluation: %w", err)
	}
	for _, e := range evs {
		if err := e.validate(); err != nil {
			return fmt.Errorf("record evaluation: %w", err)
		}
		if _, err := jsonArg("detail", e.Detail); err != nil {
			return fmt.Errorf("record evaluation %s of %s: %w", e.Kind, e.StepID, err)
		}
	}
	stamped := make([]Evaluation, len(evs))
	for i, e := range evs {
		e.CreatedAt = s.orNow(e.CreatedAt)
		stamped[i] = e
	}
	if err := s.inTx(ctx, func(tx *sql.Tx) error { return s.recordEvaluations(ctx, tx, stamped) }); err != nil {
		return fmt.Errorf("record evaluation: %w", err)
	}
	for _, e := range stamped {
		s.emit(Op{Kind: OpEvaluations, At: e.CreatedAt, Run: e.RunID, Item: e.ItemID, Evals: []Evaluation{e}})
	}
	return nil
}

// recordEvaluations inserts evs, checked, in tx; one already recorded is
// kept as it is.
func (s *Store) recordEvaluations(ctx context.Context, tx *sql.Tx, evs []Evaluation) error {
	stmt, err := tx.PrepareContext(ctx, `INSERT OR IGNORE INTO evaluations
		(created_at, source, run_id, item_id, step_id, role, runner, model, kind, passed, score, detail,
		 cost_usd, latency_ms, input_tokens, output_tokens)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return err
	}
	defer stmt.Close()
	for _, e := range evs {
		if _, err := stmt.ExecContext(ctx, s.evalArgs(e)...); err != nil {
			return fmt.Errorf("%s of %s: %w", e.Kind, e.StepID, err)
		}
	}
	return nil
}

// evalArgs are e's column values in insert order; nil pointers become NULL.
func (s *Store) evalArgs(e Evaluation) []any {
	detail, _ := jsonArg("detail", e.Detail) // checked by the caller
	var passed, score, costUSD, latency, in, out any
	if e.Passed != nil {
		passed = *e.Passed
	}
	if e.Score != nil {
		score = *e.Score
	}
	if u := e.Usage; u != nil {
		costUSD, latency, in, out = u.CostUSD, u.LatencyMS, u.InputTokens, u.OutputTokens
	}
	return []any{fmtTime(s.orNow(e.CreatedAt)), e.Source, e.RunID, e.ItemID, e.StepID, e.Role, e.Runner, e.Model,
		e.Kind, passed, score, detail, costUSD, latency, in, out}
}

// validate checks what the schema would refuse, with a message naming the
// field, and what it cannot check (NaN).
func (e Evaluation) validate() error {
	switch {
	case e.Source != SourceRun && e.Source != SourceBench:
		return fmt.Errorf("source %q: want run or bench", e.Source)
	case !validKind(e.Kind):
		return fmt.Errorf("kind %q: want gatekeeper, judge, review, outcome, merged or bench", e.Kind)
	case e.RunID == "":
		return fmt.Errorf("%s evaluation without a run id", e.Kind)
	case e.StepID == "" && e.ItemID == "":
		return fmt.Errorf("%s evaluation of run %s names neither a step nor an item", e.Kind, e.RunID)
	case e.Role == "" || e.Runner == "":
		return fmt.Errorf("%s evaluation of %s: role and runner are required", e.Kind, e.StepID)
	case e.Score != nil && !(*e.Score >= 0 && *e.Score <= 1): // also refuses NaN
		return fmt.Errorf("%s evaluation of %s: score %v is outside 0..1", e.Kind, e.StepID, *e.Score)
	case e.Usage != nil && (math.IsNaN(e.Usage.CostUSD) || math.IsInf(e.Usage.CostUSD, 0)):
		return fmt.Errorf("%s evaluation of %s: cost %v is not a number", e.Kind, e.StepID, e.Usage.CostUSD)
	}
	return nil
}

func validKind(k string) bool {
	switch k {
	case KindGatekeeper, KindJudge, KindReview, KindOutcome, KindMerged, KindBench:
		return true
	}
	return false
}

// where renders f as a WHERE clause (or "") and its arguments.
func (f EvalFilter) where() (string, []any) {
	var (
		conds []string
		args  []any
	)
	for _, c := range []struct{ col, val string }{{"role", f.Role}, {"source", f.Source}, {"run_id", f.RunID}} {
		if c.val != "" {
			conds = append(conds, c.col+" = ?")
			args = append(args, c.val)
		}
	}
	if len(conds) == 0 {
		return "", nil
	}
	return " WHERE " + strings.Join(conds, " AND "), args
}

// EvalStats aggregates the evaluations matching f by (role, runner, model),
// ordered by those three. SQL's AVG and COUNT(col) skip NULLs, which is the
// rule wanted: the pass rate counts only verdicts, the mean score only
// scores, the mean cost only rows carrying usage.
func (s *Store) EvalStats(ctx context.Context, f EvalFilter) ([]EvalStat, error) {
	where, args := f.where()
	rows, err := s.r.QueryContext(ctx, `SELECT role, runner, model,
		COUNT(*), COUNT(passed), COALESCE(SUM(passed), 0),
		COUNT(score), COALESCE(AVG(score), 0),
		COUNT(cost_usd), COALESCE(AVG(cost_usd), 0), COALESCE(AVG(latency_ms), 0),
		COALESCE(SUM(input_tokens), 0), COALESCE(SUM(output_tokens), 0)
		FROM evaluations`+where+`
		GROUP BY role, runner, model
		ORDER BY role, runner, model`, args...)
	if err != nil {
		return nil, fmt.Errorf("evaluation stats: %w", err)
	}
	defer rows.Close()
	var out []EvalStat
	for rows.Next() {
		var x EvalStat
		if err := rows.Scan(&x.Role, &x.Runner, &x.Model, &x.Samples, &x.Checked, &x.Passed,
			&x.Scored, &x.MeanScore, &x.Costed, &x.MeanCostUSD, &x.MeanLatencyMS,
			&x.InputTokens, &x.OutputTokens); err != nil {
			return nil, fmt.Errorf("evaluation stats: %w", err)
		}
		out = append(out, x)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("evaluation stats: %w", err)
	}
	return out, nil
}

// Evaluations returns up to limit evaluations matching f, newest first
// (limit <= 0: all of them).
func (s *Store) Evaluations(ctx context.Context, f EvalFilter, limit int) ([]Evaluation, error) {
	where, args := f.where()
	q := `SELECT id, created_at, source, run_id, item_id, step_id, role, runner, model, kind, passed, score, detail,
		cost_usd, latency_ms, input_tokens, output_tokens
		FROM evaluations` + where + ` ORDER BY created_at DESC, id DESC`
	if limit > 0 {
		q += " LIMIT ?"
		args = append(args, limit)
	}
	rows, err := s.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list evaluations: %w", err)
	}
	defer rows.Close()
	var out []Evaluation
	for rows.Next() {
		e, err := scanEvaluation(rows)
		if err != nil {
			return nil, fmt.Errorf("list evaluations: %w", err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list evaluations: %w", err)
	}
	return out, nil
}

func scanEvaluation(row rowScanner) (Evaluation, error) {
	var (
		e       Evaluation
		created string
		passed  sql.NullBool
		score   sql.NullFloat64
		detail  sql.NullString
		cost    sql.NullFloat64
		latency sql.NullInt64
		in, out sql.NullInt64
	)
	if err := row.Scan(&e.ID, &created, &e.Source, &e.RunID, &e.ItemID, &e.StepID, &e.Role, &e.Runner, &e.Model,
		&e.Kind, &passed, &score, &detail, &cost, &latency, &in, &out); err != nil {
		return Evaluation{}, err
	}
	var err error
	if e.CreatedAt, err = parseTime(created); err != nil {
		return Evaluation{}, err
	}
	if passed.Valid {
		e.Passed = &passed.Bool
	}
	if score.Valid {
		e.Score = &score.Float64
	}
	e.Detail = jsonCol(detail)
	if cost.Valid {
		e.Usage = &EvalUsage{CostUSD: cost.Float64, LatencyMS: latency.Int64, InputTokens: in.Int64, OutputTokens: out.Int64}
	}
	return e, nil
}
