package forgetest_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-github/v92/github"

	"github.com/cadre-dev/cadre/internal/forge/forgetest"
)

// The fake is read by go-github, a client written against the real API, as
// GitHub's own answers are: decoded fields, pages, rate-limit headers and
// each kind of error. A deviation of the fake from the wire format shows
// here as a field go-github cannot find or an error of the wrong kind.

const tok = "ghp_wire0123456789"

func client(t *testing.T, s *forgetest.Server) *github.Client {
	t.Helper()
	c, err := github.NewClient(github.WithURLs(&s.URL, nil), github.WithAuthToken(tok), github.WithDisableRateLimitCheck())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var ctx = context.Background()

func TestGoGitHubReadsIssues(t *testing.T) {
	s := forgetest.New(t, tok)
	s.AddMilestone("o", "r", 1, "v1")
	n := s.AddIssue("o", "r", forgetest.Issue{Title: "t", Body: "b", Author: "alice", Labels: []string{"bug"}, Milestone: 1,
		Assignees: []string{"bob"}, Comments: []forgetest.Comment{{Author: "carol", Body: "c"}}})
	pr := s.AddPR("o", "r", forgetest.PR{Title: "p", Head: "h", Base: "main"})
	c := client(t, s)

	is, resp, err := c.Issues.Get(ctx, "o", "r", n)
	if err != nil {
		t.Fatal(err)
	}
	if is.GetNumber() != n || is.GetTitle() != "t" || is.GetBody() != "b" || is.GetUser().GetLogin() != "alice" ||
		is.GetState() != "open" || is.GetComments() != 1 || is.IsPullRequest() || len(is.Labels) != 1 ||
		is.Labels[0].GetName() != "bug" || is.GetMilestone().GetNumber() != 1 || is.GetMilestone().GetTitle() != "v1" ||
		len(is.Assignees) != 1 || is.Assignees[0].GetLogin() != "bob" || is.GetHTMLURL() != "https://github.com/o/r/issues/1" ||
		is.GetCreatedAt().IsZero() {
		t.Errorf("issue read as %+v", is)
	}
	if resp.Rate.Limit != 5000 || resp.Rate.Remaining != 4999 || resp.Rate.Used != 1 || resp.Rate.Resource != "core" || resp.Rate.Reset.Before(time.Now()) {
		t.Errorf("rate read as %+v", resp.Rate)
	}
	if p, _, err := c.Issues.Get(ctx, "o", "r", pr); err != nil || !p.IsPullRequest() {
		t.Errorf("a pull request among issues: %+v, %v", p, err)
	}
	cs, _, err := c.Issues.ListComments(ctx, "o", "r", n, nil)
	if err != nil || len(cs) != 1 || cs[0].GetBody() != "c" || cs[0].GetUser().GetLogin() != "carol" || cs[0].GetID() == 0 {
		t.Errorf("comments read as %+v, %v", cs, err)
	}
	ms, _, err := c.Issues.ListMilestones(ctx, "o", "r", &github.MilestoneListOptions{State: "all"})
	if err != nil || len(ms) != 1 || ms[0].GetNumber() != 1 || ms[0].GetTitle() != "v1" {
		t.Errorf("milestones read as %+v, %v", ms, err)
	}
}

func TestGoGitHubFollowsPages(t *testing.T) {
	s := forgetest.New(t, tok)
	for range 5 {
		s.AddIssue("o", "r", forgetest.Issue{Title: "t"})
	}
	c := client(t, s)
	opt := &github.IssueListByRepoOptions{ListOptions: github.ListOptions{PerPage: 2}}
	var got []int
	for {
		page, resp, err := c.Issues.ListByRepo(ctx, "o", "r", opt)
		if err != nil {
			t.Fatal(err)
		}
		for _, is := range page {
			got = append(got, is.GetNumber())
		}
		if opt.ListOptions.Page == 0 && (resp.NextPage != 2 || resp.LastPage != 3) {
			t.Errorf("first page: next %d, last %d", resp.NextPage, resp.LastPage)
		}
		if resp.NextPage == 0 {
			break
		}
		opt.ListOptions.Page = resp.NextPage
	}
	if len(got) != 5 || got[0] != 5 || got[4] != 1 {
		t.Errorf("issues over pages %v, want 5..1", got)
	}
}

func TestGoGitHubPullRequests(t *testing.T) {
	s := forgetest.New(t, tok)
	s.AddRepo("o", "r")
	s.AddIssue("o", "r", forgetest.Issue{Title: "i"})
	c := client(t, s)
	made, _, err := c.PullRequests.Create(ctx, "o", "r", github.CreatePullRequest{Title: github.Ptr("T"), Body: github.Ptr("B"),
		Head: "cadre/1", Base: "main", Draft: github.Ptr(true)})
	if err != nil || made.GetNumber() != 2 || !made.GetDraft() || made.GetHead().GetLabel() != "o:cadre/1" ||
		made.GetBase().GetRef() != "main" || made.GetHTMLURL() != "https://github.com/o/r/pull/2" || made.GetMerged() {
		t.Fatalf("created %+v, %v", made, err)
	}
	_, _, err = c.PullRequests.Create(ctx, "o", "r", github.CreatePullRequest{Title: github.Ptr("T"), Head: "cadre/1", Base: "main"})
	var er *github.ErrorResponse
	if !errors.As(err, &er) || er.Response.StatusCode != 422 || len(er.Errors) != 1 ||
		er.Errors[0].Message != "A pull request already exists for o:cadre/1." {
		t.Errorf("second create: %v", err)
	}
	list, _, err := c.PullRequests.List(ctx, "o", "r", &github.PullRequestListOptions{Head: "o:cadre/1", State: "all"})
	if err != nil || len(list) != 1 || list[0].GetNumber() != 2 || list[0].MergedAt != nil {
		t.Errorf("listed %+v, %v", list, err)
	}
	ed, _, err := c.PullRequests.Edit(ctx, "o", "r", 2, &github.PullRequest{Title: github.Ptr("T2"), State: github.Ptr("closed")})
	if err != nil || ed.GetTitle() != "T2" || ed.GetState() != "closed" || ed.ClosedAt == nil {
		t.Errorf("edited %+v, %v", ed, err)
	}
	ls, _, err := c.Issues.AddLabelsToIssue(ctx, "o", "r", 2, []string{"cadre", "x"})
	if err != nil || len(ls) != 2 || ls[1].GetName() != "x" {
		t.Errorf("labels %+v, %v", ls, err)
	}
	cm, _, err := c.Issues.CreateComment(ctx, "o", "r", 2, github.IssueCommentRequest{Body: "hi"})
	if err != nil || cm.GetBody() != "hi" || cm.GetUser().GetLogin() != s.Login {
		t.Errorf("comment %+v, %v", cm, err)
	}
	s.SetPRState("o", "r", 2, "closed", true)
	got, _, err := c.PullRequests.Get(ctx, "o", "r", 2)
	if err != nil || !got.GetMerged() || got.MergedAt == nil || len(got.Labels) != 2 {
		t.Errorf("merged %+v, %v", got, err)
	}
}

// Each fault is the kind of error go-github makes of GitHub's own.
func TestGoGitHubErrorKinds(t *testing.T) {
	reset := time.Now().Add(time.Hour).Truncate(time.Second)
	tests := []struct {
		name  string
		fault *forgetest.Fault
		token string
		check func(error) bool
	}{
		{"secondary limit", new(forgetest.SecondaryLimit()), tok, func(err error) bool {
			// go-github reads x-ratelimit-reset, which every answer
			// carries, as the wait; cadre waits a minute, as documented.
			var e *github.AbuseRateLimitError
			return errors.As(err, &e)
		}},
		{"secondary limit with retry-after", new(forgetest.RetryAfter(http.StatusTooManyRequests, 7)), tok, func(err error) bool {
			var e *github.AbuseRateLimitError
			return errors.As(err, &e) && e.GetRetryAfter() == 7*time.Second
		}},
		{"primary limit", new(forgetest.PrimaryLimit(reset)), tok, func(err error) bool {
			var e *github.RateLimitError
			return errors.As(err, &e) && e.Rate.Remaining == 0 && e.Rate.Reset.Time.Equal(reset)
		}},
		{"server error", new(forgetest.ServerError()), tok, func(err error) bool {
			var e *github.ErrorResponse
			return errors.As(err, &e) && e.Response.StatusCode == 502 && e.Message == "Server Error"
		}},
		{"not found", nil, tok, func(err error) bool {
			var e *github.ErrorResponse
			return errors.As(err, &e) && e.Response.StatusCode == 404 && e.Message == "Not Found" && e.DocumentationURL != ""
		}},
		{"bad credentials", nil, "ghp_wrong", func(err error) bool {
			var e *github.ErrorResponse
			return errors.As(err, &e) && e.Response.StatusCode == 401 && e.Message == "Bad credentials"
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := forgetest.New(t, tok)
			s.AddRepo("o", "r")
			n := 99
			if tt.fault != nil {
				n = s.AddIssue("o", "r", forgetest.Issue{Title: "t"})
				s.Fail(1, *tt.fault)
			}
			c, err := github.NewClient(github.WithURLs(&s.URL, nil), github.WithAuthToken(tt.token), github.WithDisableRateLimitCheck())
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := c.Issues.Get(ctx, "o", "r", n); !tt.check(err) {
				t.Errorf("go-github read %T: %v", err, err)
			}
		})
	}
}

func TestGoGitHubChecks(t *testing.T) {
	s := forgetest.New(t, tok)
	s.AddRepo("o", "r")
	const sha = "0123456789abcdef0123456789abcdef01234567"
	job := s.SetCheckRun("o", "r", sha, forgetest.CheckRun{JobID: 4242, Name: "test", Conclusion: "failure",
		Title: "1 test failed", Summary: "TestX failed"})
	other := s.SetCheckRun("o", "r", sha, forgetest.CheckRun{Name: "lint", Status: "in_progress", DetailsURL: "https://ci.example/1"})
	s.SetCheckRun("o", "r", sha, forgetest.CheckRun{JobID: 4243, Name: "test", Conclusion: "success"}) // a rerun replaces
	s.SetStatus("o", "r", sha, forgetest.Status{Context: "ci/jenkins", State: "error", Description: "crashed", TargetURL: "https://jenkins/1"})
	s.SetStatus("o", "r", sha, forgetest.Status{Context: "deploy", State: "success"})
	c := client(t, s)

	res, _, err := c.Checks.ListCheckRunsForRef(ctx, "o", "r", sha, &github.ListCheckRunsOptions{Filter: github.Ptr("latest")})
	if err != nil || res.GetTotal() != 2 || len(res.CheckRuns) != 2 {
		t.Fatalf("check runs %+v, %v", res, err)
	}
	run, lint := res.CheckRuns[0], res.CheckRuns[1]
	if job != 4242 || run.GetID() != 4243 || run.GetName() != "test" || run.GetStatus() != "completed" || run.GetConclusion() != "success" ||
		run.GetHeadSHA() != sha || run.GetApp().GetSlug() != "github-actions" ||
		run.GetDetailsURL() != "https://github.com/o/r/actions/runs/13243/job/4243" || run.CompletedAt == nil {
		t.Errorf("actions run read as %+v", run)
	}
	if lint.GetID() != other || lint.GetStatus() != "in_progress" || lint.Conclusion != nil || lint.GetDetailsURL() != "https://ci.example/1" ||
		lint.GetApp().GetSlug() == "github-actions" || lint.CompletedAt != nil {
		t.Errorf("other run read as %+v", lint)
	}
	s.SetCheckRun("o", "r", sha, forgetest.CheckRun{JobID: 4244, Name: "test", Conclusion: "failure", Title: "1 test failed", Summary: "TestX failed"})
	res, _, err = c.Checks.ListCheckRunsForRef(ctx, "o", "r", sha, nil)
	if err != nil || res.CheckRuns[0].GetConclusion() != "failure" || res.CheckRuns[0].GetOutput().GetTitle() != "1 test failed" ||
		res.CheckRuns[0].GetOutput().GetSummary() != "TestX failed" {
		t.Errorf("failed run read as %+v, %v", res.CheckRuns[0], err)
	}

	st, _, err := c.Repositories.GetCombinedStatus(ctx, "o", "r", sha, nil)
	if err != nil || st.GetState() != "failure" || st.GetSHA() != sha || st.GetTotalCount() != 2 || len(st.Statuses) != 2 {
		t.Fatalf("combined status %+v, %v", st, err)
	}
	if e := st.Statuses[0]; e.GetContext() != "ci/jenkins" || e.GetState() != "error" || e.GetDescription() != "crashed" ||
		e.GetTargetURL() != "https://jenkins/1" {
		t.Errorf("status read as %+v", e)
	}
	if none, _, err := c.Repositories.GetCombinedStatus(ctx, "o", "r", "main", nil); err != nil || none.GetState() != "pending" || len(none.Statuses) != 0 {
		t.Errorf("no statuses: %+v, %v", none, err)
	}
}

func TestGoGitHubJobLogs(t *testing.T) {
	s := forgetest.New(t, tok)
	s.AddRepo("o", "r")
	s.SetJobLog("o", "r", 4242, "line 1\nline 2\n")
	c := client(t, s)
	u, _, err := c.Actions.GetWorkflowJobLogs(ctx, "o", "r", 4242, 1)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(u.String()) // a signed link: no credential
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	text, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || string(text) != "line 1\nline 2\n" || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Errorf("log %d %q", resp.StatusCode, text)
	}
	if _, _, err := c.Actions.GetWorkflowJobLogs(ctx, "o", "r", 7, 1); err == nil {
		t.Error("a job without a log has a link")
	}
}

