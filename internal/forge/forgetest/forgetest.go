// Package forgetest is a fake of the GitHub REST endpoints cadre uses,
// served by httptest and speaking GitHub's documented wire format: issues
// (pull requests listed among them with a pull_request key), issue
// comments, labels, milestones, and pull requests (listed by head branch,
// created, updated, fetched), with Link pagination and rate-limit headers.
// For following a pull request to its merge it also serves a commit's
// check runs and combined status, an Actions job's log (a 302 to a signed
// link, as GitHub does), reviews, review comments and replies, requested
// reviewers, mergeability and the merge itself, computed from a real bare
// git repository when given one (SetGitDir, GitRepo). A second client,
// go-github, reads it in gogithub_test.go, so a deviation from the real
// format shows there.
//
// Every GET answered 200 carries an ETag; a conditional GET naming it is
// answered 304, spends no quota and is counted apart (Counts), so a test
// can tell what a poll costs.
//
// It records every request, and has knobs for the failures a client must
// survive: a fault (403/429 with retry-after, a secondary limit, a 5xx) on
// the Nth request, a pull request that "already exists" when created, a
// create refused with a message quoting the request's credential back, and
// a create, reply or merge that succeeds but whose answer never arrives; a
// quota to report (SetRateLimit); a mergeability still being computed
// (SetComputing); and writes held in flight (HoldWrites) while it counts
// how many are served at once, in all and per resource.
package forgetest

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Issue is an issue to serve. Number 0 takes the next free number.
type Issue struct {
	Number    int
	Title     string
	Body      string
	Author    string // "" = octocat
	Labels    []string
	State     string // "" = open
	Milestone int    // a milestone number added with AddMilestone; 0 = none
	Assignees []string
	Comments  []Comment
}

// Comment is an issue comment. ID 0 takes the next free id.
type Comment struct {
	ID     int64
	Author string
	Body   string
}

// PR is a pull request as the fake holds it.
type PR struct {
	Number int
	Title  string
	Body   string
	Head   string // branch
	Owner  string // owner of the head branch; "" = the repository's owner
	Base   string
	State  string // open or closed
	Merged bool
	Draft  bool
	Labels []string
	Author string
	// HeadSHA is the head's commit when the repository has no git
	// directory (SetGitDir); "" makes one up from the branch's name.
	HeadSHA string
	// MergeCommit is the commit a merge through the API made.
	MergeCommit string
}

// Call is one recorded request and the status it was answered with (0 when
// the answer was never sent: a stall the client gave up on).
type Call struct {
	Method   string
	Path     string
	RawQuery string
	Header   http.Header
	Body     string
	Status   int
}

// Fault replaces the answer to one request.
type Fault struct {
	Status  int
	Header  map[string]string
	Message string
	// Doc is the documentation_url's path under docs.github.com/rest, as
	// GitHub sends it: clients (go-github among them) tell a secondary
	// rate limit by its "#about-secondary-rate-limits" anchor.
	Doc string
}

// The documentation_url paths of GitHub's rate-limit answers.
const (
	secondaryDoc = "/using-the-rest-api/rate-limits-for-the-rest-api#about-secondary-rate-limits"
	primaryDoc   = "/using-the-rest-api/rate-limits-for-the-rest-api#about-primary-rate-limits"
)

// RetryAfter is a rate-limit answer with status (403 or 429) asking the
// client to wait seconds.
func RetryAfter(status, seconds int) Fault {
	return Fault{Status: status, Header: map[string]string{"Retry-After": strconv.Itoa(seconds)}, Doc: secondaryDoc,
		Message: "You have exceeded a secondary rate limit. Please wait a few minutes before you try again."}
}

// SecondaryLimit is GitHub's secondary-limit 403 without a retry-after.
func SecondaryLimit() Fault {
	return Fault{Status: http.StatusForbidden, Doc: secondaryDoc,
		Message: "You have exceeded a secondary rate limit and have been temporarily blocked from content creation. Please retry your request again later."}
}

// PrimaryLimit is the 403 of a spent hourly quota that resets at reset.
func PrimaryLimit(reset time.Time) Fault {
	return Fault{Status: http.StatusForbidden, Message: "API rate limit exceeded for user ID 1.", Doc: primaryDoc,
		Header: map[string]string{"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": strconv.FormatInt(reset.Unix(), 10)}}
}

// ServerError is a 502 from GitHub's front end.
func ServerError() Fault {
	return Fault{Status: http.StatusBadGateway, Message: "Server Error"}
}

// Endpoint names a write whose next answer can be set with SetNext. The
// modes other than Normal, Stall and ServerErrorAfter apply to CreatePR
// only.
type Endpoint int

