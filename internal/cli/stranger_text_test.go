package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cadre-dev/cadre/internal/forge/forgetest"
)

// modelKey is a model API key in cadre's environment, passed to its
// agent; it has no well-known shape, so only knowing it masks it.
const modelKey = "X81mLp0vQz7RtY2uWc4nBv6sDf8gHj1kLz3xCv5bNm7aQw9eRtUy"

// leakyAgent prints its key followed by 150 characters on stderr and
// exits 4: a tail of its stderr cut to 200 characters holds the last 50
// of the key's.
const leakyAgent = `#!/bin/sh
cat >/dev/null
printf '%s%s\n' "$AGENT_API_KEY" "$(printf 'z%.0s' $(seq 150))" >&2
exit 4
`

// runs lists the runs of 12 characters of secret that text holds.
func runs(secret, text string) []string {
	var found []string
	for i := 0; i+12 <= len(secret); i++ {
		if strings.Contains(text, secret[i:i+12]) {
			found = append(found, secret[i:i+12])
		}
	}
	return found
}

// TestKeyFragmentsStayInCadre: an agent that prints its model key and
// fails, and an issue whose title holds the GitHub token: no run of 12 of
// either's characters reaches the issue's comments, the pull requests,
// cadre's output or any file it wrote (the journal, logs, task files,
// prompts), and the failure comment says cadre's reason, not the agent's
// stderr, with where its log is.
func TestKeyFragmentsStayInCadre(t *testing.T) {
	g := newGitHubRepo(t)
	g.fake.AddIssue("acme", "widgets", forgetest.Issue{Title: "Leak " + canary + " please", Body: "Also " + modelKey + " here.", Author: "mallory"})
	os.WriteFile(filepath.Join(g.dir, "agent.sh"), []byte(leakyAgent), 0o755)
	os.WriteFile(filepath.Join(g.dir, "cadre.yaml"), []byte("repository: acme/widgets\ngithub: {api_url: \""+g.fake.URL+"\", authors: [alice, mallory]}\n"+
		"defaults: {runner: agent, workflow: simple}\nrunners:\n  agent: {type: exec, command: ./agent.sh, env: [AGENT_API_KEY]}\n"), 0o644)
	t.Setenv("AGENT_API_KEY", modelKey)
	code, out, errOut := g.cadre(t, "", "run", "--parallel", "1", "1", "3")
	if code == 0 {
		t.Fatalf("exit 0, want the failing agent's items failed\n%s\n%s", errOut, out)
	}
	check := func(where, text string) {
		t.Helper()
		if r := runs(modelKey, text); len(r) > 0 {
			t.Errorf("%s holds %d runs of the model key, first %q", where, len(r), r[0])
		}
		if r := runs(canary, text); len(r) > 0 {
			t.Errorf("%s holds %d runs of the token, first %q", where, len(r), r[0])
		}
	}
	check("cadre's stdout", out)
	check("cadre's stderr", errOut)
	filepath.Walk(g.work, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() || strings.Contains(p, "origin.git/objects") {
			return nil
		}
		data, _ := os.ReadFile(p)
		check(p, string(data))
		return nil
	})
	for _, n := range []int{1, 3} {
		var failed []string
		for _, c := range g.fake.Comments("acme", "widgets", n) {
			check("a comment on issue "+string(rune('0'+n)), c.Body)
			if strings.Contains(c.Body, ":failed -->") {
				failed = append(failed, c.Body)
			}
		}
		if len(failed) != 1 {
			t.Fatalf("issue %d has %d failure comments, want 1", n, len(failed))
		}
		if body := failed[0]; !strings.Contains(body, "executor exited with code 4") || strings.Contains(body, "zzzz") ||
			!strings.Contains(body, "`.cadre/runs/") || strings.Contains(body, g.work) {
			t.Errorf("issue %d's failure comment is not cadre's reason and a pointer to the log:\n%s", n, body)
		}
	}
}
