package engine

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/store"
)

// JournalSink writes events to the store in batches from one goroutine, so
// publishing an event never waits for a database write. Events are a record
// for people and dashboards; what resume relies on (steps, items, commits)
// is journaled synchronously elsewhere, so a crash losing the last few
// events loses no work.
type JournalSink struct {
	st   *store.Store
	ch   chan store.Event
	done chan struct{}
	once sync.Once
}

// NewJournalSink starts the writer; Close flushes and stops it.
func NewJournalSink(st *store.Store) *JournalSink {
	j := &JournalSink{st: st, ch: make(chan store.Event, 1024), done: make(chan struct{})}
	go j.loop()
	return j
}

// Handle queues e for the journal.
func (j *JournalSink) Handle(e event.Event) {
	data, err := json.Marshal(e)
	if err != nil || e.Run == "" {
		return
	}
	j.ch <- store.Event{RunID: e.Run, Time: e.Time, Type: e.Type, ItemID: e.Item, Data: data}
}

func (j *JournalSink) loop() {
	defer close(j.done)
	for first := range j.ch {
		batch := []store.Event{first}
	drain:
		for len(batch) < 256 {
			select {
			case e, ok := <-j.ch:
				if !ok {
					break drain
				}
				batch = append(batch, e)
			default:
				break drain
			}
		}
		j.st.AppendEvents(context.Background(), batch)
	}
}

// Close writes every queued event and stops the writer.
func (j *JournalSink) Close() {
	j.once.Do(func() { close(j.ch) })
	<-j.done
}