const (
	CreatePR Endpoint = iota
	CreateComment
	CreateReply // a reply to a review comment
	Merge       // a pull request's merge
)

// Mode is how the next write to an Endpoint is answered.
type Mode int

const (
	// Normal does the write and answers it.
	Normal Mode = iota
	// Conflict (CreatePR only) creates the pull request, as if another
	// process had just done so, then answers 422 "already exists".
	Conflict
	// Stall does the write, then holds the answer until the client gives
	// up: the "timed out but did succeed" case.
	Stall
	// ServerErrorAfter does the write, then answers 502.
	ServerErrorAfter
	// Echo (CreatePR only) makes nothing and answers 422 Validation
	// Failed with an error message quoting the request's Authorization
	// header, as is and as the basic credential git sends (base64 of
	// "x-access-token:TOKEN"): a message that repeats the request back.
	Echo
)

func (m Mode) String() string {
	switch m {
	case Normal:
		return "normal"
	case Conflict:
		return "conflict"
	case Stall:
		return "stall"
	case ServerErrorAfter:
		return "server error after"
	case Echo:
		return "echo"
	}
	return "mode(" + strconv.Itoa(int(m)) + ")"
}

// Server is the fake. Its methods are safe for concurrent use.
type Server struct {
	URL   string // the API base URL to give forge.New
	Token string // every request must carry "Bearer Token"; "" accepts any
	Login string // author of the comments and pull requests made through the API

	t       testing.TB
	srv     *httptest.Server
	closing chan struct{}

	mu        sync.Mutex
	repos     map[string]*repo
	calls     []Call
	faults    map[int]Fault
	next      map[Endpoint]Mode
	ids       int64
	remaining int
	limit     int
	reset     time.Time
	writing   int            // writes being answered now
	maxWrites int            // most writes ever answered at once
	inflight  map[string]int // writes being answered now by resource
	maxSame   int            // most writes ever answered at once for one resource
	hold      *hold          // set while writes are held

	notModified int // requests answered 304
	downloads   int // requests to a signed download link
}

type repo struct {
	owner, name string
	number      int             // last issue or pull request number
	issues      map[int]*record // issues and pull requests share numbers
	milestones  map[int]string
	checkRuns   map[string][]CheckRun // by commit
	statuses    map[string][]Status   // by commit
	jobLogs     map[int64]string      // by Actions job id
	gitDir      string                // a bare repository backing the branches; "" = none
	merges      map[[2]string]string  // merged tree of base and head commits; "" = conflict
	refs        map[string]string     // branches to commits, kept while serving one request
	serving     bool                  // a request is being answered
	protection  map[string]Protection // by base branch
}

type record struct {
	Issue
	pr *PR // set for a pull request

	// Of a pull request only:
	reviews        []Review
	reviewComments []ReviewComment
	requested      []string // logins whose review is requested
	computing      int      // fetches left that answer mergeable null
	changes        int      // changes made: updated_at moves with them
	head           string   // the head last served: a push moves updated_at
}

// New starts a fake that expects token (none when empty) and stops it when
// the test ends.
func New(t testing.TB, token string) *Server {
	s := &Server{
		Token: token, Login: "cadre-bot", t: t,
		closing: make(chan struct{}),
		repos:   map[string]*repo{}, faults: map[int]Fault{}, next: map[Endpoint]Mode{},
		remaining: 5000, limit: 5000, reset: time.Now().Add(time.Hour),
		inflight: map[string]int{},
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL + "/"
	t.Cleanup(s.Close)
	return s
}

// Close stops the fake, releasing any stalled answer.
func (s *Server) Close() {
	select {
	case <-s.closing:
		return
	default:
	}
	close(s.closing)
	s.ReleaseWrites()
	s.srv.Close()
}

func (s *Server) repo(owner, name string) *repo {
	key := owner + "/" + name
	r := s.repos[key]
	if r == nil {
		r = &repo{owner: owner, name: name, issues: map[int]*record{}, milestones: map[int]string{},
			checkRuns: map[string][]CheckRun{}, statuses: map[string][]Status{}, jobLogs: map[int64]string{},
			merges: map[[2]string]string{}}
		s.repos[key] = r
	}
	return r
}

func (r *repo) take(n int) int {
	if n == 0 {
		r.number++
		return r.number
	}
	r.number = max(r.number, n)
	return n
}

// AddRepo makes an empty repository; the other Add methods make theirs.
// Requests for a repository that does not exist get 404.
func (s *Server) AddRepo(owner, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.repo(owner, name)
}

// AddIssue serves is in owner/repo and returns its number.
func (s *Server) AddIssue(owner, name string, is Issue) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.repo(owner, name)
	is.Number = r.take(is.Number)
	if is.State == "" {
		is.State = "open"
	}
	if is.Author == "" {
		is.Author = "octocat"
	}
	for i := range is.Comments {
		if is.Comments[i].ID == 0 {
			s.ids++
			is.Comments[i].ID = s.ids
		}
	}
	r.issues[is.Number] = &record{Issue: is}
	return is.Number
}

