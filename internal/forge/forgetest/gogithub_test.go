package forgetest_test

import (
	"context"
	"errors"
	"net/http"
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
