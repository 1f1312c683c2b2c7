// Package eventlog writes a run's events to the journal: a sink of the
// event bus (internal/event) that appends them to the store in batches
// from one goroutine, off the publisher's path.
package eventlog

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/store"
)

// Sink writes events to the store in batches from one goroutine, so
// publishing an event never waits for a database write. Events are a record
// for people and dashboards; what resume relies on (steps, items, commits)
// is journaled synchronously elsewhere, so a crash losing the last few
// events loses no work. Events the journal refuses are counted, with the
// first cause, for Close to report.
type Sink struct {
	st   *store.Store
	ch   chan store.Event
	done chan struct{}
	once sync.Once

	mu    sync.Mutex
	lost  int
	cause error
}

// NewSink starts the writer; Close flushes and stops it.
func NewSink(st *store.Store) *Sink {
	j := &Sink{st: st, ch: make(chan store.Event, 1024), done: make(chan struct{})}
	go j.loop()
	return j
}

// Handle queues e for the journal.
func (j *Sink) Handle(e event.Event) {
	data, err := json.Marshal(e)
	if err != nil || e.Run == "" {
		return
	}
	j.ch <- store.Event{RunID: e.Run, Time: e.Time, Type: e.Type, ItemID: e.Item, Data: data}
}

func (j *Sink) loop() {
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
		j.write(batch)
	}
}

// write appends batch, trying again twice: a journal that another
// process keeps busy frees up. A batch still refused is counted lost.
func (j *Sink) write(batch []store.Event) {
	var err error
	for try := range 3 {
		if try > 0 {
			time.Sleep(time.Duration(try) * 200 * time.Millisecond)
		}
		if err = j.st.AppendEvents(context.Background(), batch); err == nil {
			return
		}
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.lost += len(batch)
	if j.cause == nil {
		j.cause = err
	}
}

// Close writes every queued event and stops the writer. Its error says
// how many events the journal refused, and why.
func (j *Sink) Close() error {
	j.once.Do(func() { close(j.ch) })
	<-j.done
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.lost == 0 {
		return nil
	}
	return fmt.Errorf("the journal refused %d event(s), which cadre status and the board will not show: %w", j.lost, j.cause)
}
