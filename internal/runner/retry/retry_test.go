package retry_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/runner"
	"github.com/cadre-dev/cadre/internal/runner/retry"
)

// reply is one scripted answer of the fake backend.
type reply struct {
	res runner.Result
	err error
}

// fake answers each Run with the next scripted reply and records the
// invocations it saw.
type fake struct {
	replies []reply
	seen    []runner.Invocation
}

func (f *fake) Name() string              { return "fake" }
func (f *fake) Capabilities() runner.Caps { return runner.Caps{ModelChoice: true} }
func (f *fake) Run(ctx context.Context, inv runner.Invocation) (runner.Result, error) {
	f.seen = append(f.seen, inv)
	if len(f.seen) > len(f.replies) {
		return runner.Result{}, errors.New("fake: called more often than scripted")
	}
	r := f.replies[len(f.seen)-1]
	return r.res, r.err
}

func limited(after time.Duration) reply {
	return reply{err: &runner.Error{Kind: runner.KindRateLimit, Runner: "fake", RetryAfter: after, Msg: "HTTP 429"}}
}

func failed(k runner.Kind) reply {
	return reply{err: &runner.Error{Kind: k, Runner: "fake", Msg: "no"}}
}

var ok = reply{res: runner.Result{Output: "done", Usage: event.Usage{InputTokens: 10, OutputTokens: 5}}}

// recorder stands in for the clock: it records every pause and never sleeps.
type recorder struct{ waits []time.Duration }

func (r *recorder) sleep(ctx context.Context, d time.Duration) error {
	r.waits = append(r.waits, d)
	return nil
}

func identity(d time.Duration) time.Duration { return d }