// AddComment adds a comment to issue or pull request number and returns
// its id.
func (s *Server) AddComment(owner, name string, number int, author, body string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec := s.repo(owner, name).issues[number]
	if rec == nil {
		s.t.Fatalf("forgetest: AddComment: no issue %s/%s#%d", owner, name, number)
	}
	s.ids++
	rec.Comments = append(rec.Comments, Comment{ID: s.ids, Author: author, Body: body})
	return s.ids
}

// AddPR serves an existing pull request and returns its number.
func (s *Server) AddPR(owner, name string, p PR) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addPR(s.repo(owner, name), p)
}

func (s *Server) addPR(r *repo, p PR) int {
	p.Number = r.take(p.Number)
	if p.State == "" {
		p.State = "open"
	}
	if p.Merged {
		p.State = "closed"
	}
	if p.Owner == "" {
		p.Owner = r.owner
	}
	if p.Author == "" {
		p.Author = s.Login
	}
	rec := &record{Issue: Issue{Number: p.Number, Title: p.Title, Body: p.Body, Author: p.Author, State: p.State, Labels: p.Labels}, pr: &p}
	rec.touch() // opened after those before it, as on GitHub
	r.issues[p.Number] = rec
	return p.Number
}

// AddMilestone defines a milestone that issues can name by number.
func (s *Server) AddMilestone(owner, name string, number int, title string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.repo(owner, name).milestones[number] = title
}

// SetPRState closes, reopens or merges pull request number.
func (s *Server) SetPRState(owner, name string, number int, state string, merged bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec := s.repo(owner, name).issues[number]
	if rec == nil || rec.pr == nil {
		s.t.Fatalf("forgetest: SetPRState: no pull request %s/%s#%d", owner, name, number)
	}
	rec.pr.State, rec.pr.Merged, rec.State = state, merged, state
	rec.touch()
}

// SetPRHead moves the head of pull request number, without a git
// directory, to commit sha, as a push to its branch does: its update
// time moves with it.
func (s *Server) SetPRHead(owner, name string, number int, sha string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec := s.repo(owner, name).issues[number]
	if rec == nil || rec.pr == nil {
		s.t.Fatalf("forgetest: SetPRHead: no pull request %s/%s#%d", owner, name, number)
	}
	rec.pr.HeadSHA = sha
	rec.touch()
	rec.head = s.headSHA(s.repo(owner, name), rec.pr)
}

// Fail answers the nth request from now on (1 = the very next) with f
// instead of serving it.
func (s *Server) Fail(n int, f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults[len(s.calls)+n] = f
}

// SetNext sets how the next write to ep is answered; later ones are Normal.
func (s *Server) SetNext(ep Endpoint, m Mode) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.next[ep] = m
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

// Count returns how many requests had method and path (no query).
func (s *Server) Count(method, path string) int {
	n := 0
	for _, c := range s.Calls() {
		if c.Method == method && c.Path == path {
			n++
		}
	}
	return n
}

// PRs returns the pull requests of owner/repo by number.
func (s *Server) PRs(owner, name string) []PR {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []PR
	for _, rec := range s.repo(owner, name).issues {
		if rec.pr != nil {
			p := *rec.pr
			p.Labels = slices.Clone(rec.Labels)
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Number < out[j].Number })
	return out
}

// Comments returns the comments on issue or pull request number.
func (s *Server) Comments(owner, name string, number int) []Comment {
	s.mu.Lock()
	defer s.mu.Unlock()
	if rec := s.repo(owner, name).issues[number]; rec != nil {
		return slices.Clone(rec.Comments)
	}
	return nil
}

// MaxParallelWrites returns the most mutating requests that were ever
// being served at once.
func (s *Server) MaxParallelWrites() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.maxWrites
}

