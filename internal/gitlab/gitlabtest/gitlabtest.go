// Package gitlabtest is a fake of the GitLab REST API v4 endpoints cadre
// uses, served by httptest in GitLab's documented wire format: projects
// (named by numeric id or by URL-encoded path, nested groups included),
// issues and their notes, merge requests (listed, created, updated,
// fetched, merged, rebased), their approvals, diff versions, notes and
// discussions with diff positions, pipelines and jobs with their traces,
// project members and users. Lists are paginated with X-Page, X-Next-Page, X-Total
// and Link; every answer carries the RateLimit-* headers.
//
// Given a real bare git repository (SetGitDir, GitRepo), merge requests
// follow its branches: a push to a source branch moves the merge request's
// sha and updated_at, adds a diff version, clears its merge_error and,
// when the project resets approvals on push, drops them; conflicts are
// computed by git merge-tree; and a merge makes a real merge (or squash)
// commit on the target branch, or fast-forwards it. The project's merge
// method (SetMergeMethod) is GitLab's: with "ff" or "rebase_merge" a
// merge request whose source lacks the target's head needs a rebase
// (need_rebase, its merge refused), which the rebase endpoint does in the
// repository, commit by commit, failing on a conflict as GitLab does.
//
// Every GET answered 200 carries a weak ETag; one whose If-None-Match
// names it is answered 304 without a body and counted apart (Counts), so a
// test can tell what a poll costs. The official client,
// gitlab.com/gitlab-org/api/client-go, reads the fake in clientgo_test.go,
// so a deviation from the real format shows there.
package gitlabtest

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Issue is an issue to serve. IID 0 takes the next free one.
type Issue struct {
	IID         int
	Title       string
	Description string
	Author      string // "" = the token's user
	Labels      []string
	State       string // opened (the default) or closed
	Milestone   string // a milestone's title; "" = none
	Assignees   []string
	Notes       []Note
}

// Note is a comment on an issue or a merge request. ID 0 takes the next
// free id; a zero Created is the time it was added.
type Note struct {
	ID      int64
	Author  string
	Body    string
	System  bool // written by GitLab itself: "approved this merge request"
	Created time.Time
}

// MR is a merge request as the fake holds it. IID 0 takes the next free
// one.
type MR struct {
	IID         int
	Title       string
	Description string
	Source      string // source branch
	Target      string // target branch; "" = the project's default branch
	State       string // opened (the default), closed, merged or locked
	Draft       bool   // also set by a "Draft:" title prefix
	Labels      []string
	Author      string // "" = the token's user
	// SHA is the head commit. With a git directory it follows the source
	// branch; without one, "" makes one up from the branch's name.
	SHA            string
	MergeCommitSHA string
	Squash         bool
	Reviewers      []string
	// FromFork says the source branch is a fork's, another project's.
	FromFork bool
}

// Job is one job of a pipeline. ID 0 takes the next free id.
type Job struct {
	ID           int64
	Name         string
	Stage        string
	Status       string // created, pending, running, success, failed, canceled, skipped or manual
	AllowFailure bool
	Trace        string // the job's log, served as text/plain
}

// Position places a diff note on line Line of the new version of Path.
type Position struct {
	Path string
	Line int
}

// Fault replaces the answer to one request. A 429 with RetryAfter carries
// a Retry-After header; an empty Message is GitLab's own for the status.
type Fault struct {
	Status     int
	RetryAfter int
	Message    string
}

// Call is one recorded request and the status it was answered with. Path
// is as sent on the wire, a project's path still URL-encoded.
type Call struct {
	Method   string
	Path     string
	RawQuery string
	Header   http.Header
	Body     string
	Status   int
}

// Tally counts the requests the fake received.
type Tally struct {
	Requests    int // every request, whatever its answer
	NotModified int // conditional GETs answered 304
}

// Charged is how many requests were answered in full: all but the 304s.
func (t Tally) Charged() int { return t.Requests - t.NotModified }

// Access levels of project members, as GitLab numbers them.
const (
	Guest      = 10
	Reporter   = 20
	Developer  = 30
	Maintainer = 40
	Owner      = 50
)

