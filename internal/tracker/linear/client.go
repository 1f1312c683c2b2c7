package linear

import (
	"context"
	"errors"
	"fmt"
	"github.com/cadre-dev/cadre/internal/keylock"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/cadre-dev/cadre/internal/codehost"
	"github.com/cadre-dev/cadre/internal/redact"
)

// DefaultURL is Linear's GraphQL endpoint.
const DefaultURL = "https://api.linear.app/graphql"

// Defaults of a Client.
const (
	DefaultTimeout = 30 * time.Second // one attempt of one request, its answer read
	DefaultMaxWait = time.Minute      // the longest rate-limit wait before a call fails instead
	DefaultRetries = 3                // retries after a rate limit, or a failed read
	DefaultLimit   = 30               // issues Search returns when the query names no limit
)

// oauthPrefix starts an OAuth access token; Linear's own SDK sends those as
// Bearer and a personal API key bare.
const oauthPrefix = "lin_oauth_"

// Options configures a Client.
type Options struct {
	URL   string // GraphQL endpoint; "" = DefaultURL
	Token string // a personal API key, sent bare; an OAuth token (lin_oauth_…), sent as Bearer
	Team  string // team key ("ENG"): issues of other teams are refused
	// Redactor masks further secrets in what the Client sends and in its
	// errors; the token is always masked.
	Redactor *redact.Redactor
	// HTTPClient's transport carries the requests (a proxy's, a test's);
	// its Timeout is ignored: each attempt gets DefaultTimeout, so a
	// rate-limit wait between attempts is not cut short.
	HTTPClient *http.Client
	MaxWait    time.Duration // longest rate-limit wait; 0 = DefaultMaxWait
}

// Client is Linear as a codehost.Tracker for one team. It is safe for
// concurrent use; mutations go one at a time.
type Client struct {
	endpoint *url.URL
	auth     string
	team     string
	masks    []*redact.Redactor
	hc       *http.Client
	timeout  time.Duration
	maxWait  time.Duration
	retries  int
	now      func() time.Time
	sleep    func(ctx context.Context, d time.Duration) error

	writes chan struct{} // holds the one mutation in flight
	items  keylock.Set   // one look-up-then-write per issue at a time

	mu           sync.Mutex
	blockedUntil time.Time // send nothing before: a budget is spent
}

var _ codehost.Tracker = (*Client)(nil)

var teamKey = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]*$`)

// New returns a Client for o. Plain http is refused but for a loopback
// host: the token would cross the network readable.
func New(o Options) (*Client, error) {
	endpoint, err := endpointOf(o.URL)
	if err != nil {
		return nil, err
	}
	if o.Token == "" {
		return nil, errors.New("linear: no token: set the tracker's token_env variable to a Linear API key")
	}
	for _, r := range o.Token {
		if r <= ' ' || r == 0x7f {
			return nil, errors.New("linear token holds whitespace or control characters: check the variable it comes from")
		}
	}
	if !teamKey.MatchString(o.Team) {
		return nil, fmt.Errorf("linear team %q must be a team's key, such as ENG", o.Team)
	}
	c := &Client{
		endpoint: endpoint, team: strings.ToUpper(o.Team),
		auth:    o.Token,
		masks:   []*redact.Redactor{redact.New(o.Token)},
		timeout: DefaultTimeout, maxWait: o.MaxWait, retries: DefaultRetries,
		now: time.Now, sleep: sleep, writes: make(chan struct{}, 1),
	}
	if strings.HasPrefix(o.Token, oauthPrefix) {
		c.auth = "Bearer " + o.Token
	}
	if c.maxWait <= 0 {
		c.maxWait = DefaultMaxWait
	}
	if o.Redactor != nil {
		c.masks = append(c.masks, o.Redactor)
	}
	var next http.RoundTripper = http.DefaultTransport
	if o.HTTPClient != nil && o.HTTPClient.Transport != nil {
		next = o.HTTPClient.Transport
	}
	c.hc = &http.Client{Transport: next, CheckRedirect: c.stayOnHost}
	return c, nil
}

func endpointOf(raw string) (*url.URL, error) {
	if strings.TrimSpace(raw) == "" {
		raw = DefaultURL
	}
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") || u.User != nil {
		return nil, fmt.Errorf("linear url %q must be an https URL such as %s", raw, DefaultURL)
	}
	if u.Scheme == "http" && !loopback(u.Hostname()) {
		return nil, fmt.Errorf("linear url %q must use https: the token would cross the network in clear", raw)
	}
	u.Fragment = ""
	return u, nil
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// stayOnHost follows a redirect only on the endpoint's host: the token
// must go nowhere else.
func (c *Client) stayOnHost(req *http.Request, via []*http.Request) error {
	if req.URL.Scheme != c.endpoint.Scheme || req.URL.Host != c.endpoint.Host {
		return fmt.Errorf("redirected off the API host to %s", req.URL.Host)
	}
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	return nil
}

// clean masks secrets in text about to be sent: the Client's own, and any
// of a well-known shape (an agent's text goes public through it).
func (c *Client) clean(s string) string { return redact.WellKnown(c.scrub(s)) }

// scrub masks the Client's secrets in text it received: a server may quote
// the request back, token included, and an issue's text may hold one.
func (c *Client) scrub(s string) string {
	for _, m := range c.masks {
		s = m.String(s)
	}
	return s
}

// Error is a failed Linear call.
type Error struct {
	Op         string        // what was asked: "move ENG-42 to In Review"
	Status     int           // HTTP status; 0 when no answer came
	Code       string        // the GraphQL error's extensions.code, when one came
	Message    string        // Linear's message, one line, secrets masked
	RetryAfter time.Duration // set when a rate limit refused the call
	Err        error         // the network or context error when Status is 0
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("linear: " + e.Op + ": ")
	if e.Status != 0 && e.Status != http.StatusOK {
		fmt.Fprintf(&b, "%d ", e.Status)
	}
	b.WriteString(e.Message)
	if e.Code != "" {
		b.WriteString(" (" + e.Code + ")")
	}
	if e.RetryAfter > 0 {
		fmt.Fprintf(&b, " (rate limited: retry in %s)", e.RetryAfter.Round(time.Second))
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// IsRateLimited reports whether err is a call Linear's rate limit refused.
func IsRateLimited(err error) bool {
	var e *Error
	return errors.As(err, &e) && (e.RetryAfter > 0 || e.Code == codeRateLimited)
}

// ambiguous reports whether a write that failed with err may have been
// carried out all the same: no answer came, or the server failed.
func ambiguous(err error) bool {
	var e *Error
	return errors.As(err, &e) && !IsRateLimited(err) && (e.Status == 0 || e.Status >= 500)
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}