func TestGoGitHubReviews(t *testing.T) {
	s := forgetest.New(t, tok)
	n := s.AddPR("o", "r", forgetest.PR{Title: "p", Head: "h", Base: "main", HeadSHA: "abc"})
	when := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	rv := s.AddReview("o", "r", n, forgetest.Review{Author: "alice", Association: "MEMBER", State: "CHANGES_REQUESTED", Body: "fix it", SubmittedAt: when})
	cm := s.AddReviewComment("o", "r", n, forgetest.ReviewComment{ReviewID: rv, Author: "alice", Association: "MEMBER", Path: "a.go", Line: 7, Body: "nil check"})
	lone := s.AddReviewComment("o", "r", n, forgetest.ReviewComment{Author: "bob", Path: "b.go", Body: "outdated"})
	c := client(t, s)

	rvs, _, err := c.PullRequests.ListReviews(ctx, "o", "r", n, nil)
	if err != nil || len(rvs) != 2 {
		t.Fatalf("reviews %+v, %v", rvs, err)
	}
	if r := rvs[0]; r.GetID() != rv || r.GetUser().GetLogin() != "alice" || r.GetBody() != "fix it" || r.GetState() != "CHANGES_REQUESTED" ||
		!r.GetSubmittedAt().Time.Equal(when) || r.GetCommitID() != "abc" || r.GetAuthorAssociation() != "MEMBER" {
		t.Errorf("review read as %+v", r)
	}
	if r := rvs[1]; r.GetState() != "COMMENTED" || r.GetUser().GetLogin() != "bob" {
		t.Errorf("a lone comment's review read as %+v", r)
	}

	cms, _, err := c.PullRequests.ListComments(ctx, "o", "r", n, nil)
	if err != nil || len(cms) != 2 {
		t.Fatalf("review comments %+v, %v", cms, err)
	}
	if x := cms[0]; x.GetID() != cm || x.GetPath() != "a.go" || x.GetLine() != 7 || x.GetBody() != "nil check" || x.GetUser().GetLogin() != "alice" ||
		x.InReplyTo != nil || x.GetPullRequestReviewID() != rv || x.GetAuthorAssociation() != "MEMBER" || x.GetCreatedAt().IsZero() {
		t.Errorf("comment read as %+v", x)
	}
	if x := cms[1]; x.GetID() != lone || x.Line != nil || x.GetPullRequestReviewID() != rvs[1].GetID() {
		t.Errorf("outdated comment read as %+v", x)
	}

	req, err := c.NewRequest(ctx, "POST", fmt.Sprintf("repos/o/r/pulls/%d/comments/%d/replies", n, cm), map[string]string{"body": "done"})
	if err != nil {
		t.Fatal(err)
	}
	var reply github.PullRequestComment
	resp, err := c.Do(req, &reply)
	if err != nil || resp.StatusCode != 201 || reply.GetInReplyTo() != cm || reply.GetBody() != "done" || reply.GetUser().GetLogin() != s.Login ||
		reply.GetPath() != "a.go" || reply.GetLine() != 7 {
		t.Errorf("reply %+v, %v", reply, err)
	}
	// A reply to a reply joins the thread of the comment opening it.
	again, _, err := c.PullRequests.CreateCommentInReplyTo(ctx, "o", "r", n, "and more", reply.GetID())
	if err != nil || again.GetInReplyTo() != cm {
		t.Errorf("reply to a reply %+v, %v", again, err)
	}
	if got := s.ReviewComments("o", "r", n); len(got) != 4 || got[2].Body != "done" || got[3].InReplyTo != cm {
		t.Errorf("fake holds %+v", got)
	}

	pr, _, err := c.PullRequests.RequestReviewers(ctx, "o", "r", n, github.ReviewersRequest{Reviewers: []string{"carol", "dave"}})
	if err != nil || len(pr.RequestedReviewers) != 2 || pr.RequestedReviewers[1].GetLogin() != "dave" {
		t.Errorf("requested %+v, %v", pr, err)
	}
	_, _, err = c.PullRequests.RequestReviewers(ctx, "o", "r", n, github.ReviewersRequest{Reviewers: []string{s.Login}})
	var er *github.ErrorResponse
	if !errors.As(err, &er) || er.Response.StatusCode != 422 {
		t.Errorf("author asked to review: %v", err)
	}
	s.AddReview("o", "r", n, forgetest.Review{Author: "carol", State: "APPROVED"})
	if got := s.RequestedReviewers("o", "r", n); len(got) != 1 || got[0] != "dave" {
		t.Errorf("requested after carol's review: %v", got)
	}
}

