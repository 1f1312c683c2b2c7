package replica

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/cadre-dev/cadre/internal/safefile"
	"github.com/cadre-dev/cadre/internal/store"
	"github.com/cadre-dev/cadre/internal/workspace"
)

// Hydrate makes this journal (a replica) and its item directory hold
// the item as snap has it, paths moved from snap.Root to this
// repository: afterwards the engine's OpenRun and OpenItem see the item
// as the truth does (an ItemSteps opened before is outdated: open it
// again), and what its steps change is recorded for Take. It is idempotent.
// A snapshot with a path leaving the directory it belongs in is refused
// before anything is written.
func (j *Journal) Hydrate(ctx context.Context, snap Snapshot) error {
	x := snap.ItemExport
	run, item := x.Run.ID, x.Item
	fail := func(err error) error { return fmt.Errorf("hydrate item %s of run %s: %w", item, run, err) }
	if run == "" || item == "" || !filepath.IsAbs(snap.Root) {
		return fail(errors.New("the snapshot names no run, item or absolute root"))
	}
	if !filepath.IsLocal(run) || !filepath.IsLocal(item) || strings.ContainsAny(run+item, `/\`) {
		return fail(fmt.Errorf("run or item id %q leaves the run directory", run+"/"+item))
	}
	dir := itemDir(j.Root, run, item)
	x, task, err := rerootExport(x, snap.Root, j.Root, dir)
	if err != nil {
		return fail(err)
	}
	writes, err := j.snapshotWrites(snap, dir, task)
	if err != nil {
		return fail(err)
	}
	if err := j.writeSnapshot(snap, dir, task, writes); err != nil {
		return fail(err)
	}
	j.startTap()
	// The ops and files of the item's earlier steps here are the
	// snapshot's now: the replica starts over from it.
	p, err := j.hydratedPending(snap, dir, task)
	if err != nil {
		return fail(err)
	}
	j.tap.mu.Lock()
	j.tap.items[itemKey{run, item}] = p
	j.tap.mu.Unlock()
	if err := j.Store.Hydrate(ctx, x); err != nil {
		return err
	}
	return nil
}

// rerootExport moves the paths of an item's export from root from to
// root to: its run's items' task files, its steps' outputs (refused
// outside dir, the item's directory) and the paths in their results and
// signals. It returns the export and the item's task file there.
func rerootExport(x store.ItemExport, from, to, dir string) (store.ItemExport, string, error) {
	items := make([]store.Item, len(x.Items))
	var task string
	for i, it := range x.Items {
		ref, err := reroot(it.Ref, from, to, "")
		if err != nil && it.ID == x.Item {
			return x, "", fmt.Errorf("task file: %w", err)
		}
		// Another item's task file outside the repository is none a
		// step of this item reads; it is left unnamed here.
		it.Ref = ref
		items[i] = it
		if it.ID == x.Item {
			task = ref
		}
	}
	x.Items = items
	steps := make([]store.Step, len(x.Steps))
	for i, st := range x.Steps {
		out, err := reroot(st.OutputPath, from, to, dir)
		if err != nil {
			return x, "", fmt.Errorf("step %s: output: %w", st.ID, err)
		}
		st.OutputPath = out
		st.Result = rerootJSON(st.Result, from, to)
		st.Signal = rerootJSON(st.Signal, from, to)
		steps[i] = st
	}
	x.Steps = steps
	return x, task, nil
}

// snapshotWrites checks the files of snap, to go in dir (the item's
// directory), and its task file, to go at task, and returns the files'
// contents by path, nothing written yet.
func (j *Journal) snapshotWrites(snap Snapshot, dir, task string) (map[string][]byte, error) {
	writes := map[string][]byte{}
	for _, f := range snap.Files {
		p, err := localPath(dir, f.Path)
		if err != nil {
			return nil, fmt.Errorf("snapshot %w", err)
		}
		if f.At != 0 {
			return nil, fmt.Errorf("snapshot file %q: want the whole file, not a part", f.Path)
		}
		writes[p] = f.data()
	}
	if snap.Task != nil {
		if task == "" || inside(dir, task) != "" {
			return nil, fmt.Errorf("snapshot task file %q: the item has no task file outside its directory", snap.Task.Path)
		}
		p, err := localPath(j.Root, snap.Task.Path)
		if err != nil || p != task {
			return nil, fmt.Errorf("snapshot task file %q is not the item's task file %s", snap.Task.Path, inside(snap.Root, exportedItem(snap.ItemExport).Ref))
		}
		if !taskFileName(snap.Task.Path) {
			// Written unsandboxed: a snapshot naming .git/hooks/… or
			// .git/config would run what it wrote at the next git call.
			return nil, fmt.Errorf("snapshot task file %q: want a Markdown file outside .git and .cadre", snap.Task.Path)
		}
	}
	return writes, nil
}

// writeSnapshot writes a snapshot's files (writes, checked by
// snapshotWrites) into dir, and its task file at task.
func (j *Journal) writeSnapshot(snap Snapshot, dir, task string, writes map[string][]byte) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for p, data := range writes {
		if err := safefile.WriteFile(dir, p, data, 0o644); err != nil {
			return err
		}
	}
	if snap.Task != nil {
		if err := writeTaskFile(j.Root, task, snap.Task.data()); err != nil {
			return err
		}
	}
	return nil
}

// hydratedPending is the record of an item just hydrated from snap into
// dir, with no ops. A later batch continues a grown file from what the
// home has, so the snapshot's files are marked as sent with the
// snapshot's content. A file here the snapshot lacks (a log or prompt of
// an earlier visit of the item here) may differ from the home's copy, or
// the home may have none: it is sent whole when a step changes it.
func (j *Journal) hydratedPending(snap Snapshot, dir, task string) (*pending, error) {
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
		return nil, err
	}
	if snap.Task != nil {
		p.task = markOf(snap.Task.data())
	} else if task != "" && inside(dir, task) == "" {
		if data, err := safefile.ReadFile(j.Root, task); err == nil {
			p.task = markOf(data)
		}
	}
	return p, nil
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
	return safefile.Replace(path, data)
}

// Apply applies a replica's batch to this journal (the truth): its
// journal writes in one transaction with the record of its key, and in
// that transaction its files into the item's directory and task file. A
// batch applied before changes nothing and returns false. Every path is moved from b.Root to
// this repository and refused when it would leave the item's directory.
func (j *Journal) Apply(ctx context.Context, b Batch) (bool, error) {
	fail := func(err error) (bool, error) { return false, fmt.Errorf("apply %s: %w", b.BatchKey, err) }
	if !filepath.IsAbs(b.Root) {
		return fail(errors.New("the batch names no absolute root"))
	}
	it, err := j.Store.GetItem(ctx, b.Run, b.Item)
	if err != nil {
		return fail(err)
	}
	dir := itemDir(j.Root, b.Run, b.Item)
	ops, err := store.DecodeOps(b.Ops)
	if err != nil {
		return fail(err)
	}
	if err := j.rerootOps(b, dir, ops); err != nil {
		return fail(err)
	}
	writes, removes, err := batchWrites(b, dir, j.Root, it.Ref)
	if err != nil {
		return fail(err)
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
	// applied. Writing is idempotent, for a failed commit's retry (see
	// writeBatch).
	writeFiles := func() error { return j.writeBatch(b, dir, it.Ref, writes, removes) }
	return j.Store.ApplyOps(ctx, b.BatchKey, digest, ops, writeFiles)
}

// rerootOps checks that ops, decoded from b, are all of b's item, and
// moves the paths of their steps from b.Root to this repository, a
// step's output refused outside dir (the item's directory).
func (j *Journal) rerootOps(b Batch, dir string, ops []store.Op) error {
	for i, op := range ops {
		if op.Run != b.Run || op.Item != b.Item {
			return fmt.Errorf("op %d (%s) is of item %s of run %s", i, op.Kind, op.Item, op.Run)
		}
		if op.Step != nil {
			st := *op.Step
			var err error
			if st.OutputPath, err = reroot(st.OutputPath, b.Root, j.Root, dir); err != nil {
				return fmt.Errorf("op %d (%s) step %s: output: %w", i, op.Kind, st.ID, err)
			}
			st.Result = rerootJSON(st.Result, b.Root, j.Root)
			st.Signal = rerootJSON(st.Signal, b.Root, j.Root)
			ops[i].Step = &st
		}
	}
	return nil
}

// batchWrite is a file of a batch and where it goes.
type batchWrite struct {
	path string
	f    File
}

// batchWrites checks the files of b against dir (the item's directory)
// and its task file against ref (the item's, under root), and returns
// where its files go and the paths it removes, nothing written yet.
func batchWrites(b Batch, dir, root, ref string) ([]batchWrite, []string, error) {
	var writes []batchWrite
	for _, f := range b.Files {
		p, err := localPath(dir, f.Path)
		if err != nil || f.At < 0 || (f.Append && (f.At != 0 || f.Path != PromptsFile)) {
			return nil, nil, fmt.Errorf("batch file %q: want a file inside the item's directory", f.Path)
		}
		writes = append(writes, batchWrite{p, f})
	}
	var removes []string
	for _, rel := range b.Removed {
		p, err := localPath(dir, rel)
		if err != nil {
			return nil, nil, fmt.Errorf("batch removes %q: want a file inside the item's directory", rel)
		}
		removes = append(removes, p)
	}
	if b.Task != nil {
		p, err := localPath(root, b.Task.Path)
		if err != nil || p != ref || inside(dir, ref) != "" || b.Task.At != 0 {
			return nil, nil, fmt.Errorf("batch task file %q is not the item's task file %s", b.Task.Path, ref)
		}
	}
	return writes, removes, nil
}

// writeBatch writes a batch's files into dir (the item's directory),
// removes the files it removed and writes its task file at ref, in the
// transaction that claims it (see Apply). It is idempotent, for a
// failed commit's retry: a continuation is written from its offset, not
// appended, and the prompts file's new end is not added twice.
func (j *Journal) writeBatch(b Batch, dir, ref string, writes []batchWrite, removes []string) error {
	if j.Applying != nil {
		j.Applying(b.BatchKey)
	}
	for _, w := range writes {
		data, skip, err := w.content(dir)
		if err != nil {
			return err
		}
		if skip {
			continue
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
		return writeTaskFile(j.Root, ref, b.Task.data())
	}
	return nil
}

// content is what w's file in dir holds once w is written: w's content
// after the file's for an append, after the file's first w.f.At bytes for
// a continuation. skip says the file has the appended content already
// (written by a try whose commit failed).
func (w batchWrite) content(dir string) (data []byte, skip bool, err error) {
	data = w.f.data()
	if w.f.Append {
		old, err := safefile.ReadFile(dir, w.path)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, false, err
		}
		if bytes.HasSuffix(old, data) {
			// Written by a try whose commit failed: an append is
			// idempotent only this way.
			return nil, true, nil
		}
		data = append(old, data...)
	} else if w.f.At > 0 {
		old, err := safefile.ReadFile(dir, w.path)
		if err != nil || int64(len(old)) < w.f.At {
			return nil, false, fmt.Errorf("batch file %s continues %d bytes the journal's copy does not have (%v)", w.f.Path, w.f.At, err)
		}
		data = append(old[:w.f.At:w.f.At], data...)
	}
	return data, false, nil
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
