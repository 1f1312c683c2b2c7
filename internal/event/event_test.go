package event

import (
	"strings"
	"testing"
	"time"
)

func TestBusDeliversInOrderToEverySink(t *testing.T) {
	fixed := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var a, b []string
	bus := NewBus(func() time.Time { return fixed }, SinkFunc(func(e Event) { a = append(a, e.Type) }))
	bus.Subscribe(SinkFunc(func(e Event) {
		b = append(b, e.Type)
		if !e.Time.Equal(fixed) {
			t.Errorf("time = %v, want %v", e.Time, fixed)
		}
	}))
	bus.Publish(Event{Type: TaskStarted})
	bus.Publish(Event{Type: TaskCompleted})
	for _, got := range [][]string{a, b} {
		if len(got) != 2 || got[0] != TaskStarted || got[1] != TaskCompleted {
			t.Errorf("sink saw %v", got)
		}
	}
}

func TestUsageAdd(t *testing.T) {
	got := Usage{InputTokens: 1, OutputTokens: 2, CostUSD: 0.5}.Add(Usage{InputTokens: 10, CacheReadTokens: 3, CostUSD: 0.25, CostEstimated: true})
	want := Usage{InputTokens: 11, OutputTokens: 2, CacheReadTokens: 3, CostUSD: 0.75, CostEstimated: true}
	if got != want {
		t.Errorf("Add = %+v, want %+v", got, want)
	}
}

// The mask applies before any sink sees an event, to sinks subscribed
// after it was set too.
func TestBusMasksEveryEventForEverySink(t *testing.T) {
	var got []Event
	bus := NewBus(nil, SinkFunc(func(e Event) { got = append(got, e) }))
	bus.SetMask(func(s string) string { return strings.ReplaceAll(s, "SECRET", "[M]") })
	bus.Subscribe(SinkFunc(func(e Event) { got = append(got, e) }))
	bus.Publish(Event{Type: StepFailed, Message: "saw SECRET", Error: "422: SECRET"})
	if len(got) != 2 {
		t.Fatalf("%d deliveries, want 2", len(got))
	}
	for _, e := range got {
		if e.Message != "saw [M]" || e.Error != "422: [M]" {
			t.Errorf("delivered %+v", e)
		}
	}
}
