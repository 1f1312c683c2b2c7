package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// OpKind names a journal write an Op records.
type OpKind string

// The writes a tap records, one per mutating call (see SetTap).
const (
	OpStartStep   OpKind = "start_step"  // StartStep: Step
	OpFinishStep  OpKind = "finish_step" // FinishStep: Step, its EndedAt set
	OpStepGroup   OpKind = "step_group"  // SetStepGroup: Step.ID, Pgid, PgidStart
	OpNoteUsage   OpKind = "note_usage"  // NoteUsage: Step
	OpUpdateItem  OpKind = "update_item" // UpdateItem: Item, Update
	OpEvents      OpKind = "events"      // AppendEvents: Events, their times set
	OpEvaluations OpKind = "evaluations" // RecordEvaluations: Evals, CreatedAt set
	OpRunStatus   OpKind = "run_status"  // SetRunStatus: Status, PID
	OpRunOptions  OpKind = "run_options" // SetRunOptions: Options
	OpCreateRun   OpKind = "create_run"  // CreateRun (not tapped: a run is created where it starts)
	OpAddItem     OpKind = "add_item"    // AddItem (not tapped: items are added with their run)
	OpApply       OpKind = "apply"       // ApplyOps (not tapped: the batch came from another journal)
)

// Op is one write of the journal as it was made, with the times the store
// stamped, so that applying it to another journal (ApplyOps) makes the
// same change there: a step's tries counted the same, its usage kept per
// try, the same times.
type Op struct {
	Kind    OpKind          `json:"op"`
	At      time.Time       `json:"at"`
	Run     string          `json:"run"`
	Item    string          `json:"item,omitempty"`
	Step    *Step           `json:"step,omitempty"`
	Update  *ItemUpdate     `json:"update,omitempty"`
	Events  []Event         `json:"events,omitempty"`
	Evals   []Evaluation    `json:"evals,omitempty"`
	Status  string          `json:"status,omitempty"`
	PID     int             `json:"pid,omitempty"`
	Options json.RawMessage `json:"options,omitempty"`
}

// SetTap has fn called with every write the store commits from now on,
// in the goroutine that made it, after it committed (nil: none). Writes
// applied by ApplyOps or Hydrate are not tapped: they come from another
// journal.
func (s *Store) SetTap(fn func(Op)) {
	if fn == nil {
		s.tap.Store(nil)
		return
	}
	s.tap.Store(&fn)
}

// SetFault has fn asked before each write of the journal, by its kind;
// a non-nil error fails that write with it, before anything is written
// (nil fn: none). It stands for the faults of a real journal (a full
// disk, a journal another process keeps busy) in tests of what the
// callers do with a write that did not happen.
func (s *Store) SetFault(fn func(OpKind) error) {
	if fn == nil {
		s.faultFn.Store(nil)
		return
	}
	s.faultFn.Store(&fn)
}

// fault is the injected failure of a write of kind k, or nil.
func (s *Store) fault(k OpKind) error {
	if fn := s.faultFn.Load(); fn != nil {
		return (*fn)(k)
	}
	return nil
}

func (s *Store) emit(op Op) {
	if fn := s.tap.Load(); fn != nil {
		(*fn)(op)
	}
}

// wstmt is query prepared on the writer, for use in tx when tx is not nil.
func (s *Store) wstmt(ctx context.Context, tx *sql.Tx, query string) (*sql.Stmt, error) {
	if tx == nil {
		return s.prepared(ctx, true, query)
	}
	return s.txStmt(ctx, tx, query)
}

// EncodeOps is the wire form of ops: a JSON array.
func EncodeOps(ops []Op) ([]byte, error) {
	for i, op := range ops {
		if err := op.check(); err != nil {
			return nil, fmt.Errorf("encode op %d: %w", i, err)
		}
	}
	data, err := json.Marshal(ops)
	if err != nil {
		return nil, fmt.Errorf("encode ops: %w", err)
	}
	return data, nil
}

// DecodeOps reads what EncodeOps wrote, refusing an op that names no run,
// has an unknown kind or lacks what its kind needs.
func DecodeOps(data []byte) ([]Op, error) {
	var ops []Op
	if err := json.Unmarshal(data, &ops); err != nil {
		return nil, fmt.Errorf("decode ops: %w", err)
	}
	for i, op := range ops {
		if err := op.check(); err != nil {
			return nil, fmt.Errorf("decode op %d: %w", i, err)
		}
		ops[i] = op.absent()
	}
	return ops, nil
}

