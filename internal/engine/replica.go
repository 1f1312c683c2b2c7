package engine

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/safefile"
	"github.com/cadre-dev/cadre/internal/store"
	"github.com/cadre-dev/cadre/internal/workspace"
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

// inside is path relative to root when it lies under it, else "".
func inside(root, path string) string {
	if path == "" || !filepath.IsAbs(path) {
		return ""
	}
	rel, err := filepath.Rel(root, path)
	if err != nil || !filepath.IsLocal(rel) {
		return ""
	}
	return rel
}

// reroot moves path from under root from to under root to, refusing one
// outside from or, when within is set, outside within (under to).
func reroot(path, from, to, within string) (string, error) {
	if path == "" {
		return "", nil
	}
	rel := inside(from, path)
	if rel == "" {
		return "", fmt.Errorf("path %s is outside %s", path, from)
	}
	p := filepath.Join(to, rel)
	if within != "" && inside(within, p) == "" {
		return "", fmt.Errorf("path %s is outside %s", path, strings.Replace(within, to, from, 1))
	}
	return p, nil
}

// rerootJSON rewrites the JSON strings of doc that are paths under from
// (a step's recorded output, say) to the same paths under to.
func rerootJSON(doc json.RawMessage, from, to string) json.RawMessage {
	if len(doc) == 0 || from == to {
		return doc
	}
	q := func(s string) []byte {
		b, _ := json.Marshal(s + string(filepath.Separator))
		return b[:len(b)-1] // the opening quote and the path, to the separator
	}
	return bytes.ReplaceAll(doc, q(from), q(to))
}

// localPath is a file's path from a snapshot or batch under dir, refused
// when it would leave dir.
func localPath(dir, rel string) (string, error) {
	p := filepath.FromSlash(rel)
	if rel == "" || !filepath.IsLocal(p) {
		return "", fmt.Errorf("file %q leaves its directory %s", rel, dir)
	}
	return filepath.Join(dir, p), nil
}

// taskFileName says whether rel (slash-separated, in the repository) can
// be a task file: Markdown, in no .git or .cadre directory.
func taskFileName(rel string) bool {
	for _, part := range strings.Split(rel, "/") {
		if strings.EqualFold(part, ".git") || strings.EqualFold(part, workspace.StateDir) {
			return false
		}
	}
	return strings.EqualFold(path.Ext(rel), ".md")
}

