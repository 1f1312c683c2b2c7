package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"
)

// Event is one entry of a run's event stream (an event.Event as journaled).
// Data holds the event's JSON payload.
type Event struct {
	Seq    int64 // set by the store: position in the journal, increasing
	RunID  string
	Time   time.Time
	Type   string
	ItemID string
	Data   json.RawMessage
}

// AppendEvent adds an event to the journal. A zero Time means now; Seq is
// ignored.
func (s *Store) AppendEvent(ctx context.Context, e Event) error {
	return s.AppendEvents(ctx, []Event{e})
}

// AppendEvents adds events to the journal in one transaction, in order:
// all of them or none.
const appendEventQuery = `INSERT INTO events (run_id, time, type, item_id, data) VALUES (?, ?, ?, ?, ?)`

func (s *Store) AppendEvents(ctx context.Context, events []Event) error {
	if err := s.fault(OpEvents); err != nil {
		return fmt.Errorf("append events: %w", err)
	}
	for _, e := range events {
		if e.RunID == "" || e.Type == "" {
			return fmt.Errorf("append event %q of run %q: run id and event type are required", e.Type, e.RunID)
		}
	}
	stamped := s.maskEvents(events)
	for i := range stamped {
		stamped[i].Time, stamped[i].Seq = s.orNow(stamped[i].Time), 0
	}
	if err := s.inTx(ctx, func(tx *sql.Tx) error { return s.appendEvents(ctx, tx, stamped) }); err != nil {
		return err
	}
	for _, e := range stamped {
		s.emit(Op{Kind: OpEvents, At: e.Time, Run: e.RunID, Item: e.ItemID, Events: []Event{e}})
	}
	return nil
}

// appendEvents inserts events, their times set, in tx.
func (s *Store) appendEvents(ctx context.Context, tx *sql.Tx, events []Event) error {
	insert, err := s.txStmt(ctx, tx, appendEventQuery)
	if err != nil {
		return fmt.Errorf("append events: %w", err)
	}
	for _, e := range events {
		data, err := jsonArg("data", e.Data)
		if err != nil {
			return fmt.Errorf("append event %s: %w", e.Type, err)
		}
		_, err = insert.ExecContext(ctx, e.RunID, fmtTime(e.Time), e.Type, e.ItemID, data)
		if isForeignKey(err) {
			return fmt.Errorf("append event %s: run %s %w", e.Type, e.RunID, ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("append event %s: %w", e.Type, err)
		}
	}
	return nil
}

// Events returns the run's events with sequence number above afterSeq, in
// order, and the last sequence number returned (afterSeq when there are
// none), ready to pass back as the next afterSeq. An empty runID reads the
// events of all runs.
func (s *Store) Events(ctx context.Context, runID string, afterSeq int64) ([]Event, int64, error) {
	var (
		rows *sql.Rows
		err  error
	)
	const cols = `SELECT seq, run_id, time, type, item_id, data FROM events`
	if runID == "" {
		rows, err = s.r.QueryContext(ctx, cols+` WHERE seq > ? ORDER BY seq`, afterSeq)
	} else {
		rows, err = s.r.QueryContext(ctx, cols+` WHERE run_id = ? AND seq > ? ORDER BY seq`, runID, afterSeq)
	}
	if err != nil {
		return nil, afterSeq, fmt.Errorf("read events of run %s: %w", runID, err)
	}
	defer rows.Close()
	var (
		events []Event
		last   = afterSeq
	)
	for rows.Next() {
		var (
			e    Event
			t    string
			data sql.NullString
		)
		if err := rows.Scan(&e.Seq, &e.RunID, &t, &e.Type, &e.ItemID, &data); err != nil {
			return nil, afterSeq, fmt.Errorf("read events of run %s: %w", runID, err)
		}
		if e.Time, err = parseTime(t); err != nil {
			return nil, afterSeq, fmt.Errorf("read events of run %s: %w", runID, err)
		}
		e.Data = jsonCol(data)
		events = append(events, e)
		last = e.Seq
	}
	if err := rows.Err(); err != nil {
		return nil, afterSeq, fmt.Errorf("read events of run %s: %w", runID, err)
	}
	return events, last, nil
}

// LastEventSeq is the sequence number of the journal's latest event (0 when
// there is none): a reader that took a snapshot of the journal follows the
// events after it.
func (s *Store) LastEventSeq(ctx context.Context) (int64, error) {
	var seq sql.NullInt64
	if err := s.r.QueryRowContext(ctx, `SELECT MAX(seq) FROM events`).Scan(&seq); err != nil {
		return 0, fmt.Errorf("read last event: %w", err)
	}
	return seq.Int64, nil
}