// absent makes the JSON values encoded as null (absent ones: a nil
// json.RawMessage encodes so) absent again.
func (op Op) absent() Op {
	none := func(v *json.RawMessage) {
		if string(*v) == "null" {
			*v = nil
		}
	}
	none(&op.Options)
	if op.Step != nil {
		st := *op.Step
		none(&st.Signal)
		none(&st.Result)
		op.Step = &st
	}
	for i := range op.Events {
		none(&op.Events[i].Data)
	}
	for i := range op.Evals {
		none(&op.Evals[i].Detail)
	}
	return op
}

// check says what op lacks for its kind.
func (op Op) check() error {
	if op.Run == "" {
		return fmt.Errorf("%s: no run", op.Kind)
	}
	if op.At.IsZero() {
		return fmt.Errorf("%s: no time", op.Kind)
	}
	switch op.Kind {
	case OpStartStep, OpFinishStep, OpStepGroup, OpNoteUsage:
		if op.Step == nil || op.Step.ID == "" || op.Step.RunID != op.Run {
			return fmt.Errorf("%s: want a step of run %s", op.Kind, op.Run)
		}
		if op.Kind == OpFinishStep && op.Step.EndedAt == nil {
			return fmt.Errorf("%s %s: no end time", op.Kind, op.Step.ID)
		}
	case OpUpdateItem:
		if op.Item == "" || op.Update == nil {
			return fmt.Errorf("%s: want an item and its update", op.Kind)
		}
	case OpEvents:
		if len(op.Events) == 0 {
			return fmt.Errorf("%s: no events", op.Kind)
		}
		for _, e := range op.Events {
			if e.RunID != op.Run || e.Type == "" || e.Time.IsZero() {
				return fmt.Errorf("%s: event %q: want run %s, a type and a time", op.Kind, e.Type, op.Run)
			}
		}
	case OpEvaluations:
		if len(op.Evals) == 0 {
			return fmt.Errorf("%s: no evaluations", op.Kind)
		}
		for _, e := range op.Evals {
			if e.RunID != op.Run || e.CreatedAt.IsZero() {
				return fmt.Errorf("%s: %s evaluation of %s: want run %s and a time", op.Kind, e.Kind, e.StepID, op.Run)
			}
		}
	case OpRunStatus:
		if !validRunStatus(op.Status) {
			return fmt.Errorf("%s: unknown status %q", op.Kind, op.Status)
		}
	case OpRunOptions:
	default:
		return fmt.Errorf("unknown op %q", op.Kind)
	}
	return nil
}

// apply makes op's write in tx, as the call it records made it, its free
// text masked as this journal masks its own.
func (s *Store) apply(ctx context.Context, tx *sql.Tx, op Op) error {
	op = s.maskOp(op)
	switch op.Kind {
	case OpStartStep:
		return s.startStep(ctx, tx, *op.Step)
	case OpFinishStep:
		_, err := s.finishStep(ctx, tx, *op.Step)
		if errors.Is(err, ErrCompleted) && op.Step.Kind == "human" {
			// A question answered here (cadre approve journals the answer
			// where the run started, then signals the item) and again by
			// the replica that asked it: the answers are the same one.
			return nil
		}
		if err != nil {
			return fmt.Errorf("finish step %s: %w", op.Step.ID, err)
		}
		return nil
	case OpStepGroup:
		return s.setStepGroup(ctx, tx, op.Run, op.Step.ID, op.Step.Pgid, op.Step.PgidStart)
	case OpNoteUsage:
		return s.noteUsage(ctx, tx, *op.Step)
	case OpUpdateItem:
		return s.updateItem(ctx, tx, op.Run, op.Item, *op.Update, op.At)
	case OpEvents:
		return s.appendEvents(ctx, tx, op.Events)
	case OpEvaluations:
		for _, e := range op.Evals {
			if err := e.validate(); err != nil {
				return fmt.Errorf("record evaluation: %w", err)
			}
		}
		return s.recordEvaluations(ctx, tx, op.Evals)
	case OpRunStatus:
		return s.setRunStatus(ctx, tx, op.Run, op.Status, op.PID, op.At)
	case OpRunOptions:
		return s.setRunOptions(ctx, tx, op.Run, op.Options, op.At)
	}
	return fmt.Errorf("unknown op %q", op.Kind)
}

