package notify_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cadre-dev/cadre/internal/config"
	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/notify"
)

// hook is a webhook that fails the first try of every notification with
// 500 and records the bodies it accepted.
type hook struct {
	mu       sync.Mutex
	tries    map[string]int
	accepted []notify.Body
}

func (h *hook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	data, _ := io.ReadAll(r.Body)
	var b notify.Body
	if err := json.Unmarshal(data, &b); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	key := b.Kind + b.Event.Item
	h.tries[key]++
	if h.tries[key] == 1 {
		http.Error(w, "try again", http.StatusInternalServerError)
		return
	}
	h.accepted = append(h.accepted, b)
}

func runEvents() []event.Event {
	return []event.Event{
		{Run: "r1", Type: event.TaskStarted, Item: "a"},
		{Run: "r1", Type: event.ItemPaused, Item: "a", Message: "coder's confidence 3 is below 5"},
		// A resume in the same process pauses the still-waiting item again.
		{Run: "r1", Type: event.ItemPaused, Item: "a", Message: "coder's confidence 3 is below 5"},
		{Run: "r1", Type: event.TaskFailed, Item: "b", Error: "audit failed twice"},
		{Run: "r1", Type: event.ItemPaused, Item: "c", Message: "budget reached: spent $1.0000 of $1.0000; continue with cadre resume --budget-usd N"},
		{Run: "r1", Type: event.ItemPaused, Item: "d", Message: "budget reached: spent $1.0000 of $1.0000; continue with cadre resume --budget-usd N"},
		{Run: "r1", Type: event.RunCompleted, Message: "paused"},
		{Run: "r1", Type: event.RunCompleted, Message: "completed"},
		{Run: "r1", Type: event.StepCompleted, Item: "a"},
	}
}

func TestOnePostPerEventRetriedOn500(t *testing.T) {
	h := &hook{tries: map[string]int{}}
	srv := httptest.NewServer(h)
	defer srv.Close()
	var warnings []string
	n := notify.New(config.Notify{Webhook: srv.URL}, notify.Options{Backoff: time.Millisecond,
		Warn: func(_, msg string) { warnings = append(warnings, msg) }})
	for _, e := range runEvents() {
		n.Handle(e)
	}
	n.Close(10 * time.Second)
	var kinds []string
	for _, b := range h.accepted {
		kinds = append(kinds, b.Kind)
		if !strings.HasPrefix(b.Text, "cadre: run r1") {
			t.Errorf("text = %q, want it to name the run", b.Text)
		}
	}
	want := []string{config.NotifyPaused, config.NotifyFailed, config.NotifyBudget, config.NotifyCompleted}
	if !slices.Equal(kinds, want) {
		t.Errorf("accepted kinds = %v, want %v", kinds, want)
	}
	for k, n := range h.tries {
		if n != 2 {
			t.Errorf("%s: %d tries, want 2 (one 500, one accepted)", k, n)
		}
	}
	if len(warnings) > 0 {
		t.Errorf("warnings: %v", warnings)
	}
}

func TestOnlyTheKindsAskedFor(t *testing.T) {
	h := &hook{tries: map[string]int{}}
	srv := httptest.NewServer(h)
	defer srv.Close()
	n := notify.New(config.Notify{Webhook: srv.URL, On: []string{config.NotifyFailed}}, notify.Options{Backoff: time.Millisecond})
	for _, e := range runEvents() {
		n.Handle(e)
	}
	n.Close(10 * time.Second)
	if len(h.accepted) != 1 || h.accepted[0].Kind != config.NotifyFailed || h.accepted[0].Event.Item != "b" {
		t.Errorf("accepted %+v, want the failure of b only", h.accepted)
	}
}

// A webhook that never answers neither blocks Handle nor lets the queue
// grow without bound: the overflow is dropped with a warning, and Close
// gives up after its wait.
func TestDeadWebhookNeverBlocks(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-release
	}))
	defer srv.Close()
	defer close(release)
	var mu sync.Mutex
	var warnings []string
	n := notify.New(config.Notify{Webhook: srv.URL}, notify.Options{Queue: 2, Tries: 1,
		Warn: func(_, msg string) { mu.Lock(); warnings = append(warnings, msg); mu.Unlock() }})
	for i := range 50 {
		n.Handle(event.Event{Run: "r", Type: event.TaskFailed, Item: string(rune('a' + i%26)), Error: strings.Repeat("x", i)})
	}
	n.Close(50 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	joined := strings.Join(warnings, "\n")
	if !strings.Contains(joined, "dropped") || !strings.Contains(joined, "not delivered") {
		t.Errorf("warnings = %q, want a drop and an undelivered notification reported", joined)
	}
}

func TestNoWebhookNoNotifier(t *testing.T) {
	n := notify.New(config.Notify{}, notify.Options{})
	if n != nil {
		t.Fatal("a notifier without a webhook")
	}
	n.Handle(event.Event{Run: "r", Type: event.TaskFailed}) // a nil notifier is a no-op sink
	n.Close(time.Second)
}
