package temporal

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/cadre-dev/cadre/internal/engine"
	"github.com/cadre-dev/cadre/internal/executor"
	"github.com/cadre-dev/cadre/internal/replica"
	"github.com/cadre-dev/cadre/internal/store"
)

// Workers on other machines. The journal of truth is the one of the
// machine that started the run: its home. A worker that shares the home's
// state directory (the same machine, the same repository) works on the
// journal directly, as the embedded engine does. A worker elsewhere keeps
// a replica: before an item's step it needs the item's journal as the
// home has it, which the workflow exports from the home and hands to the
// step when the worker's replica is behind (a "cold" step); after the
// step, what it changed in its replica (a batch) travels back in the
// step's result and the workflow applies it to the home journal. The
// item's branch travels through the repository's remote (pushed after
// every committed step), so any worker can continue it.
//
// The workflow knows which worker's replica is current: the workers that
// produced every change since their replica was last brought up to date
// (fresh). It sends an item's steps to the last remote worker's own task
// queue while that worker lives, so the item's worktree stays on one
// machine; a step that waits there longer than a heartbeat timeout goes to
// the shared queue, to a worker that hydrates the item from the home.

// Activities served on the home's own queue.
const (
	ActExport = "cadre.Export"
	ActApply  = "cadre.Apply"
	// ActFail journals an item failed whose Begin failed for good.
	ActFail = "cadre.Fail"
)

// ErrTypeCold: the worker's replica is behind the home journal; the
// workflow exports the item and runs the step again with it.
const ErrTypeCold = "cold"

// ErrTypeNoOrigin: a worker without an origin remote got a step of a run
// from elsewhere.
const ErrTypeNoOrigin = "no origin"

// HomeOf names the journal in stateDir on this machine: its host and
// path, and a random id kept beside it (stateDir/home), as two machines
// built from one image may share both.
func HomeOf(stateDir string) string {
	host, _ := os.Hostname()
	if abs, err := filepath.Abs(stateDir); err == nil {
		stateDir = abs
	}
	return host + ":" + stateDir + "#" + homeID(stateDir)
}

// homeID reads stateDir's home id, making one the first time. The id is
// written whole before it appears under its name (a link from a temporary
// file), so the processes starting together in one repository (the run,
// its workers) never read an empty one and all agree.
func homeID(stateDir string) string {
	p := filepath.Join(stateDir, "home")
	read := func() string {
		data, _ := os.ReadFile(p)
		return string(bytes.TrimSpace(data))
	}
	if id := read(); id != "" {
		return id
	}
	var b [8]byte
	rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	if err := os.MkdirAll(stateDir, 0o755); err != nil {
		return id
	}
	tmp, err := os.CreateTemp(stateDir, ".home-*")
	if err != nil {
		return id
	}
	defer os.Remove(tmp.Name())
	_, werr := tmp.WriteString(id + "\n")
	if cerr := tmp.Close(); werr != nil || cerr != nil {
		return id
	}
	if err := os.Link(tmp.Name(), p); err == nil {
		return id
	}
	// Another process made it first: its id.
	if got := read(); got != "" {
		return got
	}
	return id
}

// HomeQueue is the task queue the processes of home poll for its journal's
// activities (the run's starter, and workers sharing its state directory).
func HomeQueue(home string) string {
	sum := sha256.Sum256([]byte(home))
	return "cadre-home-" + hex.EncodeToString(sum[:8])
}

// Sync is what a step needs to know about its item's journal.
type Sync struct {
	// Home names the journal of truth (HomeOf).
	Home string `json:"home"`
	// Fresh lists the workers whose replica holds every change of the
	// item so far.
	Fresh []string `json:"fresh,omitempty"`
	// Snap is the item as the home journal has it (replica.Journal.Export's
	// snapshot), for a worker whose replica is not fresh.
	Snap json.RawMessage `json:"snap,omitempty"`
	// At is how many changes of the item Snap holds.
	At int `json:"at,omitempty"`
	// Seq is how many batches from replicas the home applied.
	Seq int64 `json:"seq,omitempty"`
}

// Synced is what a step tells its workflow about the item's journal.
type Synced struct {
	// Worker is the remote worker that performed the step; "" for a
	// process sharing the home's journal.
	Worker string `json:"worker,omitempty"`
	// Queue is that worker's own task queue, for the item's next steps.
	Queue string `json:"queue,omitempty"`
	// Batch is what the step changed in the worker's replica, for the
	// home journal (engine's batch, opaque here).
	Batch json.RawMessage `json:"batch,omitempty"`
}

func (s *Synced) synced() *Synced { return s }

// syncer is an activity result carrying a Synced.
type syncer interface{ synced() *Synced }

