package telemetry

import (
	"context"
	"crypto/sha256"
	"math/rand/v2"

	"go.opentelemetry.io/otel/trace"
)

// A run's trace id, its run span's id and its items' span ids are derived
// from the run and item ids, so that every process working on a run (the
// one that started it, cadre resume, cadre watch, Temporal workers on
// other machines) puts its spans in the run's one trace, under the same
// run and item spans, with nothing passed between them.

// RunTraceID is run's trace id.
func RunTraceID(run string) trace.TraceID {
	sum := sha256.Sum256([]byte("cadre run\x00" + run))
	return trace.TraceID(sum[:16])
}

func runSpanID(run string) trace.SpanID {
	sum := sha256.Sum256([]byte("cadre run\x00" + run))
	return trace.SpanID(sum[16:24])
}

func itemSpanID(run, item string) trace.SpanID {
	sum := sha256.Sum256([]byte("cadre item\x00" + run + "\x00" + item))
	return trace.SpanID(sum[:8])
}

// remote is the span context of a span another process may have made.
func remote(tid trace.TraceID, sid trace.SpanID) trace.SpanContext {
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, Remote: true})
}

// RunContext is ctx under run's run span: what a span started in it (a
// Temporal workflow's start) is a child of.
func RunContext(ctx context.Context, run string) context.Context {
	return trace.ContextWithRemoteSpanContext(ctx, remote(RunTraceID(run), runSpanID(run)))
}

// fixedKey carries the ids the next span started in a context is to
// have.
type fixedKey struct{}

type fixed struct {
	tid trace.TraceID
	sid trace.SpanID
}

func withIDs(ctx context.Context, tid trace.TraceID, sid trace.SpanID) context.Context {
	return context.WithValue(ctx, fixedKey{}, fixed{tid, sid})
}

// ids is the tracer provider's id generator: the ids a context fixes
// (withIDs), else random ones.
type ids struct{}

func (ids) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	if f, ok := ctx.Value(fixedKey{}).(fixed); ok {
		return f.tid, f.sid
	}
	var tid trace.TraceID
	for !tid.IsValid() {
		putRandom(tid[:])
	}
	return tid, randomSpanID()
}

func (ids) NewSpanID(ctx context.Context, _ trace.TraceID) trace.SpanID {
	if f, ok := ctx.Value(fixedKey{}).(fixed); ok {
		return f.sid
	}
	return randomSpanID()
}

func randomSpanID() trace.SpanID {
	var sid trace.SpanID
	for !sid.IsValid() {
		putRandom(sid[:])
	}
	return sid
}

func putRandom(b []byte) {
	for i := range b {
		b[i] = byte(rand.Uint32())
	}
}
