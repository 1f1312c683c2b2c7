package gitlabtest_test

import (
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	gitlab "gitlab.com/gitlab-org/api/client-go/v2"

	"github.com/cadre-dev/cadre/internal/gitlab/gitlabtest"
)

// The fake is read by client-go, GitLab's own Go client, as GitLab's
// answers are: decoded fields, pages, rate-limit headers and each kind of
// error. A deviation of the fake from the wire format shows here as a
// field client-go cannot find or an error of the wrong kind.

const (
	tok  = "glpat-wire0123456789"
	proj = "acme/platform/widget"
)

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func client(t *testing.T, s *gitlabtest.Server, opts ...gitlab.ClientOptionFunc) *gitlab.Client {
	t.Helper()
	c, err := gitlab.NewClient(tok, append([]gitlab.ClientOptionFunc{gitlab.WithBaseURL(s.URL + "/api/v4")}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func withRepo(t *testing.T) (*gitlabtest.Server, *gitlabtest.GitRepo) {
	s := gitlabtest.New(t, tok)
	s.AddProject(proj)
	g := gitlabtest.NewGitRepo(t)
	s.SetGitDir(proj, g.Dir)
	return s, g
}

func TestClientGoReadsProjectAndIssues(t *testing.T) {
	s := gitlabtest.New(t, tok)
	s.AddProject(proj)
	s.SetResetApprovalsOnPush(proj, true)
	n := s.AddIssue(proj, gitlabtest.Issue{Title: "t", Description: "d", Author: "alice", Labels: []string{"bug", "p1"},
		Milestone: "v1", Assignees: []string{"bob"}, Notes: []gitlabtest.Note{{Author: "carol", Body: "c"}}})
	s.AddIssue(proj, gitlabtest.Issue{Title: "closed", State: "closed"})
	c := client(t, s)

	p, resp, err := c.Projects.GetProject(proj, nil)
	if err != nil || p.PathWithNamespace != proj || p.ID != s.ProjectID(proj) || p.DefaultBranch != "main" ||
		p.WebURL != s.URL+"/"+proj || p.MergeMethod != gitlab.NoFastForwardMerge || p.Namespace.FullPath != "acme/platform" {
		t.Fatalf("project read as %+v, %v", p, err)
	}
	if resp.Header.Get("RateLimit-Limit") != "2000" || resp.Header.Get("RateLimit-Remaining") != "1999" ||
		resp.Header.Get("RateLimit-Observed") != "1" || resp.Header.Get("RateLimit-Reset") == "" {
		t.Errorf("rate-limit headers %v", resp.Header)
	}
	if byID, _, err := c.Projects.GetProject(int(p.ID), nil); err != nil || byID.PathWithNamespace != proj {
		t.Errorf("project by id: %+v, %v", byID, err)
	}
	if a, _, err := c.Projects.GetApprovalConfiguration(proj); err != nil || !a.ResetApprovalsOnPush {
		t.Errorf("approvals config %+v, %v", a, err)
	}
	is, _, err := c.Issues.GetIssue(proj, int64(n))
	if err != nil || is.IID != int64(n) || is.Title != "t" || is.Description != "d" || is.Author.Username != "alice" ||
		is.State != "opened" || len(is.Labels) != 2 || is.Milestone.Title != "v1" || len(is.Assignees) != 1 ||
		is.Assignees[0].Username != "bob" || is.WebURL != s.URL+"/"+proj+"/-/issues/1" || is.CreatedAt == nil ||
		is.UserNotesCount != 1 || is.ProjectID != p.ID {
		t.Errorf("issue read as %+v, %v", is, err)
	}
	list, _, err := c.Issues.ListProjectIssues(proj, &gitlab.ListProjectIssuesOptions{State: gitlab.Ptr("opened"),
		Labels: &gitlab.LabelOptions{"bug"}, Milestone: gitlab.Ptr("v1"), AssigneeUsername: gitlab.Ptr("bob")})
	if err != nil || len(list) != 1 || list[0].IID != int64(n) {
		t.Errorf("filtered issues %+v, %v", list, err)
	}
	if all, _, err := c.Issues.ListProjectIssues(proj, &gitlab.ListProjectIssuesOptions{State: gitlab.Ptr("all")}); err != nil || len(all) != 2 {
		t.Errorf("all issues %d, %v", len(all), err)
	}
}

func TestClientGoIssueNotes(t *testing.T) {
	s := gitlabtest.New(t, tok)
	s.AddProject(proj)
	n := s.AddIssue(proj, gitlabtest.Issue{Title: "t"})
	s.AddIssueNote(proj, n, "alice", "first")
	c := client(t, s)
	made, _, err := c.Notes.CreateIssueNote(proj, int64(n), &gitlab.CreateIssueNoteOptions{Body: gitlab.Ptr("second")})
	if err != nil || made.Body != "second" || made.Author.Username != "cadre-bot" || made.NoteableType != "Issue" ||
		made.NoteableIID != int64(n) || made.ID == 0 {
		t.Fatalf("created %+v, %v", made, err)
	}
	notes, _, err := c.Notes.ListIssueNotes(proj, int64(n), &gitlab.ListIssueNotesOptions{Sort: gitlab.Ptr("asc"), OrderBy: gitlab.Ptr("created_at")})
	if err != nil || len(notes) != 2 || notes[0].Body != "first" || notes[1].Body != "second" || notes[0].Author.Username != "alice" ||
		notes[0].CreatedAt == nil || notes[0].System {
		t.Errorf("notes %+v, %v", notes, err)
	}
	if got := s.IssueNotes(proj, n); len(got) != 2 || got[1].Body != "second" {
		t.Errorf("fake holds %+v", got)
	}
}

func TestClientGoFollowsPages(t *testing.T) {
	s := gitlabtest.New(t, tok)
	s.AddProject(proj)
	for range 5 {
		s.AddIssue(proj, gitlabtest.Issue{Title: "t"})
	}
	c := client(t, s)
	opt := &gitlab.ListProjectIssuesOptions{ListOptions: gitlab.ListOptions{PerPage: 2}}
	var got []int64
	for {
		page, resp, err := c.Issues.ListProjectIssues(proj, opt)
		if err != nil {
			t.Fatal(err)
		}
		for _, is := range page {
			got = append(got, is.IID)
		}
		if opt.Page == 0 && (resp.NextPage != 2 || resp.TotalItems != 5 || resp.TotalPages != 3 || resp.ItemsPerPage != 2) {
			t.Errorf("first page: next %d, total %d, pages %d", resp.NextPage, resp.TotalItems, resp.TotalPages)
		}
		if resp.NextPage == 0 {
			break
		}
		opt.Page = resp.NextPage
	}
	if len(got) != 5 || got[0] != 5 || got[4] != 1 {
		t.Errorf("issues over pages %v, want 5..1", got)
	}
}

func TestClientGoMergeRequests(t *testing.T) {
	s, g := withRepo(t)
	s.AddMember(proj, "alice", gitlabtest.Developer)
	alice := s.UserID("alice")
	sha := g.Commit("cadre/1", "main", "change", map[string]string{"a.txt": "a\n"})
	c := client(t, s)
	made, _, err := c.MergeRequests.CreateMergeRequest(proj, &gitlab.CreateMergeRequestOptions{Title: gitlab.Ptr("Draft: T"),
		Description: gitlab.Ptr("B"), SourceBranch: gitlab.Ptr("cadre/1"), TargetBranch: gitlab.Ptr("main"),
		Labels: &gitlab.LabelOptions{"cadre"}, Squash: gitlab.Ptr(true)})
	if err != nil || made.IID != 1 || !made.Draft || made.SHA != sha || made.DiffRefs.HeadSha != sha ||
		made.DiffRefs.BaseSha != g.Rev("main") || made.State != "opened" || len(made.Labels) != 1 || !made.Squash ||
		made.WebURL != s.URL+"/"+proj+"/-/merge_requests/1" || made.DetailedMergeStatus != "draft_status" {
		t.Fatalf("created %+v, %v", made, err)
	}
	_, _, err = c.MergeRequests.CreateMergeRequest(proj, &gitlab.CreateMergeRequestOptions{Title: gitlab.Ptr("T"),
		SourceBranch: gitlab.Ptr("cadre/1"), TargetBranch: gitlab.Ptr("main")})
	var er *gitlab.ErrorResponse
	if !errors.As(err, &er) || er.Response.StatusCode != http.StatusConflict ||
		!strings.Contains(er.Message, "Another open merge request already exists for this source branch: !1") {
		t.Errorf("second create: %v", err)
	}
	up, _, err := c.MergeRequests.UpdateMergeRequest(proj, 1, &gitlab.UpdateMergeRequestOptions{Title: gitlab.Ptr("T"),
		AddLabels: &gitlab.LabelOptions{"ready"}, RemoveLabels: &gitlab.LabelOptions{"cadre"}, ReviewerIDs: &[]int64{alice}})
	if err != nil || up.Draft || up.Title != "T" || len(up.Labels) != 1 || up.Labels[0] != "ready" || len(up.Reviewers) != 1 ||
		up.Reviewers[0].Username != "alice" || up.DetailedMergeStatus != "mergeable" || up.HasConflicts {
		t.Errorf("updated %+v, %v", up, err)
	}
	list, _, err := c.MergeRequests.ListProjectMergeRequests(proj, &gitlab.ListProjectMergeRequestsOptions{
		State: gitlab.Ptr("opened"), SourceBranch: gitlab.Ptr("cadre/1"), OrderBy: gitlab.Ptr("updated_at")})
	if err != nil || len(list) != 1 || list[0].IID != 1 || list[0].SHA != sha || list[0].UpdatedAt == nil {
		t.Errorf("listed %+v, %v", list, err)
	}
	closed, _, err := c.MergeRequests.UpdateMergeRequest(proj, 1, &gitlab.UpdateMergeRequestOptions{StateEvent: gitlab.Ptr("close")})
	if err != nil || closed.State != "closed" || closed.ClosedAt == nil {
		t.Errorf("closed %+v, %v", closed, err)
	}
	if ms := s.MRs(proj); len(ms) != 1 || ms[0].State != "closed" || ms[0].Reviewers[0] != "alice" {
		t.Errorf("fake holds %+v", ms)
	}
}

func TestClientGoMergesForReal(t *testing.T) {
	s, g := withRepo(t)
	old := g.Commit("cadre/1", "main", "one", map[string]string{"a.txt": "a\n"})
	iid := s.AddMR(proj, gitlabtest.MR{Title: "Add a", Source: "cadre/1"})
	head := g.Commit("cadre/1", "", "two", map[string]string{"b.txt": "b\n"})
	c := client(t, s)

	_, _, err := c.MergeRequests.AcceptMergeRequest(proj, int64(iid), &gitlab.AcceptMergeRequestOptions{SHA: gitlab.Ptr(old)})
	var er *gitlab.ErrorResponse
	if !errors.As(err, &er) || er.StatusCode != http.StatusConflict || !strings.Contains(er.Message, "SHA does not match HEAD of source branch: "+head) {
		t.Fatalf("merge with a stale sha: %v", err)
	}
	main := g.Rev("main")
	m, _, err := c.MergeRequests.AcceptMergeRequest(proj, int64(iid), &gitlab.AcceptMergeRequestOptions{SHA: gitlab.Ptr(head),
		Squash: gitlab.Ptr(true), ShouldRemoveSourceBranch: gitlab.Ptr(true)})
	if err != nil || m.State != "merged" || m.MergedAt == nil || m.MergeCommitSHA != g.Rev("main") || m.SquashCommitSHA == "" {
		t.Fatalf("merged %+v, %v", m, err)
	}
	if p := g.Parents(m.MergeCommitSHA); len(p) != 2 || p[0] != main || p[1] != m.SquashCommitSHA {
		t.Errorf("merge commit's parents %v, want %s and the squash", p, main)
	}
	if g.Read("main", "b.txt") != "b" || g.Message(m.SquashCommitSHA) != "Add a" || g.Rev("cadre/1") != "" {
		t.Errorf("main lacks the change, the squash is %q, or the source branch stayed", g.Message(m.SquashCommitSHA))
	}
	_, _, err = c.MergeRequests.AcceptMergeRequest(proj, int64(iid), nil)
	if !errors.As(err, &er) || er.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("merge of a merged request: %v", err)
	}
}

func TestClientGoSeesConflicts(t *testing.T) {
	s, g := withRepo(t)
	g.Commit("cadre/1", "main", "mine", map[string]string{"README.md": "mine\n"})
	iid := s.AddMR(proj, gitlabtest.MR{Title: "t", Source: "cadre/1"})
	g.Commit("main", "", "theirs", map[string]string{"README.md": "theirs\n"})
	c := client(t, s)
	m, _, err := c.MergeRequests.GetMergeRequest(proj, int64(iid), nil)
	if err != nil || !m.HasConflicts || m.DetailedMergeStatus != "conflict" {
		t.Fatalf("read as conflicts %v, status %q, %v", m.HasConflicts, m.DetailedMergeStatus, err)
	}
	_, _, err = c.MergeRequests.AcceptMergeRequest(proj, int64(iid), nil)
	var er *gitlab.ErrorResponse
	if !errors.As(err, &er) || er.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(er.Message, "Branch cannot be merged") {
		t.Errorf("merge of a conflict: %v", err)
	}
}

func TestClientGoApprovalsAndVersions(t *testing.T) {
	s, g := withRepo(t)
	s.SetResetApprovalsOnPush(proj, true)
	s.SetApprovalsRequired(proj, 1)
	first := g.Commit("cadre/1", "main", "one", map[string]string{"a.txt": "a\n"})
	iid := s.AddMR(proj, gitlabtest.MR{Title: "t", Source: "cadre/1"})
	s.Approve(proj, iid, "alice")
	c := client(t, s)
	a, _, err := c.MergeRequests.GetMergeRequestApprovals(proj, int64(iid))
	if err != nil || !a.Approved || a.ApprovalsRequired != 1 || a.ApprovalsLeft != 0 || len(a.ApprovedBy) != 1 ||
		a.ApprovedBy[0].User.Username != "alice" || a.ApprovedBy[0].ApprovedAt == nil {
		t.Fatalf("approvals %+v, %v", a, err)
	}
	notes, _, err := c.Notes.ListMergeRequestNotes(proj, int64(iid), nil)
	if err != nil || len(notes) != 1 || !notes[0].System || notes[0].Body != "approved this merge request" {
		t.Errorf("notes after approval %+v, %v", notes, err)
	}
	before, _, _ := c.MergeRequests.GetMergeRequest(proj, int64(iid), nil)
	time.Sleep(5 * time.Millisecond)
	second := g.Commit("cadre/1", "", "two", map[string]string{"b.txt": "b\n"})
	after, _, err := c.MergeRequests.GetMergeRequest(proj, int64(iid), nil)
	if err != nil || after.SHA != second || !after.UpdatedAt.After(*before.UpdatedAt) || after.DetailedMergeStatus != "not_approved" {
		t.Errorf("after a push: sha %s, updated %v→%v, status %q, %v", after.SHA, before.UpdatedAt, after.UpdatedAt, after.DetailedMergeStatus, err)
	}
	a, _, _ = c.MergeRequests.GetMergeRequestApprovals(proj, int64(iid))
	if a.Approved || a.ApprovalsLeft != 1 || len(a.ApprovedBy) != 0 {
		t.Errorf("approvals after a push %+v", a)
	}
	vs, _, err := c.MergeRequests.GetMergeRequestDiffVersions(proj, int64(iid), nil)
	if err != nil || len(vs) != 2 || vs[0].HeadCommitSHA != second || vs[1].HeadCommitSHA != first ||
		vs[0].BaseCommitSHA != g.Rev("main") || vs[0].CreatedAt == nil || vs[0].ID == vs[1].ID {
		t.Errorf("versions %+v, %v", vs, err)
	}
}

func TestClientGoDiscussions(t *testing.T) {
	s, g := withRepo(t)
	head := g.Commit("cadre/1", "main", "one", map[string]string{"a.txt": "a\n"})
	iid := s.AddMR(proj, gitlabtest.MR{Title: "t", Source: "cadre/1"})
	id, noteID := s.AddDiscussion(proj, iid, "alice", "fix this", &gitlabtest.Position{Path: "a.txt", Line: 1})
	s.AddDiscussion(proj, iid, "bob", "looks fine", nil)
	c := client(t, s)
	ds, _, err := c.Discussions.ListMergeRequestDiscussions(proj, int64(iid), nil)
	if err != nil || len(ds) != 2 || ds[0].ID != id || ds[0].IndividualNote || !ds[1].IndividualNote {
		t.Fatalf("discussions %+v, %v", ds, err)
	}
	n := ds[0].Notes[0]
	if n.ID != noteID || n.Type != gitlab.DiffNote || n.Position == nil || n.Position.NewPath != "a.txt" || n.Position.NewLine != 1 ||
		n.Position.HeadSHA != head || n.Position.PositionType != "text" || !n.Resolvable || n.Author.Username != "alice" {
		t.Errorf("diff note %+v %+v", n, n.Position)
	}
	if g := ds[1].Notes[0]; g.Type != "" || g.Resolvable {
		t.Errorf("general note %+v", g)
	}
	r, _, err := c.Discussions.AddMergeRequestDiscussionNote(proj, int64(iid), id, &gitlab.AddMergeRequestDiscussionNoteOptions{Body: gitlab.Ptr("done")})
	if err != nil || r.Body != "done" || r.Type != gitlab.DiffNote || r.Author.Username != "cadre-bot" {
		t.Errorf("reply %+v, %v", r, err)
	}
	if got := s.Discussion(proj, iid, id); len(got) != 2 || got[1].Body != "done" {
		t.Errorf("discussion holds %+v", got)
	}
	made, _, err := c.Notes.CreateMergeRequestNote(proj, int64(iid), &gitlab.CreateMergeRequestNoteOptions{Body: gitlab.Ptr("hi")})
	if err != nil || made.NoteableType != "MergeRequest" || len(s.MRNotes(proj, iid)) != 4 {
		t.Errorf("note %+v, %v; all %+v", made, err, s.MRNotes(proj, iid))
	}
}

func TestClientGoPipelinesAndJobs(t *testing.T) {
	s, g := withRepo(t)
	s.SetPipelineMustSucceed(proj, true)
	head := g.Commit("cadre/1", "main", "one", map[string]string{"a.txt": "a\n"})
	iid := s.AddMR(proj, gitlabtest.MR{Title: "t", Source: "cadre/1"})
	s.SetPipeline(proj, head, "success")
	pid := s.SetPipeline(proj, head, "failed",
		gitlabtest.Job{Name: "lint", Status: "success"},
		gitlabtest.Job{Name: "test", Stage: "test", Status: "failed", Trace: "FAIL: TestX\n"})
	c := client(t, s)
	m, _, err := c.MergeRequests.GetMergeRequest(proj, int64(iid), nil)
	if err != nil || m.HeadPipeline == nil || m.HeadPipeline.ID != pid || m.HeadPipeline.Status != "failed" ||
		m.HeadPipeline.SHA != head || m.HeadPipeline.WebURL == "" || m.DetailedMergeStatus != "ci_must_pass" {
		t.Fatalf("head pipeline %+v, status %q, %v", m.HeadPipeline, m.DetailedMergeStatus, err)
	}
	pls, _, err := c.MergeRequests.ListMergeRequestPipelines(proj, int64(iid))
	if err != nil || len(pls) != 2 || pls[0].ID != pid {
		t.Errorf("MR pipelines %+v, %v", pls, err)
	}
	bySHA, _, err := c.Pipelines.ListProjectPipelines(proj, &gitlab.ListProjectPipelinesOptions{SHA: gitlab.Ptr(head), Ref: gitlab.Ptr("cadre/1")})
	if err != nil || len(bySHA) != 2 || bySHA[0].Ref != "cadre/1" {
		t.Errorf("pipelines by sha %+v, %v", bySHA, err)
	}
	jobs, _, err := c.Jobs.ListPipelineJobs(proj, pid, &gitlab.ListJobsOptions{Scope: &[]gitlab.BuildStateValue{gitlab.Failed}})
	if err != nil || len(jobs) != 1 || jobs[0].Name != "test" || jobs[0].Status != "failed" || jobs[0].Stage != "test" ||
		jobs[0].Pipeline.ID != pid || jobs[0].FailureReason != "script_failure" {
		t.Fatalf("failed jobs %+v, %v", jobs, err)
	}
	tr, _, err := c.Jobs.GetTraceFile(proj, jobs[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := io.ReadAll(tr); string(b) != "FAIL: TestX\n" {
		t.Errorf("trace %q", b)
	}
}

func TestClientGoMembersAndUsers(t *testing.T) {
	s := gitlabtest.New(t, tok)
	s.AddProject(proj)
	s.AddMember(proj, "alice", gitlabtest.Maintainer)
	s.AddMember(proj, "bob", gitlabtest.Reporter)
	c := client(t, s)
	ms, _, err := c.ProjectMembers.ListAllProjectMembers(proj, &gitlab.ListProjectMembersOptions{ListOptions: gitlab.ListOptions{PerPage: 100}})
	if err != nil || len(ms) != 2 || ms[0].Username != "alice" || ms[0].AccessLevel != gitlab.MaintainerPermissions ||
		ms[1].AccessLevel != gitlab.ReporterPermissions || ms[0].State != "active" || ms[0].ID != s.UserID("alice") {
		t.Errorf("members %+v, %v", ms, err)
	}
	us, _, err := c.Users.ListUsers(&gitlab.ListUsersOptions{Username: gitlab.Ptr("bob")})
	if err != nil || len(us) != 1 || us[0].ID != s.UserID("bob") {
		t.Errorf("users %+v, %v", us, err)
	}
	if none, _, err := c.Users.ListUsers(&gitlab.ListUsersOptions{Username: gitlab.Ptr("nobody")}); err != nil || len(none) != 0 {
		t.Errorf("no such user: %+v, %v", none, err)
	}
}

func TestClientGoErrors(t *testing.T) {
	s := gitlabtest.New(t, tok)
	s.AddProject(proj)
	c := client(t, s, gitlab.WithoutRetries())
	s.Fail(1, gitlabtest.Fault{Status: http.StatusTooManyRequests, RetryAfter: 7})
	_, resp, err := c.Projects.GetProject(proj, nil)
	var er *gitlab.ErrorResponse
	if !errors.As(err, &er) || er.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "7" ||
		resp.Header.Get("RateLimit-Remaining") != "0" || resp.Header.Get("RateLimit-Reset") == "" {
		t.Errorf("throttled: %v, %v", err, resp.Header)
	}
	if _, _, err := c.Projects.GetProject(proj, nil); err != nil {
		t.Errorf("the fault outlived its request: %v", err)
	}
	if _, _, err = c.Issues.GetIssue(proj, 9); !errors.Is(err, gitlab.ErrNotFound) {
		t.Errorf("missing issue: %v", err)
	}
	req, _ := http.NewRequest(http.MethodGet, s.URL+"/api/v4/projects/acme%2Fplatform%2Fwidget/issues/9", nil)
	req.Header.Set("PRIVATE-TOKEN", tok)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("missing issue, raw: %v, %v", resp, err)
	} else if b, _ := io.ReadAll(resp.Body); strings.TrimSpace(string(b)) != `{"message":"404 Not found"}` {
		t.Errorf("404 body %s", b)
	}
	anon, _ := gitlab.NewClient("wrong", gitlab.WithBaseURL(s.URL+"/api/v4"), gitlab.WithoutRetries())
	_, _, err = anon.Projects.GetProject(proj, nil)
	if !errors.As(err, &er) || er.StatusCode != http.StatusUnauthorized || er.Message != "{message: 401 Unauthorized}" {
		t.Errorf("bad token: %v", err)
	}
	bearer, _ := gitlab.NewOAuthClient(tok, gitlab.WithBaseURL(s.URL+"/api/v4"))
	if _, _, err := bearer.Projects.GetProject(proj, nil); err != nil {
		t.Errorf("bearer token: %v", err)
	}
}

func TestClientGoRetriesAThrottle(t *testing.T) {
	s := gitlabtest.New(t, tok)
	s.AddProject(proj)
	s.Fail(1, gitlabtest.Fault{Status: http.StatusTooManyRequests, RetryAfter: 1})
	c := client(t, s, gitlab.WithCustomRetryWaitMinMax(time.Millisecond, 2*time.Second))
	if _, _, err := c.Projects.GetProject(proj, nil); err != nil {
		t.Fatal(err)
	}
	if n := s.Count("GET", "/api/v4/projects/"+proj); n != 2 {
		t.Errorf("%d requests, want the throttled one and its retry", n)
	}
}

func TestConditionalGetIsCountedApart(t *testing.T) {
	s := gitlabtest.New(t, tok)
	s.AddProject(proj)
	n := s.AddIssue(proj, gitlabtest.Issue{Title: "t"})
	url := s.URL + "/api/v4/projects/acme%2Fplatform%2Fwidget/issues/" + itoa(int64(n))
	do := func(etag string) *http.Response {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		if etag != "" {
			req.Header.Set("If-None-Match", etag)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	first := do("")
	etag := first.Header.Get("ETag")
	if !strings.HasPrefix(etag, `W/"`) {
		t.Fatalf("ETag %q", etag)
	}
	if again := do(etag); again.StatusCode != http.StatusNotModified || again.ContentLength > 0 {
		t.Errorf("conditional GET: %d", again.StatusCode)
	}
	s.AddIssueNote(proj, n, "alice", "changes the issue")
	if changed := do(etag); changed.StatusCode != http.StatusOK || changed.Header.Get("ETag") == etag {
		t.Errorf("after a change: %d, %s", changed.StatusCode, changed.Header.Get("ETag"))
	}
	if got := s.Counts(); got.Requests != 3 || got.NotModified != 1 || got.Charged() != 2 {
		t.Errorf("counts %+v", got)
	}
}
