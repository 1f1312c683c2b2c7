package cli_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cadre-dev/cadre/internal/forge/forgetest"
	"github.com/cadre-dev/cadre/internal/tracker/jira/jiratest"
	"github.com/cadre-dev/cadre/internal/tracker/linear/lineartest"
)

const (
	jiraToken   = "bot@acme.example:ATATTjiraCanary0123456789"
	linearToken = "lin_api_linearCanary0123456789"
	jiraPAT     = "NjQ5jiraPATCanary0123456789"
)

// trackerRepo is a githubRepo (code on a fake GitHub) whose work items
// come from a fake tracker, with tracker's settings.
type trackerRepo struct {
	*githubRepo
	env []string
}

func newTrackerRepo(t *testing.T, tracker string, env ...string) *trackerRepo {
	t.Helper()
	g := watchRepo(t, "follow: {merge: squash}\n"+tracker)
	return &trackerRepo{githubRepo: g, env: env}
}

// cadre runs cadre with the GitHub token and the tracker's set.
func (r *trackerRepo) cadre(t *testing.T, crashAt string, args ...string) (int, string, string) {
	t.Helper()
	c := exec.Command("cadre", args...)
	c.Dir = r.dir
	c.Env = append(append(os.Environ(), "GITHUB_TOKEN="+canary, "CADRE_CRASH_AT="+crashAt), r.env...)
	var out, errOut strings.Builder
	c.Stdout, c.Stderr = &out, &errOut
	err := c.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String(), errOut.String()
}

// onePR says the one pull request of branch, which resolves key.
func (r *trackerRepo) onePR(t *testing.T, branch, key string) forgetest.PR {
	t.Helper()
	var found []forgetest.PR
	for _, pr := range r.fake.PRs("acme", "widgets") {
		if pr.Head == branch {
			found = append(found, pr)
		}
	}
	if len(found) != 1 || !strings.Contains(found[0].Body, "Resolves "+key) || strings.Contains(found[0].Body, "Closes #") {
		t.Fatalf("pull requests of %s: %+v, want one resolving %s", branch, found, key)
	}
	return found[0]
}

// mergeIt makes the pull request green and approved, and has cadre watch
// merge it.
func (r *trackerRepo) mergeIt(t *testing.T, pr forgetest.PR) {
	t.Helper()
	head := r.rev(t, pr.Head)
	r.fake.SetCheckRun("acme", "widgets", head, forgetest.CheckRun{Name: "test", Conclusion: "success"})
	r.fake.AddReview("acme", "widgets", pr.Number, forgetest.Review{Author: "rita", Association: "MEMBER", State: "APPROVED", CommitID: head})
	if code, _, errOut := r.cadre(t, "", "watch", "--once"); code != 0 || !strings.Contains(errOut, "merged") {
		t.Fatalf("watch did not merge: exit %d\n%s", code, errOut)
	}
}

// prURL is the page of a pull request of the fake's acme/widgets.
func prURL(pr forgetest.PR) string {
	return fmt.Sprintf("https://github.com/acme/widgets/pull/%d", pr.Number)
}

// markers counts the comments of kind (start, done, …) cadre left,
// whatever carries their marker.
func markers(bodies []string, kind string) int {
	n := 0
	for _, b := range bodies {
		if strings.Contains(b, ":"+kind) {
			n++
		}
	}
	return n
}

// A Jira Cloud issue from intake to merged: its text (ADF and comments)
// reaches the agent; it is commented and moved to In Progress on start,
// linked to its pull request and moved to In Review when that opens, and
// moved to Done when cadre watch merges it; each once, though the run is
// killed after the pull request opens and resumed. Then cadre watch takes
// up a labelled issue by itself.
func TestJiraIssueToMerged(t *testing.T) {
	for flavor, token := range map[string]string{"cloud": jiraToken, "datacenter": jiraPAT} {
		t.Run(flavor, func(t *testing.T) { jiraIssueToMerged(t, flavor, token) })
	}
}

