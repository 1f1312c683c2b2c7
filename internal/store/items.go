package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Item statuses.
const (
	ItemPending   = "pending"
	ItemRunning   = "running"
	ItemCompleted = "completed"
	ItemFailed    = "failed"
	ItemStopped   = "stopped"
	ItemPaused    = "paused"
	ItemSkipped   = "skipped"
)

func validItemStatus(s string) bool {
	switch s {
	case ItemPending, ItemRunning, ItemCompleted, ItemFailed, ItemStopped, ItemPaused, ItemSkipped:
		return true
	}
	return false
}

const itemStatusHint = "want pending, running, completed, failed, stopped, paused or skipped"

// Item is one unit of work within a run.
type Item struct {
	RunID, ID, Source, Ref, Title string // Source "task"; Ref = task file path
	InitStage                     string // stage when the run first saw the item (resume replays from here)
	InitAttempts                  int    // attempts when the run first saw the item
	Stage, Status                 string // Status: pending|running|completed|failed|stopped|paused|skipped
	Attempts                      int
	CurrentStep                   string
	Error                         string
	UpdatedAt                     time.Time
}

// ItemUpdate changes some fields of an item; nil fields are left unchanged.
type ItemUpdate struct {
	Stage, Status, CurrentStep, Error *string
	Attempts                          *int
}

// AddItem records an item of a run. An empty Status means pending. If the
// run already has an item with this id the call changes nothing, so the
// item's Init* fields keep the state the run first saw.
func (s *Store) AddItem(ctx context.Context, it Item) error {
	if err := s.fault(OpAddItem); err != nil {
		return fmt.Errorf("add item %s: %w", it.ID, err)
	}
	it, err := checkItem(it)
	if err != nil {
		return err
	}
	return s.addItem(ctx, nil, it)
}

// checkItem checks an item to add, defaulting its status to pending.
func checkItem(it Item) (Item, error) {
	if it.RunID == "" || it.ID == "" {
		return it, fmt.Errorf("add item %q to run %q: run id and item id are required", it.ID, it.RunID)
	}
	if it.Status == "" {
		it.Status = ItemPending
	}
	if !validItemStatus(it.Status) {
		return it, fmt.Errorf("add item %s: unknown status %q (%s)", it.ID, it.Status, itemStatusHint)
	}
	return it, nil
}

