package gitlab

import (
	"context"
	"errors"
	"fmt"
	"github.com/cadre-dev/cadre/internal/keylock"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	gl "gitlab.com/gitlab-org/api/client-go/v2"

	"github.com/cadre-dev/cadre/internal/cabundle"
	"github.com/cadre-dev/cadre/internal/redact"
)

// DefaultAPIURL is GitLab.com's REST API.
const DefaultAPIURL = "https://gitlab.com/api/v4"

// Defaults of a Client.
const (
	DefaultTimeout   = 30 * time.Second // one attempt of one request, its answer read
	DefaultMaxWait   = time.Minute      // the longest rate-limit wait before a call fails instead
	DefaultRetries   = 3                // retries after a rate limit, or a 5xx to a read
	DefaultUserAgent = "cadre"
)

// maxPages caps how many pages of one list are read (a hundred items
// each): past it a list is more than cadre can act on anyway.
const maxPages = 50

// Client calls GitLab's REST API. It is safe for concurrent use; mutating
// requests go one at a time.
type Client struct {
	api   *gl.Client
	base  *url.URL // the API's root, ending in /api/v4
	masks []*redact.Redactor
	wire  *wire
	items keylock.Set // one look-up-then-write per item at a time
}

type options struct {
	caFile   string
	masks    []*redact.Redactor
	hc       *http.Client
	writeGap time.Duration
}

// Option configures a Client.
type Option func(*options)

// WithCAFile trusts the certificates of the PEM bundle at path, besides
// the system's: a self-managed instance signed by a private authority.
func WithCAFile(path string) Option { return func(o *options) { o.caFile = path } }

// WithRedactor masks r's secrets in every title, body and note the Client
// sends and in the errors it returns. The Client's own token is always
// masked.
func WithRedactor(r *redact.Redactor) Option {
	return func(o *options) { o.masks = append(o.masks, r) }
}

// WithHTTPClient sends requests through h's transport (a test server's, a
// proxy's). Its Timeout is ignored: each attempt gets DefaultTimeout, so a
// rate-limit wait between attempts is not cut short.
func WithHTTPClient(h *http.Client) Option { return func(o *options) { o.hc = h } }

// WithWriteGap spaces mutating requests at least d apart while the Client
// paces: the rate-limit budget is unknown or low. Zero, the default, never
// paces; rate-limit answers are obeyed all the same.
func WithWriteGap(d time.Duration) Option { return func(o *options) { o.writeGap = max(d, 0) } }

// New returns a Client for the REST API at apiURL (DefaultAPIURL when
// empty; a self-managed instance: https://HOST/api/v4) that authenticates
// with token. Plain http is refused but for a loopback host: the token
// would cross the network readable.
func New(apiURL, token string, opts ...Option) (*Client, error) {
	base, err := apiBase(apiURL)
	if err != nil {
		return nil, err
	}
	for _, r := range token {
		if r <= ' ' || r == 0x7f {
			return nil, errors.New("gitlab token holds whitespace or control characters: check the variable it comes from")
		}
	}
	var o options
	for _, fn := range opts {
		fn(&o)
	}
	next, err := baseTransport(o)
	if err != nil {
		return nil, err
	}
	c := &Client{base: base, masks: append([]*redact.Redactor{redact.New(token)}, o.masks...)}
	c.wire = newWire(next, o.writeGap)
	hc := &http.Client{Transport: c.wire, CheckRedirect: c.stayOnHost}
	c.api, err = gl.NewClient(token,
		gl.WithBaseURL(base.String()+"/"),
		gl.WithHTTPClient(hc),
		// The wire retries, with waits it bounds; client-go's own
		// retries and limiter would wait again, unbounded by it.
		gl.WithoutRetries(),
		gl.WithCustomLimiter(noLimiter{}),
		gl.WithUserAgent(DefaultUserAgent),
	)
	if err != nil {
		return nil, fmt.Errorf("gitlab: %s", c.scrub(err.Error()))
	}
	return c, nil
}