// A pull request's mergeability and merge come from a real repository.
func TestGoGitHubMergeability(t *testing.T) {
	g := forgetest.NewGitRepo(t)
	g.Commit("main", "", "start", map[string]string{"a.txt": "a\n", "b.txt": "b\n"})
	feature := g.Commit("feature", "main", "change a", map[string]string{"a.txt": "A\n"})
	g.Commit("clash", "main", "change b", map[string]string{"b.txt": "B from clash\n"})
	g.Commit("main", "", "main changes b", map[string]string{"b.txt": "B from main\n"})

	s := forgetest.New(t, tok)
	s.AddRepo("o", "r")
	s.SetGitDir("o", "r", g.Dir)
	ok := s.AddPR("o", "r", forgetest.PR{Title: "Feature", Head: "feature", Base: "main"})
	bad := s.AddPR("o", "r", forgetest.PR{Title: "Clash", Head: "clash", Base: "main"})
	c := client(t, s)

	pr, _, err := c.PullRequests.Get(ctx, "o", "r", ok)
	if err != nil || pr.Mergeable == nil || !pr.GetMergeable() || pr.GetMergeableState() != "clean" ||
		pr.GetHead().GetSHA() != feature || pr.GetBase().GetSHA() != g.Rev("main") {
		t.Fatalf("clean PR %+v, %v", pr, err)
	}
	pr, _, err = c.PullRequests.Get(ctx, "o", "r", bad)
	if err != nil || pr.Mergeable == nil || pr.GetMergeable() || pr.GetMergeableState() != "dirty" {
		t.Fatalf("conflicting PR %+v, %v", pr, err)
	}
	s.SetComputing("o", "r", ok, 1)
	if pr, _, err = c.PullRequests.Get(ctx, "o", "r", ok); err != nil || pr.Mergeable != nil || pr.GetMergeableState() != "unknown" {
		t.Errorf("while computing %+v, %v", pr, err)
	}
	s.SetStatus("o", "r", feature, forgetest.Status{Context: "ci", State: "failure"})
	if pr, _, err = c.PullRequests.Get(ctx, "o", "r", ok); err != nil || !pr.GetMergeable() || pr.GetMergeableState() != "unstable" {
		t.Errorf("failing status %+v, %v", pr, err)
	}

	var er *github.ErrorResponse
	_, _, err = c.PullRequests.Merge(ctx, "o", "r", bad, "", &github.PullRequestOptions{MergeMethod: "merge"})
	if !errors.As(err, &er) || er.Response.StatusCode != 405 {
		t.Errorf("conflicting merge: %v", err)
	}
	_, _, err = c.PullRequests.Merge(ctx, "o", "r", ok, "", &github.PullRequestOptions{MergeMethod: "merge", SHA: g.Rev("main")})
	if !errors.As(err, &er) || er.Response.StatusCode != 409 {
		t.Errorf("merge of another head: %v", err)
	}
	before := g.Rev("main")
	res, _, err := c.PullRequests.Merge(ctx, "o", "r", ok, "", &github.PullRequestOptions{MergeMethod: "merge", SHA: feature})
	if err != nil || !res.GetMerged() || res.GetSHA() != g.Rev("main") || res.GetMessage() == "" {
		t.Fatalf("merge %+v, %v", res, err)
	}
	if p := g.Parents("main"); len(p) != 2 || p[0] != before || p[1] != feature || g.Read("main", "a.txt") != "A" || g.Read("main", "b.txt") != "B from main" {
		t.Errorf("merge commit has parents %v", p)
	}
	pr, _, err = c.PullRequests.Get(ctx, "o", "r", ok)
	if err != nil || !pr.GetMerged() || pr.GetState() != "closed" || pr.GetMergeCommitSHA() != res.GetSHA() || pr.GetHead().GetSHA() != feature {
		t.Errorf("merged PR %+v, %v", pr, err)
	}
}
