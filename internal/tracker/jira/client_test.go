package jira_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cadre-dev/cadre/internal/codehost"
	"github.com/cadre-dev/cadre/internal/redact"
	"github.com/cadre-dev/cadre/internal/tracker/jira"
	"github.com/cadre-dev/cadre/internal/tracker/jira/jiratest"
)

const (
	cloudToken = "bot@acme.dev:ATATT3xFfGF0secretsecret"
	dcToken    = "NjQ2MzA5ODc2NTQzOkPATsecret"
)

// fake starts a fake Jira of flavor and a Client for it that learns the
// flavor, and records every wait it is asked for instead of spending it.
func fake(t *testing.T, flavor string) (*jiratest.Server, *jira.Client, *[]time.Duration) {
	t.Helper()
	token := cloudToken
	if flavor == jiratest.DataCenter {
		token = dcToken
	}
	srv := jiratest.New(t, flavor, token)
	c, err := jira.New(jira.Options{URL: srv.URL, Token: token, Project: "PROJ"})
	if err != nil {
		t.Fatal(err)
	}
	var waits []time.Duration
	jira.SetSleep(c, func(ctx context.Context, d time.Duration) error {
		waits = append(waits, d)
		return ctx.Err()
	})
	return srv, c, &waits
}

func both(t *testing.T, f func(t *testing.T, flavor string)) {
	for _, flavor := range []string{jiratest.Cloud, jiratest.DataCenter} {
		t.Run(flavor, func(t *testing.T) { f(t, flavor) })
	}
}

func TestFlavorLearntFromServerInfo(t *testing.T) {
	both(t, func(t *testing.T, flavor string) {
		srv, c, _ := fake(t, flavor)
		got, err := c.Flavor(context.Background())
		if err != nil || got != flavor {
			t.Fatalf("Flavor = %q, %v; want %q", got, err, flavor)
		}
		if _, err := c.Flavor(context.Background()); err != nil {
			t.Fatal(err)
		}
		if n := srv.Count(http.MethodGet, "/rest/api/2/serverInfo"); n != 1 {
			t.Errorf("serverInfo asked %d times, want once", n)
		}
	})
}

func TestIssue(t *testing.T) {
	both(t, func(t *testing.T, flavor string) {
		srv, c, _ := fake(t, flavor)
		desc, personal, wantDesc := "Steps:\n\n{code:go}\nx := 1\n{code}\n\nsee [the log|https://ci.acme.dev/1]",
			"I can reproduce on *staging*.", "Steps:\n\n```go\nx := 1\n```\n\nsee [the log](https://ci.acme.dev/1)"
		wantPersonal := "I can reproduce on **staging**."
		if flavor == jiratest.Cloud {
			desc = `{"type":"doc","version":1,"content":[{"type":"paragraph","content":[{"type":"text","text":"Steps:"}]},` +
				`{"type":"codeBlock","attrs":{"language":"go"},"content":[{"type":"text","text":"x := 1"}]},` +
				`{"type":"paragraph","content":[{"type":"text","text":"see "},{"type":"text","text":"the log","marks":[{"type":"link","attrs":{"href":"https://ci.acme.dev/1"}}]}]}]}`
			personal, wantPersonal = "I can reproduce on staging.", "I can reproduce on staging."
		}
		srv.AddIssue(jiratest.Issue{Key: "PROJ-123", Summary: "Login fails", Description: desc, Reporter: "Ada Lovelace",
			Labels: []string{"cadre", "bug"}, Comments: []jiratest.Comment{
				{Author: "Grace Hopper", Body: personal},
				{Author: "Cadre Bot", Body: "cadre started work", Properties: map[string]json.RawMessage{"cadre": json.RawMessage(`{"marker":"start"}`)}},
				{Author: "Ada Lovelace", Body: "Thanks"},
			}})
		for _, ref := range []string{"PROJ-123", srv.URL + "/browse/PROJ-123", srv.URL + "/jira/software/projects/PROJ/boards/1?selectedIssue=PROJ-123"} {
			is, err := c.Issue(context.Background(), ref)
			if err != nil {
				t.Fatal(err)
			}
			want := codehost.Issue{Key: "PROJ-123", Number: 123, Title: "Login fails", URL: srv.URL + "/browse/PROJ-123",
				Author: "Ada Lovelace", Labels: []string{"cadre", "bug"},
				Body: wantDesc + "\n\n---\nComment by Grace Hopper:\n\n" + wantPersonal + "\n\n---\nComment by Ada Lovelace:\n\nThanks"}
			if is.Body != want.Body {
				t.Errorf("%s: Body =\n%s\n--- want ---\n%s", ref, is.Body, want.Body)
			}
			is.Body = want.Body
			if b1, b2 := mustJSON(is), mustJSON(want); b1 != b2 {
				t.Errorf("%s: Issue = %s, want %s", ref, b1, b2)
			}
		}
	})
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestIssueRefusesOtherProjectsAndBareNumbers(t *testing.T) {
	_, c, _ := fake(t, jiratest.Cloud)
	for ref, want := range map[string]string{
		"123":     "PROJ-123",
		"OTHER-1": "project OTHER, not to tracker.project PROJ",
		"https://elsewhere.example/browse/PROJ-1": "not on tracker.url's site",
		"proj-1": "upper case",
	} {
		_, err := c.Issue(context.Background(), ref)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Issue(%q) = %v, want an error saying %q", ref, err, want)
		}
	}
}