// HydrateItem makes this engine's journal (a replica) and its item
// directory hold the item as snap has it, paths moved from snap.Root to
// this repository: afterwards OpenRun and OpenItem see the item as the
// truth does (an ItemSteps opened before is outdated: open it again),
// and what its steps change is recorded for TakeBatch. It is idempotent.
// A snapshot with a path leaving the directory it belongs in is refused
// before anything is written.
func (e *Engine) HydrateItem(ctx context.Context, snap Snapshot) error {
	x := snap.ItemExport
	run, item := x.Run.ID, x.Item
	fail := func(err error) error { return fmt.Errorf("hydrate item %s of run %s: %w", item, run, err) }
	if run == "" || item == "" || !filepath.IsAbs(snap.Root) {
		return fail(errors.New("the snapshot names no run, item or absolute root"))
	}
	if !filepath.IsLocal(run) || !filepath.IsLocal(item) || strings.ContainsAny(run+item, `/\`) {
		return fail(fmt.Errorf("run or item id %q leaves the run directory", run+"/"+item))
	}
	dir := itemDir(e.d.Root, run, item)
	items := make([]store.Item, len(x.Items))
	var task string
	for i, it := range x.Items {
		ref, err := reroot(it.Ref, snap.Root, e.d.Root, "")
		if err != nil && it.ID == item {
			return fail(fmt.Errorf("task file: %w", err))
		}
		// Another item's task file outside the repository is none a
		// step of this item reads; it is left unnamed here.
		it.Ref = ref
		items[i] = it
		if it.ID == item {
			task = ref
		}
	}
	x.Items = items
	steps := make([]store.Step, len(x.Steps))
	for i, st := range x.Steps {
		out, err := reroot(st.OutputPath, snap.Root, e.d.Root, dir)
		if err != nil {
			return fail(fmt.Errorf("step %s: output: %w", st.ID, err))
		}
		st.OutputPath = out
		st.Result = rerootJSON(st.Result, snap.Root, e.d.Root)
		st.Signal = rerootJSON(st.Signal, snap.Root, e.d.Root)
		steps[i] = st
	}
	x.Steps = steps
	writes := map[string][]byte{}
	for _, f := range snap.Files {
		p, err := localPath(dir, f.Path)
		if err != nil {
			return fail(fmt.Errorf("snapshot %w", err))
		}
		if f.At != 0 {
			return fail(fmt.Errorf("snapshot file %q: want the whole file, not a part", f.Path))
		}
		writes[p] = f.data()
	}
	if snap.Task != nil {
		if task == "" || inside(dir, task) != "" {
			return fail(fmt.Errorf("snapshot task file %q: the item has no task file outside its directory", snap.Task.Path))
		}
		p, err := localPath(e.d.Root, snap.Task.Path)
		if err != nil || p != task {
			return fail(fmt.Errorf("snapshot task file %q is not the item's task file %s", snap.Task.Path, inside(snap.Root, exportedItem(snap.ItemExport).Ref)))
		}
		if !taskFileName(snap.Task.Path) {
			// Written unsandboxed: a snapshot naming .git/hooks/… or
			// .git/config would run what it wrote at the next git call.
			return fail(fmt.Errorf("snapshot task file %q: want a Markdown file outside .git and .cadre", snap.Task.Path))
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fail(err)
	}
	for p, data := range writes {
		if err := safefile.WriteFile(dir, p, data, 0o644); err != nil {
			return fail(err)
		}
	}
	if snap.Task != nil {
		if err := writeTaskFile(e.d.Root, task, snap.Task.data()); err != nil {
			return fail(err)
		}
	}
	e.tapReplica()
	// The ops and files of the item's earlier steps here are the
	// snapshot's now: the replica starts over from it. A later batch
	// continues a grown file from what the home has, so the snapshot's
	// files are marked as sent with the snapshot's content. A file here
	// the snapshot lacks (a log or prompt of an earlier visit of the item
	// here) may differ from the home's copy, or the home may have none:
	// it is sent whole when a step changes it.
	p := &pending{files: map[string]mark{}}
	for _, f := range snap.Files {
		p.files[f.Path] = markOf(f.data())
	}
	if err := walkFiles(dir, func(rel string, data []byte) error {
		if _, ok := p.files[rel]; !ok {
			m := markOf(data)
			m.whole = true
			p.files[rel] = m
		}
		return nil
	}); err != nil {
		return fail(err)
	}
	if snap.Task != nil {
		p.task = markOf(snap.Task.data())
	} else if task != "" && inside(dir, task) == "" {
		if data, err := safefile.ReadFile(e.d.Root, task); err == nil {
			p.task = markOf(data)
		}
	}
	e.rep.mu.Lock()
	e.rep.items[itemKey{run, item}] = p
	e.rep.mu.Unlock()
	if err := e.d.Store.Hydrate(ctx, x); err != nil {
		return err
	}
	return nil
}

// writeTaskFile replaces a task file under root atomically, never through
// a link.
func writeTaskFile(root, path string, data []byte) error {
	if err := safefile.Check(root, path); err != nil {
		return fmt.Errorf("task file: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("task file: %w", err)
	}
	return writeFileAtomic(path, data)
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

// ApplyBatch applies a replica's batch to this journal (the truth): its
// journal writes in one transaction with the record of its key, and in
// that transaction its files into the item's directory and task file. A
// batch applied before changes nothing and returns false. Every path is moved from b.Root to
// this repository and refused when it would leave the item's directory.
func (e *Engine) ApplyBatch(ctx context.Context, b Batch) (bool, error) {
	fail := func(err error) (bool, error) { return false, fmt.Errorf("apply %s: %w", b.BatchKey, err) }
	if !filepath.IsAbs(b.Root) {
		return fail(errors.New("the batch names no absolute root"))
	}
	it, err := e.d.Store.GetItem(ctx, b.Run, b.Item)
	if err != nil {
		return fail(err)
	}
	dir := itemDir(e.d.Root, b.Run, b.Item)
	ops, err := store.DecodeOps(b.Ops)
	if err != nil {
		return fail(err)
	}
	for i, op := range ops {
		if op.Run != b.Run || op.Item != b.Item {
			return fail(fmt.Errorf("op %d (%s) is of item %s of run %s", i, op.Kind, op.Item, op.Run))
		}
		if op.Step != nil {
			st := *op.Step
			if st.OutputPath, err = reroot(st.OutputPath, b.Root, e.d.Root, dir); err != nil {
				return fail(fmt.Errorf("op %d (%s) step %s: output: %w", i, op.Kind, st.ID, err))
			}
			st.Result = rerootJSON(st.Result, b.Root, e.d.Root)
			st.Signal = rerootJSON(st.Signal, b.Root, e.d.Root)
			ops[i].Step = &st
		}
	}
	type write struct {
		path string
		f    File
	}
	var writes []write
	for _, f := range b.Files {
		p, err := localPath(dir, f.Path)
		if err != nil || f.At < 0 || (f.Append && (f.At != 0 || f.Path != PromptsFile)) {
			return fail(fmt.Errorf("batch file %q: want a file inside the item's directory", f.Path))
		}
		writes = append(writes, write{p, f})
	}
	var removes []string
	for _, rel := range b.Removed {
		p, err := localPath(dir, rel)
		if err != nil {
			return fail(fmt.Errorf("batch removes %q: want a file inside the item's directory", rel))
		}
		removes = append(removes, p)
	}
	if b.Task != nil {
		p, err := localPath(e.d.Root, b.Task.Path)
		if err != nil || p != it.Ref || inside(dir, it.Ref) != "" || b.Task.At != 0 {
			return fail(fmt.Errorf("batch task file %q is not the item's task file %s", b.Task.Path, it.Ref))
		}
	}
	digest, err := b.Digest()
	if err != nil {
		return fail(err)
	}
	// The files are written in the transaction that claims the batch,
	// after its ops: the journal's write lock is held from its start, so
	// only the process applying the batch writes them, and no later batch
	// is applied meanwhile. Before the transaction, a retry in another
	// process sharing this journal could check the batch unapplied, then
	// write its files over a later batch's; after the commit, a crash
	// before the files are written would lose them, the batch counting as
	// applied. Writing is idempotent, for a failed commit's retry: a
	// continuation is written from its offset, not appended, and the
	// prompts file's new end is not added twice.
	writeFiles := func() error {
		if e.applying != nil {
			e.applying(b.BatchKey)
		}
		for _, w := range writes {
			data := w.f.data()
			if w.f.Append {
				old, err := safefile.ReadFile(dir, w.path)
				if err != nil && !errors.Is(err, os.ErrNotExist) {
					return err
				}
				if bytes.HasSuffix(old, data) {
					// Written by a try whose commit failed: an append
					// is idempotent only this way.
					continue
				}
				data = append(old, data...)
			} else if w.f.At > 0 {
				old, err := safefile.ReadFile(dir, w.path)
				if err != nil || int64(len(old)) < w.f.At {
					return fmt.Errorf("batch file %s continues %d bytes the journal's copy does not have (%v)", w.f.Path, w.f.At, err)
				}
				data = append(old[:w.f.At:w.f.At], data...)
			}
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
			if err := safefile.WriteFile(dir, w.path, data, 0o644); err != nil {
				return err
			}
		}
		for _, p := range removes {
			if err := safefile.Remove(dir, p); err != nil {
				return err
			}
		}
		if b.Task != nil {
			return writeTaskFile(e.d.Root, it.Ref, b.Task.data())
		}
		return nil
	}
	return e.d.Store.ApplyOps(ctx, b.BatchKey, digest, ops, writeFiles)
}
