package jira

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Error is a failed Jira call.
type Error struct {
	Op         string        // what was asked: "comment on PROJ-123"
	Status     int           // HTTP status; 0 when no answer came
	Message    string        // Jira's message, one line, secrets masked
	RetryAfter time.Duration // set when a rate limit refused the call
	Err        error         // the network or context error when Status is 0
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("jira: " + e.Op + ": ")
	if e.Status != 0 {
		b.WriteString(strconv.Itoa(e.Status))
		if e.Message != "" {
			b.WriteString(" ")
		}
	}
	b.WriteString(e.Message)
	if e.RetryAfter > 0 {
		fmt.Fprintf(&b, " (rate limited: retry in %s)", e.RetryAfter.Round(time.Second))
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// IsNotFound reports whether err is Jira's 404: no such issue, or no
// permission to see it (Jira does not tell the two apart).
func IsNotFound(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Status == http.StatusNotFound
}

// ambiguous reports whether a write that failed with err may have been
// carried out all the same: no answer came, or the server failed.
func ambiguous(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.RetryAfter == 0 && (e.Status == 0 || e.Status >= 500) &&
		!errors.Is(err, context.Canceled)
}

// request is one call: a write is sent once (a rate limit's refusal
// aside), a read again after a 5xx or a network failure.
type request struct {
	op     string
	method string
	path   string // under the site, from /rest/...
	query  url.Values
	body   any // sent as JSON when not nil
	out    any // the answer decoded into it when not nil
	write  bool
}

// call sends r as its comment says, waiting out rate limits (429, or 503
// with Retry-After) up to maxWait and a bounded number of times.
func (c *Client) call(ctx context.Context, r request) error {
	var payload []byte
	if r.body != nil {
		var err error
		if payload, err = json.Marshal(r.body); err != nil {
			return &Error{Op: r.op, Message: "encode request: " + err.Error()}
		}
	}
	if r.write {
		select {
		case c.writes <- struct{}{}:
			defer func() { <-c.writes }()
		case <-ctx.Done():
			return c.fail(r.op, ctx.Err())
		}
	}
	for attempt := 0; ; attempt++ {
		status, hdr, body, err := c.send(ctx, r, payload)
		if err != nil {
			if ctx.Err() == nil && !r.write && attempt < c.retries {
				if err := c.sleep(ctx, backoff(attempt)); err != nil {
					return c.fail(r.op, err)
				}
				continue
			}
			return c.fail(r.op, err)
		}
		if wait, limited := rateLimited(status, hdr, attempt); limited {
			if wait > c.maxWait || attempt >= c.retries {
				return &Error{Op: r.op, Status: status, Message: c.message(status, body), RetryAfter: wait}
			}
			if err := c.sleep(ctx, wait); err != nil {
				return c.fail(r.op, err)
			}
			continue
		}
		if status >= 500 && !r.write && attempt < c.retries {
			if err := c.sleep(ctx, backoff(attempt)); err != nil {
				return c.fail(r.op, err)
			}
			continue
		}
		if status >= 300 {
			return &Error{Op: r.op, Status: status, Message: c.message(status, body)}
		}
		if r.out != nil && len(bytes.TrimSpace(body)) > 0 {
			if err := json.Unmarshal(body, r.out); err != nil {
				return &Error{Op: r.op, Status: status, Message: "unreadable answer: " + oneLine(c.scrub(err.Error()))}
			}
		}
		return nil
	}
}

// rateLimited reads whether an answer is a rate limit's, and how long it
// asks to wait: a 429, or a 503 that names a wait (Jira Cloud answers
// either when a site is over its budget).
func rateLimited(status int, h http.Header, attempt int) (time.Duration, bool) {
	wait, named := retryAfter(h)
	switch {
	case status == http.StatusTooManyRequests && named:
		return wait, true
	case status == http.StatusTooManyRequests:
		return backoff(attempt), true
	case status == http.StatusServiceUnavailable && named:
		return wait, true
	}
	return 0, false
}

func retryAfter(h http.Header) (time.Duration, bool) {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if s, err := strconv.Atoi(v); err == nil && s >= 0 {
		return time.Duration(s) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0), true
	}
	return 0, false
}

// maxAnswer bounds what is read of one answer: an issue with its
// description, or a page of comments, is far smaller.
const maxAnswer = 16 << 20

// send makes one attempt, bounded by the Client's timeout until its answer
// is read.
func (c *Client) send(ctx context.Context, r request, payload []byte) (int, http.Header, []byte, error) {
	actx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	u := *c.site
	u.Path += r.path
	u.RawQuery = r.query.Encode()
	var body io.Reader
	if payload != nil {
		body = bytes.NewReader(payload)
	}
	req, err := http.NewRequestWithContext(actx, r.method, u.String(), body)
	if err != nil {
		return 0, nil, nil, err
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", DefaultUserAgent)
	req.Header.Set("Authorization", c.authorization())
	if payload != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		if ctx.Err() == nil && errors.Is(actx.Err(), context.DeadlineExceeded) {
			return 0, nil, nil, fmt.Errorf("no answer within %s", c.timeout)
		}
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return 0, nil, nil, err
	}
	return resp.StatusCode, resp.Header, data, nil
}

// fail turns a network or context error into an *Error for op, secrets
// masked: a URL or a proxy's message may carry them.
func (c *Client) fail(op string, err error) error {
	switch {
	case errors.Is(err, context.Canceled):
		return &Error{Op: op, Message: context.Canceled.Error(), Err: context.Canceled}
	case errors.Is(err, context.DeadlineExceeded):
		return &Error{Op: op, Message: context.DeadlineExceeded.Error(), Err: context.DeadlineExceeded}
	}
	return &Error{Op: op, Message: "no answer: " + oneLine(c.scrub(err.Error())), Err: err}
}

// message reads Jira's error answer, {"errorMessages":[...],"errors":{field:
// message}}, into one line; a 401 says what the token must look like.
func (c *Client) message(status int, body []byte) string {
	var e struct {
		ErrorMessages []string          `json:"errorMessages"`
		Errors        map[string]string `json:"errors"`
		Message       string            `json:"message"`
	}
	parts := []string{}
	if json.Unmarshal(body, &e) == nil {
		parts = append(parts, e.ErrorMessages...)
		fields := make([]string, 0, len(e.Errors))
		for k := range e.Errors {
			fields = append(fields, k)
		}
		sort.Strings(fields)
		for _, k := range fields {
			parts = append(parts, k+": "+e.Errors[k])
		}
		if e.Message != "" {
			parts = append(parts, e.Message)
		}
	} else if len(bytes.TrimSpace(body)) > 0 && !bytes.HasPrefix(bytes.TrimSpace(body), []byte("<")) {
		parts = append(parts, string(body))
	}
	msg := strings.Join(parts, "; ")
	if msg == "" {
		msg = strings.ToLower(http.StatusText(status))
	}
	if status == http.StatusUnauthorized {
		msg += " (check the value of the variable tracker.token_env names: email:api_token on Jira Cloud, a personal access token on Data Center)"
	}
	return oneLine(c.scrub(msg))
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

func backoff(attempt int) time.Duration { return time.Second << min(attempt, 5) }

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

func basic(user, secret string) string {
	return base64.StdEncoding.EncodeToString([]byte(user + ":" + secret))
}