func TestWrap(t *testing.T) {
	wrapped := func(r reply) reply {
		r.err = fmt.Errorf("step: %w", r.err)
		return r
	}
	tests := []struct {
		name      string
		policy    retry.Policy
		replies   []reply
		wantCalls int
		wantWaits []time.Duration
		wantKind  runner.Kind // "" means success
		wantMsg   string      // in the error
	}{
		{name: "success at once", replies: []reply{ok}, wantCalls: 1},
		{name: "rate limit then success", replies: []reply{limited(0), ok},
			wantCalls: 2, wantWaits: []time.Duration{time.Second}},
		{name: "wrapped rate limit is recognised", replies: []reply{wrapped(limited(0)), ok},
			wantCalls: 2, wantWaits: []time.Duration{time.Second}},
		{name: "retry-after longer than backoff wins", replies: []reply{limited(10 * time.Second), ok},
			wantCalls: 2, wantWaits: []time.Duration{10 * time.Second}},
		{name: "retry-after shorter than backoff", replies: []reply{limited(time.Millisecond), ok},
			wantCalls: 2, wantWaits: []time.Duration{time.Second}},
		{name: "exponential and capped", policy: retry.Policy{Attempts: 5, Max: 3 * time.Second},
			replies:   []reply{limited(0), limited(0), limited(0), limited(0), ok},
			wantCalls: 5, wantWaits: []time.Duration{time.Second, 2 * time.Second, 3 * time.Second, 3 * time.Second}},
		{name: "gives up after attempts", policy: retry.Policy{Attempts: 3},
			replies:   []reply{limited(0), limited(0), limited(0)},
			wantCalls: 3, wantWaits: []time.Duration{time.Second, 2 * time.Second},
			wantKind: runner.KindRateLimit, wantMsg: "gave up after 3 attempts"},
		{name: "wait over the cap is not retried", policy: retry.Policy{Max: time.Minute},
			replies:   []reply{limited(time.Hour)},
			wantCalls: 1, wantKind: runner.KindRateLimit, wantMsg: "over the 1m0s cap"},
		{name: "auth is not retried", replies: []reply{failed(runner.KindAuth)}, wantCalls: 1, wantKind: runner.KindAuth},
		{name: "quota is not retried", replies: []reply{failed(runner.KindQuota)}, wantCalls: 1, wantKind: runner.KindQuota},
		{name: "turn limit is not retried", replies: []reply{failed(runner.KindTurnLimit)}, wantCalls: 1, wantKind: runner.KindTurnLimit},
		{name: "backend error is not retried", replies: []reply{failed(runner.KindBackend)}, wantCalls: 1, wantKind: runner.KindBackend},
		{name: "refused connection then success", replies: []reply{failed(runner.KindUnavailable), failed(runner.KindUnavailable), ok},
			wantCalls: 3, wantWaits: []time.Duration{time.Second, 2 * time.Second}},
		{name: "refused connection gives up after attempts", policy: retry.Policy{Attempts: 2},
			replies:   []reply{failed(runner.KindUnavailable), failed(runner.KindUnavailable)},
			wantCalls: 2, wantWaits: []time.Duration{time.Second}, wantKind: runner.KindUnavailable, wantMsg: "gave up after 2 attempts"},
		{name: "unclassified error is not retried", replies: []reply{{err: errors.New("broken pipe")}}, wantCalls: 1, wantMsg: "broken pipe"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fake{replies: tt.replies}
			rec := &recorder{}
			p := tt.policy
			p.Base, p.Jitter, p.Sleep = time.Second, identity, rec.sleep
			_, err := retry.Wrap(f, p).Run(t.Context(), runner.Invocation{Role: "planner"})
			if len(f.seen) != tt.wantCalls {
				t.Errorf("backend called %d times, want %d", len(f.seen), tt.wantCalls)
			}
			if !slices.Equal(rec.waits, tt.wantWaits) {
				t.Errorf("waits %v, want %v", rec.waits, tt.wantWaits)
			}
			switch {
			case tt.wantKind == "" && tt.wantMsg == "":
				if err != nil {
					t.Fatalf("Run: %v", err)
				}
			case err == nil:
				t.Fatalf("Run succeeded, want an error")
			default:
				if got := runner.KindOf(err); got != tt.wantKind {
					t.Errorf("error kind %q, want %q (%v)", got, tt.wantKind, err)
				}
				if !strings.Contains(err.Error(), tt.wantMsg) {
					t.Errorf("error %q lacks %q", err, tt.wantMsg)
				}
			}
		})
	}
}

func TestWrapAddsUpUsageAndResumesSession(t *testing.T) {
	first := limited(0)
	first.res = runner.Result{SessionID: "sess-1", Usage: event.Usage{InputTokens: 100, CostUSD: 0.5}}
	f := &fake{replies: []reply{first, {res: runner.Result{Output: "done", SessionID: "sess-1",
		Usage: event.Usage{InputTokens: 7, OutputTokens: 3, CostUSD: 0.25, CostEstimated: true}}}}}
	var notes []string
	inv := runner.Invocation{Role: "planner", Progress: func(s string) { notes = append(notes, s) }}
	res, err := retry.Wrap(f, retry.Policy{Jitter: identity, Sleep: (&recorder{}).sleep}).Run(t.Context(), inv)
	if err != nil {
		t.Fatal(err)
	}
	want := event.Usage{InputTokens: 107, OutputTokens: 3, CostUSD: 0.75, CostEstimated: true}
	if res.Usage != want || res.Output != "done" {
		t.Errorf("result %+v, want output done and usage %+v", res, want)
	}
	if f.seen[0].Session != "" || f.seen[1].Session != "sess-1" {
		t.Errorf("sessions %q, %q; want the retry to continue sess-1", f.seen[0].Session, f.seen[1].Session)
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "attempt 2 of 4") {
		t.Errorf("progress notes %q, want one saying attempt 2 of 4", notes)
	}
}

