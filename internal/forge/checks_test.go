package forge_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cadre-dev/cadre/internal/forge"
	"github.com/cadre-dev/cadre/internal/forge/forgetest"
	"github.com/cadre-dev/cadre/internal/redact"
)

const sha = "0123456789abcdef0123456789abcdef01234567"

func TestFailedChecks(t *testing.T) {
	srv, c, _ := setup(t)
	srv.SetCheckRun("o", "r", sha, forgetest.CheckRun{JobID: 11, Name: "test", Conclusion: "failure", Title: "1 failed", Summary: "TestX: want 1, got 2"})
	srv.SetCheckRun("o", "r", sha, forgetest.CheckRun{Name: "codecov", Conclusion: "timed_out", DetailsURL: "https://codecov.example/1",
		Text: strings.Repeat("line\n", 300) + "coverage fell to 41%"})
	srv.SetCheckRun("o", "r", sha, forgetest.CheckRun{JobID: 12, Name: "lint", Conclusion: "success"})
	srv.SetCheckRun("o", "r", sha, forgetest.CheckRun{JobID: 13, Name: "docs", Conclusion: "skipped"})
	srv.SetCheckRun("o", "r", sha, forgetest.CheckRun{JobID: 14, Name: "e2e", Status: "in_progress"})
	srv.SetStatus("o", "r", sha, forgetest.Status{Context: "ci/jenkins", State: "error", Description: "agent lost", TargetURL: "https://jenkins.example/9"})
	srv.SetStatus("o", "r", sha, forgetest.Status{Context: "deploy/preview", State: "pending"})
	srv.SetStatus("o", "r", sha, forgetest.Status{Context: "license", State: "success"})

	got, err := c.FailedChecks(ctx, "o", "r", sha)
	if err != nil {
		t.Fatal(err)
	}
	want := forge.Checks{
		Failed: []forge.Check{
			{Name: "test", Conclusion: "failure", Summary: "1 failed\n\nTestX: want 1, got 2", URL: "https://github.com/o/r/actions/runs/9011/job/11", JobID: 11},
			{Name: "codecov", Conclusion: "timed_out", URL: "https://codecov.example/1",
				Text: strings.Repeat("line\n", 199) + "coverage fell to 41%"},
			{Name: "ci/jenkins", Conclusion: "error", Summary: "agent lost", URL: "https://jenkins.example/9"},
		},
		Pending:   []string{"e2e", "deploy/preview"},
		Passed:    3,
		Succeeded: []string{"lint", "docs", "license"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("FailedChecks (-want +got):\n%s", diff)
	}
	if got.Green() {
		t.Error("a commit with failures is green")
	}

	// No checks at all is green, though GitHub calls the combined status
	// of no statuses "pending".
	none, err := c.FailedChecks(ctx, "o", "r", "fedcba9876543210fedcba9876543210fedcba98")
	if err != nil || !none.Green() || none.Passed != 0 {
		t.Errorf("no checks: %+v, %v", none, err)
	}
}

func TestFailedChecksPages(t *testing.T) {
	srv, c, _ := setup(t)
	for i := range 150 {
		srv.SetCheckRun("o", "r", sha, forgetest.CheckRun{Name: fmt.Sprint("job ", i), Conclusion: "success"})
	}
	srv.SetCheckRun("o", "r", sha, forgetest.CheckRun{Name: "last", Conclusion: "cancelled"})
	got, err := c.FailedChecks(ctx, "o", "r", sha)
	if err != nil || got.Passed != 150 || len(got.Failed) != 1 || got.Failed[0].Name != "last" {
		t.Errorf("FailedChecks over pages: %d passed, failed %+v, %v", got.Passed, got.Failed, err)
	}
	if n := srv.Count("GET", "/repos/o/r/commits/"+sha+"/check-runs"); n != 2 {
		t.Errorf("%d pages fetched, want 2", n)
	}
}

func TestFailedChecksErrors(t *testing.T) {
	_, c, _ := setup(t)
	tests := []struct{ repo, sha, want string }{
		{"nope", sha, "github: read checks of o/nope@" + sha + ": 404 Not Found"},
		{"r", "", "github: read checks of o/r@: commit is empty"},
		{"r", "abc?x=1", `github: read checks of o/r@abc?x=1: commit "abc?x=1" is not a sha`},
		{"r", "../../user", `is not a sha`},
	}
	for _, tt := range tests {
		_, err := c.FailedChecks(ctx, "o", tt.repo, tt.sha)
		if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("FailedChecks(%q, %q) = %v, want %q", tt.repo, tt.sha, err, tt.want)
		}
	}
}

