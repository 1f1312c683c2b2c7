package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Run statuses. Completed and failed are terminal; the others can be resumed.
const (
	RunRunning     = "running"
	RunCompleted   = "completed"
	RunFailed      = "failed"
	RunStopped     = "stopped"
	RunPaused      = "paused"
	RunInterrupted = "interrupted"
)

func validRunStatus(s string) bool {
	switch s {
	case RunRunning, RunCompleted, RunFailed, RunStopped, RunPaused, RunInterrupted:
		return true
	}
	return false
}

func terminalRunStatus(s string) bool { return s == RunCompleted || s == RunFailed }

// Run is one execution of a workflow over a set of items.
type Run struct {
	ID, Repo, Workflow, Status string          // Status: running|completed|failed|stopped|paused|interrupted
	Options                    json.RawMessage // how the run was started, so resume can redo it
	PID                        int
	StartedAt, UpdatedAt       time.Time
	EndedAt                    *time.Time
}

// CreateRun records a new run with its items, all or none: a run is
// never journaled without some of its items. An empty Status means
// running; zero StartedAt/UpdatedAt mean now. Items are recorded as
// AddItem does.
func (s *Store) CreateRun(ctx context.Context, r Run, items ...Item) error {
	if err := s.fault(OpCreateRun); err != nil {
		return fmt.Errorf("create run %s: %w", r.ID, err)
	}
	if r.ID == "" {
		return errors.New("create run: empty run id")
	}
	if r.Status == "" {
		r.Status = RunRunning
	}
	if !validRunStatus(r.Status) {
		return fmt.Errorf("create run %s: unknown status %q (want running, completed, failed, stopped, paused or interrupted)", r.ID, r.Status)
	}
	opts, err := jsonArg("options", r.Options)
	if err != nil {
		return fmt.Errorf("create run %s: %w", r.ID, err)
	}
	for i, it := range items {
		it.RunID = r.ID
		if it, err = checkItem(it); err != nil {
			return err
		}
		items[i] = it
	}
	started := s.orNow(r.StartedAt)
	updated := started
	if !r.UpdatedAt.IsZero() {
		updated = r.UpdatedAt.UTC()
	}
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO runs
		(id, repo, workflow, status, options, pid, started_at, updated_at, ended_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			r.ID, r.Repo, r.Workflow, r.Status, opts, r.PID,
			fmtTime(started), fmtTime(updated), fmtTimePtr(r.EndedAt))
		if isUnique(err) {
			return errors.New("a run with this id already exists")
		}
		if err != nil {
			return err
		}
		for _, it := range items {
			if err := s.addItem(ctx, tx, it); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("create run %s: %w", r.ID, err)
	}
	return nil
}

// SetRunStatus sets a run's status and pid and stamps UpdatedAt. A terminal
// status (completed, failed) sets EndedAt; any other clears it, since the
// run is live again.
func (s *Store) SetRunStatus(ctx context.Context, id, status string, pid int) error {
	if err := s.fault(OpRunStatus); err != nil {
		return fmt.Errorf("set run %s status: %w", id, err)
	}
	now := s.now()
	if err := s.setRunStatus(ctx, nil, id, status, pid, now); err != nil {
		return err
	}
	s.emit(Op{Kind: OpRunStatus, At: now, Run: id, Status: status, PID: pid})
	return nil
}

func (s *Store) setRunStatus(ctx context.Context, tx *sql.Tx, id, status string, pid int, at time.Time) error {
	if !validRunStatus(status) {
		return fmt.Errorf("set run %s status: unknown status %q (want running, completed, failed, stopped, paused or interrupted)", id, status)
	}
	now := fmtTime(at)
	var ended any
	if terminalRunStatus(status) {
		ended = now
	}
	stmt, err := s.wstmt(ctx, tx, `UPDATE runs SET status = ?, pid = ?, updated_at = ?, ended_at = ? WHERE id = ?`)
	if err != nil {
		return fmt.Errorf("set run %s status: %w", id, err)
	}
	return checkRun(stmt.ExecContext(ctx, status, pid, now, ended, id))("set run " + id + " status")
}

// checkRun is the outcome of a statement changing one run: an error
// naming what when it failed or found no run.
func checkRun(res sql.Result, err error) func(what string) error {
	return func(what string) error {
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		} else if n == 0 {
			return fmt.Errorf("%s: run %w", what, ErrNotFound)
		}
		return nil
	}
}

