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

// The cycle log keeps a long output's start and end (where the SIGNAL
// BLOCK is) and points at the whole file; a short one stays whole.
func TestCycleTextBoundsLongOutputs(t *testing.T) {
	if got := cycleText("short\n### SIGNAL BLOCK", "/o.md"); got != "short\n### SIGNAL BLOCK" {
		t.Errorf("short text changed: %q", got)
	}
	long := "first line\n" + strings.Repeat("flood flood flood\n", 100000) + "### SIGNAL BLOCK\n- Result: SUCCESS"
	got := cycleText(long, "/o.md")
	if len(got) > cycleMax+200 || !strings.HasPrefix(got, "first line\n") || !strings.HasSuffix(got, "- Result: SUCCESS") ||
		!strings.Contains(got, "bytes left out here; the whole output is /o.md") {
		t.Errorf("long text kept %d bytes: %.80q … %.80q", len(got), got, got[len(got)-80:])
	}
}
