package gitlab

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"github.com/cadre-dev/cadre/internal/answers"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// wire is the http.RoundTripper under client-go. It does, for every call,
// what GitLab asks of a client that polls many items for hours:
//
//   - a GET asked before is asked on condition (If-None-Match), and a 304
//     is handed up as the 200 kept, so client-go decodes it as ever;
//   - a 429 is waited out (Retry-After, else RateLimit-Reset) and sent
//     again, a bounded number of times, no wait longer than maxWait; a
//     spent budget (RateLimit-Remaining: 0) holds every call back until
//     it resets;
//   - writes go one at a time (GitLab asks for serial writes), spaced by
//     writeGap while the budget is unknown or low;
//   - a read that failed on the network or with a 5xx is sent again; a
//     write is not: it may have been carried out, and the callers look
//     again by its key instead.
type wire struct {
	next     http.RoundTripper
	timeout  time.Duration // one attempt, its answer read
	maxWait  time.Duration
	retries  int
	writeGap time.Duration
	now      func() time.Time
	sleep    func(ctx context.Context, d time.Duration) error

	answers answers.Cache // the latest answer to each GET, for conditional requests
	writes  chan struct{} // holds the one write in flight

	charged, notModified atomic.Int64

	mu           sync.Mutex // guards the fields below
	blockedUntil time.Time  // send nothing before: a rate limit is in force
	budget       budget     // the quota the last answer reported
	lastWrite    time.Time  // when the last write began
}

func newWire(next http.RoundTripper, writeGap time.Duration) *wire {
	return &wire{next: next, timeout: DefaultTimeout, maxWait: DefaultMaxWait, retries: DefaultRetries,
		writeGap: writeGap, now: time.Now, sleep: sleep, writes: make(chan struct{}, 1)}
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func isWrite(method string) bool { return method != http.MethodGet && method != http.MethodHead }

// RoundTrip sends req as the comment on wire says.
func (w *wire) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	write := isWrite(req.Method)
	if write {
		select {
		case w.writes <- struct{}{}:
			defer func() { <-w.writes }()
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	payload, err := readBody(req)
	if err != nil {
		return nil, err
	}
	key := req.URL.String()
	var prior *answers.Answer
	if req.Method == http.MethodGet {
		if k, ok := w.answers.Get(key); ok {
			prior = &k
		}
	}
	for attempt := 0; ; attempt++ {
		if err := w.admit(ctx, write); err != nil {
			return nil, err
		}
		resp, cancel, err := w.send(req, payload, prior)
		if err != nil {
			if ctx.Err() == nil && !write && attempt < w.retries && !untrusted(err) {
				if err := w.sleep(ctx, backoff(attempt)); err != nil {
					return nil, err
				}
				continue
			}
			return nil, err
		}
		w.noteBudget(resp.Header)
		again, wait := w.retry(resp, write, attempt)
		if !again {
			return w.answer(key, prior, resp, cancel)
		}
		w.charged.Add(1)
		drain(resp, cancel)
		if wait > 0 {
			if err := w.sleep(ctx, wait); err != nil {
				return nil, err
			}
		}
	}
}

// retry decides whether an answer is sent again, and after how long. A
// rate limit's wait holds every call back, not only this one: requests
// sent while limited only prolong the limit.
func (w *wire) retry(resp *http.Response, write bool, attempt int) (bool, time.Duration) {
	switch {
	case resp.StatusCode == http.StatusTooManyRequests:
		wait, ok := limitWait(resp.Header, w.now())
		if !ok {
			wait = backoff(attempt)
		}
		w.block(wait)
		return wait <= w.maxWait && attempt < w.retries, 0
	case resp.StatusCode >= 500 && !write && attempt < w.retries:
		return true, backoff(attempt)
	}
	return false, 0
}

// untrusted reports whether err is the server's certificate refused: asking
// again cannot change that.
func untrusted(err error) bool {
	var (
		verify    *tls.CertificateVerificationError
		authority x509.UnknownAuthorityError
		host      x509.HostnameError
		invalid   x509.CertificateInvalidError
	)
	return errors.As(err, &verify) || errors.As(err, &authority) || errors.As(err, &host) || errors.As(err, &invalid)
}

func backoff(attempt int) time.Duration { return time.Second << min(attempt, 5) }

// readBody takes a request's body in, so each attempt can send it anew.
func readBody(req *http.Request) ([]byte, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return nil, nil
	}
	defer req.Body.Close()
	return io.ReadAll(req.Body)
}

// send makes one attempt, bounded by the wire's timeout until its answer
// is read (cancel ends it).
func (w *wire) send(req *http.Request, payload []byte, prior *answers.Answer) (*http.Response, context.CancelFunc, error) {
	ctx, cancel := context.WithTimeout(req.Context(), w.timeout)
	r := req.Clone(ctx)
	if payload != nil {
		r.Body = io.NopCloser(bytes.NewReader(payload))
		r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(payload)), nil }
		r.ContentLength = int64(len(payload))
	}
	if prior != nil {
		r.Header.Set("If-None-Match", prior.ETag)
	}
	resp, err := w.next.RoundTrip(r)
	if err != nil {
		timedOut := req.Context().Err() == nil && errors.Is(ctx.Err(), context.DeadlineExceeded)
		cancel()
		if timedOut {
			return nil, nil, fmt.Errorf("no answer within %s", w.timeout)
		}
		return nil, nil, err
	}
	return resp, cancel, nil
}

