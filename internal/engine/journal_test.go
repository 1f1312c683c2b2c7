package engine

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/store"
)

func TestJournalSinkWritesEveryEventInOrder(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "j.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.CreateRun(ctx, store.Run{ID: "r", Options: []byte("{}")}); err != nil {
		t.Fatal(err)
	}
	j := NewJournalSink(st)
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
