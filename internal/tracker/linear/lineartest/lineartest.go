// Package lineartest is a fake of the parts of Linear's GraphQL API cadre
// uses, served by httptest at POST /graphql in Linear's wire format: teams
// with their workflow states, issues with labels, comments and
// attachments.
//
// It answers named operations: each request's operationName must be one
// the fake knows, declared as such in the document, whose root field it
// selects; its variables are decoded and checked against the input types
// of Linear's schema (an unknown input field is refused, as Linear
// refuses it); the answer has the shape Linear gives that selection. An
// unknown operation is answered with a GraphQL validation error. Issue
// filters (IssueFilter) are evaluated: team, state and labels by the
// comparators eq, neq, in, nin, eqIgnoreCase and neqIgnoreCase, and and /
// or. Every answer carries Linear's X-RateLimit-Requests-* and
// X-RateLimit-Complexity-* headers, resets in epoch milliseconds.
//
// Fault knobs (Fail) replace an answer with an HTTP status and a GraphQL
// error (RATELIMITED with the budget spent until a reset), or carry a
// request out and drop its answer, as a lost connection does.
package lineartest

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// State is a workflow state of a team. Type is one of Linear's: triage,
// backlog, unstarted, started, completed, canceled.
type State struct {
	Name string
	Type string
}

// DefaultStates is a new team's workflow, as Linear makes it.
var DefaultStates = []State{
	{"Backlog", "backlog"}, {"Todo", "unstarted"}, {"In Progress", "started"},
	{"In Review", "started"}, {"Done", "completed"}, {"Canceled", "canceled"},
}

// Comment is a comment on an issue. An empty ID takes the next free one; a
// zero Created, the next tick of the fake's clock.
type Comment struct {
	ID      string
	Author  string // a user's name; "" = a bot's comment (no user)
	Body    string
	Created time.Time
}

// Attachment is a link attached to an issue.
type Attachment struct {
	ID    string
	URL   string
	Title string
}

// Issue is an issue to serve, and as read back.
type Issue struct {
	Identifier  string // "ENG-42"; the team ENG must have been added
	Title       string
	Description string
	Creator     string
	Labels      []string
	State       string // a state's name; "" = the team's first unstarted one
	Comments    []Comment
	Attachments []Attachment
}

// Fault replaces the answer to one request. A Code of RATELIMITED spends
// the requests budget until ResetIn from now, as Linear reports it; its
// Status defaults to 400, Linear's. Lost carries the request out and then
// drops the connection before any answer.
type Fault struct {
	Status  int
	Code    string
	Message string
	ResetIn time.Duration
	Lost    bool
}

// Call is one request received, as decoded.
type Call struct {
	Operation string
	Query     string
	Variables map[string]any
	Header    http.Header
	Status    int
}

// Server is the fake. Its methods are safe for concurrent use.
type Server struct {
	URL    string // the GraphQL endpoint, http://127.0.0.1:PORT/graphql
	Token  string // every request must carry it; "" accepts any
	Viewer string // the token's user: author of comments made through the API

	t   testing.TB
	srv *httptest.Server

	mu        sync.Mutex
	teams     map[string]*team  // by key
	issues    map[string]*issue // by identifier
	order     []*issue          // as added: the order lists come in
	seq       int
	clock     time.Time
	calls     []Call
	faults    map[int]Fault // by request number
	remaining int
}

type team struct {
	id, key string
	states  []*state
}

type state struct {
	id, name, typ string
	position      float64
}

type issue struct {
	id         string
	identifier string
	number     int
	team       *team
	state      *state
	title      string
	desc       string
	creator    string
	labels     []string
	created    time.Time
	comments   []Comment
	attached   []Attachment
}

// requestBudget is the requests an hour the fake reports, as Linear does a
// personal API key's.
const requestBudget = 5000