func drain(resp *http.Response, cancel context.CancelFunc) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
	cancel()
}

// answer hands resp up: a 304 to a conditional GET as the 200 kept, a 200
// with an ETag kept for the next time.
func (w *wire) answer(key string, prior *answers.Answer, resp *http.Response, cancel context.CancelFunc) (*http.Response, error) {
	if resp.StatusCode == http.StatusNotModified && prior != nil {
		w.notModified.Add(1)
		drain(resp, cancel)
		hdr := resp.Header.Clone()
		for k, v := range prior.Header {
			if hdr.Get(k) == "" {
				hdr.Set(k, v)
			}
		}
		resp.StatusCode, resp.Status, resp.Header = http.StatusOK, "200 OK", hdr
		resp.Body, resp.ContentLength = io.NopCloser(bytes.NewReader(prior.Body)), int64(len(prior.Body))
		return resp, nil
	}
	w.charged.Add(1)
	if resp.Request == nil || resp.Request.Method != http.MethodGet || resp.StatusCode != http.StatusOK {
		resp.Body = &closer{ReadCloser: resp.Body, cancel: cancel}
		return resp, nil
	}
	etag := resp.Header.Get("ETag")
	if etag == "" {
		w.answers.Drop(key)
		resp.Body = &closer{ReadCloser: resp.Body, cancel: cancel}
		return resp, nil
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, answers.MaxAnswer+1))
	if err != nil {
		resp.Body.Close()
		cancel()
		return nil, err
	}
	if len(body) > answers.MaxAnswer {
		// Too big to keep (a long job log): handed up as it streams.
		w.answers.Drop(key)
		resp.Body = &closer{ReadCloser: struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(body), resp.Body), resp.Body}, cancel: cancel}
		return resp, nil
	}
	resp.Body.Close()
	cancel()
	w.answers.Put(answers.Answer{URL: key, ETag: etag, Header: keptHeader(resp.Header), Body: body})
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return resp, nil
}

// closer ends an attempt's context once its answer is read and closed.
type closer struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c *closer) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}

// pageHeaders are what client-go reads of an answer besides its body; a
// 304 need not repeat them.
var pageHeaders = []string{"Content-Type", "Link", "X-Total", "X-Total-Pages", "X-Per-Page", "X-Page", "X-Next-Page", "X-Prev-Page"}

func keptHeader(h http.Header) map[string]string {
	out := map[string]string{}
	for _, k := range pageHeaders {
		if v := h.Get(k); v != "" {
			out[k] = v
		}
	}
	return out
}

// budget is what the last answer said of the rate-limit quota.
type budget struct {
	known            bool
	remaining, limit int
}

// Writes are paced while fewer than a tenth of the limit (and fewer than
// lowBudgetFloor) requests remain: that leaves room for the reads.
const (
	lowBudgetShare = 10
	lowBudgetFloor = 100
)

func (b budget) ample() bool {
	return b.known && b.remaining >= max(b.limit/lowBudgetShare, lowBudgetFloor)
}

// noteBudget remembers the quota an answer reports, and holds every call
// back until the reset once it is spent.
func (w *wire) noteBudget(h http.Header) {
	remaining, err := strconv.Atoi(h.Get("RateLimit-Remaining"))
	if err != nil {
		return
	}
	limit, _ := strconv.Atoi(h.Get("RateLimit-Limit"))
	w.mu.Lock()
	w.budget = budget{known: true, remaining: remaining, limit: limit}
	w.mu.Unlock()
	if remaining > 0 {
		return
	}
	if reset, err := strconv.ParseInt(h.Get("RateLimit-Reset"), 10, 64); err == nil {
		w.block(time.Unix(reset, 0).Sub(w.now()) + time.Second)
	}
}

// limitWait reads how long a rate limit asks to wait: Retry-After (seconds
// or a date), else RateLimit-Reset (a Unix time).
func limitWait(h http.Header, now time.Time) (time.Duration, bool) {
	if v := strings.TrimSpace(h.Get("Retry-After")); v != "" {
		if s, err := strconv.Atoi(v); err == nil && s >= 0 {
			return time.Duration(s) * time.Second, true
		}
		if t, err := http.ParseTime(v); err == nil {
			return max(t.Sub(now), 0), true
		}
	}
	if reset, err := strconv.ParseInt(h.Get("RateLimit-Reset"), 10, 64); err == nil && reset > 0 {
		return max(time.Unix(reset, 0).Sub(now), 0) + time.Second, true
	}
	return 0, false
}

// block holds every call back for d from now.
func (w *wire) block(d time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if t := w.now().Add(d); t.After(w.blockedUntil) {
		w.blockedUntil = t
	}
}

// admit waits as rate limits and, for a write, pacing ask before one
// attempt; a wait longer than maxWait fails at once instead.
func (w *wire) admit(ctx context.Context, write bool) error {
	w.mu.Lock()
	d := w.blockedUntil.Sub(w.now())
	paced := write && w.writeGap > 0 && !w.budget.ample()
	if paced {
		d = max(d, w.lastWrite.Add(w.writeGap).Sub(w.now()))
	}
	w.mu.Unlock()
	if d > w.maxWait {
		return &Error{Message: "rate limit in force", RetryAfter: d}
	}
	if d > 0 {
		if err := w.sleep(ctx, d); err != nil {
			return err
		}
	}
	if write {
		w.mu.Lock()
		w.lastWrite = w.now()
		w.mu.Unlock()
	}
	return nil
}