// BatchKey names one batch of an item's writes: the seq-th sent back for
// the item of the run, counting from 1.
type BatchKey struct {
	Run  string `json:"run"`
	Item string `json:"item"`
	Seq  int64  `json:"seq"`
}

func (k BatchKey) String() string {
	return fmt.Sprintf("batch %d of item %s of run %s", k.Seq, k.Item, k.Run)
}

var (
	// ErrBatchGap is wrapped when a batch arrives before the one numbered
	// before it: apply that one first (retrying later applies it in order).
	ErrBatchGap = errors.New("an earlier batch is missing")
	// ErrBatchConflict is wrapped when a batch's number was applied with
	// other content: its replica missed later batches, and must be
	// hydrated again before the item's next step.
	ErrBatchConflict = errors.New("applied before with other content")
)

// ApplyOps makes the writes of ops in one transaction, together with a
// record of key and digest (the batch's checksum), unless key was applied
// before: then it changes nothing and returns false. A key applied with
// another digest is refused (ErrBatchConflict), as is one whose previous
// batch was not applied (ErrBatchGap).
//
// write, when not nil, is called in that transaction, after the ops and
// the record, only when this call applies the batch; its error rolls the
// batch back. The transaction holds the journal's write lock from its
// start (IMMEDIATE), so while write runs no other connection, in this
// process or another, applies a batch to the journal: what write does (the
// batch's files) is done once per batch and in the batches' order, except
// when the commit fails after it, and the batch is applied again.
func (s *Store) ApplyOps(ctx context.Context, key BatchKey, digest string, ops []Op, write func() error) (bool, error) {
	if key.Run == "" || key.Item == "" || key.Seq < 1 || digest == "" {
		return false, fmt.Errorf("apply %s: want a run, an item, a number from 1 and a digest", key)
	}
	if err := s.fault(OpApply); err != nil {
		return false, fmt.Errorf("apply %s: %w", key, err)
	}
	for i, op := range ops {
		if err := op.check(); err != nil {
			return false, fmt.Errorf("apply %s: op %d: %w", key, i, err)
		}
	}
	applied := false
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		var had string
		err := tx.QueryRowContext(ctx, `SELECT digest FROM batches WHERE run_id = ? AND item_id = ? AND seq = ?`,
			key.Run, key.Item, key.Seq).Scan(&had)
		switch {
		case err == nil && had == digest:
			return nil
		case err == nil:
			return ErrBatchConflict
		case !errors.Is(err, sql.ErrNoRows):
			return err
		}
		last, err := appliedSeq(ctx, tx, key.Run, key.Item)
		if err != nil {
			return err
		}
		if key.Seq != last+1 {
			return fmt.Errorf("%w: the journal has the item's batches up to %d", ErrBatchGap, last)
		}
		for i, op := range ops {
			if err := s.apply(ctx, tx, op); err != nil {
				return fmt.Errorf("op %d (%s): %w", i, op.Kind, err)
			}
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO batches (run_id, item_id, seq, digest, applied_at) VALUES (?, ?, ?, ?, ?)`,
			key.Run, key.Item, key.Seq, digest, fmtTime(s.now())); err != nil {
			return err
		}
		if write != nil {
			if err := write(); err != nil {
				return err
			}
		}
		applied = true
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("apply %s: %w", key, err)
	}
	return applied, nil
}

// querier is *sql.Tx or *sql.DB.
type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// appliedSeq is the number of the item's latest applied batch (0: none).
func appliedSeq(ctx context.Context, q querier, run, item string) (int64, error) {
	var seq int64
	err := q.QueryRowContext(ctx, `SELECT COALESCE(MAX(seq), 0) FROM batches WHERE run_id = ? AND item_id = ?`, run, item).Scan(&seq)
	return seq, err
}

// AppliedSeq is the number of the latest batch of the item applied to this
// journal, 0 when none was.
func (s *Store) AppliedSeq(ctx context.Context, run, item string) (int64, error) {
	seq, err := appliedSeq(ctx, s.r, run, item)
	if err != nil {
		return 0, fmt.Errorf("applied batches of item %s of run %s: %w", item, run, err)
	}
	return seq, nil
}