// The log comes through GitHub's redirect to a signed link, fetched
// without the token; only its tail is kept, secrets masked.
func TestJobLogTail(t *testing.T) {
	srv, c, _ := setup(t)
	var log strings.Builder
	log.WriteString("\ufeff")
	for i := 1; i <= 10; i++ {
		fmt.Fprintf(&log, "2024-01-01T00:00:%02dZ line %d\r\n", i, i)
	}
	log.WriteString("token was " + token + "\n")
	srv.SetJobLog("o", "r", 11, log.String())

	got, err := c.JobLogTail(ctx, "o", "r", 11, 3)
	want := "2024-01-01T00:00:09Z line 9\n2024-01-01T00:00:10Z line 10\ntoken was " + redact.Mask
	if err != nil || got != want {
		t.Errorf("JobLogTail = %q, %v", got, err)
	}
	all, err := c.JobLogTail(ctx, "o", "r", 11, 100)
	if err != nil || !strings.HasPrefix(all, "2024-01-01T00:00:01Z line 1\n") || strings.Count(all, "\n") != 10 {
		t.Errorf("JobLogTail of more lines than there are = %q, %v", all, err)
	}
	var downloads int
	for _, call := range srv.Calls() {
		if strings.HasPrefix(call.Path, "/_download/") {
			downloads++
			if h := call.Header.Get("Authorization"); h != "" {
				t.Errorf("download sent Authorization %q", h)
			}
		}
	}
	if downloads != 2 {
		t.Errorf("%d downloads, want 2", downloads)
	}

	if _, err := c.JobLogTail(ctx, "o", "r", 99, 3); err == nil || err.Error() != "github: read log of job 99 in o/r: 404 Not Found" {
		t.Errorf("no log: %v", err)
	}
	if _, err := c.JobLogTail(ctx, "o", "r", 11, 0); err == nil || !strings.Contains(err.Error(), "must be positive") {
		t.Errorf("no lines: %v", err)
	}
}

// On GitHub the signed link is on another host: it is fetched there, and
// its own redirect followed, never with the token.
func TestJobLogTailOffHost(t *testing.T) {
	blob := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/moved" {
			http.Redirect(w, r, "/log.txt?sig=2", http.StatusTemporaryRedirect)
			return
		}
		if h := r.Header.Get("Authorization"); h != "" {
			t.Errorf("download sent Authorization %q", h)
		}
		fmt.Fprint(w, "one\ntwo\nthree\n")
	}))
	defer blob.Close()
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/repos/o/r/actions/jobs/5/logs" || r.Header.Get("Authorization") != "Bearer "+token {
			t.Errorf("API asked %s with Authorization %q", r.URL.Path, r.Header.Get("Authorization"))
		}
		http.Redirect(w, r, blob.URL+"/moved?sig=1", http.StatusFound)
	}))
	defer api.Close()
	c, err := forge.New(api.URL, token)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := c.JobLogTail(ctx, "o", "r", 5, 2); err != nil || got != "two\nthree" {
		t.Errorf("JobLogTail = %q, %v", got, err)
	}
}

