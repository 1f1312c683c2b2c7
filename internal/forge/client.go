package forge

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/cadre-dev/cadre/internal/answers"
	"github.com/cadre-dev/cadre/internal/keylock"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cadre-dev/cadre/internal/redact"
)

// DefaultAPIURL is github.com's REST API.
const DefaultAPIURL = "https://api.github.com/"

// Defaults for a Client's options.
const (
	DefaultTimeout   = 30 * time.Second
	DefaultMaxWait   = 5 * time.Minute
	DefaultRetries   = 4
	DefaultUserAgent = "cadre"
)

// secondaryWait is the first pause after a secondary rate limit that names
// no wait of its own; GitHub asks for at least a minute, doubling after.
const secondaryWait = time.Minute

// maxBody caps how much of a response is read.
const maxBody = 16 << 20

// Client calls GitHub's REST API. It is safe for concurrent use; mutating
// requests are paced as pacing.go describes, and never two at once for the
// same resource.
type Client struct {
	base      *url.URL
	token     string
	hc        *http.Client
	timeout   time.Duration
	userAgent string
	now       func() time.Time
	sleep     func(ctx context.Context, d time.Duration) error
	maxWait   time.Duration
	retries   int
	writeGap  time.Duration
	masks     []*redact.Redactor

	answers answers.Cache // the latest answer to each GET, for conditional requests

	items  keylock.Set   // one look-up-then-write per item at a time
	writes keylock.Set   // one mutating request per resource at a time
	queue  chan struct{} // holds the one paced write in flight
	// onWait, when set (by tests), hears what a caller is about to wait
	// for: "item KEY", "write KEY" or "queue".
	onWait func(what string)

	mu           sync.Mutex // guards the fields below
	blockedUntil time.Time  // send nothing before: a rate limit is in force
	calmUntil    time.Time  // pace writes until then: a secondary limit was met
	budget       budget     // the quota the last answer reported
	lastWrite    time.Time  // when the last write began
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient sends requests through hc (a test transport, a proxy).
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.hc = hc } }

// WithTimeout bounds each request, reading its answer included.
func WithTimeout(d time.Duration) Option { return func(c *Client) { c.timeout = d } }

// WithUserAgent sets the User-Agent header GitHub requires.
func WithUserAgent(ua string) Option { return func(c *Client) { c.userAgent = ua } }

// WithClock replaces time.Now and the sleep between retries; sleep must
// return ctx's error when ctx ends first.
func WithClock(now func() time.Time, sleep func(ctx context.Context, d time.Duration) error) Option {
	return func(c *Client) { c.now, c.sleep = now, sleep }
}

// WithMaxWait caps one rate-limit wait: when GitHub asks for a longer one
// (a primary limit resetting in an hour) the call fails at once with an
// *Error whose RetryAfter says how long.
func WithMaxWait(d time.Duration) Option { return func(c *Client) { c.maxWait = d } }

// WithRetries sets how often one call is retried after a rate limit, a 5xx
// or a network error (the latter two only where resending is harmless).
func WithRetries(n int) Option { return func(c *Client) { c.retries = n } }

// WithRedactor masks r's secrets in every title, body and comment the
// Client sends and in the errors it returns. The Client's own token is
// always masked, and so are secrets of well-known shapes in what it sends.
func WithRedactor(r *redact.Redactor) Option {
	return func(c *Client) { c.masks = append(c.masks, r) }
}

// New returns a Client for the REST API at baseURL (DefaultAPIURL when
// empty; GitHub Enterprise: https://HOST/api/v3/) that authenticates with
// token (none when empty).
func New(baseURL, token string, opts ...Option) (*Client, error) {
	if strings.TrimSpace(baseURL) == "" {
		baseURL = DefaultAPIURL
	}
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("github.api_url %q must be an http(s) URL such as %s", baseURL, DefaultAPIURL)
	}
	if err := checkToken(token); err != nil {
		return nil, err
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	u.RawQuery, u.Fragment = "", ""
	c := &Client{
		base:      u,
		token:     token,
		hc:        &http.Client{},
		timeout:   DefaultTimeout,
		userAgent: DefaultUserAgent,
		now:       time.Now,
		sleep:     sleep,
		maxWait:   DefaultMaxWait,
		retries:   DefaultRetries,
		masks:     []*redact.Redactor{redact.New(token)},
		queue:     make(chan struct{}, 1),
	}
	for _, o := range opts {
		o(c)
	}
	// Zero values of options mean their defaults, never "no time at all".
	if c.hc == nil {
		c.hc = &http.Client{}
	}
	if c.timeout <= 0 {
		c.timeout = DefaultTimeout
	}
	if c.maxWait <= 0 {
		c.maxWait = DefaultMaxWait
	}
	c.retries = max(c.retries, 0)
	if c.now == nil || c.sleep == nil {
		c.now, c.sleep = time.Now, sleep
	}
	if c.userAgent == "" {
		c.userAgent = DefaultUserAgent
	}
	hc := *c.hc
	hc.CheckRedirect = c.stayOnHost
	c.hc = &hc
	return c, nil
}