// serve records the request, then answers it: a fault, a bad-credentials
// 401, or the endpoint. A GET answered 200 carries an ETag (a download
// from a signed link aside), and one whose If-None-Match names it is
// answered 304 without a body, which spends no quota, as on GitHub.
func (s *Server) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	write := req.Method != http.MethodGet
	var res string
	if write {
		res = resource(req.URL.Path, body)
		s.enterWrite(res)
		s.waitHold(Call{Method: req.Method, Path: req.URL.Path, Body: string(body)})
	}
	s.mu.Lock()
	s.calls = append(s.calls, Call{Method: req.Method, Path: req.URL.Path, RawQuery: req.URL.RawQuery, Header: req.Header.Clone(), Body: string(body)})
	idx := len(s.calls) - 1
	a := s.answer(req, body)
	raw := a.encode()
	if !write && a.status == http.StatusOK && !a.stall && !a.free {
		a.header = withETag(a.header, raw)
		if notModified(req.Header.Get("If-None-Match"), a.header["ETag"]) {
			a.status, raw = http.StatusNotModified, nil
			delete(a.header, "Link")
			s.notModified++
		}
	}
	switch {
	case a.free:
		s.downloads++
	case a.status != http.StatusNotModified:
		s.remaining = max(s.remaining-1, 0)
	}
	s.calls[idx].Status = a.status
	if a.stall {
		s.calls[idx].Status = 0
	}
	remaining, limit, reset := s.remaining, s.limit, s.reset
	s.mu.Unlock()
	if write {
		// Before answering: a client that waits for each answer can never
		// be seen with two writes at once.
		s.leaveWrite(res)
	}

	if a.stall {
		select {
		case <-req.Context().Done():
		case <-s.closing:
		}
		return
	}
	h := w.Header()
	if raw != nil {
		h.Set("Content-Type", "application/json; charset=utf-8")
		if a.text != nil {
			h.Set("Content-Type", "text/plain; charset=utf-8")
		}
	}
	h.Set("X-GitHub-Api-Version-Selected", "2022-11-28")
	h.Set("X-GitHub-Request-Id", fmt.Sprintf("FAKE:%d", idx+1))
	h.Set("X-RateLimit-Limit", strconv.Itoa(limit))
	h.Set("X-RateLimit-Remaining", strconv.Itoa(remaining))
	h.Set("X-RateLimit-Used", strconv.Itoa(max(limit-remaining, 0)))
	h.Set("X-RateLimit-Reset", strconv.FormatInt(reset.Unix(), 10))
	h.Set("X-RateLimit-Resource", "core")
	for k, v := range a.header {
		h.Set(k, v)
	}
	w.WriteHeader(a.status)
	_, _ = w.Write(raw)
}

type answer struct {
	status int
	header map[string]string
	body   any    // sent as JSON when not nil
	text   []byte // sent as plain text when not nil, instead of body
	stall  bool
	free   bool // spends no quota: a download from a signed link
}

// encode is the answer's body as sent, nil when it has none.
func (a answer) encode() []byte {
	if a.text != nil {
		return a.text
	}
	if a.body == nil {
		return nil
	}
	var b bytes.Buffer
	_ = json.NewEncoder(&b).Encode(a.body)
	return b.Bytes()
}

func msg(status int, m, doc string) answer {
	return answer{status: status, body: map[string]any{
		"message": m, "documentation_url": "https://docs.github.com/rest" + doc, "status": strconv.Itoa(status)}}
}

func notFound() answer { return msg(http.StatusNotFound, "Not Found", "") }

