package cli_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// ciScenario: the executor of a stranger's issue writes a workflow.
const ciScenario = `rules:
  - role: executor
    actions:
      - run: [sh, -c, "mkdir -p .github/workflows && echo 'on: push' > .github/workflows/x.yml && echo fixed > fix.txt"]
    say: Fixed it, and CI too.
    signal: {result: SUCCESS, confidence: 9}
`

// A stranger's item whose branch changes CI configuration is not pushed
// (a push alone can run a workflow): it waits for a person. Approved, it
// is pushed and opened as a labelled draft; rejected, nothing is pushed.
func TestStrangersCIEditsWaitForAPerson(t *testing.T) {
	g := newGitHubRepo(t)
	os.WriteFile(filepath.Join(g.dir, "scenario.yaml"), []byte(ciScenario), 0o644)
	code, out, errOut := g.cadre(t, "", "run", "1", "2")
	if code != 3 {
		t.Fatalf("run: exit %d, want 3 (waits for a person)\n%s\n%s", code, errOut, out)
	}
	branches, _ := exec.Command("git", "-C", g.bare, "branch", "--list", "cadre/*").Output()
	if strings.TrimSpace(string(branches)) != "" {
		t.Fatalf("a stranger's CI change was pushed: %s", branches)
	}
	if prs := g.fake.PRs("acme", "widgets"); len(prs) != 0 {
		t.Fatalf("pull requests opened: %+v", prs)
	}
	_, status, _ := g.cadre(t, "", "status")
	if !strings.Contains(status, "paused") || !strings.Contains(status, ".github/workflows/x.yml") {
		t.Errorf("status does not say what the item waits for:\n%s", status)
	}
	run := runOf(t, g)
	if code, _, e := g.cadre(t, "", "approve", run, "1"); code != 0 {
		t.Fatalf("approve: exit %d\n%s", code, e)
	}
	if code, _, e := g.cadre(t, "", "approve", "--reject", run, "2"); code != 0 {
		t.Fatalf("approve --reject: exit %d\n%s", code, e)
	}
	g.cadre(t, "", "resume", run)
	prs := g.fake.PRs("acme", "widgets")
	if len(prs) != 1 || prs[0].Head != "cadre/1-fix-the-frobnicator" || !prs[0].Draft || !slices.Contains(prs[0].Labels, "cadre:sensitive") {
		t.Fatalf("after the approval, pull requests %+v; want #1's alone, a labelled draft", prs)
	}
	if err := exec.Command("git", "-C", g.bare, "rev-parse", "--verify", "-q", "refs/heads/cadre/2-polish-the-widget").Run(); err == nil {
		t.Error("the rejected item's branch was pushed")
	}
}
