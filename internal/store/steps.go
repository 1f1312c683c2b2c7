package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Step statuses.
const (
	StepStarted   = "started"
	StepCompleted = "completed"
	StepFailed    = "failed"
)

// Usage is what a step (or a run, summed) consumed.
type Usage struct {
	InputTokens, OutputTokens, CacheReadTokens, CacheWriteTokens int64
	CostUSD                                                      float64
	CostEstimated                                                bool // cost came from a price table, not the provider
}

// Step is one journaled effect: a role invocation or a deterministic action.
type Step struct {
	RunID, ItemID, ID         string // ID is stable, e.g. "task-a/code/coder#2"
	Role, Runner, Model, Kind string // Kind: agent|commit|command
	Status                    string // started|completed|failed
	Tries                     int    // times started
	ExitCode                  int
	OutputPath                string
	Signal                    json.RawMessage // parsed signal as JSON (may be nil)
	Result                    json.RawMessage // free JSON for deterministic steps, e.g. {"commit":"<sha>"}
	Usage                     Usage
	Error                     string
	StartedAt                 time.Time
	EndedAt                   *time.Time
	// Pgid and PgidStart name the process group of the agent running for
	// a started step (see SetStepGroup); 0 when none is recorded.
	Pgid      int
	PgidStart uint64
}

// StartStep records that a step is starting. A new step is inserted as
// started with Tries 1; an existing step that did not complete is set back
// to started, its Tries incremented and its previous outcome cleared (the
// usage of earlier tries still counts in Totals). Starting a completed step
// returns ErrCompleted: its work must not be done again. A zero StartedAt
// means now; Status and Tries of st are ignored.
func (s *Store) StartStep(ctx context.Context, st Step) error {
	if err := s.fault(OpStartStep); err != nil {
		return fmt.Errorf("start step %s: %w", st.ID, err)
	}
	if st.RunID == "" || st.ID == "" {
		return fmt.Errorf("start step %q of run %q: run id and step id are required", st.ID, st.RunID)
	}
	st.StartedAt = s.orNow(st.StartedAt)
	if err := s.startStep(ctx, nil, st); err != nil {
		return err
	}
	s.emit(Op{Kind: OpStartStep, At: st.StartedAt, Run: st.RunID, Item: st.ItemID, Step: &st})
	return nil
}

// startStep is StartStep's write, in tx when tx is not nil.
func (s *Store) startStep(ctx context.Context, tx *sql.Tx, st Step) error {
	stmt, err := s.wstmt(ctx, tx, startStepQuery)
	if err != nil {
		return fmt.Errorf("start step %s: %w", st.ID, err)
	}
	res, err := stmt.ExecContext(ctx, st.RunID, st.ID, st.ItemID, st.Role, st.Runner, st.Model, st.Kind, st.OutputPath,
		fmtTime(st.StartedAt))
	if isForeignKey(err) {
		return fmt.Errorf("start step %s: run %s %w", st.ID, st.RunID, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("start step %s: %w", st.ID, err)
	}
	// The upsert's WHERE skips completed steps, which changes no row.
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("start step %s: %w", st.ID, err)
	} else if n == 0 {
		return fmt.Errorf("start step %s: %w", st.ID, ErrCompleted)
	}
	return nil
}

const startStepQuery = `INSERT INTO steps
		(run_id, id, item_id, role, runner, model, kind, status, tries, output_path, started_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, 'started', 1, ?, ?)
		ON CONFLICT (run_id, id) DO UPDATE SET
			item_id = excluded.item_id, role = excluded.role, runner = excluded.runner,
			model = excluded.model, kind = excluded.kind,
			status = 'started', tries = tries + 1,
			exit_code = 0, output_path = excluded.output_path, signal = NULL, result = NULL,
			input_tokens = 0, output_tokens = 0, cache_read_tokens = 0, cache_write_tokens = 0,
			cost_usd = 0, cost_estimated = 0, error = '',
			started_at = excluded.started_at, ended_at = NULL, pgid = 0, pgid_start = 0
		WHERE status <> 'completed'`

// FinishStep records a step's outcome: Status (completed or failed),
// ExitCode, OutputPath (kept from StartStep when empty), Signal, Result,
// Usage, Error and EndedAt (now when nil). The step must have been started
// and not already completed (ErrNotFound, ErrCompleted).
func (s *Store) FinishStep(ctx context.Context, st Step) error {
	if err := s.fault(OpFinishStep); err != nil {
		return fmt.Errorf("finish step %s: %w", st.ID, err)
	}
	ended := s.now()
	if st.EndedAt != nil {
		ended = st.EndedAt.UTC()
	}
	st.EndedAt = &ended
	st = s.maskStep(st)
	var item string
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		var err error
		item, err = s.finishStep(ctx, tx, st)
		return err
	})
	if err != nil {
		return fmt.Errorf("finish step %s: %w", st.ID, err)
	}
	st.ItemID = item
	s.emit(Op{Kind: OpFinishStep, At: ended, Run: st.RunID, Item: item, Step: &st})
	return nil
}

