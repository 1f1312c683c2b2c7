package taskfile

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Board writes an item's task-file frontmatter (stage, mode, agent,
// attempts) from a goroutine of its own. Every write is atomic (temp file
// and rename, UpdateNoSync) but not fsync'd, and a step does not
// wait for it: the journal, not the task file, is what resume trusts, and
// replay rewrites the file, so only an OS crash could leave a stale stage
// there, which the resume then corrects. Writes that are still pending coalesce into one. Flush waits for
// the file to be current: before a review is written into it, before it is
// committed, and when the item ends.
//
// An agent may edit its own task file (its body is the agent's to change),
// so no background write happens while an agent step of the item runs: the
// file is made current before the first agent starts (the agent sees the
// stage it works in) and what is queued meanwhile waits for the last one to
// end. Only an explicit Flush writes while agents run.
//
// A lazy board is one no agent is pointed at (a GitHub issue's task file,
// which cadre generates under .cadre/ and never hands to the agent): it
// writes while agents run, and waits lazyDelay after a first change for
// others to join it, so a burst of short steps costs one write, not one
// per step. Flush and Close write at once, as for any board.
type Board struct {
	path  string
	lazy  bool
	delay time.Duration // lazy boards: lazyDelay
	first time.Time     // when the oldest pending field was set

	mu      sync.Mutex
	cond    *sync.Cond
	pending map[string]any
	order   []string
	busy    bool
	closed  bool
	agents  int   // agent steps running now
	forcing int   // flushes waiting: write even while agents run
	err     error // the first write error, reported by Flush
}

// lazyDelay is how long a lazy board lets changes gather before writing.
const lazyDelay = 250 * time.Millisecond

// NewBoard starts the board of the task file at path; lazy for a file no
// agent is pointed at. Close stops it.
func NewBoard(path string, lazy bool) *Board {
	// A process killed in the middle of an atomic write leaves its temp
	// file beside the task file; it must not reach a commit. A live
	// process's is left alone: another worker writing the same board, or
	// this one, whose board of the item opened before may be writing
	// (an executor opens an item for each step it takes).
	prefix := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".")
	stale, _ := filepath.Glob(prefix + "*.tmp")
	for _, f := range stale {
		pid, _, _ := strings.Cut(strings.TrimPrefix(f, prefix), ".")
		if n, err := strconv.Atoi(pid); err == nil && (n == os.Getpid() || syscall.Kill(n, 0) == nil) {
			continue
		}
		os.Remove(f)
	}
	b := &Board{path: path, lazy: lazy, delay: lazyDelay, pending: map[string]any{}}
	b.cond = sync.NewCond(&b.mu)
	go b.loop()
	return b
}

func (b *Board) loop() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for {
		for !b.closed && (len(b.order) == 0 || (!b.lazy && b.agents > 0 && b.forcing == 0)) {
			b.cond.Wait()
		}
		if len(b.order) == 0 {
			return // closed and nothing left
		}
		if wait := b.delay - time.Since(b.first); b.lazy && !b.closed && b.forcing == 0 && wait > 0 {
			t := time.AfterFunc(wait, func() {
				b.mu.Lock()
				b.cond.Broadcast()
				b.mu.Unlock()
			})
			b.cond.Wait()
			t.Stop()
			continue
		}
		fields := make([]Field, 0, len(b.order))
		for _, k := range b.order {
			fields = append(fields, Field{Key: k, Value: b.pending[k]})
		}
		b.pending, b.order, b.busy = map[string]any{}, nil, true
		b.mu.Unlock()
		err := UpdateNoSync(b.path, fields)
		b.mu.Lock()
		b.busy = false
		if err != nil && b.err == nil {
			b.err = err
		}
		b.cond.Broadcast()
	}
}

// Set queues fields; a later value of a key replaces a pending one.
func (b *Board) Set(fields []Field) {
	if len(fields) == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.order) == 0 {
		b.first = time.Now()
	}
	for _, f := range fields {
		if _, ok := b.pending[f.Key]; !ok {
			b.order = append(b.order, f.Key)
		}
		b.pending[f.Key] = f.Value
	}
	b.cond.Broadcast()
}

// Flush waits until every queued field is in the file.
func (b *Board) Flush() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.forcing++
	b.cond.Broadcast()
	for len(b.order) > 0 || b.busy {
		b.cond.Wait()
	}
	b.forcing--
	return b.err
}

// BeginAgent is called before an agent step runs: when it is the only one,
// the file is made current first; background writes then wait for EndAgent.
// A lazy board's file is no agent's, so neither applies to it.
func (b *Board) BeginAgent() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.agents == 0 && !b.lazy {
		for len(b.order) > 0 || b.busy {
			b.cond.Wait()
		}
	}
	b.agents++
	return b.err
}

// EndAgent is called when an agent step has ended.
func (b *Board) EndAgent() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.agents--
	b.cond.Broadcast()
}

// Close flushes and stops the writer.
func (b *Board) Close() error {
	b.mu.Lock()
	b.closed = true
	b.cond.Broadcast()
	b.mu.Unlock()
	return b.Flush()
}
