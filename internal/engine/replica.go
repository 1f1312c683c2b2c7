package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/safefile"
	"github.com/cadre-dev/cadre/internal/store"
)

// Items of a run on workers of other machines. The journal of the
// machine that started the run is the journal of truth. A worker keeps a
// replica (its own clone's .cadre): before an item's step there, the
// item is hydrated from a snapshot of the truth (ExportItem on the
// starter, HydrateItem on the worker), so OpenRun, OpenItem and the steps
// work unchanged; after the step, what it changed in the replica is taken
// as a numbered batch (ItemSteps.TakeBatch) and applied to the truth
// (ApplyBatch), once, whatever retries deliver it.
//
// Staleness: the snapshot carries the number of the item's batches the
// truth has applied; the replica counts from there, one per batch taken
// (ReplicaSeq). A caller that counts the batches it applied hydrates the
// item again whenever ReplicaSeq differs from its count: steps ran
// elsewhere since. A batch from a stale replica that slips through is
// refused by ApplyBatch (store.ErrBatchConflict), as is one arriving
// before the batch numbered before it (store.ErrBatchGap, which a retry
// after that batch lands resolves).
//
// A replica holds several items: hydrating one leaves the replica's own
// copies of the others (one may be mid-step here) as they are (see
// store.Hydrate).
//
// The budget on a worker: the replica's Totals are the snapshot's totals
// plus what the replica's own copies spent that the snapshot does not
// count yet. Steps of the run's other items on other workers after the
// snapshot are not seen until the item is hydrated again, so a run can
// overshoot its budget by what those steps spend meanwhile, as parallel
// steps of the embedded engine overshoot by the steps already running
// when the budget is reached.
//
// Not carried back: a step's process group (SetStepGroup names a process
// on the worker's machine, which a resume on the starter must not kill),
// the run's halt and stop files, and the cycle archive written when the
// item ends; the item's End result (Ended.Halt) tells the starter of a halt.

// maxLogBytes caps a step log sent back in a batch: logs can be large
// (an agent's whole transcript) and a batch travels in a Temporal payload
// (2 MB at most). The tail is kept, where a failure shows.
const maxLogBytes = 256 << 10

// File is one file of an item's directory (.cadre/runs/<run>/items/<item>)
// in a snapshot or a batch.
type File struct {
	// Path is slash-separated and relative to the item's directory (the
	// repository for Snapshot.Task and Batch.Task).
	Path string `json:"path"`
	// At, when not 0, says the content continues the file from this
	// offset: the file grew (the cycle log) and only its new end travels.
	At int64 `json:"at,omitempty"`
	// Append says the content goes at the end of the truth's file,
	// whatever its length: the item's prompts file, to which every worker
	// the item visits adds its steps' prompts in turn.
	Append bool   `json:"append,omitempty"`
	Text   string `json:"text,omitempty"`
	Bytes  []byte `json:"bytes,omitempty"` // the content when it is not UTF-8
}

func newFile(path string, at int64, data []byte) File {
	f := File{Path: path, At: at}
	if utf8.Valid(data) {
		f.Text = string(data)
	} else {
		f.Bytes = data
	}
	return f
}

func (f File) data() []byte {
	if f.Bytes != nil {
		return f.Bytes
	}
	return []byte(f.Text)
}

// Snapshot is one item of a run as the journal of truth has it.
type Snapshot struct {
	store.ItemExport
	// Root is the repository of the journal it was taken from: the paths
	// in its rows (task files, step outputs) are under it.
	Root  string `json:"root"`
	Files []File `json:"files,omitempty"` // what later steps read of the item's directory
	Task  *File  `json:"task,omitempty"`  // the item's task file, when outside that directory
}

// Batch is what steps changed in a replica's item, to apply to the truth.
type Batch struct {
	store.BatchKey
	Root  string          `json:"root"` // the replica's repository
	Ops   json.RawMessage `json:"ops"`  // store.EncodeOps
	Files []File          `json:"files,omitempty"`
	Task  *File           `json:"task,omitempty"`
	// Removed are files of the item's directory the steps removed (an
	// output a failed re-ask left unwritten): the truth's copies go too.
	Removed []string `json:"removed,omitempty"`
}

// itemDir is the directory of an item of a run under root.
func itemDir(root, run, item string) string {
	return filepath.Join(root, ".cadre", "runs", run, "items", item)
}