// finishStep is FinishStep's write in tx; st.EndedAt is set. It returns
// the step's item.
func (s *Store) finishStep(ctx context.Context, tx *sql.Tx, st Step) (string, error) {
	if st.Status != StepCompleted && st.Status != StepFailed {
		return "", fmt.Errorf("status %q must be completed or failed", st.Status)
	}
	signal, err := jsonArg("signal", st.Signal)
	if err != nil {
		return "", err
	}
	result, err := jsonArg("result", st.Result)
	if err != nil {
		return "", err
	}
	u := st.Usage
	// One statement updates and reads the try it finished; the reason
	// no row matched is looked up only when none did.
	var (
		tries int
		item  string
	)
	update, err := s.txStmt(ctx, tx, finishStepQuery)
	if err != nil {
		return "", err
	}
	err = update.QueryRowContext(ctx, st.Status, st.ExitCode, st.OutputPath, st.Model, signal, result,
		u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheWriteTokens,
		u.CostUSD, u.CostEstimated, st.Error, fmtTime(*st.EndedAt),
		st.RunID, st.ID).Scan(&tries, &item)
	if errors.Is(err, sql.ErrNoRows) {
		var status string
		err := tx.QueryRowContext(ctx, `SELECT status FROM steps WHERE run_id = ? AND id = ?`, st.RunID, st.ID).Scan(&status)
		if errors.Is(err, sql.ErrNoRows) {
			return "", fmt.Errorf("step of run %s %w (start it first)", st.RunID, ErrNotFound)
		}
		if err != nil {
			return "", err
		}
		return "", ErrCompleted
	}
	if err != nil {
		return "", err
	}
	// Keyed by try, so finishing the same try twice replaces rather
	// than double-counts.
	usage, err := s.txStmt(ctx, tx, stepUsageQuery)
	if err != nil {
		return "", err
	}
	_, err = usage.ExecContext(ctx, st.RunID, st.ID, tries, u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheWriteTokens,
		u.CostUSD, u.CostEstimated)
	return item, err
}

// finishStepQuery finishes a started step and returns its try.
const finishStepQuery = `UPDATE steps SET
			status = ?, exit_code = ?, output_path = COALESCE(NULLIF(?, ''), output_path),
			model = COALESCE(NULLIF(?, ''), model), signal = ?, result = ?,
			input_tokens = ?, output_tokens = ?, cache_read_tokens = ?, cache_write_tokens = ?,
			cost_usd = ?, cost_estimated = ?, error = ?, ended_at = ?, pgid = 0, pgid_start = 0
			WHERE run_id = ? AND id = ? AND status <> 'completed'
			RETURNING tries, item_id`

// stepUsageQuery keeps the usage of one try, keyed by try, so finishing the
// same try twice replaces rather than double-counts.
const stepUsageQuery = `INSERT OR REPLACE INTO step_usage
			(run_id, step_id, try, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_usd, cost_estimated)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`

// NoteUsage records what the running try of a started step has used so
// far, and the model that answered: an agent interrupted before it
// finished (cadre stop --now, Ctrl-C) had spent it. The step stays
// started, to run again; the usage counts in Totals as a finished try's
// does, and a later NoteUsage or FinishStep of the same try replaces it.
// A step that is not started returns ErrNotFound.
func (s *Store) NoteUsage(ctx context.Context, st Step) error {
	if err := s.fault(OpNoteUsage); err != nil {
		return fmt.Errorf("note usage of step %s: %w", st.ID, err)
	}
	if err := s.inTx(ctx, func(tx *sql.Tx) error { return s.noteUsage(ctx, tx, st) }); err != nil {
		return fmt.Errorf("note usage of step %s: %w", st.ID, err)
	}
	s.emit(Op{Kind: OpNoteUsage, At: s.now(), Run: st.RunID, Item: st.ItemID, Step: &st})
	return nil
}

