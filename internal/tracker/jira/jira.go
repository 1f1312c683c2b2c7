// Package jira is cadre's tracker for Jira: work items come from a Jira
// project's issues; comments, status changes and links to pull requests go
// back to them. It speaks Jira Cloud's REST API v3 (descriptions and
// comments in the Atlassian Document Format, turned into Markdown for the
// agents) and Jira Data Center's (or Server's) REST API v2 (wiki text),
// told apart by serverInfo's deploymentType unless the flavor is forced.
//
// Every write is idempotent across crashes without a local record: a
// comment carries its marker in a comment property (hidden from people,
// read back with expand=properties), a move is skipped when the issue is
// in the status already, and a remote link is keyed by a globalId, which
// Jira upserts by.
package jira

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

// Flavors of Jira.
const (
	Cloud      = "cloud"      // Jira Cloud, REST API v3, Basic email:api_token
	DataCenter = "datacenter" // Jira Data Center or Server, REST API v2, Bearer personal access token
)

// Defaults of a Client.
const (
	DefaultTimeout   = 30 * time.Second // one attempt of one request, its answer read
	DefaultMaxWait   = time.Minute      // the longest rate-limit wait before a call fails instead
	DefaultRetries   = 3                // retries after a rate limit, or a 5xx to a read
	DefaultLimit     = 30               // issues a Search returns when its query sets no limit
	DefaultUserAgent = "cadre"
)

// maxPages caps how many pages of one list are read: past it a list is
// more than cadre can act on anyway.
const maxPages = 50

// Options configure a Client.
type Options struct {
	// URL is the site: https://acme.atlassian.net or https://jira.corp
	// (a context path such as https://corp.example/jira is kept).
	URL string
	// Token is "email:api_token" on Cloud (sent as Basic), a personal
	// access token on Data Center (sent as Bearer).
	Token string
	// Project is the project key (PROJ): issues of other projects are
	// refused, and searches are bounded to it.
	Project string
	// Flavor is Cloud or DataCenter; "" learns it from serverInfo.
	Flavor string
	// Redactor masks secrets in errors and in text sent; the token is
	// added to it. Nil makes one for the token alone.
	Redactor *redact.Redactor
	// HTTPClient's transport carries the requests (a test server's, a
	// proxy's); its Timeout is ignored, each attempt gets DefaultTimeout.
	HTTPClient *http.Client
	// MaxWait is the longest Retry-After waited (DefaultMaxWait when 0); a
	// longer one fails the call with the wait named.
	MaxWait time.Duration
}

// Client calls one Jira site's REST API for one project. It is safe for
// concurrent use; writes go one at a time.
type Client struct {
	site    *url.URL // the site's root, no trailing slash
	token   string
	project string
	masks   *redact.Redactor
	hc      *http.Client
	maxWait time.Duration
	retries int
	timeout time.Duration
	sleep   func(ctx context.Context, d time.Duration) error
	writes  chan struct{} // holds the one write in flight
	items   keylock.Set   // one look-up-then-write per issue at a time

	mu     sync.Mutex
	flavor string // "" until learnt
}

var _ codehost.Tracker = (*Client)(nil)

var projectKey = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)

// New returns a Client for o. It makes no request: the flavor, when not
// given, is learnt on the first call. Plain http is refused but for a
// loopback host: the token would cross the network readable.
func New(o Options) (*Client, error) {
	site, err := siteURL(o.URL)
	if err != nil {
		return nil, err
	}
	if err := checkToken(o.Token); err != nil {
		return nil, err
	}
	project := strings.TrimSpace(o.Project)
	if !projectKey.MatchString(project) {
		return nil, fmt.Errorf("jira: tracker.project %q must be a project key such as PROJ (letters first, as Jira shows it in issue keys)", o.Project)
	}
	flavor := strings.ToLower(strings.TrimSpace(o.Flavor))
	switch flavor {
	case "", Cloud, DataCenter:
	case "server", "dc", "data center":
		flavor = DataCenter
	default:
		return nil, fmt.Errorf("jira: flavor %q must be %q or %q (or empty, to learn it from the site)", o.Flavor, Cloud, DataCenter)
	}
	masks := o.Redactor
	if masks == nil {
		masks = redact.New()
	}
	masks.Add(o.Token)
	if _, secret, ok := strings.Cut(o.Token, ":"); ok {
		masks.Add(secret)
	}
	c := &Client{
		site: site, token: o.Token, project: project, masks: masks,
		maxWait: o.MaxWait, retries: DefaultRetries, timeout: DefaultTimeout,
		sleep: sleep, writes: make(chan struct{}, 1), flavor: flavor,
	}
	if c.maxWait <= 0 {
		c.maxWait = DefaultMaxWait
	}
	var next http.RoundTripper = http.DefaultTransport
	if o.HTTPClient != nil && o.HTTPClient.Transport != nil {
		next = o.HTTPClient.Transport
	}
	c.hc = &http.Client{Transport: next, CheckRedirect: c.stayOnHost}
	return c, nil
}

