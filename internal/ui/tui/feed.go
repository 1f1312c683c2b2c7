package tui

import (
	"context"
	"sync"

	tea "charm.land/bubbletea/v2"

	"github.com/cadre-dev/cadre/internal/event"
)

// Feed is the bus sink of the live view. Handle only queues: the bus calls
// sinks synchronously, and a slow terminal must never slow the run. Run
// forwards the queue to the program in batches. When the queue is full,
// progress notes go first and then the oldest events: the journal
// snapshots the view also receives repair what was dropped.
type Feed struct {
	mu      sync.Mutex
	pending []event.Event
	limit   int
	dropped int
	wake    chan struct{}
}

// NewFeed returns a feed that holds at most limit unsent events.
func NewFeed(limit int) *Feed {
	return &Feed{limit: max(limit, 1), wake: make(chan struct{}, 1)}
}

// Handle queues e; it never blocks.
func (f *Feed) Handle(e event.Event) {
	f.mu.Lock()
	if len(f.pending) >= f.limit {
		f.shed()
	}
	f.pending = append(f.pending, e)
	f.mu.Unlock()
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// shed makes room: every progress note, else the oldest event.
func (f *Feed) shed() {
	kept := f.pending[:0]
	for _, e := range f.pending {
		if e.Type != event.StepProgress {
			kept = append(kept, e)
		}
	}
	f.dropped += len(f.pending) - len(kept)
	f.pending = kept
	if len(f.pending) >= f.limit {
		f.pending = append(f.pending[:0], f.pending[1:]...)
		f.dropped++
	}
}

// Dropped is how many events were shed so far.
func (f *Feed) Dropped() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.dropped
}

// take empties the queue.
func (f *Feed) take() []event.Event {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.pending
	f.pending = nil
	return out
}

// Run sends queued events to send as EventsMsg batches until ctx ends,
// then sends what is left. send may block (tea.Program.Send does while the
// program is busy); only this goroutine waits for it.
func (f *Feed) Run(ctx context.Context, send func(tea.Msg)) {
	for {
		select {
		case <-ctx.Done():
			if batch := f.take(); len(batch) > 0 {
				send(EventsMsg(batch))
			}
			return
		case <-f.wake:
			if batch := f.take(); len(batch) > 0 {
				send(EventsMsg(batch))
			}
		}
	}
}