// noteUsage is NoteUsage's write in tx.
func (s *Store) noteUsage(ctx context.Context, tx *sql.Tx, st Step) error {
	u := st.Usage
	update, err := s.txStmt(ctx, tx, `UPDATE steps SET model = COALESCE(NULLIF(?, ''), model),
			input_tokens = ?, output_tokens = ?, cache_read_tokens = ?, cache_write_tokens = ?, cost_usd = ?, cost_estimated = ?
			WHERE run_id = ? AND id = ? AND status = 'started' RETURNING tries`)
	if err != nil {
		return err
	}
	var tries int
	err = update.QueryRowContext(ctx, st.Model, u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheWriteTokens,
		u.CostUSD, u.CostEstimated, st.RunID, st.ID).Scan(&tries)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("started step of run %s %w", st.RunID, ErrNotFound)
	}
	if err != nil {
		return err
	}
	usage, err := s.txStmt(ctx, tx, stepUsageQuery)
	if err != nil {
		return err
	}
	_, err = usage.ExecContext(ctx, st.RunID, st.ID, tries, u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheWriteTokens,
		u.CostUSD, u.CostEstimated)
	return err
}

// SetStepGroup records the process group of the agent a started step is
// running: pgid (its leader's pid) and start, the leader's start time. A
// resume kills the group of a step that never finished, before running the
// step again. StartStep and FinishStep clear it. A step that is not
// started (finished, or unknown) returns ErrNotFound: its agent is no
// longer its own.
func (s *Store) SetStepGroup(ctx context.Context, runID, stepID string, pgid int, start uint64) error {
	if err := s.fault(OpStepGroup); err != nil {
		return fmt.Errorf("record process group of step %s: %w", stepID, err)
	}
	if err := s.setStepGroup(ctx, nil, runID, stepID, pgid, start); err != nil {
		return err
	}
	s.emit(Op{Kind: OpStepGroup, At: s.now(), Run: runID, Step: &Step{RunID: runID, ID: stepID, Pgid: pgid, PgidStart: start}})
	return nil
}

