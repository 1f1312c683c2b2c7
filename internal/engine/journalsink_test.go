package engine

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/store"
)

// A journal that refuses events for a moment loses none (the batch is
// tried again); one that keeps refusing them is reported by Close, with
// how many and why, instead of the events vanishing without a word.
func TestJournalSinkRetriesAndReportsLostEvents(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "j.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.CreateRun(ctx, store.Run{ID: "r", Options: []byte("{}")}); err != nil {
		t.Fatal(err)
	}
	busy := errors.New("database is locked")
	var refusals atomic.Int64
	refusals.Store(1)
	st.SetFault(func(k store.OpKind) error {
		if k == store.OpEvents && refusals.Add(-1) >= 0 {
			return busy
		}
		return nil
	})
	j := NewJournalSink(st)
	j.Handle(event.Event{Run: "r", Type: event.StepStarted, Step: "a"})
	if err := j.Close(); err != nil {
		t.Fatalf("one refusal lost events: %v", err)
	}
	if evs, _, err := st.Events(ctx, "r", 0); err != nil || len(evs) != 1 {
		t.Fatalf("%d events journaled, %v; want the one tried again", len(evs), err)
	}

	refusals.Store(100)
	j = NewJournalSink(st)
	j.Handle(event.Event{Run: "r", Type: event.StepStarted, Step: "b"})
	j.Handle(event.Event{Run: "r", Type: event.StepCompleted, Step: "b"})
	err = j.Close()
	if err == nil || !errors.Is(err, busy) || !strings.Contains(err.Error(), "refused 2 event(s)") {
		t.Fatalf("Close = %v, want the 2 refused events and the journal's cause", err)
	}
}