// ExportItem is the snapshot a replica is hydrated from.
func (e *Engine) ExportItem(ctx context.Context, run, item string) (Snapshot, error) {
	x, err := e.d.Store.ExportItem(ctx, run, item)
	if err != nil {
		return Snapshot{}, err
	}
	s := Snapshot{ItemExport: x, Root: e.d.Root}
	dir := filepath.Join(e.StateDir(), "runs", run, "items", item)
	err = walkFiles(dir, func(rel string, data []byte) error {
		if skipInSnapshot(rel) {
			return nil
		}
		s.Files = append(s.Files, newFile(rel, 0, data))
		return nil
	})
	if err != nil {
		return Snapshot{}, fmt.Errorf("export item %s: %w", item, err)
	}
	it := exportedItem(x)
	if inside(dir, it.Ref) == "" && it.Ref != "" {
		rel := inside(e.d.Root, it.Ref)
		if rel == "" {
			return Snapshot{}, fmt.Errorf("export item %s: its task file %s is outside the repository %s: a worker elsewhere cannot have it", item, it.Ref, e.d.Root)
		}
		data, err := safefile.ReadFile(e.d.Root, it.Ref)
		if err != nil {
			return Snapshot{}, fmt.Errorf("export item %s: task file: %w", item, err)
		}
		f := newFile(rel, 0, data)
		s.Task = &f
	}
	return s, nil
}

// skipInSnapshot says whether a file of an item's directory is left out
// of snapshots: no later step reads a step's log, prompt or context file,
// each rewritten when its step runs.
func skipInSnapshot(rel string) bool {
	return strings.HasPrefix(rel, "logs/") || rel == PromptsFile ||
		(strings.HasPrefix(rel, "contexts/") && strings.HasSuffix(rel, ".json"))
}

func exportedItem(x store.ItemExport) store.Item {
	for _, it := range x.Items {
		if it.ID == x.Item {
			return it
		}
	}
	return store.Item{}
}

// walkFiles calls fn with every regular file under dir (slash-separated
// path relative to dir) and its content; dir may be missing. A link or
// another special file is refused: cadre writes only plain files there.
func walkFiles(dir string, fn func(rel string, data []byte) error) error {
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(dir, path)
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s: %w", path, safefile.ErrUnsafe)
		}
		data, err := safefile.ReadFile(dir, path)
		if err != nil {
			return err
		}
		return fn(filepath.ToSlash(rel), data)
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// ReplicaSeq is the number of the item's batches this replica reflects
// (see HydrateItem): when it is not the number the caller has applied,
// steps ran elsewhere since, and the item needs hydrating again.
func (e *Engine) ReplicaSeq(ctx context.Context, run, item string) (int64, error) {
	return e.d.Store.ReplicaSeq(ctx, run, item)
}

// replicaTap collects, per hydrated item, the journal writes and events
// of its steps since the last batch.
type replicaTap struct {
	mu    sync.Mutex
	items map[itemKey]*pending
}

type itemKey struct{ run, item string }

// pending is one item's record since its last batch: its writes in
// order, and its files as last sent (or hydrated).
type pending struct {
	ops   []store.Op
	files map[string]mark
	task  mark
}

// mark is what a file held: its size and checksum, and whether the home's
// copy may differ (whole): such a file is sent whole when it changes,
// never as a continuation of a base the home may not have.
type mark struct {
	size  int64
	sum   [32]byte
	whole bool
}

func markOf(data []byte) mark { return mark{size: int64(len(data)), sum: sha256.Sum256(data)} }

// tapReplica starts recording the journal writes and events of hydrated
// items, once per engine.
func (e *Engine) tapReplica() {
	e.repOnce.Do(func() {
		e.rep.items = map[itemKey]*pending{}
		e.d.Store.SetTap(e.rep.op)
		e.d.Bus.Subscribe(event.SinkFunc(e.rep.event))
	})
}

// op records a journal write of a hydrated item. Events come from the bus
// instead (event): the journal's event writer appends them in the
// background, after a step may have been taken. A step's process group
// stays on this machine.
func (r *replicaTap) op(op store.Op) {
	if op.Kind == store.OpEvents || op.Kind == store.OpStepGroup || op.Item == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if p := r.items[itemKey{op.Run, op.Item}]; p != nil {
		p.ops = append(p.ops, op)
	}
}

// event records an event of a hydrated item as the journal would have it.
func (r *replicaTap) event(ev event.Event) {
	if ev.Run == "" || ev.Item == "" {
		return
	}
	data, err := json.Marshal(ev)
	if err != nil {
		return
	}
	se := store.Event{RunID: ev.Run, Time: ev.Time.UTC(), Type: ev.Type, ItemID: ev.Item, Data: data}
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.items[itemKey{ev.Run, ev.Item}]
	if p == nil {
		return
	}
	if n := len(p.ops); n > 0 && p.ops[n-1].Kind == store.OpEvents {
		p.ops[n-1].Events = append(p.ops[n-1].Events, se)
		return
	}
	p.ops = append(p.ops, store.Op{Kind: store.OpEvents, At: se.Time, Run: ev.Run, Item: ev.Item, Events: []store.Event{se}})
}

