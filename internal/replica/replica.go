// Package replica owns the journal replicas of items run on Temporal
// workers of other machines: the wire types (File, Snapshot, Batch),
// exporting an item from the journal of truth, hydrating a worker's
// replica from it, recording what the item's steps write there as a
// numbered batch, and applying that batch to the journal of truth once.
// The engine performs the steps; this package carries their journal
// between machines, and knows nothing of the engine.
package replica

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/promptlog"
	"github.com/cadre-dev/cadre/internal/safefile"
	"github.com/cadre-dev/cadre/internal/store"
)

// Items of a run on workers of other machines. The journal of the
// machine that started the run is the journal of truth. A worker keeps a
// replica (its own clone's .cadre): before an item's step there, the
// item is hydrated from a snapshot of the truth (Export on the starter,
// Hydrate on the worker), so the engine's OpenRun, OpenItem and steps
// work unchanged; after the step, what it changed in the replica is taken
// as a numbered batch (Take, through the engine's ItemSteps.TakeBatch)
// and applied to the truth (Apply), once, whatever retries deliver it.
//
// Staleness: the snapshot carries the number of the item's batches the
// truth has applied; the replica counts from there, one per batch taken
// (Seq). A caller that counts the batches it applied hydrates the item
// again whenever Seq differs from its count: steps ran elsewhere since. A
// batch from a stale replica that slips through is refused by Apply
// (store.ErrBatchConflict), as is one arriving before the batch numbered
// before it (store.ErrBatchGap, which a retry after that batch lands
// resolves).
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
// item ends; the item's End result (the engine's Ended.Halt) tells the starter of a halt.

// MaxLogBytes caps a step log sent back in a batch: logs can be large
// (an agent's whole transcript) and a batch travels in a Temporal payload
// (2 MB at most). The tail is kept, where a failure shows.
const MaxLogBytes = 256 << 10

// PromptsFile is the file of an item's directory that keeps what its
// agents were asked, appended by every step (promptlog.File):
// a batch carries only its new end, to go after what other workers the
// item visited added to the truth's.
const PromptsFile = promptlog.File

// Journal is a repository's journal as the home of items run elsewhere
// (Export, Apply) or as a worker's replica of them (Hydrate, Take, Seq).
// Set its fields before first use; it must not be copied after.
type Journal struct {
	Store    *store.Store
	Root     string     // the repository's top level
	StateDir string     // its state directory (.cadre)
	Bus      *event.Bus // the events of hydrated items' steps are recorded from it
	// Applying, when set (by tests), is called as a batch's files are
	// about to be written.
	Applying func(store.BatchKey)

	// The replica records its hydrated items' writes (tap.go).
	tap     tap
	tapOnce sync.Once
}

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

// itemDir is the directory of an item of a run under root.
func itemDir(root, run, item string) string {
	return filepath.Join(root, ".cadre", "runs", run, "items", item)
}

// Export is the snapshot a replica is hydrated from.
func (j *Journal) Export(ctx context.Context, run, item string) (Snapshot, error) {
	x, err := j.Store.ExportItem(ctx, run, item)
	if err != nil {
		return Snapshot{}, err
	}
	s := Snapshot{ItemExport: x, Root: j.Root}
	dir := filepath.Join(j.StateDir, "runs", run, "items", item)
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
		rel := inside(j.Root, it.Ref)
		if rel == "" {
			return Snapshot{}, fmt.Errorf("export item %s: its task file %s is outside the repository %s: a worker elsewhere cannot have it", item, it.Ref, j.Root)
		}
		data, err := safefile.ReadFile(j.Root, it.Ref)
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

// Seq is the number of the item's batches this replica reflects (see
// Hydrate): when it is not the number the caller has applied, steps ran
// elsewhere since, and the item needs hydrating again.
func (j *Journal) Seq(ctx context.Context, run, item string) (int64, error) {
	return j.Store.ReplicaSeq(ctx, run, item)
}
