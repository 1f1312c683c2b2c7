// Package event defines cadre's run events and a fan-out bus that feeds the
// journal, the --json printer and the live views.
package event

import (
	"sync"
	"time"
)

// Event types. The first six are the task-file pipeline's original names;
// scripts depend on all of them, so none is renamed.
const (
	TaskStarted    = "taskStarted"
	StageStarted   = "stageStarted"
	StageCompleted = "stageCompleted"
	TaskCompleted  = "taskCompleted"
	TaskFailed     = "taskFailed"
	RunnerStopped  = "runnerStopped"
	RunStarted     = "runStarted"
	RunCompleted   = "runCompleted"
	StepStarted    = "stepStarted"
	StepCompleted  = "stepCompleted"
	StepFailed     = "stepFailed"
	StepProgress   = "stepProgress" // a running agent's tool call or message
	ItemPaused     = "itemPaused"
	ItemResumed    = "itemResumed"
	Warning        = "warning"
	// WebhookReceived is a forge's delivery cadre watch --listen took,
	// at the time it came in.
	WebhookReceived = "webhookReceived"
)

// Usage is the token and cost account of one step, the "usage" object of
// an event.
type Usage struct {
	InputTokens      int64   `json:"input_tokens"`
	OutputTokens     int64   `json:"output_tokens"`
	CacheReadTokens  int64   `json:"cache_read_tokens"`
	CacheWriteTokens int64   `json:"cache_write_tokens"`
	CostUSD          float64 `json:"cost_usd"`
	CostEstimated    bool    `json:"cost_estimated,omitempty"`
}

// Add returns the sum of two usages; the sum is estimated if either part is.
func (u Usage) Add(o Usage) Usage {
	return Usage{
		InputTokens:      u.InputTokens + o.InputTokens,
		OutputTokens:     u.OutputTokens + o.OutputTokens,
		CacheReadTokens:  u.CacheReadTokens + o.CacheReadTokens,
		CacheWriteTokens: u.CacheWriteTokens + o.CacheWriteTokens,
		CostUSD:          u.CostUSD + o.CostUSD,
		CostEstimated:    u.CostEstimated || o.CostEstimated,
	}
}

// Event is one thing that happened in a run. `--json` prints each as one
// JSON object per line, and the same objects feed the live view, the board
// and the journal, so the field names are a contract scripts rely on.
type Event struct {
	Time    time.Time `json:"time"`
	Run     string    `json:"run"`
	Type    string    `json:"type"`
	Item    string    `json:"item,omitempty"`
	Stage   string    `json:"stage,omitempty"`
	Phase   string    `json:"phase,omitempty"`
	Role    string    `json:"role,omitempty"`
	Step    string    `json:"step,omitempty"`
	Runner  string    `json:"runner,omitempty"`
	Model   string    `json:"model,omitempty"`
	Usage   *Usage    `json:"usage,omitempty"`
	Error   string    `json:"error,omitempty"`
	Message string    `json:"message,omitempty"`
	// Answer is a QUICK item's answer, on its answer step's stepCompleted:
	// the item's result.
	Answer string `json:"answer,omitempty"`
}

// Sink receives events. Implementations must not block for long: the bus
// calls them synchronously, in order, so every sink sees the same sequence.
type Sink interface {
	Handle(Event)
}

// SinkFunc adapts a function to a Sink.
type SinkFunc func(Event)

// Handle calls f(e).
func (f SinkFunc) Handle(e Event) { f(e) }

// Bus fans events out to its sinks in publication order.
type Bus struct {
	mu    sync.Mutex
	sinks []Sink
	now   func() time.Time
	mask  func(string) string // nil: none; see SetMask
}

// NewBus returns a bus that stamps events with now (time.Now when nil).
func NewBus(now func() time.Time, sinks ...Sink) *Bus {
	if now == nil {
		now = time.Now
	}
	return &Bus{sinks: sinks, now: now}
}

// SetMask has fn mask every event's free text (its message and error)
// before any sink sees it, those subscribed later included (nil: none).
// The text comes from agents and servers and may carry a secret of
// cadre's own; no sink (the journal, --json, the live view, a webhook, a
// replica's batch) is then trusted to mask it.
func (b *Bus) SetMask(fn func(string) string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.mask = fn
}

// Subscribe adds a sink.
func (b *Bus) Subscribe(s Sink) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.sinks = append(b.sinks, s)
}

// Publish stamps e (when its time is unset), masks it, and hands it to
// every sink.
func (b *Bus) Publish(e Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if e.Time.IsZero() {
		e.Time = b.now().UTC()
	}
	if b.mask != nil {
		e.Message, e.Error = b.mask(e.Message), b.mask(e.Error)
	}
	for _, s := range b.sinks {
		s.Handle(e)
	}
}