func jiraIssueToMerged(t *testing.T, flavor, token string) {
	jira := jiratest.New(t, flavor, token)
	jira.AddIssue(jiratest.Issue{Key: "PROJ-7", Summary: "Fix the frobnicator", Description: "It breaks when **cold**.", Reporter: "Alice",
		Comments: []jiratest.Comment{{Author: "Carol", Body: "Seen on main too."}}})
	jira.AddIssue(jiratest.Issue{Key: "PROJ-8", Summary: "Polish the widget", Description: "Make it shine.", Labels: []string{"cadre"}})
	r := newTrackerRepo(t, "tracker: {type: jira, url: \""+jira.URL+"\", project: PROJ, watch: {labels: [cadre]}}\n", "JIRA_API_TOKEN="+token)
	const branch = "cadre/proj-7-fix-the-frobnicator"

	if code, _, errOut := r.cadre(t, "pr-created", "run", jira.URL+"/browse/PROJ-7"); code != -1 && code != 137 {
		t.Fatalf("the run was not killed after the pull request: exit %d\n%s", code, errOut)
	}
	if code, out, errOut := r.cadre(t, "", "resume"); code != 0 {
		t.Fatalf("resume: exit %d\n%s\n%s", code, errOut, out)
	}
	pr := r.onePR(t, branch, "PROJ-7")
	is := jira.Issue("PROJ-7")
	if is.Status != "In Review" || len(is.Links) != 1 || is.Links[0].URL != prURL(pr) {
		t.Errorf("PROJ-7 after its pull request: status %q, links %+v", is.Status, is.Links)
	}
	var bodies []string
	for _, c := range is.Comments {
		bodies = append(bodies, c.Body+" "+string(c.Properties["cadre"]))
	}
	if markers(bodies, "start") != 1 || markers(bodies, "done") != 1 {
		t.Errorf("PROJ-7's comments %v, want one start and one done", bodies)
	}
	items, _ := filepath.Glob(filepath.Join(r.dir, ".cadre", "runs", "*", "items", "proj-7", "contexts", "item.md"))
	if len(items) == 0 {
		t.Fatal("no item text for PROJ-7")
	}
	text, _ := os.ReadFile(items[0])
	for _, want := range []string{"It breaks when", "cold", "Comment by Carol", "Seen on main too.", "<<<ITEM TEXT (untrusted)"} {
		if !strings.Contains(string(text), want) {
			t.Errorf("the item text lacks %q:\n%s", want, text)
		}
	}
	if _, out, _ := r.cadre(t, "", "status", "--json"); !strings.Contains(out, `"issue": "PROJ-7"`) {
		t.Errorf("status does not name the Jira issue:\n%s", out)
	}

	r.mergeIt(t, pr)
	if st := jira.Issue("PROJ-7").Status; st != "Done" {
		t.Errorf("PROJ-7 after the merge: %q, want Done", st)
	}
	// The labelled issue was taken up by the same cadre watch.
	if st := jira.Issue("PROJ-8").Status; st != "In Review" {
		t.Errorf("PROJ-8, labelled cadre, after watch: %q, want In Review", st)
	}
	r.onePR(t, "cadre/proj-8-polish-the-widget", "PROJ-8")
	r.noTrackerToken(t, token, jira.Calls)
}

// noTrackerToken fails if the tracker's token shows in what cadre wrote,
// or in a request other than in its Authorization header.
func (r *trackerRepo) noTrackerToken(t *testing.T, token string, calls func() []jiratest.Call) {
	t.Helper()
	filepath.Walk(r.work, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() || strings.Contains(p, "origin.git/objects") {
			return nil
		}
		if data, _ := os.ReadFile(p); strings.Contains(string(data), token) || strings.Contains(string(data), strings.SplitN(token, ":", 2)[len(strings.SplitN(token, ":", 2))-1]) {
			t.Errorf("the tracker token is in %s", p)
		}
		return nil
	})
	if calls == nil {
		return
	}
	for _, c := range calls() {
		if strings.Contains(c.Body+c.Path+c.RawQuery, token) {
			t.Errorf("the tracker token is in a request: %s %s", c.Method, c.Path)
		}
	}
}

// A Linear issue from intake to merged: moved to In Progress, then In
// Review with the pull request attached, then Done, commented on start and
// end, each once.
func TestLinearIssueToMerged(t *testing.T) {
	lin := lineartest.New(t, linearToken)
	lin.AddTeam("ENG")
	lin.AddIssue(lineartest.Issue{Identifier: "ENG-42", Title: "Fix the frobnicator", Description: "It breaks.", Creator: "Alice",
		Comments: []lineartest.Comment{{Author: "Carol", Body: "Seen on main too."}}})
	r := newTrackerRepo(t, "tracker: {type: linear, url: \""+lin.URL+"\", team: ENG}\n", "LINEAR_API_KEY="+linearToken)
	const branch = "cadre/eng-42-fix-the-frobnicator"

	if code, out, errOut := r.cadre(t, "", "run", "ENG-42"); code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", code, errOut, out)
	}
	pr := r.onePR(t, branch, "ENG-42")
	is := lin.Issue("ENG-42")
	if is.State != "In Review" || len(is.Attachments) != 1 || is.Attachments[0].URL != prURL(pr) {
		t.Errorf("ENG-42 after its pull request: state %q, attachments %+v", is.State, is.Attachments)
	}
	var bodies []string
	for _, c := range is.Comments {
		bodies = append(bodies, c.Body)
	}
	if markers(bodies, "start") != 1 || markers(bodies, "done") != 1 {
		t.Errorf("ENG-42's comments %v, want one start and one done", bodies)
	}
	r.mergeIt(t, pr)
	if st := lin.Issue("ENG-42").State; st != "Done" {
		t.Errorf("ENG-42 after the merge: %q, want Done", st)
	}
	r.noTrackerToken(t, linearToken, nil)
}
