package replica

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/safefile"
	"github.com/cadre-dev/cadre/internal/store"
)

// tap collects, per hydrated item, the journal writes and events of its
// steps since the last batch.
type tap struct {
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

// startTap starts recording the journal writes and events of hydrated
// items, once per journal.
func (j *Journal) startTap() {
	j.tapOnce.Do(func() {
		j.tap.items = map[itemKey]*pending{}
		j.Store.SetTap(j.tap.op)
		j.Bus.Subscribe(event.SinkFunc(j.tap.event))
	})
}

// op records a journal write of a hydrated item. Events come from the bus
// instead (event): the journal's event writer appends them in the
// background, after a step may have been taken. A step's process group
// stays on this machine.
func (r *tap) op(op store.Op) {
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
func (r *tap) event(ev event.Event) {
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

// Take takes what the item's steps changed in this replica since the
// item was hydrated or last taken: its journal writes, the files of its
// directory outDir that changed (logs cut to their last MaxLogBytes) and
// its task file ref when changed, numbered one after the replica's last.
// The caller has written what it writes of the item in the background
// (the task file's frontmatter) first.
func (j *Journal) Take(ctx context.Context, run, item, outDir, ref string) (Batch, error) {
	key := itemKey{run, item}
	fail := func(err error) (Batch, error) {
		return Batch{}, fmt.Errorf("take batch of item %s: %w", item, err)
	}
	j.tap.mu.Lock()
	p := j.tap.items[key]
	var ops []store.Op
	var sent map[string]mark
	var taskMark mark
	if p != nil {
		ops = append(ops, p.ops...)
		sent, taskMark = p.files, p.task
	}
	j.tap.mu.Unlock()
	if p == nil {
		return fail(errors.New("the item was not hydrated in this replica"))
	}
	enc, err := store.EncodeOps(ops)
	if err != nil {
		return fail(err)
	}
	b := Batch{Root: j.Root, Ops: enc}
	marks := map[string]mark{}
	err = walkFiles(outDir, func(rel string, data []byte) error {
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
		case strings.HasPrefix(rel, "logs/") && len(data) > MaxLogBytes:
			note := fmt.Sprintf("[cadre: log cut to its last %d of %d bytes in the batch from %s]\n", MaxLogBytes, len(data), j.Root)
			b.Files = append(b.Files, newFile(rel, 0, append([]byte(note), data[len(data)-MaxLogBytes:]...)))
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
	if ref != "" && inside(outDir, ref) == "" {
		rel := inside(j.Root, ref)
		data, err := safefile.ReadFile(j.Root, ref)
		if rel == "" || err != nil {
			return fail(fmt.Errorf("task file %s: %v", ref, err))
		}
		newTask = markOf(data)
		if newTask != taskMark {
			f := newFile(filepath.ToSlash(rel), 0, data)
			b.Task = &f
		}
	}
	seq, err := j.Store.NextReplicaSeq(ctx, run, item)
	if err != nil {
		return fail(err)
	}
	b.BatchKey = store.BatchKey{Run: run, Item: item, Seq: seq}
	j.tap.mu.Lock()
	if p := j.tap.items[key]; p != nil {
		p.ops = p.ops[len(ops):]
		p.files, p.task = marks, newTask
	}
	j.tap.mu.Unlock()
	return b, nil
}