// stayOnHost follows a redirect only on the API host: the token goes with
// it (net/http keeps it for the same host name on another port). A call
// that wants the redirect itself (a download link) gets it unfollowed.
func (c *Client) stayOnHost(req *http.Request, via []*http.Request) error {
	if req.Context().Value(noFollow{}) != nil {
		return http.ErrUseLastResponse
	}
	if req.URL.Scheme != c.base.Scheme || req.URL.Host != c.base.Host {
		return fmt.Errorf("redirected off the API host to %s", req.URL.Host)
	}
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	return nil
}

func checkToken(token string) error {
	for _, r := range token {
		if r <= ' ' || r == 0x7f {
			return errors.New("github token holds whitespace or control characters: check the variable it comes from")
		}
	}
	return nil
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

// clean masks secrets in text about to be sent: the Client's own, and any
// of a well-known shape (an agent's text goes public through it).
func (c *Client) clean(s string) string {
	return redact.WellKnown(c.scrub(s))
}

// scrub masks the Client's secrets in a message it received: a server may
// quote the request back, Authorization header included.
func (c *Client) scrub(s string) string {
	for _, m := range c.masks {
		s = m.String(s)
	}
	return s
}

// Error is a failed GitHub call.
type Error struct {
	Op         string        // what was asked: "create pull request"
	Status     int           // HTTP status; 0 when no answer came
	Message    string        // GitHub's message, one line
	RetryAfter time.Duration // set when a rate limit refused the call
	Err        error         // the network error when Status is 0
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("github: " + e.Op + ": ")
	if e.Status != 0 {
		b.WriteString(strconv.Itoa(e.Status))
		if e.Message != "" {
			b.WriteString(" " + e.Message)
		}
	} else {
		b.WriteString(e.Message)
	}
	if e.RetryAfter > 0 {
		fmt.Fprintf(&b, " (rate limited: retry in %s)", e.RetryAfter.Round(time.Second))
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// IsNotFound reports whether err is GitHub's 404.
func IsNotFound(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Status == http.StatusNotFound
}

// ambiguous reports whether a write that failed with err may have been
// carried out all the same: no answer came, or the server failed.
func ambiguous(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.RetryAfter == 0 && (e.Status == 0 || e.Status >= 500)
}

// call is one REST request.
type call struct {
	op     string
	method string
	path   string     // under the base URL, e.g. /repos/o/r/pulls
	query  url.Values // may be nil
	next   *url.URL   // a page link to follow instead of path and query
	body   any        // sent as JSON when not nil
	out    any        // a 2xx answer is decoded into it when not nil
	// resend marks a request that is harmless to send twice (reads,
	// PATCH, adding labels), so a 5xx or network error is retried.
	resend bool
	// key names the resource a mutating request changes (issueKey,
	// branchKey); "" means the path.
	key string
	// redirect marks a GET answered by a redirect that is the answer
	// itself (a download link), returned unfollowed and never cached.
	redirect bool
}

// noFollow, as a request's context value, keeps a redirect unfollowed.
type noFollow struct{}

// do sends cl, retrying as rate limits and cl.resend allow, and returns
// the answer's headers.
func (c *Client) do(ctx context.Context, cl call) (http.Header, error) {
	write := cl.method != http.MethodGet
	if write {
		key := cl.key
		if key == "" {
			key = cl.path
		}
		unlock, err := c.lockWrite(ctx, cl.op, key)
		if err != nil {
			return nil, err
		}
		defer unlock()
	}
	var payload []byte
	if cl.body != nil {
		var err error
		if payload, err = json.Marshal(cl.body); err != nil {
			return nil, fmt.Errorf("github: %s: encode request: %w", cl.op, err)
		}
	}
	target := c.target(cl)
	// A GET asked before is asked on condition: unchanged, it costs no
	// rate limit, and the answer kept stands.
	conditional := cl.method == http.MethodGet && !cl.redirect
	var prior *answers.Answer
	if conditional {
		if k, ok := c.answers.Get(target.String()); ok {
			prior = &k
		}
	}
	secondary := 0
	for attempt := 0; ; attempt++ {
		release, err := c.admit(ctx, cl.op, write)
		if err != nil {
			return nil, err
		}
		status, hdr, body, err := c.send(ctx, cl, target, payload, prior)
		release()
		if err != nil {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("github: %s: %w", cl.op, ctx.Err())
			}
			if cl.resend && attempt < c.retries && !untrusted(err) {
				if err := c.pause(ctx, cl.op, backoff(attempt)); err != nil {
					return nil, err
				}
				continue
			}
			return nil, err
		}
		c.noteLimits(hdr)
		c.noteBudget(hdr)
		if conditional {
			status, body = c.revalidated(target.String(), prior, status, hdr, body)
		}
		switch {
		case status >= 200 && status < 300:
			if cl.out != nil && len(bytes.TrimSpace(body)) > 0 {
				if err := json.Unmarshal(body, cl.out); err != nil {
					return nil, fmt.Errorf("github: %s: read answer: %w", cl.op, err)
				}
			}
			return hdr, nil
		case status == http.StatusForbidden || status == http.StatusTooManyRequests:
			msg := apiMessage(body, c.scrub)
			wait, limited := c.limitWait(status, hdr, msg, secondary)
			if !limited {
				return nil, &Error{Op: cl.op, Status: status, Message: msg}
			}
			if !isPrimary(hdr) {
				secondary++
				c.calm(wait)
			}
			// Every call waits, this one's retry and the next ones alike:
			// requests sent while limited can get the client banned.
			c.block(wait)
			if wait > c.maxWait || attempt >= c.retries {
				return nil, &Error{Op: cl.op, Status: status, Message: msg, RetryAfter: max(wait, time.Second)}
			}
			continue
		case cl.redirect && status >= 300 && status < 400:
			return hdr, nil
		case status >= 500 && cl.resend && attempt < c.retries:
			if err := c.pause(ctx, cl.op, backoff(attempt)); err != nil {
				return nil, err
			}
			continue
		default:
			return nil, &Error{Op: cl.op, Status: status, Message: apiMessage(body, c.scrub)}
		}
	}
}

// untrusted says whether err is the server's certificate refused: no
// retry makes it trusted (github.ca_file does).
func untrusted(err error) bool {
	var verify *tls.CertificateVerificationError
	var authority x509.UnknownAuthorityError
	return errors.As(err, &verify) || errors.As(err, &authority)
}

// admit waits as rate limits and, for a write, pacing ask before one
// attempt. A paced write holds the queue until release: through its waits
// and its answer.
func (c *Client) admit(ctx context.Context, op string, write bool) (release func(), err error) {
	release = func() {}
	paced := write && c.paced()
	if paced {
		if release, err = c.enterQueue(ctx, op); err != nil {
			return nil, err
		}
	}
	err = c.waitBlocked(ctx, op)
	if err == nil && paced {
		err = c.spaceWrite(ctx, op)
	}
	if err != nil {
		release()
		return nil, err
	}
	if write {
		c.markWrite()
	}
	return release, nil
}

func backoff(attempt int) time.Duration { return time.Second << min(attempt, 6) }

// revalidated reads the answer to a conditional GET: a 304 is the answer
// kept, given back as a 200 with the Link it came with; a fresh 2xx is
// kept in its place.
func (c *Client) revalidated(url string, prior *answers.Answer, status int, hdr http.Header, body []byte) (int, []byte) {
	switch {
	case status == http.StatusNotModified && prior != nil:
		if link := prior.Header["Link"]; hdr.Get("Link") == "" && link != "" {
			hdr.Set("Link", link)
		}
		return http.StatusOK, prior.Body
	case status >= 200 && status < 300:
		a := answers.Answer{URL: url, ETag: hdr.Get("ETag"), Body: body}
		if link := hdr.Get("Link"); link != "" {
			a.Header = map[string]string{"Link": link}
		}
		c.answers.Put(a)
	}
	return status, body
}

// target is the URL cl asks for.
func (c *Client) target(cl call) *url.URL {
	if cl.next != nil {
		return cl.next
	}
	u := *c.base
	u.Path = c.base.Path + cl.path
	if strings.Contains(cl.path, "%") {
		// An escaped segment (a label or branch with a '/') stays one.
		if p, err := url.PathUnescape(cl.path); err == nil {
			u.Path, u.RawPath = c.base.Path+p, c.base.EscapedPath()+cl.path
		}
	}
	u.RawQuery = cl.query.Encode()
	return &u
}

// send makes one attempt at u, on condition that the answer differs from
// prior when there is one; an error means no answer came.
func (c *Client) send(ctx context.Context, cl call, u *url.URL, payload []byte, prior *answers.Answer) (int, http.Header, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	if cl.redirect {
		ctx = context.WithValue(ctx, noFollow{}, true)
	}
	var rd io.Reader
	if payload != nil {
		rd = bytes.NewReader(payload)
	}
	req, err := http.NewRequestWithContext(ctx, cl.method, u.String(), rd)
	if err != nil {
		return 0, nil, nil, fmt.Errorf("github: %s: %w", cl.op, err)
	}
	req.Header.Set("Accept", "application/vnd.github+json")
	req.Header.Set("X-GitHub-Api-Version", "2022-11-28")
	req.Header.Set("User-Agent", c.userAgent)
	if payload != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if prior != nil {
		req.Header.Set("If-None-Match", prior.ETag)
	}
	resp, err := c.hc.Do(req)
	if err == nil {
		var body []byte
		body, err = io.ReadAll(io.LimitReader(resp.Body, maxBody))
		resp.Body.Close()
		if err == nil {
			return resp.StatusCode, resp.Header, body, nil
		}
	}
	msg := "no answer: " + oneLine(c.scrub(err.Error()))
	if errors.Is(err, context.DeadlineExceeded) {
		msg = fmt.Sprintf("no answer within %s", c.timeout)
	}
	return 0, nil, nil, &Error{Op: cl.op, Message: msg, Err: err}
}

// apiMessage reads GitHub's error document ({"message", "errors"}) as one
// line, masked by scrub before it is shortened (a secret cut in two would
// not be recognised).
func apiMessage(body []byte, scrub func(string) string) string {
	var doc struct {
		Message string `json:"message"`
		Errors  []struct {
			Message  string `json:"message"`
			Resource string `json:"resource"`
			Field    string `json:"field"`
			Code     string `json:"code"`
		} `json:"errors"`
	}
	if json.Unmarshal(body, &doc) != nil || doc.Message == "" {
		return oneLine(scrub(strings.TrimSpace(string(body))))
	}
	msg := doc.Message
	var details []string
	for _, e := range doc.Errors {
		switch {
		case e.Message != "":
			details = append(details, e.Message)
		case e.Field != "":
			details = append(details, e.Field+" "+e.Code)
		}
	}
	if len(details) > 0 {
		msg += ": " + strings.Join(details, "; ")
	}
	return oneLine(scrub(msg))
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// pages fetches a list and its following pages (GitHub's Link rel="next")
// and hands each page to add, which reports whether more are wanted. A
// page P is a JSON array, or the object some lists wrap theirs in.
func pages[P any](ctx context.Context, c *Client, op, path string, query url.Values, add func(P) bool) error {
	cl := call{op: op, method: http.MethodGet, path: path, query: query, resend: true}
	for {
		var page P
		cl.out = &page
		hdr, err := c.do(ctx, cl)
		if err != nil {
			return err
		}
		if !add(page) {
			return nil
		}
		next := nextLink(hdr.Get("Link"))
		if next == "" {
			return nil
		}
		u, err := url.Parse(next)
		if err != nil || u.Scheme != c.base.Scheme || u.Host != c.base.Host {
			// The token goes wherever the request goes: never off the API host.
			return fmt.Errorf("github: %s: next page link %q is not on %s", op, next, c.base.Host)
		}
		cl.next = u
	}
}

// nextLink finds rel="next" in a Link header.
func nextLink(h string) string {
	for part := range strings.SplitSeq(h, ",") {
		target, params, ok := strings.Cut(part, ";")
		if !ok {
			continue
		}
		for p := range strings.SplitSeq(params, ";") {
			if strings.ReplaceAll(strings.TrimSpace(p), " ", "") == `rel="next"` {
				return strings.Trim(strings.TrimSpace(target), "<>")
			}
		}
	}
	return ""
}
