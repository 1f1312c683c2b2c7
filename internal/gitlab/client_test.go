package gitlab_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cadre-dev/cadre/internal/gitlab"
	"github.com/cadre-dev/cadre/internal/gitlab/gitlabtest"
	"github.com/cadre-dev/cadre/internal/redact"
)

const (
	token   = "glpat-0123456789abcdefABCDEF"
	project = "acme/sub/widget"
	sha1    = "1111111111111111111111111111111111111111"
	sha2    = "2222222222222222222222222222222222222222"
)

func newFake(t *testing.T) *gitlabtest.Server {
	t.Helper()
	s := gitlabtest.New(t, token)
	s.AddProject(project)
	return s
}

func newClient(t *testing.T, s *gitlabtest.Server, opts ...gitlab.Option) *gitlab.Client {
	t.Helper()
	c, err := gitlab.New(s.URL+"/api/v4", token, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// hook is a transport that lets a test change one answer on the way.
type hook struct {
	next http.RoundTripper
	fn   func(req *http.Request, send func() (*http.Response, error)) (*http.Response, error)
}

func (h hook) RoundTrip(req *http.Request) (*http.Response, error) {
	return h.fn(req, func() (*http.Response, error) { return h.next.RoundTrip(req) })
}

func withHook(fn func(req *http.Request, send func() (*http.Response, error)) (*http.Response, error)) gitlab.Option {
	return gitlab.WithHTTPClient(&http.Client{Transport: hook{next: http.DefaultTransport, fn: fn}})
}

func TestNewRefusesPlainHTTPOffLoopback(t *testing.T) {
	if _, err := gitlab.New("http://git.corp/api/v4", token); err == nil {
		t.Fatal("plain http to a remote host was accepted")
	}
	for _, u := range []string{"", "https://git.corp", "http://127.0.0.1:1/api/v4", "http://localhost:8080"} {
		if _, err := gitlab.New(u, token); err != nil {
			t.Errorf("New(%q): %v", u, err)
		}
	}
	if _, err := gitlab.New("https://gitlab.com", "tok en"); err == nil {
		t.Error("a token with a space was accepted")
	}
}

func TestIssueWithNotes(t *testing.T) {
	s := newFake(t)
	iid := s.AddIssue(project, gitlabtest.Issue{Title: "Fix it", Description: "body", Labels: []string{"cadre"},
		Notes: []gitlabtest.Note{{Author: "ann", Body: "first"}, {Author: "ann", Body: "changed the description", System: true}, {Author: "bob", Body: "second"}}})
	s.AddIssue(project, gitlabtest.Issue{Title: "Closed", State: "closed"})
	c := newClient(t, s)
	is, err := c.Issue(context.Background(), project, iid)
	if err != nil {
		t.Fatal(err)
	}
	if is.Title != "Fix it" || is.Body != "body" || is.IID != iid || len(is.Notes) != 2 || is.Notes[0].Body != "first" || is.Notes[1].Body != "second" {
		t.Fatalf("Issue = %+v", is)
	}
	open, err := c.Issues(context.Background(), project, gitlab.Query{Labels: []string{"cadre"}})
	if err != nil || len(open) != 1 || open[0].IID != iid {
		t.Fatalf("Issues(open, cadre) = %+v, %v", open, err)
	}
	all, err := c.Issues(context.Background(), project, gitlab.Query{State: "all"})
	if err != nil || len(all) != 2 {
		t.Fatalf("Issues(all) = %+v, %v", all, err)
	}
	if _, err := c.Issue(context.Background(), project, 99); !gitlab.IsNotFound(err) || !strings.Contains(err.Error(), "issue #99 of "+project) {
		t.Fatalf("missing issue: %v", err)
	}
}

func TestEnsureIssueNoteOncePerMarker(t *testing.T) {
	s := newFake(t)
	iid := s.AddIssue(project, gitlabtest.Issue{Title: "t",
		Notes: []gitlabtest.Note{{Author: "ann", Body: "it said:\n```\n<!-- cadre:run1:done -->\n```"}}})
	c := newClient(t, s)
	ctx := context.Background()
	for range 2 {
		if err := c.EnsureIssueNote(ctx, project, iid, "run1:done", "Done."); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.EnsureIssueNote(ctx, project, iid, "run1:failed", "Failed."); err != nil {
		t.Fatal(err)
	}
	var mine []string
	for _, n := range s.IssueNotes(project, iid) {
		if n.Author == s.Username {
			mine = append(mine, n.Body)
		}
	}
	if len(mine) != 2 || mine[0] != "Done.\n\n<!-- cadre:run1:done -->" {
		t.Fatalf("notes posted: %q", mine)
	}
	if err := c.EnsureIssueNote(ctx, project, iid, "a -- b", "x"); err == nil {
		t.Fatal("a marker with '--' was accepted")
	}
}

func TestEnsureMROnceAcrossLostAnswer(t *testing.T) {
	s := newFake(t)
	var lost atomic.Bool
	c := newClient(t, s, withHook(func(req *http.Request, send func() (*http.Response, error)) (*http.Response, error) {
		resp, err := send()
		if err == nil && req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, "/merge_requests") && lost.CompareAndSwap(false, true) {
			resp.Body.Close()
			return nil, errors.New("connection reset by peer")
		}
		return resp, err
	}))
	ctx := context.Background()
	want := gitlab.NewMR{Title: "Fix the widget", Body: "Closes #1", Source: "cadre/1", Target: "main", Draft: true, Labels: []string{"cadre"}}
	mr, created, err := c.EnsureMR(ctx, project, want)
	if err != nil || !created || !lost.Load() {
		t.Fatalf("EnsureMR = %+v, %v, %v (lost %v)", mr, created, err, lost.Load())
	}
	if !mr.Draft || mr.Title != "Draft: Fix the widget" || mr.Source != "cadre/1" {
		t.Fatalf("EnsureMR made %+v", mr)
	}
	want.Title, want.Labels = "Fix the widget well", []string{"cadre", "agent"}
	mr2, created, err := c.EnsureMR(ctx, project, want)
	if err != nil || created || mr2.IID != mr.IID || mr2.Title != "Draft: Fix the widget well" {
		t.Fatalf("EnsureMR again = %+v, %v, %v", mr2, created, err)
	}
	if mrs := s.MRs(project); len(mrs) != 1 || len(mrs[0].Labels) != 2 {
		t.Fatalf("merge requests on the server: %+v", mrs)
	}
	found, err := c.FindMR(ctx, project, "cadre/1")
	if err != nil || found == nil || found.IID != mr.IID {
		t.Fatalf("FindMR = %+v, %v", found, err)
	}
	if none, err := c.FindMR(ctx, project, "nope"); none != nil || err != nil {
		t.Fatalf("FindMR(nope) = %+v, %v", none, err)
	}
}

// A list that misses the open merge request (a replica behind) ends in a
// create GitLab refuses as existing: EnsureMR takes that one up.
func TestEnsureMRAfterConflict(t *testing.T) {
	s := newFake(t)
	iid := s.AddMR(project, gitlabtest.MR{Title: "Old", Source: "cadre/2", Target: "main"})
	var stale atomic.Bool
	c := newClient(t, s, withHook(func(req *http.Request, send func() (*http.Response, error)) (*http.Response, error) {
		if req.Method == http.MethodGet && req.URL.Query().Get("source_branch") == "cadre/2" && stale.CompareAndSwap(false, true) {
			return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
				Body: io.NopCloser(strings.NewReader("[]")), Request: req}, nil
		}
		return send()
	}))
	mr, created, err := c.EnsureMR(context.Background(), project, gitlab.NewMR{Title: "New", Source: "cadre/2", Target: "main"})
	if err != nil || created || mr.IID != iid || mr.Title != "New" {
		t.Fatalf("EnsureMR = %+v, %v, %v", mr, created, err)
	}
	if n := s.Count(http.MethodPost, "/api/v4/projects/"+project+"/merge_requests"); n != 1 {
		t.Fatalf("%d creates sent, want the one refused", n)
	}
}

func TestMergeStaleSHA(t *testing.T) {
	s := newFake(t)
	iid := s.AddMR(project, gitlabtest.MR{Title: "t", Source: "cadre/3", Target: "main", SHA: sha2})
	c := newClient(t, s)
	err := c.Merge(context.Background(), project, iid, sha1, true, "Fix")
	if !gitlab.IsHeadMoved(err) {
		t.Fatalf("Merge at a stale sha: %v, want IsHeadMoved", err)
	}
	if !strings.Contains(err.Error(), "merge !") || !strings.Contains(err.Error(), project) {
		t.Fatalf("error names neither merge request nor project: %v", err)
	}
	if err := c.Merge(context.Background(), project, iid, sha2, true, "Fix"); err != nil {
		t.Fatal(err)
	}
	mr, err := c.MR(context.Background(), project, iid)
	if err != nil || mr.State != "merged" {
		t.Fatalf("MR = %+v, %v", mr, err)
	}
}

func TestHeadPipelineAllowFailure(t *testing.T) {
	s := newFake(t)
	iid := s.AddMR(project, gitlabtest.MR{Title: "t", Source: "cadre/4", Target: "main", SHA: sha1})
	s.SetPipeline(project, sha2, "success")
	s.SetPipeline(project, sha1, "failed",
		gitlabtest.Job{Name: "lint", Stage: "test", Status: "failed", AllowFailure: true},
		gitlabtest.Job{Name: "unit", Stage: "test", Status: "failed"},
		gitlabtest.Job{Name: "build", Stage: "build", Status: "success"},
		gitlabtest.Job{Name: "deploy", Stage: "deploy", Status: "running"})
	c := newClient(t, s)
	p, err := c.HeadPipeline(context.Background(), project, iid, sha1)
	if err != nil {
		t.Fatal(err)
	}
	if p.Status != "failed" || len(p.Failed) != 1 || p.Failed[0].Name != "unit" || p.Passed != 2 || p.Pending != 1 {
		t.Fatalf("HeadPipeline = %+v", p)
	}
	none, err := c.HeadPipeline(context.Background(), project, 0, strings.Repeat("3", 40))
	if err != nil || none.Status != "" {
		t.Fatalf("HeadPipeline(no pipeline) = %+v, %v", none, err)
	}
}

func TestJobTraceTail(t *testing.T) {
	s := newFake(t)
	var log strings.Builder
	for i := range 50 {
		log.WriteString("\x1b[32mline ")
		log.WriteString(strings.Repeat("x", i%3))
		log.WriteString("\x1b[0m\n")
	}
	log.WriteString("section_end:1700000000:step_script\r\x1b[0KFAIL: unit\n")
	s.SetPipeline(project, sha1, "failed", gitlabtest.Job{ID: 77, Name: "unit", Status: "failed", Trace: log.String()})
	c := newClient(t, s)
	got, err := c.JobTraceTail(context.Background(), project, 77, 2)
	if err != nil {
		t.Fatal(err)
	}
	if got != "line x\nFAIL: unit" {
		t.Fatalf("JobTraceTail = %q", got)
	}
}

func TestThreadsAndReplyOnce(t *testing.T) {
	s := newFake(t)
	iid := s.AddMR(project, gitlabtest.MR{Title: "t", Source: "cadre/5", Target: "main"})
	d1, _ := s.AddDiscussion(project, iid, "ann", "rename this", &gitlabtest.Position{Path: "a.go", Line: 3})
	s.AddDiscussion(project, iid, "bob", "looks good", nil)
	s.Approve(project, iid, "bob") // a system note: no thread
	c := newClient(t, s)
	ctx := context.Background()
	ts, err := c.Threads(ctx, project, iid)
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) != 2 || ts[0].Discussion != d1 || ts[0].Path != "a.go" || ts[0].Line != 3 || ts[0].Author != "ann" || ts[1].Body != "looks good" {
		t.Fatalf("Threads = %+v", ts)
	}
	for range 2 {
		if err := c.Reply(ctx, project, iid, d1, "r1:t1", "Renamed."); err != nil {
			t.Fatal(err)
		}
	}
	if notes := s.Discussion(project, iid, d1); len(notes) != 2 || !strings.HasPrefix(notes[1].Body, "Renamed.") {
		t.Fatalf("thread holds %+v", notes)
	}
	if err := c.Reply(ctx, project, iid, "nope", "r1:t2", "x"); err == nil {
		t.Fatal("a reply in a missing thread succeeded")
	}
	for range 2 {
		if err := c.EnsureMRNote(ctx, project, iid, "r1:sum", "Summary."); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	for _, note := range s.MRNotes(project, iid) {
		if strings.Contains(note.Body, "<!-- cadre:r1:sum -->") {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d summary notes, want 1", n)
	}
}

func TestApprovalsWithTimes(t *testing.T) {
	s := newFake(t)
	s.SetApprovalsRequired(project, 2)
	iid := s.AddMR(project, gitlabtest.MR{Title: "t", Source: "cadre/6", Target: "main"})
	s.Approve(project, iid, "ann")
	c := newClient(t, s)
	got, left, err := c.Approvals(context.Background(), project, iid)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Author != "ann" || got[0].At.IsZero() || left != 1 {
		t.Fatalf("Approvals = %+v, %d", got, left)
	}
}

func TestMembersAndReviewers(t *testing.T) {
	s := newFake(t)
	s.AddMember(project, "ann", gitlabtest.Maintainer)
	s.AddMember(project, "bob", gitlabtest.Developer)
	iid := s.AddMR(project, gitlabtest.MR{Title: "t", Source: "cadre/7", Target: "main", Reviewers: []string{"bob"}})
	c := newClient(t, s)
	ctx := context.Background()
	m, err := c.Members(ctx, project)
	if err != nil || m["ann"] != gitlabtest.Maintainer || m["bob"] != gitlabtest.Developer {
		t.Fatalf("Members = %v, %v", m, err)
	}
	if err := c.RequestReview(ctx, project, iid, []string{"ann"}); err != nil {
		t.Fatal(err)
	}
	if mrs := s.MRs(project); len(mrs[0].Reviewers) != 2 {
		t.Fatalf("reviewers: %v", mrs[0].Reviewers)
	}
	if err := c.Label(ctx, project, iid, "cadre:blocked", true); err != nil {
		t.Fatal(err)
	}
	if err := c.CloseMR(ctx, project, iid); err != nil {
		t.Fatal(err)
	}
	if mrs := s.MRs(project); mrs[0].State != "closed" || len(mrs[0].Labels) != 1 {
		t.Fatalf("after label and close: %+v", mrs[0])
	}
}

func TestConditionalGETsAndAnswers(t *testing.T) {
	s := newFake(t)
	iid := s.AddMR(project, gitlabtest.MR{Title: "t", Source: "cadre/8", Target: "main"})
	c := newClient(t, s)
	ctx := context.Background()
	first, err := c.MR(ctx, project, iid)
	if err != nil {
		t.Fatal(err)
	}
	again, err := c.MR(ctx, project, iid)
	if err != nil || again != first {
		t.Fatalf("MR again = %+v, %v; want %+v", again, err, first)
	}
	if charged, nm := c.Counts(); charged != 1 || nm != 1 {
		t.Fatalf("Counts = %d charged, %d not modified; want 1, 1", charged, nm)
	}
	data, err := c.Answers()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), token) {
		t.Fatal("kept answers hold the token")
	}
	other := newClient(t, s)
	if err := other.KeepAnswers(data); err != nil {
		t.Fatal(err)
	}
	if got, err := other.MR(ctx, project, iid); err != nil || got != first {
		t.Fatalf("MR from kept answers = %+v, %v", got, err)
	}
	if _, nm := other.Counts(); nm != 1 {
		t.Fatalf("a new client with kept answers got %d 304s, want 1", nm)
	}
	if err := other.KeepAnswers([]byte("{")); err == nil {
		t.Fatal("KeepAnswers took broken data")
	}
}

