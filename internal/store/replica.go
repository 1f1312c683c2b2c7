package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// TryUsage is the usage of one finished try of a step (a step_usage row).
type TryUsage struct {
	StepID string
	Try    int
	Usage  Usage
}

// ItemExport is what a replica needs of one item of a run: the run, every
// item of it (a step checks the others, e.g. its dependencies), the
// item's steps and the usage of their tries, the run's totals, and the
// number of the item's batches applied here (Seq).
type ItemExport struct {
	Seq    int64
	Run    Run
	Items  []Item
	Item   string
	Steps  []Step
	Usage  []TryUsage
	Totals Usage
}

// ExportItem reads the item's export in one read transaction, so its
// parts agree with each other.
func (s *Store) ExportItem(ctx context.Context, runID, itemID string) (ItemExport, error) {
	x := ItemExport{Item: itemID}
	fail := func(err error) (ItemExport, error) {
		return ItemExport{}, fmt.Errorf("export item %s of run %s: %w", itemID, runID, err)
	}
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return fail(err)
	}
	defer tx.Rollback()
	x.Run, err = scanRun(tx.QueryRowContext(ctx, `SELECT `+runColumns+` FROM runs WHERE id = ?`, runID))
	if errors.Is(err, sql.ErrNoRows) {
		return fail(fmt.Errorf("run %w", ErrNotFound))
	}
	if err != nil {
		return fail(err)
	}
	rows, err := tx.QueryContext(ctx, `SELECT `+itemColumns+` FROM items WHERE run_id = ? ORDER BY seq`, runID)
	if err != nil {
		return fail(err)
	}
	found := false
	for rows.Next() {
		it, err := scanItem(rows)
		if err != nil {
			rows.Close()
			return fail(err)
		}
		found = found || it.ID == itemID
		x.Items = append(x.Items, it)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return fail(err)
	}
	if !found {
		return fail(fmt.Errorf("item %w", ErrNotFound))
	}
	rows, err = tx.QueryContext(ctx, `SELECT `+stepColumns+` FROM steps WHERE run_id = ? AND item_id = ? ORDER BY seq`, runID, itemID)
	if err != nil {
		return fail(err)
	}
	for rows.Next() {
		st, err := scanStep(rows)
		if err != nil {
			rows.Close()
			return fail(err)
		}
		x.Steps = append(x.Steps, st)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return fail(err)
	}
	rows, err = tx.QueryContext(ctx, `SELECT u.step_id, u.try, u.input_tokens, u.output_tokens, u.cache_read_tokens,
		u.cache_write_tokens, u.cost_usd, u.cost_estimated
		FROM step_usage u JOIN steps s ON s.run_id = u.run_id AND s.id = u.step_id
		WHERE s.run_id = ? AND s.item_id = ? ORDER BY s.seq, u.try`, runID, itemID)
	if err != nil {
		return fail(err)
	}
	for rows.Next() {
		var t TryUsage
		u := &t.Usage
		if err := rows.Scan(&t.StepID, &t.Try, &u.InputTokens, &u.OutputTokens, &u.CacheReadTokens, &u.CacheWriteTokens,
			&u.CostUSD, &u.CostEstimated); err != nil {
			rows.Close()
			return fail(err)
		}
		x.Usage = append(x.Usage, t)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return fail(err)
	}
	u := &x.Totals
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(SUM(input_tokens), 0), COALESCE(SUM(output_tokens), 0),
		COALESCE(SUM(cache_read_tokens), 0), COALESCE(SUM(cache_write_tokens), 0),
		COALESCE(SUM(cost_usd), 0), COALESCE(MAX(cost_estimated), 0) FROM step_usage WHERE run_id = ?`, runID).
		Scan(&u.InputTokens, &u.OutputTokens, &u.CacheReadTokens, &u.CacheWriteTokens, &u.CostUSD, &u.CostEstimated); err != nil {
		return fail(err)
	}
	if x.Seq, err = appliedSeq(ctx, tx, runID, itemID); err != nil {
		return fail(err)
	}
	return x, nil
}

// Hydrate makes this journal (a replica) hold x as the journal it was
// exported from held it, in one transaction: the run and its items as
// they were there, the item's steps and their usage replaced by x's, the
// rest of the run's spending (x.Totals less the usage rows the replica
// holds for the run) kept aside so Totals counts it, and the item's
// replica number set to x.Seq. Hydrating with the same x again changes
// nothing.
func (s *Store) Hydrate(ctx context.Context, x ItemExport) error {
	fail := func(err error) error {
		return fmt.Errorf("hydrate item %s of run %s: %w", x.Item, x.Run.ID, err)
	}
	if x.Run.ID == "" || x.Item == "" {
		return fail(errors.New("the export names no run or no item"))
	}
	for _, st := range x.Steps {
		if st.RunID != x.Run.ID || st.ItemID != x.Item {
			return fail(fmt.Errorf("step %s belongs to item %s of run %s", st.ID, st.ItemID, st.RunID))
		}
	}
	if !validRunStatus(x.Run.Status) {
		return fail(fmt.Errorf("run status %q unknown", x.Run.Status))
	}
	r := x.Run
	opts, err := jsonArg("options", r.Options)
	if err != nil {
		return fail(err)
	}
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO runs (`+runColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (id) DO UPDATE SET repo = excluded.repo, workflow = excluded.workflow, status = excluded.status,
			options = excluded.options, pid = excluded.pid, started_at = excluded.started_at,
			updated_at = excluded.updated_at, ended_at = excluded.ended_at`,
			r.ID, r.Repo, r.Workflow, r.Status, opts, r.PID, fmtTime(r.StartedAt), fmtTime(r.UpdatedAt), fmtTimePtr(r.EndedAt)); err != nil {
			return fmt.Errorf("run: %w", err)
		}
		for _, it := range x.Items {
			if it.RunID != r.ID || !validItemStatus(it.Status) {
				return fmt.Errorf("item %s: want an item of run %s with a known status", it.ID, r.ID)
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO items (`+itemColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
				ON CONFLICT (run_id, id) DO UPDATE SET source = excluded.source, ref = excluded.ref, title = excluded.title,
				init_stage = excluded.init_stage, init_attempts = excluded.init_attempts, stage = excluded.stage,
				status = excluded.status, attempts = excluded.attempts, current_step = excluded.current_step,
				error = excluded.error, updated_at = excluded.updated_at`,
				it.RunID, it.ID, it.Source, it.Ref, it.Title, it.InitStage, it.InitAttempts, it.Stage, it.Status,
				it.Attempts, it.CurrentStep, it.Error, fmtTime(it.UpdatedAt)); err != nil {
				return fmt.Errorf("item %s: %w", it.ID, err)
			}
		}
		// The item's steps as exported, in their order; their usage rows
		// go with them (ON DELETE CASCADE).
		if _, err := tx.ExecContext(ctx, `DELETE FROM steps WHERE run_id = ? AND item_id = ?`, r.ID, x.Item); err != nil {
			return fmt.Errorf("steps: %w", err)
		}
		for _, st := range x.Steps {
			signal, err := jsonArg("signal", st.Signal)
			if err != nil {
				return fmt.Errorf("step %s: %w", st.ID, err)
			}
			result, err := jsonArg("result", st.Result)
			if err != nil {
				return fmt.Errorf("step %s: %w", st.ID, err)
			}
			u := st.Usage
			// A process group names a process on the exporting machine:
			// never one to kill here.
			if _, err := tx.ExecContext(ctx, `INSERT INTO steps (`+stepColumns+`)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, 0)`,
				st.RunID, st.ItemID, st.ID, st.Role, st.Runner, st.Model, st.Kind, st.Status, st.Tries, st.ExitCode,
				st.OutputPath, signal, result, u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheWriteTokens,
				u.CostUSD, u.CostEstimated, st.Error, fmtTime(st.StartedAt), fmtTimePtr(st.EndedAt)); err != nil {
				return fmt.Errorf("step %s: %w", st.ID, err)
			}
		}
		for _, t := range x.Usage {
			u := t.Usage
			if _, err := tx.ExecContext(ctx, stepUsageQuery, r.ID, t.StepID, t.Try, u.InputTokens, u.OutputTokens,
				u.CacheReadTokens, u.CacheWriteTokens, u.CostUSD, u.CostEstimated); err != nil {
				if isForeignKey(err) {
					return fmt.Errorf("usage of try %d of step %s: no such step of the item", t.Try, t.StepID)
				}
				return fmt.Errorf("usage of step %s: %w", t.StepID, err)
			}
		}
		// What the run spent beyond the rows held here. A replica's own
		// rows not yet applied to the exporting journal are in neither
		// x.Totals nor this base, so they count once.
		var held Usage
		if err := tx.QueryRowContext(ctx, `SELECT COALESCE(SUM(input_tokens), 0), COALESCE(SUM(output_tokens), 0),
			COALESCE(SUM(cache_read_tokens), 0), COALESCE(SUM(cache_write_tokens), 0), COALESCE(SUM(cost_usd), 0)
			FROM step_usage WHERE run_id = ?`, r.ID).
			Scan(&held.InputTokens, &held.OutputTokens, &held.CacheReadTokens, &held.CacheWriteTokens, &held.CostUSD); err != nil {
			return fmt.Errorf("usage: %w", err)
		}
		t := x.Totals
		if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO replica_usage
			(run_id, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_usd, cost_estimated)
			VALUES (?, ?, ?, ?, ?, ?, ?)`, r.ID,
			max(t.InputTokens-held.InputTokens, 0), max(t.OutputTokens-held.OutputTokens, 0),
			max(t.CacheReadTokens-held.CacheReadTokens, 0), max(t.CacheWriteTokens-held.CacheWriteTokens, 0),
			max(t.CostUSD-held.CostUSD, 0), t.CostEstimated); err != nil {
			return fmt.Errorf("usage: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO replica_items (run_id, item_id, seq) VALUES (?, ?, ?)`,
			r.ID, x.Item, x.Seq); err != nil {
			return fmt.Errorf("replica number: %w", err)
		}
		return nil
	})
	if err != nil {
		return fail(err)
	}
	return nil
}

