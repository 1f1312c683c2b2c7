package telemetry

import (
	"context"
	"fmt"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/cadre-dev/cadre/internal/event"
)

// stepKind is what a step is: "agent" for a role's, else its action's
// kind (commit, verify, publish…), which the action's events carry as
// their message, provided it is one word.
func stepKind(e event.Event) string {
	if e.Role != "" || e.Runner != "" {
		return "agent"
	}
	return word(e.Message)
}

func (s *sink) stepStarted(e event.Event) {
	if e.Item == "" || e.Step == "" {
		return
	}
	it := s.item(e.Run, e.Item)
	if old := it.steps[e.Step]; old != nil {
		// Started again (a retry): the first try ends here.
		old.span.SetAttributes(attribute.String("cadre.status", "retried"))
		old.span.End(trace.WithTimestamp(e.Time))
	}
	kind := stepKind(e)
	ctx := itemContext(it, e.Run, e.Item)
	if id, kind := reactionOf(e.Item, e.Step); id != "" {
		ctx = s.reactionStarted(it, e, id, kind)
	}
	attrs := []attribute.KeyValue{
		attribute.String("cadre.run", e.Run), attribute.String("cadre.item", e.Item), attribute.String("cadre.step", e.Step),
		attribute.String("cadre.kind", kind),
	}
	for _, a := range []struct{ k, v string }{{"cadre.role", e.Role}, {"cadre.runner", e.Runner}, {"cadre.model", e.Model}, {"cadre.phase", e.Phase}} {
		if a.v != "" {
			attrs = append(attrs, attribute.String(a.k, a.v))
		}
	}
	name := "step"
	if e.Role != "" {
		name = "step " + e.Role
	}
	_, sp := s.tracer.Start(ctx, name, trace.WithTimestamp(e.Time), trace.WithAttributes(attrs...))
	it.steps[e.Step] = &stepSpan{span: sp, kind: kind}
}

func (s *sink) stepEnded(e event.Event) {
	failed := e.Type == event.StepFailed
	status := "completed"
	if failed {
		status = "failed"
	}
	if e.Item == "" {
		s.count(e, stepKind(e), failed)
		return
	}
	it := s.item(e.Run, e.Item)
	st := it.steps[e.Step]
	if st == nil {
		// Started in another process: counted, with no span here.
		s.count(e, stepKind(e), failed)
	} else {
		// Its kind as its start said: an action's end carries no kind.
		s.count(e, st.kind, failed)
		st.span.SetAttributes(attribute.String("cadre.status", status))
		if e.Model != "" {
			st.span.SetAttributes(attribute.String("cadre.model", e.Model)) // as the backend reported it
		}
		st.span.SetAttributes(usageAttrs(e.Usage)...)
		if failed {
			st.span.SetStatus(codes.Error, "step failed")
		}
		st.span.End(trace.WithTimestamp(e.Time))
		delete(it.steps, e.Step)
	}
	if id, _ := reactionOf(e.Item, e.Step); id != "" {
		s.reactionStepEnded(it, e, id, failed)
	}
}

// stepSpan is a step's span open, and what kind of step it is.
type stepSpan struct {
	span trace.Span
	kind string
}

// usageAttrs are a step's or run's tokens and cost as span attributes.
func usageAttrs(u *event.Usage) []attribute.KeyValue {
	if u == nil {
		return nil
	}
	return []attribute.KeyValue{
		attribute.Int64("cadre.tokens.input", u.InputTokens), attribute.Int64("cadre.tokens.output", u.OutputTokens),
		attribute.Int64("cadre.tokens.cache_read", u.CacheReadTokens), attribute.Int64("cadre.tokens.cache_write", u.CacheWriteTokens),
		attribute.Float64("cadre.cost_usd", u.CostUSD), attribute.Bool("cadre.cost_estimated", u.CostEstimated),
	}
}

// reactionOf is the reaction a step of item belongs to, and its kind:
// cadre watch names a reaction's steps ITEM/follow/KIND#N/…, "" for a
// step of no reaction.
func reactionOf(item, step string) (id, kind string) {
	rest, ok := strings.CutPrefix(step, item+"/follow/")
	if !ok {
		return "", ""
	}
	seg, _, nested := strings.Cut(rest, "/")
	kind, n, numbered := strings.Cut(seg, "#")
	if !nested || !numbered || kind == "" || n == "" {
		return "", ""
	}
	return item + "/follow/" + seg, kind
}

