package web

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/store"
)

// wireEvent is one event as the page receives it: the journal's event,
// its sequence number (the SSE id a reconnecting page resumes from) and
// the column it moves its item's card to.
type wireEvent struct {
	Seq    int64  `json:"seq"`
	Column string `json:"column,omitempty"`
	event.Event
}

type message struct {
	seq  int64
	run  string
	data []byte
}

// subscriber is one open event stream. Its channel is closed when it falls
// too far behind; the page then reconnects and catches up from the journal.
type subscriber struct {
	run string // "" for every run
	ch  chan message
}

// hub follows the journal and fans new events out to the open streams.
// Following the journal, rather than the bus of one process, is what lets
// a separate cadre serve show a run, and in-process the poll interval
// keeps an event's way to the page short.
type hub struct {
	st   *store.Store
	poll time.Duration

	mu   sync.Mutex
	subs map[*subscriber]struct{}
	last int64 // the journal's last event fanned out
}

func newHub(st *store.Store, poll time.Duration) *hub {
	return &hub{st: st, poll: poll, subs: map[*subscriber]struct{}{}}
}

func (h *hub) subscribe(run string) *subscriber {
	s := &subscriber{run: run, ch: make(chan message, 4096)}
	h.mu.Lock()
	h.subs[s] = struct{}{}
	h.mu.Unlock()
	return s
}

func (h *hub) unsubscribe(s *subscriber) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.subs[s]; ok {
		delete(h.subs, s)
		close(s.ch)
	}
}

// delivered says whether every event up to seq was fanned out and every
// stream has written what it was given.
func (h *hub) delivered(seq int64) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.last < seq {
		return false
	}
	for s := range h.subs {
		if len(s.ch) > 0 {
			return false
		}
	}
	return true
}

// clients is how many pages follow events now.
func (h *hub) clients() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs)
}

// run polls the journal until ctx ends.
func (h *hub) run(ctx context.Context) error {
	last, err := h.st.LastEventSeq(ctx)
	if err != nil {
		return err
	}
	t := time.NewTicker(h.poll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			h.closeAll()
			return nil
		case <-t.C:
		}
		events, next, err := h.st.Events(ctx, "", last)
		if err != nil {
			continue // a busy journal (or shutdown) is retried at the next tick
		}
		last = next
		for _, e := range events {
			h.broadcast(encode(e))
		}
		h.mu.Lock()
		h.last = last
		h.mu.Unlock()
	}
}

func (h *hub) broadcast(m message) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs {
		if s.run != "" && s.run != m.run {
			continue
		}
		select {
		case s.ch <- m:
		default:
			delete(h.subs, s)
			close(s.ch)
		}
	}
}

func (h *hub) closeAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs {
		delete(h.subs, s)
		close(s.ch)
	}
}

// encode turns a journal entry into the page's JSON.
func encode(e store.Event) message {
	var ev event.Event
	if err := json.Unmarshal(e.Data, &ev); err != nil || ev.Type == "" {
		ev = event.Event{Time: e.Time, Run: e.RunID, Type: e.Type, Item: e.ItemID}
	}
	data, _ := json.Marshal(wireEvent{Seq: e.Seq, Column: eventColumn(ev), Event: ev})
	return message{seq: e.Seq, run: e.RunID, data: data}
}
