package linear

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// codeRateLimited is extensions.code of Linear's rate-limit error.
const codeRateLimited = "RATELIMITED"

// maxAnswer bounds an answer read: a page of fifty issues is far less.
const maxAnswer = 8 << 20

// operation is one named GraphQL document cadre sends.
type operation struct {
	name  string
	doc   string
	write bool // a mutation: sent one at a time, never resent blindly
}

type request struct {
	Query         string         `json:"query"`
	OperationName string         `json:"operationName"`
	Variables     map[string]any `json:"variables,omitempty"`
}

type gqlError struct {
	Message    string `json:"message"`
	Extensions struct {
		Code                   string `json:"code"`
		Type                   string `json:"type"`
		UserPresentableMessage string `json:"userPresentableMessage"`
	} `json:"extensions"`
}

type response struct {
	Data   json.RawMessage `json:"data"`
	Errors []gqlError      `json:"errors"`
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

func backoff(attempt int) time.Duration { return time.Second << min(attempt, 5) }

// call sends op with vars and decodes its data into out. A rate limit is
// waited out and the call sent again, a bounded number of times; a query
// that got no answer or a 5xx is sent again too, a mutation is not: it may
// have been carried out, and the callers look again by its key instead.
func (c *Client) call(ctx context.Context, what string, op operation, vars map[string]any, out any) error {
	if op.write {
		select {
		case c.writes <- struct{}{}:
			defer func() { <-c.writes }()
		case <-ctx.Done():
			return c.fail(what, ctx.Err())
		}
	}
	payload, err := json.Marshal(request{Query: op.doc, OperationName: op.name, Variables: vars})
	if err != nil {
		return fmt.Errorf("linear: %s: %w", what, err)
	}
	for attempt := 0; ; attempt++ {
		if err := c.admit(ctx); err != nil {
			return c.fail(what, err)
		}
		status, hdr, body, err := c.send(ctx, payload)
		if err != nil {
			if ctx.Err() == nil && !op.write && attempt < c.retries {
				if err := c.sleep(ctx, backoff(attempt)); err != nil {
					return c.fail(what, err)
				}
				continue
			}
			return c.fail(what, err)
		}
		c.noteBudget(hdr)
		var r response
		decodeErr := json.Unmarshal(body, &r)
		if limited(status, r.Errors) {
			wait := c.limitWait(hdr, attempt)
			c.block(wait)
			if wait <= c.maxWait && attempt < c.retries {
				continue // admit waits the limit out
			}
			return &Error{Op: what, Status: status, Code: codeRateLimited, Message: "rate limited", RetryAfter: max(wait, time.Second)}
		}
		if status >= 500 && !op.write && attempt < c.retries {
			if err := c.sleep(ctx, backoff(attempt)); err != nil {
				return c.fail(what, err)
			}
			continue
		}
		return c.decode(what, status, body, r, decodeErr, out)
	}
}

// decode turns one answer into out, or into an *Error naming what.
func (c *Client) decode(what string, status int, body []byte, r response, decodeErr error, out any) error {
	if len(r.Errors) > 0 {
		g := r.Errors[0]
		msg := g.Message
		if g.Extensions.UserPresentableMessage != "" {
			msg = g.Extensions.UserPresentableMessage
		}
		return &Error{Op: what, Status: status, Code: g.Extensions.Code, Message: oneLine(c.scrub(msg))}
	}
	if status != http.StatusOK || decodeErr != nil {
		msg := http.StatusText(status)
		if decodeErr != nil {
			msg = "unreadable answer: " + string(body)
		}
		return &Error{Op: what, Status: status, Message: oneLine(c.scrub(msg))}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(r.Data, out); err != nil {
		return &Error{Op: what, Status: status, Message: oneLine(c.scrub("unreadable data: " + err.Error()))}
	}
	return nil
}

// fail turns a network or context error into an *Error for what.
func (c *Client) fail(what string, err error) error {
	var mine *Error
	switch {
	case errors.As(err, &mine):
		e := *mine
		e.Op = what
		return &e
	case errors.Is(err, context.Canceled):
		return &Error{Op: what, Message: err.Error(), Err: context.Canceled}
	case errors.Is(err, context.DeadlineExceeded):
		return &Error{Op: what, Message: err.Error(), Err: context.DeadlineExceeded}
	}
	return &Error{Op: what, Message: "no answer: " + oneLine(c.scrub(err.Error())), Err: errors.New(oneLine(c.scrub(err.Error())))}
}

// send makes one attempt, bounded by the Client's timeout.
func (c *Client) send(ctx context.Context, payload []byte) (int, http.Header, []byte, error) {
	actx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodPost, c.endpoint.String(), bytes.NewReader(payload))
	if err != nil {
		return 0, nil, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Authorization", c.auth)
	req.Header.Set("User-Agent", "cadre")
	resp, err := c.hc.Do(req)
	if err != nil {
		if ctx.Err() == nil && errors.Is(actx.Err(), context.DeadlineExceeded) {
			return 0, nil, nil, fmt.Errorf("no answer within %s", c.timeout)
		}
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return 0, nil, nil, err
	}
	return resp.StatusCode, resp.Header, body, nil
}

// limited reports whether an answer is Linear's rate limit.
func limited(status int, errs []gqlError) bool {
	if status == http.StatusTooManyRequests {
		return true
	}
	for _, e := range errs {
		if e.Extensions.Code == codeRateLimited || strings.EqualFold(e.Extensions.Type, "ratelimited") {
			return true
		}
	}
	return false
}

// budgets are the rate-limit headers Linear sends: a remaining count and
// its reset, in milliseconds since the epoch.
var budgets = [][2]string{
	{"X-RateLimit-Requests-Remaining", "X-RateLimit-Requests-Reset"},
	{"X-RateLimit-Complexity-Remaining", "X-RateLimit-Complexity-Reset"},
}

// resetAt reads a reset header: milliseconds since the epoch, or seconds
// when the number is too small to be milliseconds.
func resetAt(v string) (time.Time, bool) {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n <= 0 {
		return time.Time{}, false
	}
	if n < 1e11 {
		return time.Unix(n, 0), true
	}
	return time.UnixMilli(n), true
}

// limitWait is how long a rate-limited answer asks to wait: Retry-After,
// else until the reset of the budget reported spent (the later one when
// both or neither are), else a backoff.
func (c *Client) limitWait(h http.Header, attempt int) time.Duration {
	if s, err := strconv.Atoi(strings.TrimSpace(h.Get("Retry-After"))); err == nil && s >= 0 {
		return time.Duration(s) * time.Second
	}
	var spent, any time.Time
	for _, b := range budgets {
		t, ok := resetAt(h.Get(b[1]))
		if !ok {
			continue
		}
		any = later(any, t)
		if n, err := strconv.Atoi(strings.TrimSpace(h.Get(b[0]))); err == nil && n <= 0 {
			spent = later(spent, t)
		}
	}
	switch {
	case !spent.IsZero():
		return max(spent.Sub(c.now()), 0)
	case !any.IsZero():
		return max(any.Sub(c.now()), 0)
	}
	return backoff(attempt)
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// noteBudget holds every call back until the reset of a budget an answer
// reports spent.
func (c *Client) noteBudget(h http.Header) {
	for _, b := range budgets {
		n, err := strconv.Atoi(strings.TrimSpace(h.Get(b[0])))
		if err != nil || n > 0 {
			continue
		}
		if t, ok := resetAt(h.Get(b[1])); ok {
			c.block(t.Sub(c.now()))
		}
	}
}

// block holds every call back for d from now.
func (c *Client) block(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t := c.now().Add(d); t.After(c.blockedUntil) {
		c.blockedUntil = t
	}
}

// admit waits out a rate limit in force before an attempt; one longer than
// maxWait fails at once instead.
func (c *Client) admit(ctx context.Context) error {
	c.mu.Lock()
	d := c.blockedUntil.Sub(c.now())
	c.mu.Unlock()
	if d > c.maxWait {
		return &Error{Code: codeRateLimited, Message: "rate limit in force", RetryAfter: d}
	}
	if d > 0 {
		return c.sleep(ctx, d)
	}
	return nil
}