// answer serves one request; the caller holds s.mu.
func (s *Server) answer(req *http.Request, body []byte) answer {
	if f, ok := s.faults[len(s.calls)]; ok {
		delete(s.faults, len(s.calls))
		a := msg(f.Status, f.Message, f.Doc)
		a.header = f.Header
		return a
	}
	if strings.HasPrefix(req.URL.Path, downloadPath) && req.Method == http.MethodGet {
		return s.download(req) // a signed link: no credential wanted
	}
	if s.Token != "" && req.Header.Get("Authorization") != "Bearer "+s.Token {
		return msg(http.StatusUnauthorized, "Bad credentials", "")
	}
	parts := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	if len(parts) < 4 || parts[0] != "repos" {
		return notFound()
	}
	r := s.repos[parts[1]+"/"+parts[2]]
	if r == nil {
		return notFound()
	}
	r.serving = true
	defer func() { r.serving, r.refs = false, nil }()
	q := req.URL.Query()
	rest := parts[3:]
	num := func() (*record, bool) {
		if len(rest) < 2 {
			return nil, false
		}
		n, err := strconv.Atoi(rest[1])
		rec := r.issues[n]
		return rec, err == nil && rec != nil
	}
	switch {
	case rest[0] == "issues" && len(rest) == 1 && req.Method == http.MethodGet:
		return s.listIssues(req, r, q)
	case rest[0] == "issues" && len(rest) == 2 && req.Method == http.MethodGet:
		if rec, ok := num(); ok {
			return answer{status: http.StatusOK, body: s.issueJSON(r, rec)}
		}
	case rest[0] == "issues" && len(rest) == 3 && rest[2] == "comments":
		if rec, ok := num(); ok {
			if req.Method == http.MethodGet {
				return s.page(req, q, mapSlice(rec.Comments, func(c Comment) any { return s.commentJSON(r, rec, c) }))
			}
			if req.Method == http.MethodPost {
				return s.createComment(r, rec, body)
			}
		}
	case rest[0] == "issues" && len(rest) == 3 && rest[2] == "labels" && req.Method == http.MethodPost:
		if rec, ok := num(); ok {
			return s.addLabels(rec, body)
		}
	case rest[0] == "issues" && len(rest) >= 4 && rest[2] == "labels" && req.Method == http.MethodDelete:
		if rec, ok := num(); ok {
			return s.removeLabel(rec, req)
		}
	case rest[0] == "branches" || rest[0] == "rules":
		return s.protection(req, r, rest)
	case rest[0] == "milestones" && len(rest) == 1 && req.Method == http.MethodGet:
		return s.listMilestones(req, r, q)
	case rest[0] == "pulls" && len(rest) == 1 && req.Method == http.MethodGet:
		return s.listPRs(req, r, q)
	case rest[0] == "pulls" && len(rest) == 1 && req.Method == http.MethodPost:
		if s.next[CreatePR] == Echo {
			delete(s.next, CreatePR)
			return echo(req)
		}
		return s.createPR(r, body)
	case rest[0] == "pulls" && len(rest) == 2:
		rec, ok := num()
		if !ok || rec.pr == nil {
			return notFound()
		}
		if req.Method == http.MethodGet {
			return s.getPR(r, rec)
		}
		if req.Method == http.MethodPatch {
			return s.updatePR(r, rec, body)
		}
	case rest[0] == "pulls" && len(rest) >= 3:
		rec, ok := num()
		if !ok || rec.pr == nil {
			return notFound()
		}
		return s.pullPart(req, r, rec, rest[2:], q, body)
	case rest[0] == "commits" && len(rest) >= 3 && req.Method == http.MethodGet:
		ref := strings.Join(rest[1:len(rest)-1], "/")
		switch rest[len(rest)-1] {
		case "check-runs":
			return s.listCheckRuns(req, r, ref, q)
		case "status":
			return s.combinedStatus(req, r, ref, q)
		}
	case rest[0] == "actions" && len(rest) == 4 && rest[1] == "jobs" && rest[3] == "logs" && req.Method == http.MethodGet:
		return s.jobLogs(r, rest[2])
	}
	return notFound()
}

// pullPart serves what lies under a pull request's path: its reviews,
// review comments and replies, requested reviewers, and merge.
func (s *Server) pullPart(req *http.Request, r *repo, rec *record, part []string, q url.Values, body []byte) answer {
	m := req.Method
	switch {
	case len(part) == 1 && part[0] == "reviews" && m == http.MethodGet:
		return s.listReviews(req, r, rec, q)
	case len(part) == 1 && part[0] == "comments" && m == http.MethodGet:
		return s.page(req, q, mapSlice(rec.reviewComments, func(c ReviewComment) any { return s.reviewCommentJSON(r, rec, c) }))
	case len(part) == 1 && part[0] == "comments" && m == http.MethodPost:
		return s.createReviewComment(r, rec, body)
	case len(part) == 3 && part[0] == "comments" && part[2] == "replies" && m == http.MethodPost:
		if id, ok := reviewCommentID(part[1]); ok {
			return s.reply(r, rec, id, body)
		}
	case len(part) == 1 && part[0] == "requested_reviewers" && m == http.MethodPost:
		return s.requestReviewers(r, rec, body)
	case len(part) == 1 && part[0] == "requested_reviewers" && m == http.MethodGet:
		return answer{status: http.StatusOK, body: map[string]any{"users": requestedJSON(rec.requested), "teams": []any{}}}
	case len(part) == 1 && part[0] == "merge" && m == http.MethodPut:
		return s.merge(r, rec, body)
	}
	return notFound()
}

func (s *Server) listMilestones(req *http.Request, r *repo, q url.Values) answer {
	var ms []any
	for _, n := range sortedKeys(r.milestones) {
		ms = append(ms, map[string]any{"number": n, "title": r.milestones[n], "state": "open"})
	}
	return s.page(req, q, ms)
}

func (s *Server) listIssues(req *http.Request, r *repo, q url.Values) answer {
	state := q.Get("state")
	if state == "" {
		state = "open"
	}
	var labels []string
	if l := q.Get("labels"); l != "" {
		labels = strings.Split(l, ",")
	}
	var out []any
	for _, n := range sortedKeys(r.issues) {
		rec := r.issues[n]
		if state != "all" && rec.State != state {
			continue
		}
		if !containsAll(rec.Labels, labels) || !matchMilestone(rec.Milestone, q.Get("milestone")) ||
			!matchAssignee(rec.Assignees, q.Get("assignee")) {
			continue
		}
		out = append(out, s.issueJSON(r, rec))
	}
	slices.Reverse(out) // newest first, GitHub's default
	return s.page(req, q, out)
}

