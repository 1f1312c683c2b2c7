package app_test

import (
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cadre-dev/cadre/internal/app"
	"github.com/cadre-dev/cadre/internal/config"
	"github.com/cadre-dev/cadre/internal/forge"
	"github.com/cadre-dev/cadre/internal/forge/forgetest"
	"github.com/cadre-dev/cadre/internal/gitlab"
	"github.com/cadre-dev/cadre/internal/gitlab/gitlabtest"
)

// The people of every world: two reviewers whose word counts (GitHub
// members, GitLab Developers) and a stranger whose does not.
const (
	reviewer  = "rita"
	reviewer2 = "rob"
	stranger  = "sam"
)

// world is one forge's fake as the conformance scenarios drive it: what a
// person, CI or another process does there, and what the fake holds.
type world interface {
	// host is a new host on the fake, as a new cadre process makes one.
	host(t *testing.T) app.Host
	project() string          // the repository as cadre.yaml names it
	issueURLs(n int) []string // web addresses of issue n cadre accepts
	addIssue(title, body string, labels ...string) int
	comment(issue int, author, body string) // a person's comment on an issue
	issueComments(issue int) []string       // the bodies of an issue's comments
	// push commits files on branch (made from main when new) and returns
	// the new head, taken in by the forge as a push is.
	push(branch string, files map[string]string) string
	addPR(branch, title, body string) int // opened by someone else than this host
	prs() []fakePR
	// loseNextCreate has the next PR/MR create made and its answer lost;
	// lost says whether that happened.
	loseNextCreate() (lost func() bool)
	failCheck(sha, name, log string)
	passChecks(sha string, names ...string)
	pendCheck(sha, name string)
	// lineComment opens a review thread on a line of the diff.
	lineComment(pr int, author, path string, line int, body string) int64
	replies(pr int, comment int64) []string
	approve(pr int, author string) // of the head as it is now
	baseHead() string
	tally() (charged, notModified int)
}

// fakePR is a pull or merge request as the fake holds it.
type fakePR struct {
	Number int
	Head   string // branch
	Body   string
	State  string // open, merged or closed
}

// resetter is a world whose project can take approvals back on a push.
type resetter interface{ resetApprovalsOnPush() }

type githubWorld struct {
	srv  *forgetest.Server
	git  *forgetest.GitRepo
	cfg  config.Config
	root string
	job  int64
}

func newGitHubWorld(t *testing.T) world {
	srv := forgetest.New(t, "tok")
	srv.AddRepo("acme", "widgets")
	g := forgetest.NewGitRepo(t)
	g.Commit("main", "", "Initial commit", map[string]string{"README.md": "widget\n"})
	srv.SetGitDir("acme", "widgets", g.Dir)
	cfg := config.Default()
	cfg.Repository, cfg.GitHub.APIURL = "acme/widgets", srv.URL
	return &githubWorld{srv: srv, git: g, cfg: cfg, root: t.TempDir(), job: 9000}
}

func (w *githubWorld) host(t *testing.T) app.Host {
	return app.NewGitHub(app.Workspace{Root: w.root, Config: w.cfg}, func(string) string { return "tok" }, forge.WithWriteGap(0))
}

func (w *githubWorld) project() string { return "acme/widgets" }

func (w *githubWorld) issueURLs(n int) []string {
	return []string{"https://github.com/acme/widgets/issues/" + strconv.Itoa(n)}
}

func (w *githubWorld) addIssue(title, body string, labels ...string) int {
	return w.srv.AddIssue("acme", "widgets", forgetest.Issue{Title: title, Body: body, Author: "alice", Labels: labels})
}

func (w *githubWorld) comment(issue int, author, body string) {
	w.srv.AddComment("acme", "widgets", issue, author, body)
}

func (w *githubWorld) issueComments(issue int) []string {
	var out []string
	for _, c := range w.srv.Comments("acme", "widgets", issue) {
		out = append(out, c.Body)
	}
	return out
}

func (w *githubWorld) push(branch string, files map[string]string) string {
	return w.git.Commit(branch, "main", "change "+branch, files)
}

func (w *githubWorld) addPR(branch, title, body string) int {
	return w.srv.AddPR("acme", "widgets", forgetest.PR{Title: title, Body: body, Head: branch, Base: "main", State: "open", Author: "cadre-bot"})
}

