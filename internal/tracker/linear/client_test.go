package linear_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cadre-dev/cadre/internal/codehost"
	"github.com/cadre-dev/cadre/internal/redact"
	"github.com/cadre-dev/cadre/internal/tracker/linear"
	"github.com/cadre-dev/cadre/internal/tracker/linear/lineartest"
)

const token = "lin_api_0123456789abcdefghijklmnopqrstuvwxyzABCD"

func newFake(t *testing.T) *lineartest.Server {
	t.Helper()
	s := lineartest.New(t, token)
	s.AddTeam("ENG")
	s.AddTeam("OPS")
	return s
}

func newClient(t *testing.T, s *lineartest.Server, edit ...func(*linear.Options)) *linear.Client {
	t.Helper()
	o := linear.Options{URL: s.URL, Token: token, Team: "ENG"}
	for _, e := range edit {
		e(&o)
	}
	c, err := linear.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestParseKey(t *testing.T) {
	for _, tc := range []struct {
		in, key string
		ok      bool
	}{
		{"ENG-42", "ENG-42", true},
		{" eng-42 ", "ENG-42", true},
		{"A1-7", "A1-7", true},
		{"https://linear.app/acme/issue/ENG-42/fix-the-widget", "ENG-42", true},
		{"https://linear.app/acme/issue/ENG-42", "ENG-42", true},
		{"https://linear.app/acme/issue/ENG-42/", "ENG-42", true},
		{"https://linear.app/acme/issue/ENG-42/slug?foo=bar#c", "ENG-42", true},
		{"ENG-0", "", false},
		{"ENG-", "", false},
		{"42", "", false},
		{"#42", "", false},
		{"ENG 42", "", false},
		{"1ENG-4", "", false},
		{"ENG-42/x", "", false},
		{"https://example.com/acme/issue/ENG-42/x", "", false},
		{"https://linear.app/acme/project/ENG-42", "", false},
		{"https://linear.app/acme/issue/ENG-42/slug/more", "", false},
		{"", "", false},
	} {
		key, ok := linear.ParseKey(tc.in)
		if key != tc.key || ok != tc.ok {
			t.Errorf("ParseKey(%q) = %q, %v; want %q, %v", tc.in, key, ok, tc.key, tc.ok)
		}
	}
}

func TestNewRefuses(t *testing.T) {
	for _, o := range []linear.Options{
		{URL: "http://api.example.com/graphql", Token: token, Team: "ENG"},
		{URL: "https://user:pw@api.linear.app/graphql", Token: token, Team: "ENG"},
		{Token: "", Team: "ENG"},
		{Token: "lin_api_a b", Team: "ENG"},
		{Token: token, Team: ""},
		{Token: token, Team: "ENG-1"},
	} {
		if _, err := linear.New(o); err == nil {
			t.Errorf("New(%+v) accepted", o)
		} else if strings.Contains(err.Error(), token) {
			t.Errorf("error quotes the token: %v", err)
		}
	}
	if _, err := linear.New(linear.Options{URL: "http://127.0.0.1:1/graphql", Token: token, Team: "ENG"}); err != nil {
		t.Errorf("loopback http refused: %v", err)
	}
}

func TestIssueWithCommentsLeavingOutCadres(t *testing.T) {
	s := newFake(t)
	s.AddIssue(lineartest.Issue{
		Identifier: "ENG-42", Title: "Fix the widget", Description: "It breaks.\n", Creator: "Ada Lovelace",
		Labels: []string{"bug", "cadre"},
		Comments: []lineartest.Comment{
			{Author: "Grace Hopper", Body: "Seen on Tuesday."},
			{Author: "cadre bot", Body: "Started.\n\n`cadre:run1:ENG-42:started`"},
			{Author: "Ada Lovelace", Body: "Quoting cadre:\n```\n`cadre:run1:x`\n```\nstill broken"},
			{Body: "Synced from Slack."},
		},
	})
	c := newClient(t, s)
	for _, ref := range []string{"ENG-42", "https://linear.app/acme/issue/ENG-42/fix-the-widget"} {
		is, err := c.Issue(context.Background(), ref)
		if err != nil {
			t.Fatal(err)
		}
		want := "It breaks.\n\n---\nComment by Grace Hopper:\n\nSeen on Tuesday." +
			"\n\n---\nComment by Ada Lovelace:\n\nQuoting cadre:\n```\n`cadre:run1:x`\n```\nstill broken" +
			"\n\n---\nComment by Integration:\n\nSynced from Slack."
		if is.Body != want {
			t.Errorf("body:\n%s\nwant:\n%s", is.Body, want)
		}
		if is.Key != "ENG-42" || is.Number != 42 || is.Title != "Fix the widget" || is.Author != "Ada Lovelace" ||
			!slices.Equal(is.Labels, []string{"bug", "cadre"}) || !strings.HasPrefix(is.URL, "https://linear.app/acme/issue/ENG-42/") || is.Repo != "" {
			t.Errorf("issue: %+v", is)
		}
	}
	if _, err := c.Issue(context.Background(), "ENG-404"); err == nil || !strings.Contains(err.Error(), "ENG-404") {
		t.Errorf("missing issue: %v", err)
	}
}

func TestIssueCommentsAcrossPages(t *testing.T) {
	s := newFake(t)
	var comments []lineartest.Comment
	for i := range 60 {
		comments = append(comments, lineartest.Comment{Author: "Grace Hopper", Body: "note " + string(rune('A'+i%26))})
	}
	s.AddIssue(lineartest.Issue{Identifier: "ENG-1", Title: "Long thread", Comments: comments})
	is, err := newClient(t, s).Issue(context.Background(), "ENG-1")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(is.Body, "Comment by Grace Hopper"); n != 60 || s.Count("CadreIssue") != 2 {
		t.Fatalf("%d comments in %d requests", n, s.Count("CadreIssue"))
	}
}

func TestSearchByLabelsAndStateAcrossPages(t *testing.T) {
	s := newFake(t)
	for i := 1; i <= 55; i++ {
		s.AddIssue(lineartest.Issue{Identifier: key("ENG", i), Title: "t", Labels: []string{"Bug", "p1"}})
	}
	s.AddIssue(lineartest.Issue{Identifier: "ENG-100", Title: "only bug", Labels: []string{"bug"}})
	s.AddIssue(lineartest.Issue{Identifier: "ENG-101", Title: "done", Labels: []string{"bug", "p1"}, State: "Done"})
	s.AddIssue(lineartest.Issue{Identifier: "ENG-102", Title: "canceled", Labels: []string{"bug", "p1"}, State: "Canceled"})
	s.AddIssue(lineartest.Issue{Identifier: "ENG-103", Title: "review", Labels: []string{"bug", "p1"}, State: "In Review"})
	s.AddIssue(lineartest.Issue{Identifier: "OPS-1", Title: "other team", Labels: []string{"bug", "p1"}})
	c := newClient(t, s)
	ctx := context.Background()

	got, err := c.Search(ctx, codehost.TrackerQuery{Labels: []string{"bug", "P1"}, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 56 || got[0].Key != "ENG-1" || got[55].Key != "ENG-103" || s.Count("CadreIssues") != 2 {
		t.Fatalf("got %d issues in %d requests: %v", len(got), s.Count("CadreIssues"), keys(got))
	}
	if got[0].Number != 1 || !slices.Equal(got[0].Labels, []string{"Bug", "p1"}) || got[0].Body != "" {
		t.Errorf("first issue: %+v", got[0])
	}
	if got, err := c.Search(ctx, codehost.TrackerQuery{Labels: []string{"bug"}}); err != nil || len(got) != linear.DefaultLimit {
		t.Errorf("default limit: %d issues, %v", len(got), err)
	}
	if got, err := c.Search(ctx, codehost.TrackerQuery{Labels: []string{"p1"}, State: "done"}); err != nil || !slices.Equal(keys(got), []string{"ENG-101"}) {
		t.Errorf("state done: %v, %v", keys(got), err)
	}
	if got, err := c.Search(ctx, codehost.TrackerQuery{State: "In Review", Limit: 5}); err != nil || !slices.Equal(keys(got), []string{"ENG-103"}) {
		t.Errorf("state In Review: %v, %v", keys(got), err)
	}
	_, err = c.Search(ctx, codehost.TrackerQuery{JQL: "project = ENG"})
	if err == nil || err.Error() != "linear: tracker.watch.jql is Jira's; on Linear use labels and state" {
		t.Errorf("JQL: %v", err)
	}
}

func key(team string, n int) string { return team + "-" + strconv.Itoa(n) }

func keys(list []codehost.Issue) []string {
	var out []string
	for _, is := range list {
		out = append(out, is.Key)
	}
	return out
}

func TestCommentOnceAcrossLostAnswer(t *testing.T) {
	s := newFake(t)
	s.AddIssue(lineartest.Issue{Identifier: "ENG-7", Title: "t", Comments: []lineartest.Comment{{Author: "Ada", Body: "hi"}}})
	c := newClient(t, s)
	ctx := context.Background()
	s.Fail(2, lineartest.Fault{Lost: true}) // the commentCreate: carried out, its answer lost
	if err := c.Comment(ctx, "ENG-7", "cadre:run1:ENG-7:started", "Started on it."); err != nil {
		t.Fatal(err)
	}
	if err := c.Comment(ctx, "eng-7", "cadre:run1:ENG-7:started", "Started on it, again."); err != nil {
		t.Fatal(err)
	}
	if err := c.Comment(ctx, "ENG-7", "run1:ENG-7:done", "Done."); err != nil {
		t.Fatal(err)
	}
	got := s.Issue("ENG-7").Comments
	if len(got) != 3 || got[1].Body != "Started on it.\n\n`cadre:run1:ENG-7:started`" || got[2].Body != "Done.\n\n`cadre:run1:ENG-7:done`" ||
		got[1].Author != s.Viewer {
		t.Fatalf("comments: %+v", got)
	}
	if n := s.Count("CadreCommentCreate"); n != 2 {
		t.Fatalf("%d commentCreate sent, want 2", n)
	}
	if is, err := c.Issue(ctx, "ENG-7"); err != nil || strings.Contains(is.Body, "Started") {
		t.Fatalf("cadre's own comments in the issue's text: %q, %v", is.Body, err)
	}
	if err := c.Comment(ctx, "ENG-7", "a `b`", "x"); err == nil {
		t.Fatal("a marker with backticks was accepted")
	}
}

func TestCommentKeyedByIDWhenMarkerLineIsGone(t *testing.T) {
	s := newFake(t)
	s.AddIssue(lineartest.Issue{Identifier: "ENG-8", Title: "t"})
	c := newClient(t, s)
	ctx := context.Background()
	if err := c.Comment(ctx, "ENG-8", "m1", "One."); err != nil {
		t.Fatal(err)
	}
	// Someone edits the marker line away: the comment's id still keys it.
	id := s.Issue("ENG-8").Comments[0].ID
	s.EditComment("ENG-8", id, "One.")
	if err := c.Comment(ctx, "ENG-8", "m1", "One."); err != nil {
		t.Fatal(err)
	}
	if n := len(s.Issue("ENG-8").Comments); n != 1 || s.Count("CadreCommentCreate") != 1 {
		t.Fatalf("%d comments after %d creates", n, s.Count("CadreCommentCreate"))
	}
}

func TestMove(t *testing.T) {
	s := newFake(t)
	s.AddIssue(lineartest.Issue{Identifier: "ENG-3", Title: "t", State: "In Progress"})
	c := newClient(t, s)
	ctx := context.Background()
	if err := c.Move(ctx, "ENG-3", "in progress"); err != nil {
		t.Fatal(err)
	}
	if n := s.Count("CadreIssueUpdate"); n != 0 {
		t.Fatalf("already there, yet %d issueUpdate sent", n)
	}
	if err := c.Move(ctx, "ENG-3", "In Review"); err != nil {
		t.Fatal(err)
	}
	if st := s.Issue("ENG-3").State; st != "In Review" || s.Count("CadreIssueUpdate") != 1 {
		t.Fatalf("state %q after %d updates", st, s.Count("CadreIssueUpdate"))
	}
	err := c.Move(ctx, "ENG-3", "Reviewing")
	if err == nil || !strings.Contains(err.Error(), `"Reviewing"`) ||
		!strings.Contains(err.Error(), "Backlog, Todo, In Progress, In Review, Done, Canceled") {
		t.Fatalf("unknown state: %v", err)
	}
	if s.Count("CadreIssueUpdate") != 1 || s.Issue("ENG-3").State != "In Review" {
		t.Fatal("an unknown state moved the issue")
	}
}

func TestLinkTwiceMakesOneAttachment(t *testing.T) {
	s := newFake(t)
	s.AddIssue(lineartest.Issue{Identifier: "ENG-5", Title: "t"})
	c := newClient(t, s)
	ctx := context.Background()
	pr := "https://github.com/acme/widget/pull/9"
	for range 2 {
		if err := c.Link(ctx, "ENG-5", pr, "acme/widget#9: Fix the widget"); err != nil {
			t.Fatal(err)
		}
	}
	got := s.Issue("ENG-5").Attachments
	if len(got) != 1 || got[0].URL != pr || got[0].Title != "acme/widget#9: Fix the widget" || s.Count("CadreAttachmentCreate") != 1 {
		t.Fatalf("attachments %+v after %d creates", got, s.Count("CadreAttachmentCreate"))
	}
	if err := c.Link(ctx, "ENG-5", "javascript:alert(1)", "x"); err == nil {
		t.Fatal("a non-http link was accepted")
	}
}

func TestTokenMaskedInErrors(t *testing.T) {
	s := newFake(t)
	s.AddIssue(lineartest.Issue{Identifier: "ENG-9", Title: "t"})
	s.Fail(1, lineartest.Fault{Status: http.StatusBadRequest, Code: "AUTHENTICATION_ERROR",
		Message: "bad key " + token + " and secret hunter22-long-secret"})
	c := newClient(t, s, func(o *linear.Options) { o.Redactor = redact.New("hunter22-long-secret") })
	err := c.Move(context.Background(), "ENG-9", "Done")
	if err == nil {
		t.Fatal("no error")
	}
	msg := err.Error()
	if strings.Contains(msg, token) || strings.Contains(msg, token[:20]) || strings.Contains(msg, "hunter22") ||
		!strings.Contains(msg, "ENG-9") || !strings.Contains(msg, "AUTHENTICATION_ERROR") || strings.Contains(msg, "\n") {
		t.Fatalf("error: %v", msg)
	}
	var le *linear.Error
	if !errors.As(err, &le) || le.Status != http.StatusBadRequest {
		t.Fatalf("error %#v", err)
	}
}

func TestGraphQLErrorIsOneLineNamingOpAndKey(t *testing.T) {
	s := newFake(t)
	s.AddIssue(lineartest.Issue{Identifier: "ENG-10", Title: "t"})
	s.Fail(2, lineartest.Fault{Status: http.StatusOK, Code: "INPUT_ERROR", Message: "Link\nrefused"})
	err := newClient(t, s).Link(context.Background(), "ENG-10", "https://github.com/acme/widget/pull/1", "t")
	if err == nil || err.Error() != `linear: link ENG-10 to https://github.com/acme/widget/pull/1: Link refused (INPUT_ERROR)` {
		t.Fatalf("error: %v", err)
	}
}

func TestOtherTeamRefused(t *testing.T) {
	s := newFake(t)
	s.AddIssue(lineartest.Issue{Identifier: "OPS-1", Title: "t"})
	c := newClient(t, s)
	ctx := context.Background()
	for name, call := range map[string]func() error{
		"Issue":   func() error { _, err := c.Issue(ctx, "OPS-1"); return err },
		"URL":     func() error { _, err := c.Issue(ctx, "https://linear.app/acme/issue/OPS-1/t"); return err },
		"Comment": func() error { return c.Comment(ctx, "OPS-1", "m", "b") },
		"Move":    func() error { return c.Move(ctx, "OPS-1", "Done") },
		"Link":    func() error { return c.Link(ctx, "OPS-1", "https://example.com/pr/1", "t") },
	} {
		err := call()
		if err == nil || !strings.Contains(err.Error(), "OPS-1 is an issue of team OPS, not of team ENG") {
			t.Errorf("%s: %v", name, err)
		}
	}
	if n := len(s.Calls()); n != 0 {
		t.Fatalf("%d requests sent for another team's issues", n)
	}
}

func TestOAuthTokenSentAsBearer(t *testing.T) {
	oauth := "lin_oauth_0123456789abcdef0123456789abcdef"
	s := lineartest.New(t, oauth)
	s.AddTeam("ENG")
	s.AddIssue(lineartest.Issue{Identifier: "ENG-1", Title: "t"})
	c, err := linear.New(linear.Options{URL: s.URL, Token: oauth, Team: "eng"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Issue(context.Background(), "ENG-1"); err != nil {
		t.Fatal(err)
	}
	if h := s.Calls()[0].Header.Get("Authorization"); h != "Bearer "+oauth {
		t.Fatalf("Authorization: %q", h)
	}
	c2 := newClient(t, s) // a personal key the fake does not expect
	if _, err := c2.Issue(context.Background(), "ENG-1"); err == nil || strings.Contains(err.Error(), token) {
		t.Fatalf("wrong key: %v", err)
	}
}