// apiBase reads apiURL as the API's root, /api/v4 added when missing.
func apiBase(apiURL string) (*url.URL, error) {
	if strings.TrimSpace(apiURL) == "" {
		apiURL = DefaultAPIURL
	}
	u, err := url.Parse(strings.TrimSpace(apiURL))
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") || u.User != nil {
		return nil, fmt.Errorf("gitlab api url %q must be an https URL such as %s", apiURL, DefaultAPIURL)
	}
	if u.Scheme == "http" && !loopback(u.Hostname()) {
		return nil, fmt.Errorf("gitlab api url %q must use https: the token would cross the network in clear", apiURL)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	if !strings.HasSuffix(u.Path, "/api/v4") {
		u.Path += "/api/v4"
	}
	u.RawPath, u.RawQuery, u.Fragment = "", "", ""
	return u, nil
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// baseTransport is what the wire sends through: the given client's
// transport, or net/http's, trusting the CA file when one is named.
func baseTransport(o options) (http.RoundTripper, error) {
	var next http.RoundTripper = http.DefaultTransport
	if o.hc != nil && o.hc.Transport != nil {
		next = o.hc.Transport
	}
	if o.caFile == "" {
		return next, nil
	}
	t, ok := next.(*http.Transport)
	if !ok {
		return nil, errors.New("gitlab.ca_file: the HTTP client given has a transport of its own; its certificates cannot be added to")
	}
	t, err := cabundle.Transport(t, o.caFile)
	if err != nil {
		return nil, fmt.Errorf("gitlab.ca_file: %w", err)
	}
	return t, nil
}

// stayOnHost follows a redirect only on the API's host: net/http forwards
// a custom header such as PRIVATE-TOKEN to wherever it is sent.
func (c *Client) stayOnHost(req *http.Request, via []*http.Request) error {
	if req.URL.Scheme != c.base.Scheme || req.URL.Host != c.base.Host {
		return fmt.Errorf("redirected off the API host to %s", req.URL.Host)
	}
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	return nil
}

// noLimiter lets every request through client-go's limiter: the wire
// paces by what GitLab's answers say instead.
type noLimiter struct{}

func (noLimiter) Wait(ctx context.Context) error { return ctx.Err() }

// clean masks secrets in text about to be sent: the Client's own, and any
// of a well-known shape (an agent's text goes public through it).
func (c *Client) clean(s string) string { return redact.WellKnown(c.scrub(s)) }

// scrub masks the Client's secrets in a message it received: a server may
// quote the request back, token included.
func (c *Client) scrub(s string) string {
	for _, m := range c.masks {
		s = m.String(s)
	}
	return s
}

// Counts reports how many answers were charged (anything but a 304) and
// how many were 304 Not Modified: answers kept before stood, nothing was
// sent or decoded anew.
func (c *Client) Counts() (charged, notModified int) {
	return int(c.wire.charged.Load()), int(c.wire.notModified.Load())
}

// Error is a failed GitLab call.
type Error struct {
	Op         string        // what was asked: "merge !5 of acme/widget"
	Status     int           // HTTP status; 0 when no answer came
	Message    string        // GitLab's message, one line, secrets masked
	RetryAfter time.Duration // set when a rate limit refused the call
	Err        error         // the network or context error when Status is 0
	moved      bool          // a merge refused because the head moved
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("gitlab: " + e.Op + ": ")
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

// IsNotFound reports whether err is GitLab's 404: no such project, item,
// or no access to it.
func IsNotFound(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Status == http.StatusNotFound
}

// IsHeadMoved reports whether err is a merge refused because the source
// branch is no longer at the commit the caller named.
func IsHeadMoved(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.moved
}

// fail turns what client-go or the wire returned into an *Error for op,
// secrets masked: GitLab may quote the request back.
func (c *Client) fail(op string, err error) error {
	if err == nil {
		return nil
	}
	var (
		mine *Error
		resp *gl.ErrorResponse
	)
	switch {
	case errors.As(err, &mine):
		e := *mine
		e.Op = op
		return &e
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		cause := context.Canceled
		if errors.Is(err, context.DeadlineExceeded) {
			cause = context.DeadlineExceeded
		}
		return &Error{Op: op, Message: cause.Error(), Err: cause}
	case errors.As(err, &resp):
		msg := resp.Message
		if msg == "" {
			msg = http.StatusText(resp.StatusCode)
		}
		e := &Error{Op: op, Status: resp.StatusCode, Message: oneLine(c.scrub(msg))}
		if resp.Response != nil && resp.StatusCode == http.StatusTooManyRequests {
			e.RetryAfter, _ = limitWait(resp.Response.Header, time.Now())
		}
		return e
	case errors.Is(err, gl.ErrNotFound):
		return &Error{Op: op, Status: http.StatusNotFound, Message: "not found (or no access)"}
	}
	return &Error{Op: op, Message: "no answer: " + oneLine(c.scrub(err.Error()))}
}

// ambiguous reports whether a write that failed with err may have been
// carried out all the same: no answer came, or the server failed.
func ambiguous(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.RetryAfter == 0 && (e.Status == 0 || e.Status >= 500)
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// pages reads a list page by page, a hundred items each, handing each item
// to add until it says stop, the list ends or maxPages were read.
func pages[T any](ctx context.Context, c *Client, op string,
	fetch func(opt gl.ListOptions, ro ...gl.RequestOptionFunc) ([]T, *gl.Response, error), add func(T) bool) error {
	opt := gl.ListOptions{PerPage: 100, Page: 1}
	for range maxPages {
		items, resp, err := fetch(opt, gl.WithContext(ctx))
		if err != nil {
			return c.fail(op, err)
		}
		for _, it := range items {
			if !add(it) {
				return nil
			}
		}
		if resp == nil || resp.NextPage == 0 || len(items) == 0 {
			return nil
		}
		opt.Page = resp.NextPage
	}
	return nil
}