func containsAll(have, want []string) bool {
	for _, w := range want {
		if !slices.ContainsFunc(have, func(h string) bool { return strings.EqualFold(h, strings.TrimSpace(w)) }) {
			return false
		}
	}
	return true
}

func matchMilestone(have int, want string) bool {
	switch want {
	case "":
		return true
	case "*":
		return have != 0
	case "none":
		return have == 0
	}
	n, err := strconv.Atoi(want)
	return err == nil && n == have
}

func matchAssignee(have []string, want string) bool {
	switch want {
	case "":
		return true
	case "*":
		return len(have) > 0
	case "none":
		return len(have) == 0
	}
	return slices.Contains(have, want)
}

func (s *Server) listPRs(req *http.Request, r *repo, q url.Values) answer {
	state := q.Get("state")
	if state == "" {
		state = "open"
	}
	head := q.Get("head")
	var out []any
	for _, n := range sortedKeys(r.issues) {
		rec := r.issues[n]
		if rec.pr == nil || (state != "all" && rec.pr.State != state) {
			continue
		}
		// Like GitHub, a head filter without "owner:" is ignored.
		if strings.Contains(head, ":") && rec.pr.Owner+":"+rec.pr.Head != head {
			continue
		}
		if b := q.Get("base"); b != "" && rec.pr.Base != b {
			continue
		}
		out = append(out, s.prJSON(r, rec, false))
	}
	slices.Reverse(out) // newest first, GitHub's default (sort=created)
	if q.Get("sort") == "updated" {
		slices.SortStableFunc(out, func(a, b any) int {
			return strings.Compare(b.(map[string]any)["updated_at"].(string), a.(map[string]any)["updated_at"].(string))
		})
	}
	if q.Get("direction") == "asc" {
		slices.Reverse(out)
	}
	return s.page(req, q, out)
}

func validation(resource, code, field, message string) answer {
	e := map[string]any{"resource": resource, "code": code}
	if field != "" {
		e["field"] = field
	}
	if message != "" {
		e["message"] = message
	}
	a := msg(http.StatusUnprocessableEntity, "Validation Failed", "/pulls/pulls#create-a-pull-request")
	a.body.(map[string]any)["errors"] = []any{e}
	return a
}

// echo is a 422 whose message repeats the request's credential.
func echo(req *http.Request) answer {
	auth := req.Header.Get("Authorization")
	token := strings.TrimPrefix(auth, "Bearer ")
	basic := base64.StdEncoding.EncodeToString([]byte("x-access-token:" + token))
	return validation("PullRequest", "custom", "", fmt.Sprintf("request with Authorization %q (basic %s) is not valid", auth, basic))
}

func (s *Server) createPR(r *repo, body []byte) answer {
	var in struct {
		Title string `json:"title"`
		Body  string `json:"body"`
		Head  string `json:"head"`
		Base  string `json:"base"`
		Draft bool   `json:"draft"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return msg(http.StatusBadRequest, "Problems parsing JSON", "")
	}
	for _, f := range []struct{ name, v string }{{"title", in.Title}, {"head", in.Head}, {"base", in.Base}} {
		if f.v == "" {
			return validation("PullRequest", "missing_field", f.name, "")
		}
	}
	owner, head := r.owner, in.Head
	if o, h, ok := strings.Cut(in.Head, ":"); ok {
		owner, head = o, h
	}
	mode := s.next[CreatePR]
	delete(s.next, CreatePR)
	exists := func() bool {
		for _, rec := range r.issues {
			if p := rec.pr; p != nil && p.State == "open" && p.Owner == owner && p.Head == head && p.Base == in.Base {
				return true
			}
		}
		return false
	}
	conflict := validation("PullRequest", "custom", "", "A pull request already exists for "+owner+":"+head+".")
	if exists() {
		return conflict
	}
	n := s.addPR(r, PR{Title: in.Title, Body: in.Body, Head: head, Owner: owner, Base: in.Base, Draft: in.Draft})
	switch mode {
	case Conflict:
		return conflict
	case Stall:
		return answer{stall: true}
	case ServerErrorAfter:
		return msg(http.StatusBadGateway, "Server Error", "")
	}
	return answer{status: http.StatusCreated, body: s.prJSON(r, r.issues[n], true)}
}

func (s *Server) updatePR(r *repo, rec *record, body []byte) answer {
	var in map[string]*string
	if err := json.Unmarshal(body, &in); err != nil {
		return msg(http.StatusBadRequest, "Problems parsing JSON", "")
	}
	p := rec.pr
	if v := in["state"]; v != nil {
		if *v != "open" && *v != "closed" {
			return validation("PullRequest", "invalid", "state", "")
		}
		if p.Merged && *v == "open" {
			return validation("PullRequest", "custom", "", "state cannot be changed. The pull request cannot be reopened.")
		}
		p.State, rec.State = *v, *v
	}
	if v := in["title"]; v != nil {
		p.Title, rec.Title = *v, *v
	}
	if v := in["body"]; v != nil {
		p.Body, rec.Body = *v, *v
	}
	if v := in["base"]; v != nil {
		p.Base = *v
	}
	rec.touch()
	return answer{status: http.StatusOK, body: s.prJSON(r, rec, true)}
}

func (s *Server) addLabels(rec *record, body []byte) answer {
	var in struct {
		Labels []string `json:"labels"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		var bare []string
		if json.Unmarshal(body, &bare) != nil {
			return msg(http.StatusBadRequest, "Problems parsing JSON", "")
		}
		in.Labels = bare
	}
	for _, l := range in.Labels {
		if !slices.Contains(rec.Labels, l) {
			rec.Labels = append(rec.Labels, l)
		}
	}
	rec.touch()
	return answer{status: http.StatusOK, body: labelsJSON(rec.Labels)}
}