// ApplyInput is a batch for the home journal. The batch numbers itself:
// a retried apply changes nothing twice.
type ApplyInput struct {
	ItemRef
	Batch json.RawMessage `json:"batch"`
}

// homeCtx runs an activity on the home's queue. The home may be down (its
// starter died, no worker of its machine runs): the item waits for it,
// however long, rather than fail.
func (x *exec) homeCtx(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:           HomeQueue(x.in.Home),
		StartToCloseTimeout: x.in.Grace,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute},
	})
}

// act runs one of the item's activities (built by mk for the item's
// journal state) and brings what it changed home. When the item's journal
// is shared by all (a run recorded before homes, without one) it is a
// plain activity.
func (x *exec) act(ctx, actx workflow.Context, name string, mk func(ItemRef) any, out syncer) error {
	if x.in.Home == "" {
		in := mk(x.ref)
		if n := payloadSize(in); n > MaxPayload {
			return errTooLarge(x.ref.Item, stepOf(in), "input", n)
		}
		return workflow.ExecuteActivity(actx, name, in).Get(ctx, out)
	}
	// One step of the item at a time: a replica numbers the batches it
	// takes, and two steps at once (the branches of a parallel phase)
	// on one worker, or on two, would number or order them apart from
	// the home's. Items still run side by side on all the workers.
	if err := workflow.Await(ctx, func() bool { return !x.acting }); err != nil {
		return err
	}
	x.acting = true
	defer func() { x.acting = false }()
	var snap json.RawMessage
	at := -1
	for {
		ref := x.ref
		ref.Sync = &Sync{Home: x.in.Home, Fresh: x.fresh(), Snap: snap, At: at, Seq: x.applied}
		c := actx
		sticky := x.sticky
		if sticky != "" {
			c = workflow.WithTaskQueue(c, sticky)
			c = workflow.WithScheduleToStartTimeout(c, x.in.Heartbeat)
		}
		in := mk(ref)
		if n := payloadSize(in); n > MaxPayload {
			// Temporal would end the workflow without saying why.
			return errTooLarge(x.ref.Item, stepOf(in), "input", n)
		}
		err := workflow.ExecuteActivity(c, name, in).Get(ctx, out)
		if err == nil {
			return x.record(ctx, *out.synced(), at)
		}
		var ae *temporal.ApplicationError
		var te *temporal.TimeoutError
		switch {
		case errors.As(err, &ae) && ae.Type() == ErrTypeCold && snap == nil:
			if snap, at, err = x.export(ctx); err != nil {
				var n int
				if errors.As(err, &ae) && ae.Type() == ErrTypeTooLarge && ae.Details(&n) == nil {
					return errTooLarge(x.ref.Item, stepOf(mk(x.ref)), "snapshot (the item's journal and outputs, for a worker elsewhere)", n)
				}
				return err
			}
			continue
		case sticky != "" && errors.As(err, &te) && te.TimeoutType() == enumspb.TIMEOUT_TYPE_SCHEDULE_TO_START:
			// The worker that kept the item is gone: another one
			// takes it from the shared queue.
			if x.sticky == sticky {
				x.sticky = ""
			}
			continue
		case ae != nil && ae.HasDetails():
			// A step that ended the item (a pause, a stop, a tampered
			// tree) still changed its journal.
			var s Synced
			if ae.Details(&s) == nil {
				if rerr := x.record(ctx, s, at); rerr != nil {
					return rerr
				}
				return err
			}
			x.by = append(x.by, "")
		default:
			// A failure that brought no batch home may still have changed
			// the home's journal (a worker sharing it) or left a replica
			// apart from it: no replica is fresh any more.
			x.by = append(x.by, "")
		}
		return err
	}
}

// export takes the item from the home journal; at is how many changes it
// holds.
func (x *exec) export(ctx workflow.Context) (json.RawMessage, int, error) {
	at := len(x.by)
	var snap json.RawMessage
	if err := workflow.ExecuteActivity(x.homeCtx(ctx), ActExport, x.ref).Get(ctx, &snap); err != nil {
		return nil, 0, err
	}
	// The home's count of the item's batches goes on across the
	// workflow's executions (cadre resume starts a new one): the
	// snapshot's is the one a replica counts from.
	var n struct{ Seq int64 }
	if json.Unmarshal(snap, &n) == nil {
		x.applied = n.Seq
	}
	return snap, at, nil
}

// record notes a step's change to the item's journal, applying its batch
// to the home's; at is the export the step's worker hydrated from (-1:
// none, its replica was fresh or it shares the home's journal).
func (x *exec) record(ctx workflow.Context, s Synced, at int) error {
	// A step cancelled with its workflow still brings its changes home.
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	if s.Worker != "" && at >= 0 {
		if x.at == nil {
			x.at = map[string]int{}
		}
		x.at[s.Worker] = at
	}
	if len(s.Batch) > 0 {
		in := ApplyInput{ItemRef: x.ref, Batch: s.Batch}
		if err := workflow.ExecuteActivity(x.homeCtx(dctx), ActApply, in).Get(dctx, nil); err != nil {
			return err
		}
		x.applied++
	}
	x.by = append(x.by, s.Worker)
	x.sticky = s.Queue
	return nil
}