// RequiredChecks reads both classic protection and rulesets; protection
// the token may not read says so, rulesets still count.
func TestRequiredChecks(t *testing.T) {
	srv, c, _ := setup(t)
	got, readable, err := c.RequiredChecks(ctx, "o", "r", "main")
	if err != nil || !readable || len(got) != 0 {
		t.Fatalf("unprotected: %v, %v, %v", got, readable, err)
	}
	srv.Protect("o", "r", "main", forgetest.Protection{Contexts: []string{"test", "lint"}, Rules: []string{"e2e", "test"}})
	got, readable, err = c.RequiredChecks(ctx, "o", "r", "main")
	if diff := cmp.Diff([]string{"e2e", "lint", "test"}, got); err != nil || !readable || diff != "" {
		t.Fatalf("protected: readable %v, %v (-want +got):\n%s", readable, err, diff)
	}
	srv.Protect("o", "r", "release/v1", forgetest.Protection{Contexts: []string{"test"}, Rules: []string{"e2e"}, Hidden: true})
	got, readable, err = c.RequiredChecks(ctx, "o", "r", "release/v1")
	if err != nil || readable || !cmp.Equal(got, []string{"e2e"}) {
		t.Fatalf("hidden protection: %v, readable %v, %v; want the ruleset's e2e, unreadable", got, readable, err)
	}
}

// Labels go on and come off a pull request by name, a name with a '/'
// too; taking off one it lacks is no error.
func TestLabels(t *testing.T) {
	srv, c, _ := setup(t)
	srv.AddIssue("o", "r", forgetest.Issue{Number: 5, Title: "t"})
	if err := c.AddLabels(ctx, "o", "r", 5, []string{"cadre/needs-human", "bug"}); err != nil {
		t.Fatal(err)
	}
	if got := srv.Labels("o", "r", 5); !cmp.Equal(got, []string{"cadre/needs-human", "bug"}) {
		t.Fatalf("labels %v", got)
	}
	if err := c.RemoveLabel(ctx, "o", "r", 5, "cadre/needs-human"); err != nil {
		t.Fatal(err)
	}
	if err := c.RemoveLabel(ctx, "o", "r", 5, "cadre/needs-human"); err != nil {
		t.Fatalf("removing a label again: %v", err)
	}
	if got := srv.Labels("o", "r", 5); !cmp.Equal(got, []string{"bug"}) {
		t.Fatalf("labels after removal %v, want [bug]", got)
	}
}

// Answers kept by one client let another process's client ask on
// condition: an unchanged answer is a 304 to it too, and a changed one
// is read anew.
func TestKeptAnswersCarryOver(t *testing.T) {
	srv, c, clk := setup(t)
	srv.SetCheckRun("o", "r", sha, forgetest.CheckRun{Name: "test", Conclusion: "failure"})
	first, err := c.FailedChecks(ctx, "o", "r", sha)
	if err != nil {
		t.Fatal(err)
	}
	srv.AddIssue("o", "r", forgetest.Issue{Number: 9, Title: "t", Body: "someone pasted " + token})
	if _, err := c.Issue(ctx, forge.Ref{Owner: "o", Repo: "r", Number: 9}); err != nil {
		t.Fatal(err)
	}
	data, err := c.Answers()
	if err != nil {
		t.Fatal(err)
	}
	var kept []struct{ Body []byte }
	if err := json.Unmarshal(data, &kept); err != nil || len(kept) < 2 {
		t.Fatalf("kept answers %d, %v", len(kept), err)
	}
	for _, k := range kept {
		if strings.Contains(string(k.Body), token) {
			t.Error("the kept answers hold the token")
		}
	}
	next := newClient(t, srv, clk)
	if err := next.KeepAnswers(data); err != nil {
		t.Fatal(err)
	}
	before := srv.Counts()
	again, err := next.FailedChecks(ctx, "o", "r", sha)
	if err != nil || !cmp.Equal(first, again) {
		t.Fatalf("checks read through kept answers: %+v, %v; want %+v", again, err, first)
	}
	if got := srv.Counts(); got.Charged() != before.Charged() {
		t.Errorf("%d requests charged with the answers kept, want none", got.Charged()-before.Charged())
	}
	srv.SetCheckRun("o", "r", sha, forgetest.CheckRun{Name: "test", Conclusion: "success"})
	if now, err := next.FailedChecks(ctx, "o", "r", sha); err != nil || len(now.Failed) != 0 {
		t.Errorf("a changed answer was not read anew: %+v, %v", now, err)
	}
	if err := next.KeepAnswers([]byte("{not json")); err == nil {
		t.Error("damaged answers were taken up")
	}
}