// reactionStarted is the context of a reaction's step: under the
// reaction's span, begun with its first step. A step of another reaction
// of the item ends the one before.
func (s *sink) reactionStarted(it *itemSpans, e event.Event, id, kind string) context.Context {
	r := it.reactions[id]
	if r == nil {
		for other := range it.reactions {
			s.endReaction(it, other)
		}
		r = &reaction{kind: kind, start: e.Time, last: e.Time}
		if !it.heard.IsZero() && s.m != nil {
			s.m.delay.Record(context.Background(), e.Time.Sub(it.heard).Seconds(),
				metric.WithAttributes(attribute.String("cadre.reaction.kind", word(kind))))
		}
		it.heard = time.Time{}
		_, r.span = s.tracer.Start(itemContext(it, e.Run, e.Item), "reaction", trace.WithTimestamp(e.Time),
			trace.WithAttributes(attribute.String("cadre.run", e.Run), attribute.String("cadre.item", e.Item),
				attribute.String("cadre.reaction", id), attribute.String("cadre.reaction.kind", word(kind))))
		it.reactions[id] = r
	}
	if r.timer != nil {
		r.timer.Stop()
		r.timer = nil
	}
	r.open++
	return trace.ContextWithSpan(context.Background(), r.span)
}

// reactionStepEnded notes a reaction's step ended; the reaction ends
// when none of its steps follows within the quiet time.
func (s *sink) reactionStepEnded(it *itemSpans, e event.Event, id string, failed bool) {
	r := it.reactions[id]
	if r == nil {
		return
	}
	r.open = max(0, r.open-1)
	r.last = e.Time
	if failed {
		r.span.SetStatus(codes.Error, "reaction step failed")
	}
	if r.open > 0 {
		return
	}
	r.timer = time.AfterFunc(s.quiet, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if it.reactions[id] == r && r.open == 0 {
			s.endReaction(it, id)
		}
	})
}

// endReaction ends a reaction's span at its last step's end, and records
// its duration.
func (s *sink) endReaction(it *itemSpans, id string) {
	r := it.reactions[id]
	if r == nil {
		return
	}
	if r.timer != nil {
		r.timer.Stop()
	}
	r.span.End(trace.WithTimestamp(r.last))
	delete(it.reactions, id)
	if s.m != nil {
		s.m.latency.Record(context.Background(), r.last.Sub(r.start).Seconds(),
			metric.WithAttributes(attribute.String("cadre.reaction.kind", word(r.kind))))
	}
}

// meters are cadre's metric instruments.
type meters struct {
	steps, tokens, failures metric.Int64Counter
	cost                    metric.Float64Counter
	latency, delay          metric.Float64Histogram
}

func newMeters(m metric.Meter) (*meters, error) {
	var out meters
	var err [6]error
	out.steps, err[0] = m.Int64Counter("cadre.steps", metric.WithUnit("{step}"), metric.WithDescription("steps ended, by role and runner"))
	out.tokens, err[1] = m.Int64Counter("cadre.tokens", metric.WithUnit("{token}"), metric.WithDescription("tokens used, by role, runner and direction"))
	out.failures, err[2] = m.Int64Counter("cadre.failures", metric.WithUnit("{step}"), metric.WithDescription("steps failed, by role and runner"))
	out.cost, err[3] = m.Float64Counter("cadre.cost_usd", metric.WithUnit("{USD}"), metric.WithDescription("cost in US dollars, by role and runner"))
	out.latency, err[4] = m.Float64Histogram("cadre.reaction.latency", metric.WithUnit("s"),
		metric.WithDescription("a cadre watch reaction's duration: its first step's start to its last step's end"))
	out.delay, err[5] = m.Float64Histogram("cadre.reaction.delay", metric.WithUnit("s"),
		metric.WithDescription("a cadre watch --listen reaction's wait: the item's latest webhook delivery to the reaction's first step"))
	for _, e := range err {
		if e != nil {
			return nil, fmt.Errorf("telemetry metrics: %w", e)
		}
	}
	return &out, nil
}

// count adds an ended step to the counters.
func (s *sink) count(e event.Event, kind string, failed bool) {
	if s.m == nil {
		return
	}
	ctx := context.Background()
	by := []attribute.KeyValue{attribute.String("cadre.role", e.Role), attribute.String("cadre.runner", e.Runner), attribute.String("cadre.kind", kind)}
	s.m.steps.Add(ctx, 1, metric.WithAttributes(by...))
	if failed {
		s.m.failures.Add(ctx, 1, metric.WithAttributes(by...))
	}
	if u := e.Usage; u != nil {
		for _, d := range []struct {
			dir string
			n   int64
		}{{"input", u.InputTokens}, {"output", u.OutputTokens}, {"cache_read", u.CacheReadTokens}, {"cache_write", u.CacheWriteTokens}} {
			if d.n != 0 {
				s.m.tokens.Add(ctx, d.n, metric.WithAttributes(append(by[:3:3], attribute.String("cadre.direction", d.dir))...))
			}
		}
		s.m.cost.Add(ctx, u.CostUSD, metric.WithAttributes(by...))
	}
}