func TestSearch(t *testing.T) {
	both(t, func(t *testing.T, flavor string) {
		srv, c, _ := fake(t, flavor)
		srv.SetPageSize(2) // the client must follow pages
		for _, is := range []jiratest.Issue{
			{Key: "PROJ-1", Summary: "a", Labels: []string{"cadre"}},
			{Key: "PROJ-2", Summary: "b", Labels: []string{"cadre", "backend"}, Status: "In Progress"},
			{Key: "PROJ-3", Summary: "c", Labels: []string{"cadre", "backend"}},
			{Key: "PROJ-4", Summary: "d", Labels: []string{"cadre", "backend"}, Status: "Done"},
			{Key: "PROJ-5", Summary: "e", Labels: []string{"cadre", "backend"}},
			{Key: "PROJ-6", Summary: "f", Labels: []string{"cadre", "backend"}},
			{Key: "OTHER-1", Summary: "x", Labels: []string{"cadre", "backend"}},
		} {
			srv.AddIssue(is)
		}
		ctx := context.Background()
		got, err := c.Search(ctx, codehost.TrackerQuery{Labels: []string{"cadre", "backend"}})
		if err != nil {
			t.Fatal(err)
		}
		if keys := keysOf(got); keys != "PROJ-2 PROJ-3 PROJ-5 PROJ-6" {
			t.Errorf("by labels, not done = %s", keys)
		}
		got, err = c.Search(ctx, codehost.TrackerQuery{Labels: []string{"backend"}, State: "to do", Limit: 2})
		if err != nil {
			t.Fatal(err)
		}
		if keys := keysOf(got); keys != "PROJ-3 PROJ-5" {
			t.Errorf("by labels in To Do, limit 2 = %s", keys)
		}
		got, err = c.Search(ctx, codehost.TrackerQuery{JQL: `labels = backend OR key = PROJ-1 ORDER BY key DESC`})
		if err != nil {
			t.Fatal(err)
		}
		if keys := keysOf(got); keys != "PROJ-6 PROJ-5 PROJ-4 PROJ-3 PROJ-2 PROJ-1" {
			t.Errorf("by JQL = %s (another project's issue must stay out)", keys)
		}
		if got[0].Title != "f" || got[0].URL != srv.URL+"/browse/PROJ-6" || got[0].Number != 6 {
			t.Errorf("first = %+v", got[0])
		}
		_, err = c.Search(ctx, codehost.TrackerQuery{State: "Doing"})
		if err == nil || !strings.Contains(err.Error(), "jira: search: 400 The value 'Doing' does not exist") {
			t.Errorf("an unknown status = %v", err)
		}
	})
}