func (w *githubWorld) prs() []fakePR {
	var out []fakePR
	for _, p := range w.srv.PRs("acme", "widgets") {
		state := p.State
		if p.Merged {
			state = "merged"
		}
		out = append(out, fakePR{Number: p.Number, Head: p.Head, Body: p.Body, State: state})
	}
	return out
}

func (w *githubWorld) loseNextCreate() func() bool {
	w.srv.SetNext(forgetest.CreatePR, forgetest.ServerErrorAfter)
	return func() bool {
		return slices.ContainsFunc(w.srv.Calls(), func(c forgetest.Call) bool {
			return c.Method == http.MethodPost && strings.HasSuffix(c.Path, "/pulls") && c.Status == http.StatusBadGateway
		})
	}
}

func (w *githubWorld) failCheck(sha, name, log string) {
	w.job++
	w.srv.SetCheckRun("acme", "widgets", sha, forgetest.CheckRun{JobID: w.job, Name: name, Conclusion: "failure"})
	w.srv.SetJobLog("acme", "widgets", w.job, log)
}

func (w *githubWorld) passChecks(sha string, names ...string) {
	for _, n := range names {
		w.srv.SetCheckRun("acme", "widgets", sha, forgetest.CheckRun{Name: n, Conclusion: "success"})
	}
}

func (w *githubWorld) pendCheck(sha, name string) {
	w.srv.SetCheckRun("acme", "widgets", sha, forgetest.CheckRun{Name: name, Status: "in_progress"})
}

// association is how GitHub ranks each person of the world in the
// repository: its reviewers are members, the stranger is nobody.
func association(author string) string {
	if author == stranger {
		return "NONE"
	}
	return "MEMBER"
}

func (w *githubWorld) lineComment(pr int, author, path string, line int, body string) int64 {
	return w.srv.AddReviewComment("acme", "widgets", pr, forgetest.ReviewComment{Author: author, Association: association(author),
		Path: path, Line: line, Body: body})
}

func (w *githubWorld) replies(pr int, comment int64) []string {
	var out []string
	for _, c := range w.srv.ReviewComments("acme", "widgets", pr) {
		if c.InReplyTo == comment {
			out = append(out, c.Body)
		}
	}
	return out
}

func (w *githubWorld) approve(pr int, author string) {
	w.srv.AddReview("acme", "widgets", pr, forgetest.Review{Author: author, Association: association(author), State: "APPROVED"})
}

func (w *githubWorld) baseHead() string { return w.git.Rev("main") }

func (w *githubWorld) tally() (int, int) {
	c := w.srv.Counts()
	return c.Charged(), c.NotModified
}

// The GitLab world's project sits in nested groups, as many do.
const glProject = "acme/platform/widget"

type gitlabWorld struct {
	srv         *gitlabtest.Server
	git         *gitlabtest.GitRepo
	cfg         config.Config
	root        string
	lose        *atomic.Bool
	discussions map[int64]string // by first note
}

func newGitLabWorld(t *testing.T) world {
	srv := gitlabtest.New(t, "tok")
	srv.AddProject(glProject)
	g := gitlabtest.NewGitRepo(t)
	srv.SetGitDir(glProject, g.Dir)
	srv.AddMember(glProject, reviewer, gitlabtest.Developer)
	srv.AddMember(glProject, reviewer2, gitlabtest.Maintainer)
	srv.UserID(stranger)
	cfg := config.Default()
	cfg.Forge.Type = config.ForgeGitLab
	cfg.GitLab.APIURL = srv.URL + "/api/v4"
	cfg.Repository = glProject
	return &gitlabWorld{srv: srv, git: g, cfg: cfg, root: t.TempDir(), lose: new(atomic.Bool), discussions: map[int64]string{}}
}

func (w *gitlabWorld) host(t *testing.T) app.Host {
	getenv := func(k string) string {
		if k == "GITLAB_TOKEN" {
			return "tok"
		}
		return ""
	}
	hc := &http.Client{Transport: &losingTransport{next: http.DefaultTransport, lose: w.lose}}
	return app.NewGitLab(app.Workspace{Root: w.root, Config: w.cfg}, getenv, gitlab.WithWriteGap(0), gitlab.WithHTTPClient(hc))
}