// New starts a fake expecting token (any when empty): sent bare, or as
// Bearer when it is an OAuth token (lin_oauth_…). It stops when the test
// ends.
func New(t testing.TB, token string) *Server {
	s := &Server{
		Token: token, Viewer: "cadre bot", t: t,
		teams: map[string]*team{}, issues: map[string]*issue{}, faults: map[int]Fault{},
		clock: time.Date(2026, 1, 2, 9, 0, 0, 0, time.UTC), remaining: requestBudget,
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL + "/graphql"
	t.Cleanup(s.srv.Close)
	return s
}

// id returns the next id, in UUID form as Linear's ids are.
func (s *Server) id() string {
	s.seq++
	return fmt.Sprintf("00000000-0000-4000-8000-%012d", s.seq)
}

// tick is the fake's clock, a second later each time it is read, so
// creation times order as additions do.
func (s *Server) tick() time.Time {
	s.clock = s.clock.Add(time.Second)
	return s.clock
}

// AddTeam makes team key with states (DefaultStates when none).
func (s *Server) AddTeam(key string, states ...State) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(states) == 0 {
		states = DefaultStates
	}
	tm := &team{id: s.id(), key: key}
	for i, st := range states {
		tm.states = append(tm.states, &state{id: s.id(), name: st.Name, typ: st.Type, position: float64(i)})
	}
	s.teams[key] = tm
}

// AddIssue adds is to the team its identifier names.
func (s *Server) AddIssue(is Issue) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key, num, ok := strings.Cut(is.Identifier, "-")
	n, err := strconv.Atoi(num)
	tm := s.teams[key]
	if !ok || err != nil || tm == nil {
		s.t.Fatalf("lineartest: %q is not an identifier of a team added", is.Identifier)
	}
	st := tm.first("unstarted")
	if is.State != "" {
		st = tm.named(is.State)
	}
	if st == nil {
		s.t.Fatalf("lineartest: team %s has no state %q", key, is.State)
	}
	in := &issue{id: s.id(), identifier: is.Identifier, number: n, team: tm, state: st, title: is.Title,
		desc: is.Description, creator: is.Creator, labels: slices.Clone(is.Labels), created: s.tick()}
	for _, c := range is.Comments {
		in.comments = append(in.comments, s.comment(c))
	}
	for _, a := range is.Attachments {
		if a.ID == "" {
			a.ID = s.id()
		}
		in.attached = append(in.attached, a)
	}
	s.issues[is.Identifier] = in
	s.order = append(s.order, in)
}

func (s *Server) comment(c Comment) Comment {
	if c.ID == "" {
		c.ID = s.id()
	}
	if c.Created.IsZero() {
		c.Created = s.tick()
	}
	return c
}

func (tm *team) first(typ string) *state {
	for _, st := range tm.states {
		if st.typ == typ {
			return st
		}
	}
	return nil
}

func (tm *team) named(name string) *state {
	for _, st := range tm.states {
		if strings.EqualFold(st.name, name) {
			return st
		}
	}
	return nil
}

// Issue reads issue key back: its state, comments (oldest first) and
// attachments as they are now.
func (s *Server) Issue(key string) Issue {
	s.mu.Lock()
	defer s.mu.Unlock()
	in := s.issues[key]
	if in == nil {
		s.t.Fatalf("lineartest: no issue %s", key)
	}
	return Issue{Identifier: in.identifier, Title: in.title, Description: in.desc, Creator: in.creator,
		Labels: slices.Clone(in.labels), State: in.state.name,
		Comments: slices.Clone(in.comments), Attachments: slices.Clone(in.attached)}
}

// Fail answers the nth request from now on (1 = the very next) as f says.
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

// Count returns how many requests were of the named operation.
func (s *Server) Count(operation string) int {
	n := 0
	for _, c := range s.Calls() {
		if c.Operation == operation {
			n++
		}
	}
	return n
}

// EditComment replaces the body of comment id on issue key, as a person
// editing it does.
func (s *Server) EditComment(key, id, body string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	in := s.issues[key]
	if in == nil {
		s.t.Fatalf("lineartest: no issue %s", key)
	}
	for i := range in.comments {
		if in.comments[i].ID == id {
			in.comments[i].Body = body
			return
		}
	}
	s.t.Fatalf("lineartest: no comment %s on %s", id, key)
}