func keysOf(is []codehost.Issue) string {
	var keys []string
	for _, i := range is {
		keys = append(keys, i.Key)
	}
	return strings.Join(keys, " ")
}

func TestCommentOncePerMarkerAcrossALostAnswer(t *testing.T) {
	both(t, func(t *testing.T, flavor string) {
		srv, c, _ := fake(t, flavor)
		srv.AddIssue(jiratest.Issue{Key: "PROJ-7", Summary: "s"})
		srv.SetPageSize(1)
		for range 3 {
			srv.AddComment("PROJ-7", jiratest.Comment{Author: "Grace Hopper", Body: "a remark"})
		}
		ctx := context.Background()
		if _, err := c.Flavor(ctx); err != nil {
			t.Fatal(err)
		}
		// Three pages of comments looked through, then the post, carried
		// out but its answer lost.
		srv.Fail(4, jiratest.Fault{Status: http.StatusBadGateway, AfterServe: true})
		body := "cadre started: see\n\n```sh\nmake test\n```"
		if err := c.Comment(ctx, "PROJ-7", "cadre:start", body); err != nil {
			t.Fatalf("Comment across a lost answer = %v", err)
		}
		if lost := srv.Calls()[4]; lost.Method != http.MethodPost || lost.Status != http.StatusBadGateway {
			t.Fatalf("the fault fell on %s %s, not on the post", lost.Method, lost.Path)
		}
		if err := c.Comment(ctx, "PROJ-7", "cadre:start", body); err != nil {
			t.Fatal(err)
		}
		if err := c.Comment(ctx, "PROJ-7", "cadre:review", "in review"); err != nil {
			t.Fatal(err)
		}
		is := srv.Issue("PROJ-7")
		var markers []string
		for _, cm := range is.Comments {
			if p, ok := cm.Properties["cadre"]; ok {
				markers = append(markers, string(p))
			}
		}
		if got := strings.Join(markers, " "); got != `{"marker":"cadre:start"} {"marker":"cadre:review"}` {
			t.Errorf("cadre's comments carry %s, want one per marker", got)
		}
		if n := srv.Count(http.MethodPost, "/issue/PROJ-7/comment"); n != 2 {
			t.Errorf("%d comments posted, want 2", n)
		}
		posted := is.Comments[3].Body
		if flavor == jiratest.Cloud && !strings.Contains(posted, `"type":"codeBlock","attrs":{"language":"sh"}`) {
			t.Errorf("a Cloud comment's body = %s, want ADF with a codeBlock", posted)
		}
		if flavor == jiratest.DataCenter && posted != "cadre started: see\n\n{code:sh}\nmake test\n{code}" {
			t.Errorf("a Data Center comment's body = %q, want wiki markup", posted)
		}
		mine, err := c.Issue(ctx, "PROJ-7")
		if err != nil || strings.Contains(mine.Body, "make test") {
			t.Errorf("Issue shows cadre's own comment: %q, %v", mine.Body, err)
		}
	})
}

func TestMove(t *testing.T) {
	both(t, func(t *testing.T, flavor string) {
		srv, c, _ := fake(t, flavor)
		srv.AddIssue(jiratest.Issue{Key: "PROJ-1", Summary: "s"})
		ctx := context.Background()
		// The transition is "Start Progress"; the status, "In Progress".
		if err := c.Move(ctx, "PROJ-1", "in progress"); err != nil {
			t.Fatal(err)
		}
		if st := srv.Issue("PROJ-1").Status; st != "In Progress" {
			t.Fatalf("status = %q", st)
		}
		var posted []string
		for _, call := range srv.Calls() {
			if call.Method == http.MethodPost {
				posted = append(posted, call.Body)
			}
		}
		if len(posted) != 1 || !strings.Contains(posted[0], `"id":"11"`) {
			t.Errorf("posted %q, want the one transition 11", posted)
		}

		before := srv.Count(http.MethodPost, "/transitions")
		if err := c.Move(ctx, "PROJ-1", "In Progress"); err != nil {
			t.Fatal(err)
		}
		if srv.Count(http.MethodPost, "/transitions") != before || srv.Count(http.MethodGet, "/transitions") != 1 {
			t.Error("a move to the status the issue is in posted or asked for transitions")
		}

		err := c.Move(ctx, "PROJ-1", "Deployed")
		for _, want := range []string{`jira: move PROJ-1 to "Deployed": no transition from "In Progress" leads there`,
			`"In Review" (by "Request Review")`, `"To Do" (by "Stop Progress")`, `"Done" (by "Done")`} {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("an unreachable status = %v, want it to say %s", err, want)
			}
		}
	})
}