// losingTransport makes the merge request create it is armed for, then
// drops the answer, as a connection cut after the server acted does: the
// fake has no such mode, and the client must find what it made.
type losingTransport struct {
	next http.RoundTripper
	lose *atomic.Bool
}

func (l *losingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := l.next.RoundTrip(req)
	if err == nil && req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, "/merge_requests") && l.lose.CompareAndSwap(true, false) {
		resp.Body.Close()
		return nil, errors.New("connection reset by peer")
	}
	return resp, err
}

func (w *gitlabWorld) project() string { return glProject }

func (w *gitlabWorld) issueURLs(n int) []string {
	base := w.srv.URL + "/" + glProject + "/-/"
	return []string{base + "issues/" + strconv.Itoa(n), base + "work_items/" + strconv.Itoa(n)}
}

func (w *gitlabWorld) addIssue(title, body string, labels ...string) int {
	return w.srv.AddIssue(glProject, gitlabtest.Issue{Title: title, Description: body, Author: "alice", Labels: labels})
}

func (w *gitlabWorld) comment(issue int, author, body string) {
	w.srv.AddIssueNote(glProject, issue, author, body)
}

func (w *gitlabWorld) issueComments(issue int) []string {
	var out []string
	for _, n := range w.srv.IssueNotes(glProject, issue) {
		if !n.System {
			out = append(out, n.Body)
		}
	}
	return out
}

// push commits, then has the fake take the push in at once (MRs does) and
// lets a millisecond pass: GitLab stamps a push's diff version and an
// approval to the millisecond, and the scenarios order them.
func (w *gitlabWorld) push(branch string, files map[string]string) string {
	sha := w.git.Commit(branch, "main", "change "+branch, files)
	w.srv.MRs(glProject)
	time.Sleep(3 * time.Millisecond)
	return sha
}

func (w *gitlabWorld) addPR(branch, title, body string) int {
	return w.srv.AddMR(glProject, gitlabtest.MR{Title: title, Description: body, Source: branch, Target: "main"})
}

func (w *gitlabWorld) prs() []fakePR {
	var out []fakePR
	for _, m := range w.srv.MRs(glProject) {
		state := m.State
		if state == "opened" {
			state = "open"
		}
		out = append(out, fakePR{Number: m.IID, Head: m.Source, Body: m.Description, State: state})
	}
	return out
}

func (w *gitlabWorld) loseNextCreate() func() bool {
	w.lose.Store(true)
	return func() bool { return !w.lose.Load() }
}

func (w *gitlabWorld) failCheck(sha, name, log string) {
	w.srv.SetPipeline(glProject, sha, "failed", gitlabtest.Job{Name: name, Status: "failed", Trace: log})
}

func (w *gitlabWorld) passChecks(sha string, names ...string) {
	var jobs []gitlabtest.Job
	for _, n := range names {
		jobs = append(jobs, gitlabtest.Job{Name: n, Status: "success"})
	}
	w.srv.SetPipeline(glProject, sha, "success", jobs...)
}

func (w *gitlabWorld) pendCheck(sha, name string) {
	w.srv.SetPipeline(glProject, sha, "running", gitlabtest.Job{Name: name, Status: "running"})
}

func (w *gitlabWorld) lineComment(pr int, author, path string, line int, body string) int64 {
	id, note := w.srv.AddDiscussion(glProject, pr, author, body, &gitlabtest.Position{Path: path, Line: line})
	w.discussions[note] = id
	return note
}

func (w *gitlabWorld) replies(pr int, comment int64) []string {
	var out []string
	notes := w.srv.Discussion(glProject, pr, w.discussions[comment])
	for _, n := range notes[min(1, len(notes)):] {
		out = append(out, n.Body)
	}
	return out
}

func (w *gitlabWorld) approve(pr int, author string) {
	w.srv.Approve(glProject, pr, author)
	time.Sleep(3 * time.Millisecond)
}

func (w *gitlabWorld) baseHead() string { return w.git.Rev("main") }

func (w *gitlabWorld) tally() (int, int) {
	c := w.srv.Counts()
	return c.Charged(), c.NotModified
}

func (w *gitlabWorld) resetApprovalsOnPush() { w.srv.SetResetApprovalsOnPush(glProject, true) }
