package event

import (
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