func TestLinkTwiceMakesOneLink(t *testing.T) {
	both(t, func(t *testing.T, flavor string) {
		srv, c, _ := fake(t, flavor)
		srv.AddIssue(jiratest.Issue{Key: "PROJ-2", Summary: "s"})
		ctx := context.Background()
		pr := "https://github.com/acme/widget/pull/42"
		if err := c.Link(ctx, "PROJ-2", pr, "Fix login (#42)"); err != nil {
			t.Fatal(err)
		}
		if err := c.Link(ctx, "PROJ-2", pr, "Fix login (#42)"); err != nil {
			t.Fatal(err)
		}
		links := srv.Issue("PROJ-2").Links
		if len(links) != 1 {
			t.Fatalf("links = %+v, want one", links)
		}
		if l := links[0]; l.GlobalID != "cadre:"+pr || l.URL != pr || l.Title != "Fix login (#42)" || l.Icon != "https://github.com/favicon.ico" {
			t.Errorf("link = %+v", l)
		}
	})
}

func TestRateLimitWaitedOut(t *testing.T) {
	srv, c, waits := fake(t, jiratest.Cloud)
	srv.AddIssue(jiratest.Issue{Key: "PROJ-3", Summary: "s"})
	ctx := context.Background()
	if _, err := c.Flavor(ctx); err != nil {
		t.Fatal(err)
	}
	srv.Fail(1, jiratest.Fault{Status: http.StatusTooManyRequests, RetryAfter: 7})
	srv.Fail(2, jiratest.Fault{Status: http.StatusServiceUnavailable, RetryAfter: 3})
	if _, err := c.Issue(ctx, "PROJ-3"); err != nil {
		t.Fatal(err)
	}
	if got := *waits; len(got) != 2 || got[0] != 7*time.Second || got[1] != 3*time.Second {
		t.Errorf("waits = %v, want 7s then 3s, as Retry-After asked", got)
	}

	// A write refused by a rate limit was not carried out: it is sent again.
	srv.Fail(1, jiratest.Fault{Status: http.StatusTooManyRequests, RetryAfter: 1})
	if err := c.Link(ctx, "PROJ-3", "https://github.com/acme/widget/pull/1", "t"); err != nil {
		t.Fatal(err)
	}

	srv.Fail(1, jiratest.Fault{Status: http.StatusTooManyRequests, RetryAfter: 3600})
	_, err := c.Issue(ctx, "PROJ-3")
	if err == nil || !strings.Contains(err.Error(), "jira: issue PROJ-3: 429") || !strings.Contains(err.Error(), "retry in 1h0m0s") {
		t.Errorf("a wait past MaxWait = %v, want it to fail naming the wait", err)
	}
}

