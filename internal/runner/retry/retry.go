// Package retry wraps a runner so that a step the backend turned away for a
// rate limit (HTTP 429, 529, "overloaded") or by refusing the connection
// is tried again after a pause, instead of failing the step or hammering
// the limit. Only errors of kind runner.KindRateLimit and
// runner.KindUnavailable are retried: an auth or quota error will not clear
// by waiting, and any other failure is the engine's to judge.
package retry

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/cadre-dev/cadre/internal/runner"
)

// Defaults for the zero values of Policy.
const (
	DefaultAttempts = 4
	DefaultBase     = 2 * time.Second
	DefaultMax      = 2 * time.Minute
)

// Policy bounds the retries of one step.
type Policy struct {
	// Attempts is how many times the step is tried in all, the first
	// included; 0 or less means DefaultAttempts.
	Attempts int
	// Base is the pause before the first retry, doubled before each next
	// one; 0 or less means DefaultBase.
	Base time.Duration
	// Max caps any one pause; 0 or less means DefaultMax. When the backend
	// asks for a longer wait than Max (a daily limit, say), the step is not
	// retried: trying earlier than the backend allows only fails again.
	Max time.Duration
	// Jitter turns a backoff pause into the pause taken, so that parallel
	// steps do not retry in lockstep; nil means a random pause in [d/2, d].
	// A backend's own retry-after is a floor that jitter never shortens.
	Jitter func(d time.Duration) time.Duration
	// Sleep waits d or until ctx is done, returning ctx's error then; nil
	// means a timer.
	Sleep func(ctx context.Context, d time.Duration) error
}

func (p Policy) withDefaults() Policy {
	if p.Attempts <= 0 {
		p.Attempts = DefaultAttempts
	}
	if p.Base <= 0 {
		p.Base = DefaultBase
	}
	if p.Max <= 0 {
		p.Max = DefaultMax
	}
	if p.Jitter == nil {
		p.Jitter = halfJitter
	}
	if p.Sleep == nil {
		p.Sleep = sleep
	}
	return p
}

// halfJitter picks a pause in [d/2, d]: spread out, yet never much shorter
// than the backoff asked for.
func halfJitter(d time.Duration) time.Duration {
	if d <= 1 {
		return d
	}
	return d/2 + rand.N(d-d/2+1)
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Wrap returns r with rate-limited and refused steps retried under p. The wrapped runner
// keeps r's name and capabilities. Its Result adds up the usage of every
// attempt (a rate limit may strike after tokens were spent), and a retry
// continues the backend session the failed attempt reported, if any.
func Wrap(r runner.Runner, p Policy) runner.Runner {
	return &retrier{r: r, p: p.withDefaults()}
}

// Factory returns a factory whose runners are wrapped with Wrap, for
// registering a runner type with retries:
//
//	reg.Register("anthropic", retry.Factory(anthropic.New, retry.Policy{}))
func Factory(f runner.Factory, p Policy) runner.Factory {
	return func(s runner.Settings) (runner.Runner, error) {
		r, err := f(s)
		if err != nil {
			return nil, err
		}
		return Wrap(r, p), nil
	}
}

type retrier struct {
	r runner.Runner
	p Policy
}

func (t *retrier) Name() string              { return t.r.Name() }
func (t *retrier) Capabilities() runner.Caps { return t.r.Capabilities() }

// Locate is the wrapped runner's (runner.Locator), when it has one.
func (t *retrier) Locate() error {
	if l, ok := t.r.(runner.Locator); ok {
		return l.Locate()
	}
	return nil
}

// Run runs the step, and runs it again after a pause while the backend
// answers with a rate limit or refuses the connection, and attempts remain.
func (t *retrier) Run(ctx context.Context, inv runner.Invocation) (runner.Result, error) {
	var spent runner.Result
	backoff := t.p.Base
	for n := 1; ; n++ {
		res, err := t.r.Run(ctx, inv)
		res.Usage = spent.Usage.Add(res.Usage)
		spent = res
		why := waitFor[runner.KindOf(err)]
		if err == nil || why == "" {
			return res, err
		}
		if n >= t.p.Attempts {
			return res, fmt.Errorf("%w (gave up after %d attempts)", err, n)
		}
		asked := retryAfter(err)
		if asked > t.p.Max {
			return res, fmt.Errorf("%w (not retried: the wait asked for is over the %s cap)", err, t.p.Max)
		}
		wait := max(t.p.Jitter(backoff), asked)
		wait = min(wait, t.p.Max)
		backoff = min(2*backoff, t.p.Max)
		if inv.Progress != nil {
			inv.Progress(fmt.Sprintf("%s; retrying in %s (attempt %d of %d)", why, wait.Round(time.Millisecond), n+1, t.p.Attempts))
		}
		if err := t.p.Sleep(ctx, wait); err != nil {
			return res, fmt.Errorf("runner %s: waiting to retry (%s): %w", t.r.Name(), why, err)
		}
		if res.SessionID != "" {
			inv.Session = res.SessionID
		}
	}
}

// waitFor says, for each kind of error a pause may clear, what happened.
var waitFor = map[runner.Kind]string{
	runner.KindRateLimit:   "rate limited",
	runner.KindUnavailable: "connection refused",
}

func retryAfter(err error) time.Duration {
	var re *runner.Error
	if errors.As(err, &re) {
		return re.RetryAfter
	}
	return 0
}

// After reads how long a server asked its client to wait before trying
// again: the retry-after-ms header (milliseconds), else retry-after in
// seconds or as an HTTP date (measured from now). It returns 0 when the
// response says nothing usable, and never a negative wait.
func After(h http.Header, now time.Time) time.Duration {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && duration(ms, time.Millisecond) > 0 {
			return duration(ms, time.Millisecond)
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		return duration(s, time.Second)
	}
	if at, err := http.ParseTime(v); err == nil && at.After(now) {
		return at.Sub(now)
	}
	return 0
}

// duration converts n units to a Duration, clamped to [0, the largest
// Duration] so a hostile or garbled header cannot overflow it.
func duration(n float64, unit time.Duration) time.Duration {
	d := n * float64(unit)
	switch {
	case math.IsNaN(d) || d <= 0:
		return 0
	case d >= math.MaxInt64:
		return math.MaxInt64
	}
	return time.Duration(d)
}