func (s *Store) setStepGroup(ctx context.Context, tx *sql.Tx, runID, stepID string, pgid int, start uint64) error {
	stmt, err := s.wstmt(ctx, tx, `UPDATE steps SET pgid = ?, pgid_start = ?
		WHERE run_id = ? AND id = ? AND status = 'started'`)
	if err != nil {
		return fmt.Errorf("record process group of step %s: %w", stepID, err)
	}
	res, err := stmt.ExecContext(ctx, pgid, int64(start), runID, stepID)
	if err != nil {
		return fmt.Errorf("record process group of step %s: %w", stepID, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("record process group of step %s: %w", stepID, err)
	} else if n == 0 {
		return fmt.Errorf("record process group of step %s of run %s: started step %w", stepID, runID, ErrNotFound)
	}
	return nil
}

const stepColumns = `run_id, item_id, id, role, runner, model, kind, status, tries, exit_code, output_path,
	signal, result, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_usd, cost_estimated,
	error, started_at, ended_at, pgid, pgid_start`

// GetStep returns one step of a run, or ErrNotFound.
func (s *Store) GetStep(ctx context.Context, runID, id string) (Step, error) {
	stmt, err := s.prepared(ctx, false, `SELECT `+stepColumns+` FROM steps WHERE run_id = ? AND id = ?`)
	if err != nil {
		return Step{}, fmt.Errorf("get step %s: %w", id, err)
	}
	st, err := scanStep(stmt.QueryRowContext(ctx, runID, id))
	if errors.Is(err, sql.ErrNoRows) {
		return Step{}, fmt.Errorf("get step %s of run %s: %w", id, runID, ErrNotFound)
	}
	if err != nil {
		return Step{}, fmt.Errorf("get step %s: %w", id, err)
	}
	return st, nil
}

// LastCompleted returns the latest completed step with id in any run,
// ErrNotFound when none completed.
func (s *Store) LastCompleted(ctx context.Context, id string) (Step, error) {
	stmt, err := s.prepared(ctx, false, lastCompletedQuery)
	if err != nil {
		return Step{}, fmt.Errorf("get step %s: %w", id, err)
	}
	st, err := scanStep(stmt.QueryRowContext(ctx, id))
	if errors.Is(err, sql.ErrNoRows) {
		return Step{}, fmt.Errorf("get step %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return Step{}, fmt.Errorf("get step %s: %w", id, err)
	}
	return st, nil
}

// lastCompletedQuery is LastCompleted's. The status is written out, not
// bound: SQLite uses the partial index of completed steps only when the
// query says it keeps within it.
const lastCompletedQuery = `SELECT ` + stepColumns + ` FROM steps WHERE id = ? AND status = '` + StepCompleted + `' ORDER BY seq DESC LIMIT 1`

// Steps returns the steps of a run in the order they were first started
// (none for an unknown run).
func (s *Store) Steps(ctx context.Context, runID string) ([]Step, error) {
	steps, err := s.listSteps(ctx, `SELECT `+stepColumns+` FROM steps WHERE run_id = ? ORDER BY seq`, runID)
	if err != nil {
		return nil, fmt.Errorf("list steps of run %s: %w", runID, err)
	}
	return steps, nil
}

// CompletedOfKind lists the completed steps of kind across every run,
// oldest first: the pull requests runs opened, say.
func (s *Store) CompletedOfKind(ctx context.Context, kind string) ([]Step, error) {
	steps, err := s.listSteps(ctx, `SELECT `+stepColumns+` FROM steps WHERE kind = ? AND status = ? ORDER BY seq`, kind, StepCompleted)
	if err != nil {
		return nil, fmt.Errorf("list %s steps: %w", kind, err)
	}
	return steps, nil
}

// StartedOfKind lists the steps of kind across every run that started and
// have not finished, oldest first: the retries asked of a watch, say.
func (s *Store) StartedOfKind(ctx context.Context, kind string) ([]Step, error) {
	steps, err := s.listSteps(ctx, `SELECT `+stepColumns+` FROM steps WHERE kind = ? AND status = ? ORDER BY seq`, kind, StepStarted)
	if err != nil {
		return nil, fmt.Errorf("list started %s steps: %w", kind, err)
	}
	return steps, nil
}

// ItemSteps returns the steps of one item of a run in the order they were
// first started (none for an unknown run or item). An engine reads an
// item's steps when the item ends; reading the whole run there would cost
// every item time in proportion to the size of the fleet.
func (s *Store) ItemSteps(ctx context.Context, runID, itemID string) ([]Step, error) {
	steps, err := s.listSteps(ctx, `SELECT `+stepColumns+` FROM steps WHERE run_id = ? AND item_id = ? ORDER BY seq`, runID, itemID)
	if err != nil {
		return nil, fmt.Errorf("list steps of item %s of run %s: %w", itemID, runID, err)
	}
	return steps, nil
}

func (s *Store) listSteps(ctx context.Context, query string, args ...any) ([]Step, error) {
	stmt, err := s.prepared(ctx, false, query)
	if err != nil {
		return nil, err
	}
	rows, err := stmt.QueryContext(ctx, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var steps []Step
	for rows.Next() {
		st, err := scanStep(rows)
		if err != nil {
			return nil, err
		}
		steps = append(steps, st)
	}
	return steps, rows.Err()
}

// Totals sums the usage of every finished try (completed or failed) of the
// run's steps, including earlier failed tries of steps later retried.
// CostEstimated is true when any summed cost was estimated. In a worker's
// replica it adds what the rest of the run had spent at its latest
// snapshot (see Hydrate).
func (s *Store) Totals(ctx context.Context, runID string) (Usage, error) {
	var u Usage
	// replica_usage has a row only in a worker's replica (see Hydrate).
	err := s.r.QueryRowContext(ctx, `SELECT
		COALESCE(SUM(i), 0), COALESCE(SUM(o), 0), COALESCE(SUM(cr), 0), COALESCE(SUM(cw), 0),
		COALESCE(SUM(c), 0), COALESCE(MAX(e), 0) FROM (
		SELECT input_tokens i, output_tokens o, cache_read_tokens cr, cache_write_tokens cw, cost_usd c, cost_estimated e
			FROM step_usage WHERE run_id = ?
		UNION ALL
		SELECT input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_usd, cost_estimated
			FROM replica_usage WHERE run_id = ?)`, runID, runID).
		Scan(&u.InputTokens, &u.OutputTokens, &u.CacheReadTokens, &u.CacheWriteTokens, &u.CostUSD, &u.CostEstimated)
	if err != nil {
		return Usage{}, fmt.Errorf("usage totals of run %s: %w", runID, err)
	}
	return u, nil
}

func scanStep(row rowScanner) (Step, error) {
	var (
		st             Step
		signal, result sql.NullString
		started        string
		ended          sql.NullString
	)
	if err := row.Scan(&st.RunID, &st.ItemID, &st.ID, &st.Role, &st.Runner, &st.Model, &st.Kind, &st.Status,
		&st.Tries, &st.ExitCode, &st.OutputPath, &signal, &result,
		&st.Usage.InputTokens, &st.Usage.OutputTokens, &st.Usage.CacheReadTokens, &st.Usage.CacheWriteTokens,
		&st.Usage.CostUSD, &st.Usage.CostEstimated, &st.Error, &started, &ended, &st.Pgid, &st.PgidStart); err != nil {
		return Step{}, err
	}
	st.Signal = jsonCol(signal)
	st.Result = jsonCol(result)
	var err error
	if st.StartedAt, err = parseTime(started); err != nil {
		return Step{}, err
	}
	if st.EndedAt, err = parseTimePtr(ended); err != nil {
		return Step{}, err
	}
	return st, nil
}