func TestWrapStopsWaitingWhenCanceled(t *testing.T) {
	f := &fake{replies: []reply{limited(0), ok}}
	ctx, cancel := context.WithCancel(t.Context())
	sleep := func(ctx context.Context, d time.Duration) error {
		cancel() // the run is stopped while the step waits
		<-ctx.Done()
		return ctx.Err()
	}
	_, err := retry.Wrap(f, retry.Policy{Sleep: sleep}).Run(ctx, runner.Invocation{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want one wrapping context.Canceled", err)
	}
	if len(f.seen) != 1 {
		t.Errorf("backend called %d times after cancel, want 1", len(f.seen))
	}
}

func TestDefaultSleepHonoursContext(t *testing.T) {
	f := &fake{replies: []reply{limited(0), ok}}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	// The default timer would wait minutes; a done ctx must end it at once.
	_, err := retry.Wrap(f, retry.Policy{Base: time.Hour, Max: time.Hour}).Run(ctx, runner.Invocation{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want one wrapping context.Canceled", err)
	}
}

func TestDefaultJitterStaysWithinBounds(t *testing.T) {
	for _, base := range []time.Duration{time.Millisecond, time.Second, 90 * time.Second} {
		f := &fake{replies: []reply{limited(0), ok}}
		rec := &recorder{}
		if _, err := retry.Wrap(f, retry.Policy{Base: base, Sleep: rec.sleep}).Run(t.Context(), runner.Invocation{}); err != nil {
			t.Fatal(err)
		}
		if w := rec.waits[0]; w < base/2 || w > base {
			t.Errorf("base %s: waited %s, want within [%s, %s]", base, w, base/2, base)
		}
	}
}

func TestFactory(t *testing.T) {
	f := &fake{replies: []reply{limited(0), ok}}
	fac := retry.Factory(func(s runner.Settings) (runner.Runner, error) {
		if s.Name == "bad" {
			return nil, errors.New("runners.bad.url is not a URL")
		}
		return f, nil
	}, retry.Policy{Jitter: identity, Sleep: (&recorder{}).sleep})
	if _, err := fac(runner.Settings{Name: "bad"}); err == nil || !strings.Contains(err.Error(), "runners.bad.url") {
		t.Errorf("factory error %v, want the inner factory's", err)
	}
	r, err := fac(runner.Settings{Name: "good"})
	if err != nil {
		t.Fatal(err)
	}
	if r.Name() != "fake" || !r.Capabilities().ModelChoice {
		t.Errorf("wrapped runner is %q %+v, want the inner runner's name and caps", r.Name(), r.Capabilities())
	}
	if _, err := r.Run(t.Context(), runner.Invocation{}); err != nil || len(f.seen) != 2 {
		t.Errorf("Run: %v after %d calls, want success after a retry", err, len(f.seen))
	}
}

func TestAfter(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		headers map[string]string
		want    time.Duration
	}{
		{"none", nil, 0},
		{"seconds", map[string]string{"Retry-After": "30"}, 30 * time.Second},
		{"fractional seconds", map[string]string{"Retry-After": "1.5"}, 1500 * time.Millisecond},
		{"http date", map[string]string{"Retry-After": now.Add(90 * time.Second).Format(http.TimeFormat)}, 90 * time.Second},
		{"date in the past", map[string]string{"Retry-After": now.Add(-time.Minute).Format(http.TimeFormat)}, 0},
		{"milliseconds win", map[string]string{"Retry-After-Ms": "250", "Retry-After": "3"}, 250 * time.Millisecond},
		{"zero milliseconds fall back", map[string]string{"Retry-After-Ms": "0", "Retry-After": "3"}, 3 * time.Second},
		{"negative", map[string]string{"Retry-After": "-5"}, 0},
		{"garbage", map[string]string{"Retry-After": "soon"}, 0},
		{"huge is clamped, not negative", map[string]string{"Retry-After": "1e300"}, time.Duration(1<<63 - 1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tt.headers {
				h.Set(k, v)
			}
			if got := retry.After(h, now); got != tt.want {
				t.Errorf("After = %s, want %s", got, tt.want)
			}
		})
	}
}
