package tui

import (
	"context"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/cadre-dev/cadre/internal/event"
)

// With nobody reading, Handle still returns at once, keeps at most its
// limit, and sheds progress notes before the events the rows are made of.
func TestFeedNeverBlocksAndShedsProgressFirst(t *testing.T) {
	f := NewFeed(4)
	f.Handle(event.Event{Type: event.StepStarted, Step: "s1"})
	for range 1000 {
		f.Handle(event.Event{Type: event.StepProgress})
	}
	f.Handle(event.Event{Type: event.StepCompleted, Step: "s1"})
	got := f.take()
	if len(got) > 4 {
		t.Fatalf("%d events queued, limit 4", len(got))
	}
	if got[0].Type != event.StepStarted || got[len(got)-1].Type != event.StepCompleted {
		t.Errorf("queue %v lost a step event to progress notes", got)
	}
	if f.Dropped() < 990 {
		t.Errorf("dropped %d", f.Dropped())
	}
}

// Run forwards queued events in order and sends the rest when it ends.
func TestFeedRunForwardsInOrder(t *testing.T) {
	f := NewFeed(100)
	var got []string
	f.Handle(event.Event{Type: event.TaskStarted})
	f.Handle(event.Event{Type: event.TaskCompleted})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	f.Run(ctx, func(m tea.Msg) {
		for _, e := range m.(EventsMsg) {
			got = append(got, e.Type)
		}
	})
	if len(got) != 2 || got[0] != event.TaskStarted || got[1] != event.TaskCompleted {
		t.Errorf("forwarded %v", got)
	}
}
