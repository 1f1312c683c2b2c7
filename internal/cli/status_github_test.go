package cli_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cadre-dev/cadre/internal/forge/forgetest"
)

// TestStatusShowsBranchAndPullRequest: after two issues were published,
// cadre status names each item's branch and pull request, in text and in
// --json, as the fake GitHub opened them.
func TestStatusShowsBranchAndPullRequest(t *testing.T) {
	g := newGitHubRepo(t)
	if code, out, errOut := g.cadre(t, "", "run", "1", "#2"); code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, errOut, out)
	}
	want := map[string][2]string{} // item → branch, pull request URL
	for _, pr := range g.fake.PRs("acme", "widgets") {
		item := strings.SplitN(strings.TrimPrefix(pr.Head, "cadre/"), "-", 2)[0]
		want[item] = [2]string{pr.Head, fmt.Sprintf("https://github.com/acme/widgets/pull/%d", pr.Number)}
	}
	if len(want) != 2 {
		t.Fatalf("pull requests for %v, want items 1 and 2", want)
	}

	st := g.statusJSON(t)
	if len(st.Items) != 2 {
		t.Fatalf("status --json items %+v, want 2", st.Items)
	}
	for _, it := range st.Items {
		if w := want[it.ID]; it.Branch != w[0] || it.PR != w[1] {
			t.Errorf("status --json item %s: branch %q, pr_url %q; want %q, %q", it.ID, it.Branch, it.PR, w[0], w[1])
		}
	}

	code, out, errOut := g.cadre(t, "", "status")
	if code != 0 {
		t.Fatalf("status: exit %d: %s", code, errOut)
	}
	for item, w := range want {
		if line := fmt.Sprintf("  branch %s, pull request %s (open, ", w[0], w[1]); !strings.Contains(out, line) {
			t.Errorf("status does not show item %s's %q:\n%s", item, line, out)
		}
	}
}

// TestArchiveNamedByPullRequest: an item that opened a pull request has its
// cycle log archived as <pr>_<pr-title-slug>.md (a goal cycle ends with its
// pull request; docs/workflows.md), not under a timestamp.
func TestArchiveNamedByPullRequest(t *testing.T) {
	g := newGitHubRepo(t)
	if code, out, errOut := g.cadre(t, "", "run", "1", "#2"); code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, errOut, out)
	}
	entries, err := os.ReadDir(filepath.Join(g.dir, ".cadre", "archive"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	for _, pr := range g.fake.PRs("acme", "widgets") {
		name := fmt.Sprintf("%d_%s.md", pr.Number, strings.ToLower(strings.ReplaceAll(pr.Title, " ", "-")))
		if !slices.Contains(got, name) {
			t.Errorf("no archive %s for pull request %q; archives: %v", name, pr.Title, got)
		}
	}
	if len(got) != 2 {
		t.Errorf("archives %v, want one per item", got)
	}
}

// TestStatusShowsWherePullRequestsStand: cadre status asks GitHub where
// each item's pull request stands: its head's checks, the reviews'
// decision and whether it merges cleanly with its base (computed by the
// fake from the real origin), in text and in --json; a merged one says so.
func TestStatusShowsWherePullRequestsStand(t *testing.T) {
	g := newGitHubRepo(t)
	if code, out, errOut := g.cadre(t, "", "run", "1", "#2"); code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, errOut, out)
	}
	g.fake.SetGitDir("acme", "widgets", g.bare)
	number := map[string]int{}
	for _, pr := range g.fake.PRs("acme", "widgets") {
		number[strings.SplitN(strings.TrimPrefix(pr.Head, "cadre/"), "-", 2)[0]] = pr.Number
	}
	head, err := exec.Command("git", "-C", g.bare, "rev-parse", "cadre/1-fix-the-frobnicator").Output()
	if err != nil {
		t.Fatal(err)
	}
	g.fake.SetCheckRun("acme", "widgets", strings.TrimSpace(string(head)), forgetest.CheckRun{Name: "test", Conclusion: "failure"})
	g.fake.AddReview("acme", "widgets", number["1"], forgetest.Review{Author: "carol", Association: "MEMBER", State: "CHANGES_REQUESTED", Body: "Not like this."})
	g.fake.AddReview("acme", "widgets", number["2"], forgetest.Review{Author: "carol", Association: "MEMBER", State: "APPROVED"})

	st := g.statusJSON(t)
	want := map[string][3]string{"1": {"open", "failure", "changes_requested"}, "2": {"open", "none", "approved"}}
	for _, it := range st.Items {
		if w := want[it.ID]; it.State != w[0] || it.Checks != w[1] || it.Review != w[2] || it.Mergeable == nil || !*it.Mergeable {
			t.Errorf("item %s: %s, checks %s, review %s, mergeable %v; want %v and mergeable", it.ID, it.State, it.Checks, it.Review, it.Mergeable, w)
		}
	}
	g.fake.SetPRState("acme", "widgets", number["2"], "closed", true)
	_, out, _ := g.cadre(t, "", "status")
	for _, line := range []string{fmt.Sprintf("/pull/%d (open, checks failure, review changes requested, merges cleanly)\n", number["1"]), fmt.Sprintf("/pull/%d (merged)\n", number["2"])} {
		if !strings.Contains(out, line) {
			t.Errorf("status lacks %q:\n%s", line, out)
		}
	}
}

// statusJSON runs cadre status --json and decodes what these tests read
// of its items.
func (g *githubRepo) statusJSON(t *testing.T) (st struct {
	Items []struct {
		ID        string `json:"id"`
		Branch    string `json:"branch"`
		PR        string `json:"pr_url"`
		State     string `json:"pr_state"`
		Checks    string `json:"checks"`
		Review    string `json:"review"`
		Mergeable *bool  `json:"mergeable"`
	} `json:"items"`
}) {
	t.Helper()
	code, out, errOut := g.cadre(t, "", "status", "--json")
	if code != 0 {
		t.Fatalf("status --json: exit %d: %s", code, errOut)
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("status --json: %v\n%s", err, out)
	}
	return st
}