func TestServerErrorsRetriedOnReadsNotWrites(t *testing.T) {
	srv, c, _ := fake(t, jiratest.DataCenter)
	srv.AddIssue(jiratest.Issue{Key: "PROJ-4", Summary: "s"})
	ctx := context.Background()
	if _, err := c.Flavor(ctx); err != nil {
		t.Fatal(err)
	}
	srv.Fail(1, jiratest.Fault{Status: http.StatusInternalServerError})
	if _, err := c.Issue(ctx, "PROJ-4"); err != nil {
		t.Fatalf("a read after a 500 = %v, want it asked again", err)
	}
	srv.Fail(1, jiratest.Fault{Status: http.StatusInternalServerError})
	err := c.Link(ctx, "PROJ-4", "https://github.com/acme/widget/pull/1", "t")
	if err == nil || srv.Count(http.MethodPost, "/remotelink") != 1 {
		t.Errorf("a write after a 500 = %v, sent %d times; want it failed, sent once", err, srv.Count(http.MethodPost, "/remotelink"))
	}
}

func TestTokenMaskedInErrors(t *testing.T) {
	srv, c, _ := fake(t, jiratest.Cloud)
	srv.AddIssue(jiratest.Issue{Key: "PROJ-5", Summary: "s"})
	ctx := context.Background()
	if _, err := c.Flavor(ctx); err != nil {
		t.Fatal(err)
	}
	srv.Fail(1, jiratest.Fault{Status: http.StatusForbidden, Message: "token " + cloudToken + " may not comment"})
	err := c.Comment(ctx, "PROJ-5", "m", "hello")
	if err == nil || strings.Contains(err.Error(), "ATATT3xFfGF0secretsecret") || !strings.Contains(err.Error(), redact.Mask) {
		t.Errorf("error = %v, want the token masked", err)
	}
	if err != nil && !strings.HasPrefix(err.Error(), "jira: comment on PROJ-5: 403 ") {
		t.Errorf("error = %v, want it to name the op and key", err)
	}
}

func TestUnauthorizedSaysWhatTheTokenIs(t *testing.T) {
	srv := jiratest.New(t, jiratest.Cloud, cloudToken)
	masks := redact.New()
	c, err := jira.New(jira.Options{URL: srv.URL, Token: "bot@acme.dev:a-revoked-api-token", Project: "PROJ", Flavor: "cloud", Redactor: masks})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Issue(context.Background(), "PROJ-1")
	if err == nil || !strings.Contains(err.Error(), "jira: issue PROJ-1: 401") || !strings.Contains(err.Error(), "email:api_token on Jira Cloud") {
		t.Errorf("a 401 = %v, want it to say the token's format", err)
	}
	if got := masks.String("x a-revoked-api-token y"); strings.Contains(got, "revoked") {
		t.Errorf("the token was not added to the Redactor given: %q", got)
	}
}

func TestCloudTokenMustBeAPair(t *testing.T) {
	srv := jiratest.New(t, jiratest.Cloud, cloudToken)
	c, err := jira.New(jira.Options{URL: srv.URL, Token: "a-personal-access-token", Project: "PROJ", Flavor: "cloud"})
	if err != nil {
		t.Fatal(err)
	}
	err = c.Move(context.Background(), "PROJ-1", "Done")
	if err == nil || !strings.Contains(err.Error(), "must be email:api_token") || len(srv.Calls()) != 0 {
		t.Errorf("a bare token on Cloud = %v after %d requests, want refused before any", err, len(srv.Calls()))
	}
}

func TestNewRefuses(t *testing.T) {
	for name, o := range map[string]jira.Options{
		"plain http":      {URL: "http://jira.corp", Token: dcToken, Project: "PROJ"},
		"no token":        {URL: "https://jira.corp", Project: "PROJ"},
		"token with \\n":  {URL: "https://jira.corp", Token: dcToken + "\n", Project: "PROJ"},
		"numeric project": {URL: "https://jira.corp", Token: dcToken, Project: "10001"},
		"unknown flavor":  {URL: "https://jira.corp", Token: dcToken, Project: "PROJ", Flavor: "onprem"},
	} {
		if _, err := jira.New(o); err == nil {
			t.Errorf("%s: New accepted %+v", name, o)
		}
	}
	if _, err := jira.New(jira.Options{URL: "http://127.0.0.1:8080/rest/api/2", Token: dcToken, Project: "PROJ"}); err != nil {
		t.Errorf("a loopback http site = %v", err)
	}
}
