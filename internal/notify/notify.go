// Package notify posts the run events people wait for (an item paused or
// failed, a run completed or out of budget) to a webhook, without ever
// holding the run up: the bus hands events to a bounded queue and one
// goroutine posts them, retrying with backoff.
package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cadre-dev/cadre/internal/config"
	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/store"
)

// budgetPrefix starts the reason of the pause the engine makes when a run
// reaches its budget (engine.overBudget); such a pause is a budget
// notification, not a paused one. The cli test of notifications guards the
// wording.
const budgetPrefix = "budget reached"

// Options tune a Notifier; zero values take the documented defaults.
type Options struct {
	Queue   int           // pending notifications before new ones are dropped (256)
	Tries   int           // posts per notification (5)
	Backoff time.Duration // wait after the first failed try, doubled after each (500ms)
	Timeout time.Duration // per request (10s)
	Client  *http.Client
	// Warn reports a dropped or undeliverable notification. It is called
	// from the notifier's goroutine, never from Handle.
	Warn func(run, msg string)
}

// Body is what the webhook receives.
type Body struct {
	Text  string      `json:"text"` // Slack-compatible
	Kind  string      `json:"kind"`
	Event event.Event `json:"event"`
}

// Notifier is an event.Sink posting to cfg.Webhook. Close it when the run
// ends.
type Notifier struct {
	cfg  config.Notify
	opts Options
	q    chan Body

	mu      sync.Mutex
	seen    map[string]bool // notifications already queued, by identity
	dropped atomic.Int64
	closed  bool

	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
}

// New starts a notifier, or returns nil when cfg posts nothing (a nil
// *Notifier is a valid sink that does nothing).
func New(cfg config.Notify, o Options) *Notifier {
	if cfg.Webhook == "" {
		return nil
	}
	if o.Queue <= 0 {
		o.Queue = 256
	}
	if o.Tries <= 0 {
		o.Tries = 5
	}
	if o.Backoff <= 0 {
		o.Backoff = 500 * time.Millisecond
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	if o.Client == nil {
		o.Client = &http.Client{}
	}
	if o.Warn == nil {
		o.Warn = func(string, string) {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	n := &Notifier{cfg: cfg, opts: o, q: make(chan Body, o.Queue), seen: map[string]bool{},
		ctx: ctx, cancel: cancel, done: make(chan struct{})}
	go n.loop()
	return n
}

// Kind classifies e: the notification kind it is, or "".
func Kind(e event.Event) string {
	switch e.Type {
	case event.ItemPaused:
		if strings.HasPrefix(e.Message, budgetPrefix) {
			return config.NotifyBudget
		}
		return config.NotifyPaused
	case event.TaskFailed:
		return config.NotifyFailed
	case event.RunCompleted:
		if e.Message == store.RunCompleted {
			return config.NotifyCompleted
		}
	}
	return ""
}

// identity says which events are the same notification: a resume in the
// same process pauses a still-waiting item again, and every item stops at
// a reached budget, but people want to hear each once.
func identity(kind string, e event.Event) string {
	switch kind {
	case config.NotifyBudget, config.NotifyCompleted:
		return kind + "\x00" + e.Run
	}
	return kind + "\x00" + e.Run + "\x00" + e.Item + "\x00" + e.Message + e.Error
}

// Handle queues e when it is a wanted notification; it never blocks.
func (n *Notifier) Handle(e event.Event) {
	if n == nil {
		return
	}
	kind := Kind(e)
	if kind == "" || !n.cfg.Wants(kind) {
		return
	}
	id := identity(kind, e)
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed || n.seen[id] {
		return
	}
	select {
	case n.q <- Body{Text: text(kind, e), Kind: kind, Event: e}:
		n.seen[id] = true
	default:
		n.dropped.Add(1)
	}
}

func text(kind string, e event.Event) string {
	var b strings.Builder
	fmt.Fprintf(&b, "cadre: run %s", e.Run)
	if e.Item != "" {
		fmt.Fprintf(&b, ": item %s", e.Item)
	}
	switch kind {
	case config.NotifyPaused:
		b.WriteString(" paused")
	case config.NotifyBudget:
		b.WriteString(" paused at its budget")
	case config.NotifyFailed:
		b.WriteString(" failed")
	case config.NotifyCompleted:
		b.WriteString(" completed")
	}
	if why := e.Message + e.Error; why != "" && kind != config.NotifyCompleted {
		b.WriteString(": " + why)
	}
	return b.String()
}

func (n *Notifier) loop() {
	defer close(n.done)
	run := ""
	for b := range n.q {
		run = b.Event.Run
		n.reportDropped(run)
		if err := n.post(b); err != nil {
			n.opts.Warn(run, fmt.Sprintf("notify: %s notification not delivered: %v", b.Kind, err))
		}
	}
	n.reportDropped(run)
}

func (n *Notifier) reportDropped(run string) {
	if d := n.dropped.Swap(0); d > 0 {
		n.opts.Warn(run, fmt.Sprintf("notify: %d notification(s) dropped: the webhook is too slow (queue full)", d))
	}
}

// post tries b up to Tries times, waiting Backoff, then twice as long, ...
func (n *Notifier) post(b Body) error {
	data, err := json.Marshal(b)
	if err != nil {
		return fmt.Errorf("encode: %w", err)
	}
	wait := n.opts.Backoff
	var last error
	for try := 1; try <= n.opts.Tries; try++ {
		if last = n.postOnce(data); last == nil {
			return nil
		}
		if try == n.opts.Tries {
			break
		}
		select {
		case <-time.After(wait):
		case <-n.ctx.Done():
			return fmt.Errorf("gave up at shutdown: %w", last)
		}
		wait *= 2
	}
	return fmt.Errorf("after %d tries: %w", n.opts.Tries, last)
}

func (n *Notifier) postOnce(data []byte) error {
	ctx, cancel := context.WithTimeout(n.ctx, n.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, n.cfg.Webhook, bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "cadre")
	resp, err := n.opts.Client.Do(req)
	if err != nil {
		return fmt.Errorf("post: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("post: webhook answered %s", resp.Status)
	}
	return nil
}

// Close stops taking notifications and waits up to wait for the queued
// ones to be posted; what is left then is abandoned (with a warning).
func (n *Notifier) Close(wait time.Duration) {
	if n == nil {
		return
	}
	n.mu.Lock()
	if !n.closed {
		n.closed = true
		close(n.q)
	}
	n.mu.Unlock()
	select {
	case <-n.done:
	case <-time.After(wait):
		// Cancelling fails the post in flight and the queued ones at
		// once; each is reported as not delivered.
		n.cancel()
		<-n.done
	}
	n.cancel()
}