// Server is the fake. Its methods are safe for concurrent use.
type Server struct {
	URL      string // the instance's base, http://127.0.0.1:PORT; the API is at URL+"/api/v4"
	Token    string // every request must carry it; "" accepts any
	Username string // the token's user: author of what is made through the API

	t   testing.TB
	srv *httptest.Server

	mu          sync.Mutex
	projects    map[string]*project // by path
	users       map[string]*user    // by username
	seq         map[string]int64    // last id given, by kind
	calls       []Call
	faults      map[int]Fault // by request number
	notModified int
	limit       int
	remaining   int
	reset       time.Time
}

type user struct {
	id      int64
	name    string
	created time.Time
}

type project struct {
	id                int64
	path              string
	defaultBranch     string
	created           time.Time
	gitDir            string
	pipelineMustPass  bool
	resetOnPush       bool
	mergeMethod       string // merge, rebase_merge or ff
	rebaseDelay       int    // requests a rebase stays in progress for
	approvalsRequired int
	issueIID, mrIID   int
	issues            map[int]*issue
	mrs               map[int]*mr
	milestones        map[string]int64 // id by title
	pipelines         []*pipeline      // oldest first
	members           map[string]int   // access level by username
	merges            map[[2]string]string
	ancestors         map[[2]string]bool // whether [0] is an ancestor of [1]
	refs              map[string]string  // branches, read once per request
}

type issue struct {
	Issue
	id              int64
	created, update time.Time
	closed          time.Time
}

type mr struct {
	MR
	id          int64
	created     time.Time
	updated     time.Time
	mergedAt    time.Time
	closedAt    time.Time
	mergedBy    string
	squashSHA   string
	removeSrc   bool
	versions    []version // oldest first
	approvals   []approval
	discussions []*discussion
	checking    int // fetches left that answer "checking"
	mergeError  string
	rebasing    int // requests about it left before the rebase asked is done
}

type version struct {
	id                int64
	head, base, start string
	created           time.Time
}

type approval struct {
	user string
	at   time.Time
}

type discussion struct {
	id         string
	individual bool
	notes      []*mrNote
}

type mrNote struct {
	Note
	typ        string // "", DiscussionNote or DiffNote
	pos        *Position
	shas       [3]string // base, start and head of the diff a DiffNote was made on
	resolvable bool
	resolved   bool
}

type pipeline struct {
	id, iid          int64
	sha, ref, status string
	jobs             []Job
	created, updated time.Time
}