// fresh lists the remote workers whose replica holds every change of the
// item: all changes since they were brought up to date are their own.
func (x *exec) fresh() []string {
	var ws []string
	for w, at := range x.at {
		mine := true
		for _, by := range x.by[at:] {
			mine = mine && by == w
		}
		if mine {
			ws = append(ws, w)
		}
	}
	slices.Sort(ws) // map order is not deterministic; workflow code must be
	return ws
}

// errCold is a remote worker's answer to a step it cannot perform yet;
// why says what it found.
func errCold(item, why string) error {
	return temporal.NewNonRetryableApplicationError("the journal of item "+item+" here is behind its home's: "+why, ErrTypeCold, nil)
}

// FailInput fails an item that could not begin, saying why.
type FailInput struct {
	ItemRef
	Reason string `json:"reason"`
}

// HomeSteps are the home's activities: the journal of truth's side of
// the replicas of workers elsewhere, and of an item none could begin.
type HomeSteps interface {
	Export(ctx context.Context, in ItemRef) (json.RawMessage, error)
	Apply(ctx context.Context, in ApplyInput) error
	Fail(ctx context.Context, in FailInput) (executor.Ended, error)
}

// Journal is the engine's side of the home journal.
type Journal interface {
	// Export returns the item as the journal has it, for a replica.
	Export(ctx context.Context, run, item string) (json.RawMessage, error)
	// Apply applies a replica's batch of the item, once.
	Apply(ctx context.Context, run, item string, batch json.RawMessage) error
	// Fail journals the item failed for reason, unless it ended; the
	// item's journaled end.
	Fail(ctx context.Context, run, item, reason string) (executor.Ended, error)
}

// homeSteps are the home's activities over its journal.
type homeSteps struct{ j Journal }

// Export refuses a snapshot over MaxPayload: the server would refuse the
// result, and the home retry it for ever.
func (h homeSteps) Export(ctx context.Context, in ItemRef) (json.RawMessage, error) {
	snap, err := h.j.Export(ctx, in.Run, in.Item)
	if err == nil && len(snap) > MaxPayload {
		return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("item %s: its snapshot is %s, over the %s a Temporal payload may carry here",
			in.Item, sizeOf(len(snap)), sizeOf(MaxPayload)), ErrTypeTooLarge, nil, len(snap))
	}
	return snap, err
}

func (h homeSteps) Apply(ctx context.Context, in ApplyInput) error {
	return h.j.Apply(ctx, in.Run, in.Item, in.Batch)
}

func (h homeSteps) Fail(ctx context.Context, in FailInput) (executor.Ended, error) {
	return h.j.Fail(ctx, in.Run, in.Item, in.Reason)
}

// EngineJournal is the engine's journal as a home.
type EngineJournal struct{ Engine *engine.Engine }

func (j EngineJournal) Export(ctx context.Context, run, item string) (json.RawMessage, error) {
	snap, err := j.Engine.Replica().Export(ctx, run, item)
	if err != nil {
		return nil, homeFailure(err)
	}
	return json.Marshal(snap)
}

// Apply refuses a batch of another run or item than the workflow's.
func (j EngineJournal) Apply(ctx context.Context, run, item string, data json.RawMessage) error {
	var b replica.Batch
	if err := json.Unmarshal(data, &b); err != nil {
		return homeFailure(fmt.Errorf("batch of item %s: %w", item, err))
	}
	if b.Run != run || b.Item != item {
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf("batch of %s/%s sent for %s/%s", b.Run, b.Item, run, item), "bad batch", nil)
	}
	_, err := j.Engine.Replica().Apply(ctx, b)
	return homeFailure(err)
}

// Fail journals the item failed, as the embedded engine an item whose
// worktree cannot be made.
func (j EngineJournal) Fail(ctx context.Context, run, item, reason string) (executor.Ended, error) {
	return j.Engine.FailStart(ctx, run, item, reason)
}

// homeFailure lets Temporal retry what may pass later (a batch before the
// one numbered before it, a busy journal); anything else (the journal of
// truth refusing the batch or the export) fails the item saying why
// rather than wait for ever.
func homeFailure(err error) error {
	if err == nil || errors.Is(err, store.ErrBatchGap) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if msg := err.Error(); strings.Contains(msg, "database is locked") || strings.Contains(msg, "SQLITE_BUSY") {
		return err
	}
	return temporal.NewNonRetryableApplicationError(err.Error(), "bad batch", err)
}