func (s *Server) createComment(r *repo, rec *record, body []byte) answer {
	var in struct {
		Body *string `json:"body"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return msg(http.StatusBadRequest, "Problems parsing JSON", "")
	}
	if in.Body == nil {
		return validation("IssueComment", "missing_field", "body", "")
	}
	s.ids++
	c := Comment{ID: s.ids, Author: s.Login, Body: *in.Body}
	rec.Comments = append(rec.Comments, c)
	rec.touch()
	if a, lost := s.lostAfterWrite(CreateComment); lost {
		return a
	}
	return answer{status: http.StatusCreated, body: s.commentJSON(r, rec, c)}
}

// page serves items by page and per_page, with GitHub's Link header.
func (s *Server) page(req *http.Request, q url.Values, items []any) answer {
	pg, header := s.pageOf(req, q, items)
	return answer{status: http.StatusOK, body: pg, header: header}
}

// wrapped serves items by page inside the object wrap makes of each page,
// as GitHub serves check runs and commit statuses.
func (s *Server) wrapped(req *http.Request, q url.Values, items []any, wrap func(page []any) map[string]any) answer {
	pg, header := s.pageOf(req, q, items)
	return answer{status: http.StatusOK, body: wrap(pg), header: header}
}

// pageOf cuts the page of items that page and per_page ask for, and makes
// the Link header leading to the others.
func (s *Server) pageOf(req *http.Request, q url.Values, items []any) ([]any, map[string]string) {
	per, _ := strconv.Atoi(q.Get("per_page"))
	if per <= 0 {
		per = 30
	}
	per = min(per, 100)
	pg, _ := strconv.Atoi(q.Get("page"))
	pg = max(pg, 1)
	from := min((pg-1)*per, len(items))
	to := min(from+per, len(items))
	out := append([]any{}, items[from:to]...)
	last := max((len(items)+per-1)/per, 1)
	link := func(p int, rel string) string {
		v := url.Values{}
		for k, vs := range q {
			v[k] = vs
		}
		v.Set("page", strconv.Itoa(p))
		return fmt.Sprintf("<%s%s?%s>; rel=%q", s.srv.URL, req.URL.Path, v.Encode(), rel)
	}
	var links []string
	if pg < last {
		links = append(links, link(pg+1, "next"), link(last, "last"))
	}
	if pg > 1 {
		links = append(links, link(1, "first"), link(pg-1, "prev"))
	}
	if len(links) == 0 {
		return out, nil
	}
	return out, map[string]string{"Link": strings.Join(links, ", ")}
}

func user(login string) map[string]any {
	return map[string]any{"login": login, "id": len(login), "type": "User", "html_url": "https://github.com/" + login}
}

func labelsJSON(names []string) []any {
	out := []any{}
	for i, n := range names {
		out = append(out, map[string]any{"id": 100 + i, "name": n, "color": "ededed", "default": false, "description": nil})
	}
	return out
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func (s *Server) api(r *repo, kind string, n int) string {
	return fmt.Sprintf("%s/repos/%s/%s/%s/%d", s.srv.URL, r.owner, r.name, kind, n)
}

func htmlURL(r *repo, kind string, n int) string {
	return fmt.Sprintf("https://github.com/%s/%s/%s/%d", r.owner, r.name, kind, n)
}

func (s *Server) issueJSON(r *repo, rec *record) map[string]any {
	assignees := []any{}
	for _, a := range rec.Assignees {
		assignees = append(assignees, user(a))
	}
	var milestone any
	if rec.Milestone != 0 {
		milestone = map[string]any{"number": rec.Milestone, "title": r.milestones[rec.Milestone], "state": "open"}
	}
	j := map[string]any{
		"id": 1000000 + rec.Number, "node_id": fmt.Sprintf("I_%d", rec.Number),
		"url": s.api(r, "issues", rec.Number), "html_url": htmlURL(r, "issues", rec.Number),
		"number": rec.Number, "state": rec.State, "title": rec.Title, "body": nullable(rec.Body),
		"user": user(rec.Author), "labels": labelsJSON(rec.Labels), "assignees": assignees,
		"milestone": milestone, "comments": len(rec.Comments), "locked": false,
		"author_association": "CONTRIBUTOR", "created_at": "2024-01-01T00:00:00Z", "updated_at": "2024-01-02T00:00:00Z",
	}
	if rec.pr != nil {
		j["html_url"] = htmlURL(r, "pull", rec.Number)
		j["draft"] = rec.pr.Draft
		j["pull_request"] = map[string]any{
			"url": s.api(r, "pulls", rec.Number), "html_url": htmlURL(r, "pull", rec.Number),
			"diff_url": htmlURL(r, "pull", rec.Number) + ".diff", "patch_url": htmlURL(r, "pull", rec.Number) + ".patch",
			"merged_at": mergedAt(rec.pr),
		}
	}
	return j
}

func mergedAt(p *PR) any {
	if p.Merged {
		return "2024-01-03T00:00:00Z"
	}
	return nil
}

func (s *Server) commentJSON(r *repo, rec *record, c Comment) map[string]any {
	return map[string]any{
		"id": c.ID, "node_id": fmt.Sprintf("IC_%d", c.ID),
		"url":      fmt.Sprintf("%s/repos/%s/%s/issues/comments/%d", s.srv.URL, r.owner, r.name, c.ID),
		"html_url": fmt.Sprintf("%s#issuecomment-%d", htmlURL(r, "issues", rec.Number), c.ID),
		"body":     c.Body, "user": user(c.Author), "author_association": "CONTRIBUTOR",
		"created_at": "2024-01-01T00:00:00Z", "updated_at": "2024-01-01T00:00:00Z",
	}
}

func (s *Server) prJSON(r *repo, rec *record, single bool) map[string]any {
	p := rec.pr
	s.notePush(r, rec)
	branch := func(owner, ref, sha string) map[string]any {
		return map[string]any{"label": owner + ":" + ref, "ref": ref, "sha": sha, "user": user(owner)}
	}
	var closedAt any
	if p.State == "closed" {
		closedAt = "2024-01-03T00:00:00Z"
	}
	j := map[string]any{
		"id": 2000000 + p.Number, "node_id": fmt.Sprintf("PR_%d", p.Number),
		"url": s.api(r, "pulls", p.Number), "html_url": htmlURL(r, "pull", p.Number),
		"number": p.Number, "state": p.State, "locked": false, "title": p.Title, "body": nullable(p.Body),
		"user": user(p.Author), "labels": labelsJSON(rec.Labels), "draft": p.Draft,
		"head": branch(p.Owner, p.Head, s.headSHA(r, p)), "base": branch(r.owner, p.Base, s.baseSHA(r, p)),
		"created_at": "2024-01-01T00:00:00Z", "updated_at": rec.updatedAt(),
		"closed_at": closedAt, "merged_at": mergedAt(p), "merge_commit_sha": nullable(p.MergeCommit),
		"requested_reviewers": requestedJSON(rec.requested), "requested_teams": []any{},
		"author_association": "CONTRIBUTOR",
	}
	if single {
		mergeable, state := s.mergeability(r, rec)
		j["merged"] = p.Merged
		j["mergeable"] = mergeable
		j["mergeable_state"] = state
		j["comments"] = len(rec.Comments)
		j["review_comments"] = len(rec.reviewComments)
	}
	return j
}

func mapSlice[T any](in []T, f func(T) any) []any {
	out := make([]any, 0, len(in))
	for _, v := range in {
		out = append(out, f(v))
	}
	return out
}

func sortedKeys[V any](m map[int]V) []int {
	keys := make([]int, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	return keys
}

// lostAfterWrite is the answer to a write of endpoint ep once it is made,
// when SetNext asked for it to be lost (a stall, or a 502): the client
// must find what it wrote rather than write it again. The mode is used
// once.
func (s *Server) lostAfterWrite(ep Endpoint) (answer, bool) {
	mode := s.next[ep]
	delete(s.next, ep)
	switch mode {
	case Stall:
		return answer{stall: true}, true
	case ServerErrorAfter:
		return msg(http.StatusBadGateway, "Server Error", ""), true
	}
	return answer{}, false
}
