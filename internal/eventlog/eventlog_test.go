package eventlog

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/store"
)

func TestSinkWritesEveryEventInOrder(t *testing.T) {
	ctx := context.Background()
	st := journal(t)
	j := NewSink(st)
	bus := event.NewBus(nil, j)
	for i := range 1500 {
		bus.Publish(event.Event{Run: "r", Type: event.StepStarted, Step: fmt.Sprint(i)})
	}
	bus.Publish(event.Event{Type: event.Warning}) // no run: not journaled
	j.Close()
	j.Close() // idempotent
	evs, _, err := st.Events(ctx, "r", 0)
	if err != nil || len(evs) != 1500 {
		t.Fatalf("%d events, %v", len(evs), err)
	}
	for i, e := range evs {
		if want := fmt.Sprintf(`"step":"%d"`, i); !strings.Contains(string(e.Data), want) {
			t.Fatalf("event %d = %s, want %s", i, e.Data, want)
		}
	}
}

// journal is a journal holding run r.
func journal(t *testing.T) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "j.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.CreateRun(context.Background(), store.Run{ID: "r", Options: []byte("{}")}); err != nil {
		t.Fatal(err)
	}
	return st
}

// A journal that refuses events for a moment loses none (the batch is
// tried again); one that keeps refusing them is reported by Close, with
// how many and why, instead of the events vanishing without a word.
func TestSinkRetriesAndReportsLostEvents(t *testing.T) {
	ctx := context.Background()
	st := journal(t)
	busy := errors.New("database is locked")
	var refusals atomic.Int64
	refusals.Store(1)
	st.SetFault(func(k store.OpKind) error {
		if k == store.OpEvents && refusals.Add(-1) >= 0 {
			return busy
		}
		return nil
	})
	j := NewSink(st)
	j.Handle(event.Event{Run: "r", Type: event.StepStarted, Step: "a"})
	if err := j.Close(); err != nil {
		t.Fatalf("one refusal lost events: %v", err)
	}
	if evs, _, err := st.Events(ctx, "r", 0); err != nil || len(evs) != 1 {
		t.Fatalf("%d events journaled, %v; want the one tried again", len(evs), err)
	}

	refusals.Store(100)
	j = NewSink(st)
	j.Handle(event.Event{Run: "r", Type: event.StepStarted, Step: "b"})
	j.Handle(event.Event{Run: "r", Type: event.StepCompleted, Step: "b"})
	err := j.Close()
	if err == nil || !errors.Is(err, busy) || !strings.Contains(err.Error(), "refused 2 event(s)") {
		t.Fatalf("Close = %v, want the 2 refused events and the journal's cause", err)
	}
}
