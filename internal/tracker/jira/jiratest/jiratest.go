// Package jiratest is a fake of the Jira REST endpoints cadre uses, served
// by httptest in Jira's wire format, as Jira Cloud (REST v3: descriptions
// and comments in the Atlassian Document Format, Basic auth with
// email:api_token, search by nextPageToken) or as Jira Data Center (REST
// v2: wiki text, Bearer personal access tokens, search by startAt):
// serverInfo, issues, their comments (with entity properties), workflow
// transitions, remote links (upserted by globalId) and JQL search. The
// JQL evaluator knows what cadre sends (project, labels, status,
// statusCategory, key; =, !=, in, not in; AND, OR, NOT, parentheses,
// ORDER BY) and refuses anything else with a 400, as Jira does a query it
// cannot parse.
//
// Faults replace an answer (before the request is served, or after it,
// so a write is carried out and its answer lost), and every request is
// recorded for a test to read.
package jiratest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Flavors the fake serves as.
const (
	Cloud      = "cloud"
	DataCenter = "datacenter"
)

// Issue is an issue to serve, and what Server.Issue reads back.
type Issue struct {
	Key     string // PROJ-123
	Summary string
	// Description is Markdown (served as ADF made of its paragraphs) or an
	// ADF document's JSON on Cloud; wiki text on Data Center.
	Description string
	Reporter    string // a display name; "" = "Reporter"
	Labels      []string
	Status      string // "" = "To Do"
	Comments    []Comment
	Links       []RemoteLink // read back only: AddIssue ignores them
}

// Comment is a comment on an issue. ID "" takes the next free id; a zero
// Created is the time it was added.
type Comment struct {
	ID     string
	Author string // a display name; "" = the token's user
	// Body is as Issue's Description; a comment posted through the API on
	// Cloud holds the ADF document's JSON it was posted with.
	Body       string
	Properties map[string]json.RawMessage
	Created    time.Time
}

// Transition is one way out of a status, to status To.
type Transition struct {
	ID   string
	Name string
	To   string
}

// RemoteLink is a link from an issue to something outside Jira.
type RemoteLink struct {
	ID           int64
	GlobalID     string
	URL          string
	Title        string
	Relationship string
	Icon         string // object.icon.url16x16
}

// Fault replaces the answer to one request. RetryAfter > 0 adds a
// Retry-After header; an empty Message is Jira's own for the status. With
// AfterServe the request is carried out first and only its answer
// replaced: a write made whose answer was lost.
type Fault struct {
	Status     int
	RetryAfter int
	Message    string
	AfterServe bool
}

// Call is one recorded request and the status it was answered with.
type Call struct {
	Method   string
	Path     string
	RawQuery string
	Header   http.Header
	Body     string
	Status   int
}

// Server is the fake. Its methods are safe for concurrent use.
type Server struct {
	URL    string // the site, http://127.0.0.1:PORT; REST under /rest/api/3 (Cloud) or /rest/api/2
	Flavor string // Cloud or DataCenter
	Token  string // Cloud: the "email:api_token" pair; Data Center: the personal access token
	User   string // the token's user's display name: author of what is made through the API

	t   testing.TB
	srv *httptest.Server

	mu         sync.Mutex
	issues     map[string]*Issue
	order      []string // keys in the order added
	workflow   map[string][]Transition
	categories map[string]string // status category key by status name, lower case
	calls      []Call
	faults     map[int]Fault // by request number
	seq        int64
	pageSize   int
}

// DefaultWorkflow is the workflow a new Server has: To Do → In Progress →
// In Review → Done, any status to Done, and back. Transitions are named
// for the act, not for the status they lead to, as in most real
// workflows.
func DefaultWorkflow() map[string][]Transition {
	done := Transition{ID: "41", Name: "Done", To: "Done"}
	return map[string][]Transition{
		"To Do":       {{ID: "11", Name: "Start Progress", To: "In Progress"}, done},
		"In Progress": {{ID: "21", Name: "Request Review", To: "In Review"}, {ID: "12", Name: "Stop Progress", To: "To Do"}, done},
		"In Review":   {{ID: "31", Name: "Back to Work", To: "In Progress"}, done},
		"Done":        {{ID: "51", Name: "Reopen", To: "To Do"}},
	}
}