// New starts a fake that expects token (any when empty) and stops it when
// the test ends.
func New(t testing.TB, token string) *Server {
	s := &Server{
		Token: token, Username: "cadre-bot", t: t,
		projects: map[string]*project{}, users: map[string]*user{}, seq: map[string]int64{},
		faults: map[int]Fault{}, limit: 2000, remaining: 2000, reset: time.Now().Add(time.Minute),
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	t.Cleanup(s.srv.Close)
	return s
}

// next returns the next id of kind: ids of one kind are unique across
// projects, as GitLab's global ids are.
func (s *Server) next(kind string) int64 {
	s.seq[kind]++
	return s.seq[kind]
}

func (s *Server) user(name string) *user {
	u := s.users[name]
	if u == nil {
		u = &user{id: s.next("user"), name: name, created: time.Now()}
		s.users[name] = u
	}
	return u
}

func (s *Server) project(path string) *project {
	p := s.projects[path]
	if p == nil {
		s.t.Fatalf("gitlabtest: no project %q", path)
	}
	return p
}

// AddProject makes an empty project at path ("acme/platform/widget"), with
// the next numeric id and main as its default branch.
func (s *Server) AddProject(path string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.projects[path] != nil {
		return
	}
	s.projects[path] = &project{
		id: s.next("project"), path: path, defaultBranch: "main", created: time.Now(),
		issues: map[int]*issue{}, mrs: map[int]*mr{}, milestones: map[string]int64{},
		members: map[string]int{}, merges: map[[2]string]string{}, ancestors: map[[2]string]bool{},
		mergeMethod: "merge",
	}
}

// ProjectID returns the numeric id of the project at path.
func (s *Server) ProjectID(path string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.project(path).id
}

// SetGitDir backs project's branches with the bare repository at dir.
func (s *Server) SetGitDir(path, dir string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.project(path)
	p.gitDir = dir
	s.sync(p)
}

// SetResetApprovalsOnPush sets whether a push to a merge request's source
// branch drops its approvals.
func (s *Server) SetResetApprovalsOnPush(path string, on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.project(path).resetOnPush = on
}

// SetApprovalsRequired sets how many approvals a merge request of project
// needs before it can be merged.
func (s *Server) SetApprovalsRequired(path string, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.project(path).approvalsRequired = n
}

// SetPipelineMustSucceed sets only_allow_merge_if_pipeline_succeeds.
func (s *Server) SetPipelineMustSucceed(path string, on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.project(path).pipelineMustPass = on
}

// SetMergeMethod sets the project's merge method as GitLab names it:
// "merge" (a merge commit, the default), "rebase_merge" (a merge commit,
// the source rebased first) or "ff" (fast-forward only).
func (s *Server) SetMergeMethod(path, method string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch method {
	case "merge", "rebase_merge", "ff":
	default:
		s.t.Fatalf("gitlabtest: SetMergeMethod: %q is not a merge method of GitLab's", method)
	}
	s.project(path).mergeMethod = method
}

// SetRebaseDelay makes each rebase asked of project stay in progress for
// the next n requests about its merge request, as GitLab's rebase runs
// in the background; 0 (the default) rebases before the answer.
func (s *Server) SetRebaseDelay(path string, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.project(path).rebaseDelay = n
}

// AddMember makes username a member of project with access level access
// (Guest … Owner).
func (s *Server) AddMember(path, username string, access int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.user(username)
	s.project(path).members[username] = access
}

// UserID returns the id of username, giving it one if it has none yet.
func (s *Server) UserID(username string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.user(username).id
}

// AddIssue serves is in project and returns its iid.
func (s *Server) AddIssue(path string, is Issue) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.project(path)
	is.IID = take(&p.issueIID, is.IID)
	is.State = cmpOr(is.State, "opened")
	is.Author = cmpOr(is.Author, s.Username)
	if is.Milestone != "" && p.milestones[is.Milestone] == 0 {
		p.milestones[is.Milestone] = s.next("milestone")
	}
	now := time.Now()
	is.Notes = slices.Clone(is.Notes)
	for i := range is.Notes {
		s.fillNote(&is.Notes[i], now)
	}
	it := &issue{Issue: is, id: s.next("issue"), created: now, update: now}
	if is.State == "closed" {
		it.closed = now
	}
	p.issues[is.IID] = it
	return is.IID
}

func (s *Server) fillNote(n *Note, now time.Time) {
	if n.ID == 0 {
		n.ID = s.next("note")
	}
	if n.Created.IsZero() {
		n.Created = now
	}
	n.Author = cmpOr(n.Author, s.Username)
}

// AddIssueNote adds a note to issue iid and returns its id.
func (s *Server) AddIssueNote(path string, iid int, author, body string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	it := s.project(path).issues[iid]
	if it == nil {
		s.t.Fatalf("gitlabtest: AddIssueNote: no issue %s#%d", path, iid)
	}
	n := Note{Author: author, Body: body}
	s.fillNote(&n, time.Now())
	it.Notes = append(it.Notes, n)
	it.update = n.Created
	return n.ID
}

// IssueNotes returns the notes of issue iid, oldest first.
func (s *Server) IssueNotes(path string, iid int) []Note {
	s.mu.Lock()
	defer s.mu.Unlock()
	if it := s.project(path).issues[iid]; it != nil {
		return slices.Clone(it.Notes)
	}
	return nil
}

// AddMR serves an existing merge request in project and returns its iid.
func (s *Server) AddMR(path string, m MR) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.project(path)
	p.refs = nil
	return s.addMR(p, m).IID
}

func (s *Server) addMR(p *project, m MR) *mr {
	m.IID = take(&p.mrIID, m.IID)
	m.State = cmpOr(m.State, "opened")
	m.Target = cmpOr(m.Target, p.defaultBranch)
	m.Author = cmpOr(m.Author, s.Username)
	m.Draft = m.Draft || isDraft(m.Title)
	m.Labels = slices.Clone(m.Labels)
	m.Reviewers = slices.Clone(m.Reviewers)
	if sha, ok := p.rev(m.Source); ok {
		m.SHA = sha
	} else if m.SHA == "" {
		m.SHA = fakeSHA("head", p.path, m.Source)
	}
	now := time.Now()
	it := &mr{MR: m, id: s.next("mr"), created: now, updated: now}
	if m.State == "merged" {
		it.mergedAt = now
	}
	s.addVersion(p, it, now)
	p.mrs[m.IID] = it
	return it
}