// TakeBatch takes what the item's steps changed in this replica since the
// item was hydrated or last taken: its journal writes, the files of its
// directory that changed (logs cut to their last maxLogBytes) and its task
// file when changed, numbered one after the replica's last.
func (s *ItemSteps) TakeBatch(ctx context.Context) (Batch, error) {
	e, ir := s.e, s.ir
	key := itemKey{ir.run, ir.it.ID}
	fail := func(err error) (Batch, error) {
		return Batch{}, fmt.Errorf("take batch of item %s: %w", ir.it.ID, err)
	}
	// The task file's frontmatter is written in the background.
	if err := ir.board.flush(); err != nil {
		return fail(err)
	}
	e.rep.mu.Lock()
	p := e.rep.items[key]
	var ops []store.Op
	var sent map[string]mark
	var taskMark mark
	if p != nil {
		ops = append(ops, p.ops...)
		sent, taskMark = p.files, p.task
	}
	e.rep.mu.Unlock()
	if p == nil {
		return fail(errors.New("the item was not hydrated in this replica"))
	}
	enc, err := store.EncodeOps(ops)
	if err != nil {
		return fail(err)
	}
	b := Batch{Root: e.d.Root, Ops: enc}
	marks := map[string]mark{}
	err = walkFiles(ir.outDir, func(rel string, data []byte) error {
		m := markOf(data)
		marks[rel] = m
		old, had := sent[rel]
		switch {
		case had && old.size == m.size && old.sum == m.sum:
			// Unchanged: its mark stays, whether the home may differ too.
			marks[rel] = old
			return nil
		case rel == PromptsFile:
			// This replica's file may lack prompts other workers added
			// to the truth's: its new end is sent, to go after them.
			from := int64(0)
			if had && m.size > old.size && sha256.Sum256(data[:old.size]) == old.sum {
				from = old.size
			}
			f := newFile(rel, 0, data[from:])
			f.Append = true
			b.Files = append(b.Files, f)
		case strings.HasPrefix(rel, "logs/") && len(data) > maxLogBytes:
			note := fmt.Sprintf("[cadre: log cut to its last %d of %d bytes in the batch from %s]\n", maxLogBytes, len(data), e.d.Root)
			b.Files = append(b.Files, newFile(rel, 0, append([]byte(note), data[len(data)-maxLogBytes:]...)))
			// The home's copy is the cut one.
			m.whole = true
			marks[rel] = m
		case had && !old.whole && old.size > 0 && m.size > old.size && sha256.Sum256(data[:old.size]) == old.sum:
			b.Files = append(b.Files, newFile(rel, old.size, data[old.size:]))
		default:
			b.Files = append(b.Files, newFile(rel, 0, data))
		}
		return nil
	})
	if err != nil {
		return fail(err)
	}
	for rel, old := range sent {
		// Only a file whose copy at home is known to be this one: a file
		// the snapshot lacked may be another at home.
		if _, ok := marks[rel]; !ok && !old.whole && rel != PromptsFile {
			b.Removed = append(b.Removed, rel)
		}
	}
	slices.Sort(b.Removed)
	var newTask mark
	if ref := ir.it.Ref; ref != "" && inside(ir.outDir, ref) == "" {
		rel := inside(e.d.Root, ref)
		data, err := safefile.ReadFile(e.d.Root, ref)
		if rel == "" || err != nil {
			return fail(fmt.Errorf("task file %s: %v", ref, err))
		}
		newTask = markOf(data)
		if newTask != taskMark {
			f := newFile(filepath.ToSlash(rel), 0, data)
			b.Task = &f
		}
	}
	seq, err := e.d.Store.NextReplicaSeq(ctx, ir.run, ir.it.ID)
	if err != nil {
		return fail(err)
	}
	b.BatchKey = store.BatchKey{Run: ir.run, Item: ir.it.ID, Seq: seq}
	e.rep.mu.Lock()
	if p := e.rep.items[key]; p != nil {
		p.ops = p.ops[len(ops):]
		p.files, p.task = marks, newTask
	}
	e.rep.mu.Unlock()
	return b, nil
}

// Digest is the batch's checksum, by which a batch applied again is told
// from another one with the same number.
func (b Batch) Digest() (string, error) {
	data, err := json.Marshal(b)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:]), nil
}