func TestTokenMaskedInErrors(t *testing.T) {
	s := newFake(t)
	s.Fail(1, gitlabtest.Fault{Status: http.StatusBadRequest, Message: "bad token " + token + " and secret hunter22-long-secret"})
	c := newClient(t, s, gitlab.WithRedactor(redact.New("hunter22-long-secret")))
	_, err := c.MR(context.Background(), project, 1)
	if err == nil {
		t.Fatal("no error")
	}
	if strings.Contains(err.Error(), token) || strings.Contains(err.Error(), "hunter22") || !strings.Contains(err.Error(), "400") {
		t.Fatalf("error: %v", err)
	}
}

func TestHeadPushedAndResets(t *testing.T) {
	s := newFake(t)
	iid := s.AddMR(project, gitlabtest.MR{Title: "t", Source: "cadre/9", Target: "main", SHA: sha1})
	s.SetMRHead(project, iid, sha2)
	c := newClient(t, s)
	ctx := context.Background()
	at, err := c.HeadPushed(ctx, project, iid, sha2)
	if err != nil || at.IsZero() {
		t.Fatalf("HeadPushed(new head) = %v, %v", at, err)
	}
	if at, err := c.HeadPushed(ctx, project, iid, strings.Repeat("9", 40)); err != nil || !at.IsZero() {
		t.Fatalf("HeadPushed(never pushed) = %v, %v", at, err)
	}
	if on, err := c.ResetsApprovals(ctx, project); err != nil || on {
		t.Fatalf("ResetsApprovals = %v, %v; want false", on, err)
	}
	s.SetResetApprovalsOnPush(project, true)
	if on, err := c.ResetsApprovals(ctx, project); err != nil || !on {
		t.Fatalf("ResetsApprovals = %v, %v; want true", on, err)
	}
	open, err := c.OpenMRs(ctx, project)
	if err != nil || len(open) != 1 || open[0].SHA != sha2 {
		t.Fatalf("OpenMRs = %+v, %v", open, err)
	}
	updated, err := c.UpdatedMRs(ctx, project, open[0].Updated.Add(-time.Minute))
	if err != nil || len(updated) != 1 {
		t.Fatalf("UpdatedMRs = %+v, %v", updated, err)
	}
	if later, err := c.UpdatedMRs(ctx, project, open[0].Updated.Add(time.Hour)); err != nil || len(later) != 0 {
		t.Fatalf("UpdatedMRs(later) = %+v, %v", later, err)
	}
}

// A fork's merge request from a branch of the same name is not cadre's:
// FindMR passes it by and EnsureMR opens the project's own.
func TestForkMRIsNotOurs(t *testing.T) {
	s := newFake(t)
	c := newClient(t, s)
	ctx := context.Background()
	fork := s.AddMR(project, gitlabtest.MR{Title: "Someone's", Source: "cadre/1", Target: "main", Author: "mallory", FromFork: true})
	if found, err := c.FindMR(ctx, project, "cadre/1"); found != nil || err != nil {
		t.Fatalf("FindMR took the fork's !%d: %+v, %v", fork, found, err)
	}
	mr, created, err := c.EnsureMR(ctx, project, gitlab.NewMR{Title: "Fix", Body: "Closes #1", Source: "cadre/1", Target: "main"})
	if err != nil || !created || mr.IID == fork {
		t.Fatalf("EnsureMR = %+v, %v, %v: want a new merge request, not the fork's !%d", mr, created, err, fork)
	}
}