// ReplicaSeq is the number of the item's batches this replica's copy of
// the item reflects: its snapshot's, then one more per batch taken
// (NextReplicaSeq). ErrNotFound when the item was never hydrated here.
func (s *Store) ReplicaSeq(ctx context.Context, run, item string) (int64, error) {
	var seq int64
	err := s.r.QueryRowContext(ctx, `SELECT seq FROM replica_items WHERE run_id = ? AND item_id = ?`, run, item).Scan(&seq)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("replica of item %s of run %s: %w (hydrate it first)", item, run, ErrNotFound)
	}
	if err != nil {
		return 0, fmt.Errorf("replica of item %s of run %s: %w", item, run, err)
	}
	return seq, nil
}

// NextReplicaSeq counts one more batch taken from the replica's item and
// returns its number.
func (s *Store) NextReplicaSeq(ctx context.Context, run, item string) (int64, error) {
	var seq int64
	err := s.w.QueryRowContext(ctx, `UPDATE replica_items SET seq = seq + 1 WHERE run_id = ? AND item_id = ? RETURNING seq`,
		run, item).Scan(&seq)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("next batch of item %s of run %s: replica %w (hydrate it first)", item, run, ErrNotFound)
	}
	if err != nil {
		return 0, fmt.Errorf("next batch of item %s of run %s: %w", item, run, err)
	}
	return seq, nil
}