// SetRunOptions replaces the options a run goes by (a resume's higher
// budget), so that every process reading the run from the journal, and a
// later resume, goes by them too.
func (s *Store) SetRunOptions(ctx context.Context, id string, options json.RawMessage) error {
	if err := s.fault(OpRunOptions); err != nil {
		return fmt.Errorf("set run %s options: %w", id, err)
	}
	now := s.now()
	if err := s.setRunOptions(ctx, nil, id, options, now); err != nil {
		return err
	}
	s.emit(Op{Kind: OpRunOptions, At: now, Run: id, Options: append(json.RawMessage(nil), options...)})
	return nil
}

func (s *Store) setRunOptions(ctx context.Context, tx *sql.Tx, id string, options json.RawMessage, at time.Time) error {
	opts, err := jsonArg("options", options)
	if err != nil {
		return fmt.Errorf("set run %s options: %w", id, err)
	}
	stmt, err := s.wstmt(ctx, tx, `UPDATE runs SET options = ?, updated_at = ? WHERE id = ?`)
	if err != nil {
		return fmt.Errorf("set run %s options: %w", id, err)
	}
	return checkRun(stmt.ExecContext(ctx, opts, fmtTime(at), id))("set run " + id + " options")
}

const runColumns = `id, repo, workflow, status, options, pid, started_at, updated_at, ended_at`

// GetRun returns the run with the given id, or ErrNotFound.
func (s *Store) GetRun(ctx context.Context, id string) (Run, error) {
	r, err := scanRun(s.r.QueryRowContext(ctx, `SELECT `+runColumns+` FROM runs WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return Run{}, fmt.Errorf("get run %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return Run{}, fmt.Errorf("get run %s: %w", id, err)
	}
	return r, nil
}

// WorkflowBench is the workflow name of the runs cadre bench journals. A
// benchmark is not a workflow run over items, so resume, status and report
// must not take one for the latest run.
const WorkflowBench = "bench"

// LatestRun returns the most recently started workflow run (benchmarks
// aside, see WorkflowBench), or ErrNotFound when the journal has none.
func (s *Store) LatestRun(ctx context.Context) (Run, error) {
	r, err := scanRun(s.r.QueryRowContext(ctx,
		`SELECT `+runColumns+` FROM runs WHERE workflow <> ? ORDER BY started_at DESC, rowid DESC LIMIT 1`, WorkflowBench))
	if errors.Is(err, sql.ErrNoRows) {
		return Run{}, fmt.Errorf("latest run: no runs: %w", ErrNotFound)
	}
	if err != nil {
		return Run{}, fmt.Errorf("latest run: %w", err)
	}
	return r, nil
}

// RunsOf returns the runs of one workflow, newest first (cadre bench looks
// for an unfinished benchmark among its own).
func (s *Store) RunsOf(ctx context.Context, workflow string) ([]Run, error) {
	return s.listRuns(ctx, "workflow = ?", workflow, "list "+workflow+" runs")
}

func scanRun(row rowScanner) (Run, error) {
	var (
		r                Run
		opts, ended      sql.NullString
		started, updated string
	)
	if err := row.Scan(&r.ID, &r.Repo, &r.Workflow, &r.Status, &opts, &r.PID, &started, &updated, &ended); err != nil {
		return Run{}, err
	}
	r.Options = jsonCol(opts)
	var err error
	if r.StartedAt, err = parseTime(started); err != nil {
		return Run{}, err
	}
	if r.UpdatedAt, err = parseTime(updated); err != nil {
		return Run{}, err
	}
	if r.EndedAt, err = parseTimePtr(ended); err != nil {
		return Run{}, err
	}
	return r, nil
}

// Runs returns the workflow runs (benchmarks aside), newest first.
func (s *Store) Runs(ctx context.Context) ([]Run, error) {
	return s.listRuns(ctx, "workflow <> ?", WorkflowBench, "list runs")
}

// listRuns returns the runs whose workflow meets cond (with its one
// argument), newest first; what names the listing in errors.
func (s *Store) listRuns(ctx context.Context, cond, workflow, what string) ([]Run, error) {
	rows, err := s.r.QueryContext(ctx,
		`SELECT `+runColumns+` FROM runs WHERE `+cond+` ORDER BY started_at DESC, rowid DESC`, workflow)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	defer rows.Close()
	var out []Run
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return out, nil
}