// addItem is AddItem's write, in tx when tx is not nil.
func (s *Store) addItem(ctx context.Context, tx *sql.Tx, it Item) error {
	const q = `INSERT INTO items
		(run_id, id, source, ref, title, init_stage, init_attempts, stage, status, attempts, current_step, error, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (run_id, id) DO NOTHING`
	args := []any{it.RunID, it.ID, it.Source, it.Ref, it.Title, it.InitStage, it.InitAttempts,
		it.Stage, it.Status, it.Attempts, it.CurrentStep, it.Error, fmtTime(s.orNow(it.UpdatedAt))}
	var err error
	if tx != nil {
		_, err = tx.ExecContext(ctx, q, args...)
	} else {
		_, err = s.w.ExecContext(ctx, q, args...)
	}
	if isForeignKey(err) {
		return fmt.Errorf("add item %s: run %s %w", it.ID, it.RunID, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("add item %s: %w", it.ID, err)
	}
	return nil
}

// UpdateItem applies u to the item and stamps UpdatedAt; ErrNotFound when
// the item does not exist.
func (s *Store) UpdateItem(ctx context.Context, runID, id string, u ItemUpdate) error {
	if err := s.fault(OpUpdateItem); err != nil {
		return fmt.Errorf("update item %s: %w", id, err)
	}
	now := s.now()
	u = s.maskUpdate(u)
	if err := s.updateItem(ctx, nil, runID, id, u, now); err != nil {
		return err
	}
	u = u.clone()
	s.emit(Op{Kind: OpUpdateItem, At: now, Run: runID, Item: id, Update: &u})
	return nil
}

// updateItem is UpdateItem's write stamped now, in tx when tx is not nil.
func (s *Store) updateItem(ctx context.Context, tx *sql.Tx, runID, id string, u ItemUpdate, now time.Time) error {
	sets := []string{"updated_at = ?"}
	args := []any{fmtTime(now)}
	set := func(col string, v any) {
		sets = append(sets, col+" = ?")
		args = append(args, v)
	}
	if u.Stage != nil {
		set("stage", *u.Stage)
	}
	if u.Status != nil {
		if !validItemStatus(*u.Status) {
			return fmt.Errorf("update item %s: unknown status %q (%s)", id, *u.Status, itemStatusHint)
		}
		set("status", *u.Status)
	}
	if u.CurrentStep != nil {
		set("current_step", *u.CurrentStep)
	}
	if u.Error != nil {
		set("error", *u.Error)
	}
	if u.Attempts != nil {
		set("attempts", *u.Attempts)
	}
	args = append(args, runID, id)
	// One text per combination of fields set: a handful, each prepared once.
	stmt, err := s.wstmt(ctx, tx, `UPDATE items SET `+strings.Join(sets, ", ")+` WHERE run_id = ? AND id = ?`)
	if err != nil {
		return fmt.Errorf("update item %s: %w", id, err)
	}
	res, err := stmt.ExecContext(ctx, args...)
	if err != nil {
		return fmt.Errorf("update item %s: %w", id, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("update item %s: %w", id, err)
	} else if n == 0 {
		return fmt.Errorf("update item %s of run %s: %w", id, runID, ErrNotFound)
	}
	return nil
}

// clone copies u with fields of its own, so a caller changing the values
// it pointed at does not change a recorded update.
func (u ItemUpdate) clone() ItemUpdate {
	c := ItemUpdate{}
	for _, f := range []struct{ dst, src **string }{{&c.Stage, &u.Stage}, {&c.Status, &u.Status}, {&c.CurrentStep, &u.CurrentStep}, {&c.Error, &u.Error}} {
		if *f.src != nil {
			v := **f.src
			*f.dst = &v
		}
	}
	if u.Attempts != nil {
		v := *u.Attempts
		c.Attempts = &v
	}
	return c
}

// GetItem returns one item of a run, or ErrNotFound.
func (s *Store) GetItem(ctx context.Context, runID, id string) (Item, error) {
	it, err := scanItem(s.r.QueryRowContext(ctx,
		`SELECT `+itemColumns+` FROM items WHERE run_id = ? AND id = ?`, runID, id))
	if errors.Is(err, sql.ErrNoRows) {
		return Item{}, fmt.Errorf("get item %s of run %s: %w", id, runID, ErrNotFound)
	}
	if err != nil {
		return Item{}, fmt.Errorf("get item %s: %w", id, err)
	}
	return it, nil
}

// Items returns the items of a run in the order they were added (none for
// an unknown run).
func (s *Store) Items(ctx context.Context, runID string) ([]Item, error) {
	rows, err := s.r.QueryContext(ctx,
		`SELECT `+itemColumns+` FROM items WHERE run_id = ? ORDER BY seq`, runID)
	if err != nil {
		return nil, fmt.Errorf("list items of run %s: %w", runID, err)
	}
	defer rows.Close()
	var items []Item
	for rows.Next() {
		it, err := scanItem(rows)
		if err != nil {
			return nil, fmt.Errorf("list items of run %s: %w", runID, err)
		}
		items = append(items, it)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list items of run %s: %w", runID, err)
	}
	return items, nil
}

const itemColumns = `run_id, id, source, ref, title, init_stage, init_attempts, stage, status, attempts, current_step, error, updated_at`

func scanItem(row rowScanner) (Item, error) {
	var (
		it      Item
		updated string
	)
	if err := row.Scan(&it.RunID, &it.ID, &it.Source, &it.Ref, &it.Title, &it.InitStage, &it.InitAttempts,
		&it.Stage, &it.Status, &it.Attempts, &it.CurrentStep, &it.Error, &updated); err != nil {
		return Item{}, err
	}
	var err error
	if it.UpdatedAt, err = parseTime(updated); err != nil {
		return Item{}, err
	}
	return it, nil
}

// LatestRunOf returns the id of the latest run that worked on item, or an
// error wrapping ErrNotFound.
func (s *Store) LatestRunOf(ctx context.Context, item string) (string, error) {
	var id string
	err := s.r.QueryRowContext(ctx, `SELECT i.run_id FROM items i JOIN runs r ON r.id = i.run_id
		WHERE i.id = ? ORDER BY r.started_at DESC, r.id DESC LIMIT 1`, item).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("item %s: %w", item, ErrNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("find the latest run of item %s: %w", item, err)
	}
	return id, nil
}