// New starts a fake Jira of flavor (Cloud or DataCenter) that accepts
// token alone, and stops it when the test ends.
func New(t testing.TB, flavor, token string) *Server {
	if flavor != Cloud && flavor != DataCenter {
		t.Fatalf("jiratest: flavor %q is neither %q nor %q", flavor, Cloud, DataCenter)
	}
	s := &Server{
		Flavor: flavor, Token: token, User: "Cadre Bot", t: t,
		issues: map[string]*Issue{}, workflow: DefaultWorkflow(), faults: map[int]Fault{}, pageSize: 50,
		categories: map[string]string{"to do": "new", "open": "new", "backlog": "new",
			"done": "done", "closed": "done", "resolved": "done"},
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	t.Cleanup(s.srv.Close)
	return s
}

// AddIssue serves is.
func (s *Server) AddIssue(is Issue) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !validKey(is.Key) {
		s.t.Fatalf("jiratest: AddIssue: %q is not an issue key", is.Key)
	}
	is.Status = cmpOr(is.Status, "To Do")
	is.Reporter = cmpOr(is.Reporter, "Reporter")
	is.Labels = slices.Clone(is.Labels)
	is.Links = nil
	is.Comments = slices.Clone(is.Comments)
	now := time.Now()
	for i := range is.Comments {
		s.fillComment(&is.Comments[i], now.Add(time.Duration(i)*time.Millisecond))
	}
	if s.issues[is.Key] == nil {
		s.order = append(s.order, is.Key)
	}
	s.issues[is.Key] = &is
}

func (s *Server) fillComment(c *Comment, now time.Time) {
	if c.ID == "" {
		s.seq++
		c.ID = strconv.FormatInt(10000+s.seq, 10)
	}
	if c.Created.IsZero() {
		c.Created = now
	}
	c.Author = cmpOr(c.Author, s.User)
}

// AddComment adds a comment to the issue key, as a person would.
func (s *Server) AddComment(key string, c Comment) {
	s.mu.Lock()
	defer s.mu.Unlock()
	is := s.issues[key]
	if is == nil {
		s.t.Fatalf("jiratest: AddComment: no issue %s", key)
	}
	s.fillComment(&c, time.Now())
	is.Comments = append(is.Comments, c)
}

// Issue reads back the issue key as it stands: its status, its comments
// with their properties, its remote links.
func (s *Server) Issue(key string) Issue {
	s.mu.Lock()
	defer s.mu.Unlock()
	is := s.issues[key]
	if is == nil {
		s.t.Fatalf("jiratest: Issue: no issue %s", key)
	}
	out := *is
	out.Labels, out.Comments, out.Links = slices.Clone(is.Labels), slices.Clone(is.Comments), slices.Clone(is.Links)
	return out
}

// SetTransitions replaces the workflow: the transitions out of each
// status, by its name.
func (s *Server) SetTransitions(workflow map[string][]Transition) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.workflow = map[string][]Transition{}
	for from, ts := range workflow {
		s.workflow[from] = slices.Clone(ts)
	}
}

// SetCategory puts status in a status category: "new" (To Do),
// "indeterminate" (In Progress) or "done". A status not set is "done"
// when named Done, Closed or Resolved, "new" when To Do, Open or Backlog,
// "indeterminate" otherwise.
func (s *Server) SetCategory(status, category string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.categories[strings.ToLower(status)] = category
}

// SetPageSize caps how many comments or issues one page holds, whatever
// the client asks for (50 by default), as Jira caps maxResults.
func (s *Server) SetPageSize(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pageSize = max(n, 1)
}

// Fail answers the nth request from now on (1 = the very next) with f.
func (s *Server) Fail(n int, f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults[len(s.calls)+n] = f
}

// Calls returns every request received so far.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Call, len(s.calls))
	for i, c := range s.calls {
		c.Header = c.Header.Clone()
		out[i] = c
	}
	return out
}

// Count returns how many requests had method and a path ending in suffix
// ("/transitions", "/rest/api/3/issue/PROJ-1/comment").
func (s *Server) Count(method, suffix string) int {
	n := 0
	for _, c := range s.Calls() {
		if c.Method == method && strings.HasSuffix(c.Path, suffix) {
			n++
		}
	}
	return n
}

func cmpOr(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

func validKey(k string) bool {
	p, n, ok := strings.Cut(k, "-")
	if !ok || p == "" || p[0] < 'A' || p[0] > 'Z' {
		return false
	}
	v, err := strconv.Atoi(n)
	return err == nil && v > 0 && strings.ToUpper(p) == p
}
