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
// item's steps and the usage of their tries, the run's totals, the
// number of the item's batches applied here (Seq), and the count of every
// item of the run (Counts).
type ItemExport struct {
	Seq    int64
	Run    Run
	Items  []Item
	Item   string
	Steps  []Step
	Usage  []TryUsage
	Totals Usage
	Counts []ItemCount
}

// ItemCount is what a journal counts of one item of a run: the number of
// its batches applied there and what its steps spent. A replica holding
// its own copy of the item tells by Seq whether the copy is behind.
type ItemCount struct {
	Item  string
	Seq   int64
	Usage Usage
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
	if x.Counts, err = itemCounts(ctx, tx, runID); err != nil {
		return fail(err)
	}
	return x, nil
}

// itemCounts counts, per item of the run, its applied batches and its
// steps' spending, in item order.
func itemCounts(ctx context.Context, tx *sql.Tx, runID string) ([]ItemCount, error) {
	rows, err := tx.QueryContext(ctx, `SELECT i.id,
		(SELECT COALESCE(MAX(b.seq), 0) FROM batches b WHERE b.run_id = i.run_id AND b.item_id = i.id),
		COALESCE(SUM(u.input_tokens), 0), COALESCE(SUM(u.output_tokens), 0), COALESCE(SUM(u.cache_read_tokens), 0),
		COALESCE(SUM(u.cache_write_tokens), 0), COALESCE(SUM(u.cost_usd), 0), COALESCE(MAX(u.cost_estimated), 0)
		FROM items i
		LEFT JOIN steps s ON s.run_id = i.run_id AND s.item_id = i.id
		LEFT JOIN step_usage u ON u.run_id = s.run_id AND u.step_id = s.id
		WHERE i.run_id = ? GROUP BY i.id ORDER BY i.seq`, runID)
	if err != nil {
		return nil, fmt.Errorf("item counts: %w", err)
	}
	defer rows.Close()
	var out []ItemCount
	for rows.Next() {
		var c ItemCount
		u := &c.Usage
		if err := rows.Scan(&c.Item, &c.Seq, &u.InputTokens, &u.OutputTokens, &u.CacheReadTokens, &u.CacheWriteTokens,
			&u.CostUSD, &u.CostEstimated); err != nil {
			return nil, fmt.Errorf("item counts: %w", err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("item counts: %w", err)
	}
	return out, nil
}

// Hydrate makes this journal (a replica) hold x's item as the journal it
// was exported from held it, in one transaction: the run's row and the
// item's row as they were there, the item's steps and their usage
// replaced by x's, and the item's replica number set to x.Seq. The run's
// other items keep the rows the replica holds of them when its copy is
// its own (see ownCopies): only a copy behind the export, or none, takes
// the export's row. The rest of the run's spending is kept aside
// (replica_usage) so Totals counts the export's totals plus what the
// replica's own copies spent that the export has not counted. Hydrating
// with the same x again changes nothing.
func (s *Store) Hydrate(ctx context.Context, x ItemExport) error {
	fail := func(err error) error {
		return fmt.Errorf("hydrate item %s of run %s: %w", x.Item, x.Run.ID, err)
	}
	if err := checkExport(x); err != nil {
		return fail(err)
	}
	opts, err := jsonArg("options", x.Run.Options)
	if err != nil {
		return fail(err)
	}
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		own, err := ownCopies(ctx, tx, x)
		if err != nil {
			return err
		}
		if err := hydrateRun(ctx, tx, x.Run, opts); err != nil {
			return err
		}
		if err := hydrateItems(ctx, tx, x, own); err != nil {
			return err
		}
		if err := hydrateSteps(ctx, tx, x); err != nil {
			return err
		}
		if err := hydrateUsage(ctx, tx, x); err != nil {
			return err
		}
		if err := keepReplicaUsage(ctx, tx, x, own); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO replica_items (run_id, item_id, seq) VALUES (?, ?, ?)`,
			x.Run.ID, x.Item, x.Seq); err != nil {
			return fmt.Errorf("replica number: %w", err)
		}
		return nil
	})
	if err != nil {
		return fail(err)
	}
	return nil
}

// checkExport refuses an export a replica cannot hold: one naming no run
// or no item, one with a step of another item, or one whose run has a
// status this journal does not know.
func checkExport(x ItemExport) error {
	if x.Run.ID == "" || x.Item == "" {
		return errors.New("the export names no run or no item")
	}
	for _, st := range x.Steps {
		if st.RunID != x.Run.ID || st.ItemID != x.Item {
			return fmt.Errorf("step %s belongs to item %s of run %s", st.ID, st.ItemID, st.RunID)
		}
	}
	if !validRunStatus(x.Run.Status) {
		return fmt.Errorf("run status %q unknown", x.Run.Status)
	}
	return nil
}

// hydrateRun writes the run's row as exported (opts is its options,
// encoded). The export's row always wins: a replica never sends a write
// of it home (a batch carries only its item's writes), so what it holds
// of the run is at best an older export's.
func hydrateRun(ctx context.Context, tx *sql.Tx, r Run, opts any) error {
	if _, err := tx.ExecContext(ctx, `INSERT INTO runs (`+runColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET repo = excluded.repo, workflow = excluded.workflow, status = excluded.status,
		options = excluded.options, pid = excluded.pid, started_at = excluded.started_at,
		updated_at = excluded.updated_at, ended_at = excluded.ended_at`,
		r.ID, r.Repo, r.Workflow, r.Status, opts, r.PID, fmtTime(r.StartedAt), fmtTime(r.UpdatedAt), fmtTimePtr(r.EndedAt)); err != nil {
		return fmt.Errorf("run: %w", err)
	}
	return nil
}

// hydrateItems writes the run's item rows as exported, except those whose
// copy here is the replica's own (own), which keep the rows held here.
// Every exported item must belong to the run and have a known status.
func hydrateItems(ctx context.Context, tx *sql.Tx, x ItemExport, own map[string]bool) error {
	for _, it := range x.Items {
		if it.RunID != x.Run.ID || !validItemStatus(it.Status) {
			return fmt.Errorf("item %s: want an item of run %s with a known status", it.ID, x.Run.ID)
		}
		if own[it.ID] {
			continue
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
	return nil
}

// hydrateSteps replaces the item's steps by the exported ones, in their
// order; the old steps' usage rows go with them (ON DELETE CASCADE). A
// process group names a process on the exporting machine, never one to
// kill here, so the steps are written with none.
func hydrateSteps(ctx context.Context, tx *sql.Tx, x ItemExport) error {
	if _, err := tx.ExecContext(ctx, `DELETE FROM steps WHERE run_id = ? AND item_id = ?`, x.Run.ID, x.Item); err != nil {
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
		if _, err := tx.ExecContext(ctx, `INSERT INTO steps (`+stepColumns+`)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, 0)`,
			st.RunID, st.ItemID, st.ID, st.Role, st.Runner, st.Model, st.Kind, st.Status, st.Tries, st.ExitCode,
			st.OutputPath, signal, result, u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheWriteTokens,
			u.CostUSD, u.CostEstimated, st.Error, fmtTime(st.StartedAt), fmtTimePtr(st.EndedAt)); err != nil {
			return fmt.Errorf("step %s: %w", st.ID, err)
		}
	}
	return nil
}

// hydrateUsage writes the usage of every exported try; a try of a step
// the item does not have is refused.
func hydrateUsage(ctx context.Context, tx *sql.Tx, x ItemExport) error {
	for _, t := range x.Usage {
		u := t.Usage
		if _, err := tx.ExecContext(ctx, stepUsageQuery, x.Run.ID, t.StepID, t.Try, u.InputTokens, u.OutputTokens,
			u.CacheReadTokens, u.CacheWriteTokens, u.CostUSD, u.CostEstimated); err != nil {
			if isForeignKey(err) {
				return fmt.Errorf("usage of try %d of step %s: no such step of the item", t.Try, t.StepID)
			}
			return fmt.Errorf("usage of step %s: %w", t.StepID, err)
		}
	}
	return nil
}

// keepReplicaUsage sets aside (replica_usage) what the run spent beyond
// the usage rows held here: x.Totals, less what x counts of the items
// whose copy here is the replica's own (its usage rows here are those,
// and more not sent yet), less the rows held of the other items (x counts
// them all: they came from the exporting journal, or were sent there).
// No token count or cost set aside goes below zero.
func keepReplicaUsage(ctx context.Context, tx *sql.Tx, x ItemExport, own map[string]bool) error {
	held, err := heldUsage(ctx, tx, x.Run.ID)
	if err != nil {
		return err
	}
	counted := map[string]Usage{}
	for _, c := range x.Counts {
		counted[c.Item] = c.Usage
	}
	t := x.Totals
	for id, u := range held {
		if own[id] {
			u = counted[id]
		}
		t = t.minus(u)
	}
	for id := range own {
		if _, ok := held[id]; !ok {
			t = t.minus(counted[id])
		}
	}
	if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO replica_usage
		(run_id, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_usd, cost_estimated)
		VALUES (?, ?, ?, ?, ?, ?, ?)`, x.Run.ID,
		max(t.InputTokens, 0), max(t.OutputTokens, 0), max(t.CacheReadTokens, 0), max(t.CacheWriteTokens, 0),
		max(t.CostUSD, 0), x.Totals.CostEstimated); err != nil {
		return fmt.Errorf("usage: %w", err)
	}
	return nil
}

// heldUsage sums the usage rows this journal holds of the run, per item.
func heldUsage(ctx context.Context, tx *sql.Tx, runID string) (map[string]Usage, error) {
	held := map[string]Usage{}
	rows, err := tx.QueryContext(ctx, `SELECT s.item_id, COALESCE(SUM(u.input_tokens), 0), COALESCE(SUM(u.output_tokens), 0),
		COALESCE(SUM(u.cache_read_tokens), 0), COALESCE(SUM(u.cache_write_tokens), 0), COALESCE(SUM(u.cost_usd), 0)
		FROM step_usage u JOIN steps s ON s.run_id = u.run_id AND s.id = u.step_id
		WHERE u.run_id = ? GROUP BY s.item_id`, runID)
	if err != nil {
		return nil, fmt.Errorf("usage: %w", err)
	}
	for rows.Next() {
		var id string
		var u Usage
		if err := rows.Scan(&id, &u.InputTokens, &u.OutputTokens, &u.CacheReadTokens, &u.CacheWriteTokens, &u.CostUSD); err != nil {
			rows.Close()
			return nil, fmt.Errorf("usage: %w", err)
		}
		held[id] = u
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, fmt.Errorf("usage: %w", err)
	}
	return held, nil
}

// ownCopies are the run's items other than x's whose copy in this replica
// is its own: hydrated here, and counting no fewer batches than the
// export does of them. Such a copy may be mid-step here, its rows newer
// than the exporting journal's until its batch lands there, so hydrating
// another item must not replace them. A copy counting fewer is behind
// (its item took steps elsewhere since): its rows are the export's, and
// the item is hydrated again before its next step here anyway.
func ownCopies(ctx context.Context, tx *sql.Tx, x ItemExport) (map[string]bool, error) {
	seqs := map[string]int64{}
	for _, c := range x.Counts {
		seqs[c.Item] = c.Seq
	}
	rows, err := tx.QueryContext(ctx, `SELECT item_id, seq FROM replica_items WHERE run_id = ? AND item_id != ?`, x.Run.ID, x.Item)
	if err != nil {
		return nil, fmt.Errorf("replica numbers: %w", err)
	}
	defer rows.Close()
	own := map[string]bool{}
	for rows.Next() {
		var id string
		var seq int64
		if err := rows.Scan(&id, &seq); err != nil {
			return nil, fmt.Errorf("replica numbers: %w", err)
		}
		if seq >= seqs[id] {
			own[id] = true
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("replica numbers: %w", err)
	}
	return own, nil
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

// minus is u less v, token by token (v's CostEstimated aside).
func (u Usage) minus(v Usage) Usage {
	u.InputTokens -= v.InputTokens
	u.OutputTokens -= v.OutputTokens
	u.CacheReadTokens -= v.CacheReadTokens
	u.CacheWriteTokens -= v.CacheWriteTokens
	u.CostUSD -= v.CostUSD
	return u
}