// siteURL reads the site's root: https (or http on a loopback host), no
// credentials, no query; a REST path pasted in is cut off.
func siteURL(raw string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") || u.User != nil {
		return nil, fmt.Errorf("jira: tracker.url %q must be the site's https URL, such as https://acme.atlassian.net", raw)
	}
	if u.Scheme == "http" && !loopback(u.Hostname()) {
		return nil, fmt.Errorf("jira: tracker.url %q must use https: the token would cross the network in clear", raw)
	}
	if i := strings.Index(u.Path, "/rest/"); i >= 0 {
		u.Path = u.Path[:i]
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
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

// checkToken refuses a token that would make a malformed header: a
// variable read with its newline, or empty.
func checkToken(token string) error {
	if token == "" {
		return errors.New("jira: no token: set the variable tracker.token_env names (email:api_token on Jira Cloud, a personal access token on Data Center)")
	}
	for _, r := range token {
		if r <= ' ' || r == 0x7f {
			return errors.New("jira: token holds whitespace or control characters: check the variable tracker.token_env names")
		}
	}
	return nil
}

// stayOnHost follows a redirect only on the site's own host: net/http
// would carry the Authorization header nowhere else, and an answer from
// elsewhere is not Jira's.
func (c *Client) stayOnHost(req *http.Request, via []*http.Request) error {
	if req.URL.Scheme != c.site.Scheme || req.URL.Host != c.site.Host {
		return fmt.Errorf("redirected off the site to %s", req.URL.Host)
	}
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	return nil
}

// Flavor returns Cloud or DataCenter, asking serverInfo the first time
// when the Options left it open.
func (c *Client) Flavor(ctx context.Context) (string, error) {
	c.mu.Lock()
	f := c.flavor
	c.mu.Unlock()
	if f != "" {
		return f, nil
	}
	var info struct {
		DeploymentType string `json:"deploymentType"`
	}
	err := c.call(ctx, request{op: "server info", method: http.MethodGet, path: "/rest/api/2/serverInfo", out: &info})
	if err != nil {
		return "", err
	}
	f = DataCenter
	if strings.EqualFold(info.DeploymentType, "Cloud") {
		f = Cloud
	}
	c.mu.Lock()
	c.flavor = f
	c.mu.Unlock()
	return f, nil
}

// api returns the REST root for the flavor: v3 on Cloud (ADF), v2 on
// Data Center, which has no v3.
func (c *Client) api(ctx context.Context) (string, string, error) {
	f, err := c.Flavor(ctx)
	if err != nil {
		return "", "", err
	}
	if f == Cloud {
		if !strings.Contains(c.token, ":") {
			return "", "", errors.New("jira: the token for Jira Cloud must be email:api_token (an Atlassian account's email and an API token): check the variable tracker.token_env names")
		}
		return f, "/rest/api/3", nil
	}
	return f, "/rest/api/2", nil
}

// authorization is the header the token makes: Basic for an
// email:api_token pair (Cloud), Bearer for a personal access token. Before
// the flavor is known the token's shape decides, which is the same choice.
func (c *Client) authorization() string {
	c.mu.Lock()
	f := c.flavor
	c.mu.Unlock()
	if f == Cloud || (f == "" && strings.Contains(c.token, ":")) {
		user, secret, _ := strings.Cut(c.token, ":")
		return "Basic " + basic(user, secret)
	}
	return "Bearer " + c.token
}

// clean masks secrets in text about to be sent: the Client's own, and any
// of a well-known shape (an agent's text goes to the tracker through it).
func (c *Client) clean(s string) string { return redact.WellKnown(c.scrub(s)) }

// scrub masks the Client's secrets in a message it received: a server may
// quote the request back, token included.
func (c *Client) scrub(s string) string { return c.masks.String(s) }

// browse is an issue's page on the site.
func (c *Client) browse(key string) string { return c.site.String() + "/browse/" + key }
