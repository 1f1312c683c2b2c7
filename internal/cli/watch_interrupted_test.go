package cli_test

import (
	"strings"
	"testing"

	"github.com/cadre-dev/cadre/internal/forge/forgetest"
)

// A watch killed while its intake run publishes leaves that run journaled
// running: the next watch resumes it (intake would pass its issue by, as
// it has an item), and the pull request opens once.
func TestWatchResumesInterruptedIntake(t *testing.T) {
	g := watchRepo(t, "")
	g.fake.AddIssue("acme", "widgets", forgetest.Issue{Title: "Label me", Body: "Do it.", Author: "carol", Labels: []string{"cadre"}})
	if code, _, errOut := g.cadre(t, "pushed", "watch", "--once"); code != -1 && code != 137 {
		t.Fatalf("the watch was not killed during its intake: exit %d\n%s", code, errOut)
	}
	if prs := g.fake.PRs("acme", "widgets"); len(prs) != 0 {
		t.Fatalf("a pull request before the kill's resume: %+v", prs)
	}
	code, _, errOut := g.cadre(t, "", "watch", "--once")
	if code != 0 || !strings.Contains(errOut, "resuming run") {
		t.Fatalf("the interrupted intake run was not resumed: exit %d\n%s", code, errOut)
	}
	if prs := g.fake.PRs("acme", "widgets"); len(prs) != 1 || prs[0].Head != "cadre/3-label-me" {
		t.Fatalf("pull requests %+v, want one for issue 3", prs)
	}
	if code, _, errOut := g.cadre(t, "", "watch", "--once"); code != 0 || strings.Contains(errOut, "resuming run") {
		t.Errorf("a finished run was resumed again: exit %d\n%s", code, errOut)
	}
}
