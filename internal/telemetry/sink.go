package telemetry

import (
	"context"
	"regexp"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/cadre-dev/cadre/internal/event"
)

// reactionQuiet is how long a reaction's span waits, its steps all ended,
// for another of its steps before it ends: a reaction's push and replies
// publish no event, so its last step's end is the last that is known of it.
const reactionQuiet = 10 * time.Second

// sink turns events into spans and metric points. The bus calls Handle
// in order; the reactions' timers call in from their own goroutines.
type sink struct {
	tracer trace.Tracer
	m      *meters // nil when metrics are off
	quiet  time.Duration

	mu     sync.Mutex
	runs   map[string]*runSpans
	closed bool
}

// runSpans are a run's spans open in this process.
type runSpans struct {
	span    trace.Span // nil: the run started in another process
	resumed bool       // resumed here: its items' spans are this process's own
	items   map[string]*itemSpans
}

// itemSpans are an item's spans open in this process.
type itemSpans struct {
	span      trace.Span // nil: the item started in another process
	status    string     // the status it ends with when the process does
	steps     map[string]*stepSpan
	reactions map[string]*reaction
	// heard is when the latest delivery about the item came in: the
	// next reaction's delay is counted from it.
	heard time.Time
}

// reaction is a follow reaction's span: cadre watch's answer to a failed
// check, a review or a conflict, whose steps are its children.
type reaction struct {
	span        trace.Span
	kind        string
	start, last time.Time
	open        int // its steps not ended
	timer       *time.Timer
}

func newSink(tp *sdktrace.TracerProvider, mp *sdkmetric.MeterProvider) (*sink, error) {
	s := &sink{quiet: reactionQuiet, runs: map[string]*runSpans{}}
	if tp != nil {
		s.tracer = tp.Tracer(scope)
	} else {
		s.tracer = noop.NewTracerProvider().Tracer(scope)
	}
	if mp != nil {
		m, err := newMeters(mp.Meter(scope))
		if err != nil {
			return nil, err
		}
		s.m = m
	}
	return s, nil
}

// Handle turns e into spans begun or ended and metric points.
func (s *sink) Handle(e event.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || e.Run == "" {
		return
	}
	switch e.Type {
	case event.RunStarted:
		s.runStarted(e)
	case event.RunCompleted:
		s.runCompleted(e)
	case event.TaskStarted:
		s.itemStarted(e)
	case event.TaskCompleted:
		s.itemEnded(e, "completed")
	case event.TaskFailed:
		s.itemEnded(e, "failed")
	case event.RunnerStopped:
		s.itemEnded(e, "stopped")
	case event.ItemPaused:
		if it := s.items(e.Run)[e.Item]; it != nil {
			it.status = "paused"
		}
	case event.WebhookReceived:
		if e.Item != "" {
			s.item(e.Run, e.Item).heard = e.Time
		}
	case event.StepStarted:
		s.stepStarted(e)
	case event.StepCompleted, event.StepFailed:
		s.stepEnded(e)
	}
}

func (s *sink) run(id string) *runSpans {
	r := s.runs[id]
	if r == nil {
		r = &runSpans{items: map[string]*itemSpans{}}
		s.runs[id] = r
	}
	return r
}

func (s *sink) items(run string) map[string]*itemSpans {
	if r := s.runs[run]; r != nil {
		return r.items
	}
	return nil
}

func (s *sink) runStarted(e event.Event) {
	r := s.run(e.Run)
	if r.span != nil {
		return
	}
	// A resumed run's span is this process's part of the run, a child of
	// the span of the process that started it.
	r.resumed = e.Message == "resumed"
	ctx := withIDs(context.Background(), RunTraceID(e.Run), runSpanID(e.Run))
	if r.resumed {
		ctx = RunContext(context.Background(), e.Run)
	}
	_, r.span = s.tracer.Start(ctx, "run", trace.WithTimestamp(e.Time), trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(attribute.String("cadre.run", e.Run), attribute.Bool("cadre.resumed", r.resumed)))
}

