package app_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cadre-dev/cadre/internal/app"
	"github.com/cadre-dev/cadre/internal/config"
	"github.com/cadre-dev/cadre/internal/follow"
	"github.com/cadre-dev/cadre/internal/webhook"
)

// GitHub's deliveries are read as the API's answers are: a failed
// Actions run names its job (whose log fix-surgeon gets), its output is
// masked of the token, a pending status is running, a review is asked
// about, a push to the base moves it.
func TestGitHubFacts(t *testing.T) {
	cfg := config.Default()
	cfg.Repository = "acme/widgets"
	gh := app.NewGitHub(app.Workspace{Root: t.TempDir(), Config: cfg}, func(string) string { return "ghp_secret0123456789" })
	updated := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	facts := gh.Facts([]webhook.Event{
		{Kind: "pull_request", PR: 7, Head: "a2", Pull: &webhook.Pull{State: "open", Head: "a2", Base: "main", Title: "Fix", Updated: updated}},
		{Kind: "check_run", PR: 7, Head: "a2", Check: &webhook.Check{ID: 79, Name: "test", Status: "completed", Conclusion: "failure",
			Title: "1 failed", Text: "token ghp_secret0123456789 leaked", App: "github-actions"}},
		{Kind: "check_run", Head: "a2", Check: &webhook.Check{ID: 80, Name: "lint", Status: "completed", Conclusion: "neutral"}},
		{Kind: "status", Head: "a2", Check: &webhook.Check{ID: 81, Name: "ci/jenkins", Status: "pending", Conclusion: "pending"}},
		{Kind: "check_run", Head: "a2", Check: &webhook.Check{ID: 82, Status: "completed"}}, // no name: asked about
		{Kind: "pull_request_review", PR: 7, Head: "a2", State: "approved"},
		{Kind: "push", Head: "m2"},
	})
	want := []follow.Fact{
		{PR: 7, Pull: &follow.Head{Number: 7, State: "open", Head: "a2", Base: "main", Title: "Fix", Updated: updated}},
		{PR: 7, Commit: "a2", Run: &follow.Run{Name: "test", Order: 79, Done: true,
			Failed: &follow.Check{Name: "test", Conclusion: "failure", Summary: "1 failed", Text: "token [REDACTED] leaked", JobID: 79}}},
		{Commit: "a2", Run: &follow.Run{Name: "lint", Order: 80, Done: true, Passed: true}},
		{Commit: "a2", Run: &follow.Run{Name: "ci/jenkins", Order: 81}},
		{Commit: "a2", Ask: true},
		{PR: 7, Commit: "a2", Ask: true},
		{Base: true},
	}
	if len(facts) != len(want) {
		t.Fatalf("%d facts, want %d: %+v", len(facts), len(want), facts)
	}
	for i := range want {
		if i == 1 && facts[i].Run != nil && facts[i].Run.Failed != nil && strings.Contains(facts[i].Run.Failed.Text, "ghp_secret") {
			t.Errorf("the token reached the fact: %q", facts[i].Run.Failed.Text)
		}
		if !reflect.DeepEqual(facts[i], want[i]) {
			t.Errorf("fact %d:\n got %+v %+v\nwant %+v %+v", i, facts[i], facts[i].Run, want[i], want[i].Run)
		}
	}
}