// isDraft reports whether a title marks its merge request a draft, as
// GitLab reads the prefixes.
func isDraft(title string) bool {
	t := strings.ToLower(strings.TrimSpace(title))
	for _, prefix := range []string{"draft:", "[draft]", "(draft)", "draft "} {
		if strings.HasPrefix(t, prefix) {
			return true
		}
	}
	return false
}

// MRs returns the merge requests of project by iid, their heads brought
// up to date with the git directory.
func (s *Server) MRs(path string) []MR {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.project(path)
	p.refs = nil
	s.sync(p)
	var out []MR
	for _, m := range p.mrs {
		c := m.MR
		c.Labels, c.Reviewers = slices.Clone(c.Labels), slices.Clone(c.Reviewers)
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].IID < out[j].IID })
	return out
}

func (s *Server) mr(p *project, iid int, op string) *mr {
	m := p.mrs[iid]
	if m == nil {
		s.t.Fatalf("gitlabtest: %s: no merge request %s!%d", op, p.path, iid)
	}
	return m
}

// SetMRState closes, reopens, merges or locks merge request iid.
func (s *Server) SetMRState(path string, iid int, state string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.mr(s.project(path), iid, "SetMRState")
	m.State, m.updated = state, time.Now()
	switch state {
	case "merged":
		m.mergedAt = m.updated
	case "closed":
		m.closedAt = m.updated
	}
}

// SetMRHead moves the head of merge request iid of a project without a
// git directory to sha, as a push to its branch does.
func (s *Server) SetMRHead(path string, iid int, sha string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.project(path)
	s.pushed(p, s.mr(p, iid, "SetMRHead"), sha)
}

// SetChecking makes the next n fetches of merge request iid answer that
// its mergeability is still being checked.
func (s *Server) SetChecking(path string, iid, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.project(path)
	s.mr(p, iid, "SetChecking").checking = n
}

// Approve records username's approval of merge request iid now, with the
// system note GitLab writes for it.
func (s *Server) Approve(path string, iid int, username string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.mr(s.project(path), iid, "Approve")
	now := time.Now()
	m.approvals = append(m.approvals, approval{user: username, at: now})
	s.systemNote(m, username, "approved this merge request")
}

// Approvals returns who approved merge request iid and has not been reset.
func (s *Server) Approvals(path string, iid int) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.project(path)
	p.refs = nil
	s.sync(p)
	var out []string
	for _, a := range s.mr(p, iid, "Approvals").approvals {
		out = append(out, a.user)
	}
	return out
}

// Fail answers the nth request from now on (1 = the very next) with f
// instead of serving it.
func (s *Server) Fail(n int, f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults[len(s.calls)+n] = f
}

// SetRateLimit sets the RateLimit-Limit reported and how many requests
// remain of it.
func (s *Server) SetRateLimit(limit, remaining int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.limit, s.remaining = limit, remaining
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

// Count returns how many requests had method and path (no query). The path
// may name a project by its encoded path, its plain path or its id.
func (s *Server) Count(method, path string) int {
	n := 0
	for _, c := range s.Calls() {
		if c.Method == method && s.samePath(c.Path, path) {
			n++
		}
	}
	return n
}

func (s *Server) samePath(wire, want string) bool {
	if wire == want || decode(wire) == want {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.projects {
		byID := "/projects/" + strconv.FormatInt(p.id, 10) + "/"
		byPath := "/projects/" + p.path + "/"
		if strings.Replace(decode(wire)+"/", byID, byPath, 1) == want+"/" ||
			strings.Replace(want+"/", byID, byPath, 1) == decode(wire)+"/" {
			return true
		}
	}
	return false
}

// Counts tallies the requests received so far.
func (s *Server) Counts() Tally {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Tally{Requests: len(s.calls), NotModified: s.notModified}
}

func take(last *int, n int) int {
	if n == 0 {
		*last++
		return *last
	}
	*last = max(*last, n)
	return n
}

func cmpOr(v, def string) string {
	if v == "" {
		return def
	}
	return v
}