func (s *sink) runCompleted(e event.Event) {
	r := s.runs[e.Run]
	if r == nil {
		return
	}
	for id := range r.items {
		s.endItem(r, id, "unfinished", e.Time)
	}
	if r.span != nil {
		status := word(e.Message)
		r.span.SetAttributes(attribute.String("cadre.status", status))
		r.span.SetAttributes(usageAttrs(e.Usage)...)
		if e.Error != "" || status == "failed" {
			r.span.SetStatus(codes.Error, "run "+status)
		}
		r.span.End(trace.WithTimestamp(e.Time))
	}
	delete(s.runs, e.Run)
}

// itemParent is the context an item's span starts in: under the run's
// span, and with the item's own span id unless the run was resumed here
// (the id is then the span's of the process that started the item).
func (s *sink) itemParent(r *runSpans, run, item string) context.Context {
	ctx := RunContext(context.Background(), run)
	if r.span != nil {
		ctx = trace.ContextWithSpan(context.Background(), r.span)
	}
	if r.resumed {
		return ctx
	}
	return withIDs(ctx, RunTraceID(run), itemSpanID(run, item))
}

func (s *sink) itemStarted(e event.Event) {
	if e.Item == "" {
		return
	}
	r := s.run(e.Run)
	it := r.items[e.Item]
	if it == nil {
		it = &itemSpans{steps: map[string]*stepSpan{}, reactions: map[string]*reaction{}}
		r.items[e.Item] = it
	}
	if it.span != nil {
		return
	}
	attrs := []attribute.KeyValue{attribute.String("cadre.run", e.Run), attribute.String("cadre.item", e.Item)}
	if e.Stage != "" {
		attrs = append(attrs, attribute.String("cadre.stage", word(e.Stage)))
	}
	_, it.span = s.tracer.Start(s.itemParent(r, e.Run, e.Item), "item", trace.WithTimestamp(e.Time), trace.WithAttributes(attrs...))
	it.status = "unfinished"
}

func (s *sink) itemEnded(e event.Event, status string) {
	if r := s.runs[e.Run]; r != nil {
		s.endItem(r, e.Item, status, e.Time)
	}
}

// endItem ends item's span and those of its steps and reactions still
// open, as unfinished.
func (s *sink) endItem(r *runSpans, item, status string, at time.Time) {
	it := r.items[item]
	if it == nil {
		return
	}
	for id, st := range it.steps {
		st.span.SetAttributes(attribute.String("cadre.status", "unfinished"))
		st.span.End(trace.WithTimestamp(at))
		delete(it.steps, id)
	}
	for id := range it.reactions {
		s.endReaction(it, id)
	}
	if it.span != nil {
		it.span.SetAttributes(attribute.String("cadre.status", status))
		if status == "failed" {
			it.span.SetStatus(codes.Error, "item failed")
		}
		it.span.End(trace.WithTimestamp(at))
	}
	delete(r.items, item)
}

// item is the item's spans in this process, made (without a span of its
// own) for an item started in another.
func (s *sink) item(run, item string) *itemSpans {
	r := s.run(run)
	it := r.items[item]
	if it == nil {
		it = &itemSpans{steps: map[string]*stepSpan{}, reactions: map[string]*reaction{}}
		r.items[item] = it
	}
	return it
}

// itemContext is what the item's steps and reactions are children of:
// its span here, else its span in the process that started it.
func itemContext(it *itemSpans, run, item string) context.Context {
	if it.span != nil {
		return trace.ContextWithSpan(context.Background(), it.span)
	}
	return trace.ContextWithRemoteSpanContext(context.Background(), remote(RunTraceID(run), itemSpanID(run, item)))
}

// close ends every span still open, as unfinished or paused: the
// process ends, and a span never ended is never exported.
func (s *sink) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	for id, r := range s.runs {
		for item, it := range r.items {
			s.endItem(r, item, it.status, now)
		}
		if r.span != nil {
			r.span.SetAttributes(attribute.String("cadre.status", "unfinished"))
			r.span.End(trace.WithTimestamp(now))
		}
		delete(s.runs, id)
	}
	s.closed = true
}

// wordRE is what an exported status or stage may be: a word from cadre's
// own small vocabulary, never free text.
var wordRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_.-]{0,31}$`)

// word is s when it is a status word, else "other".
func word(s string) string {
	if wordRE.MatchString(s) {
		return strings.ToLower(s)
	}
	if s == "" {
		return "none"
	}
	return "other"
}
