package run_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/cadre-dev/cadre/agent"
	"github.com/cadre-dev/cadre/run"
)

// gitRepo makes a committed git repository of files.
func gitRepo(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"},
		{"-c", "user.email=t@example.com", "-c", "user.name=T", "commit", "-qm", "init"}} {
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	return dir
}

// events collects a run's events of one type by role.
type events struct {
	mu     sync.Mutex
	byRole map[string][]run.Event
}

func (e *events) on(ev run.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if ev.Type != "stepStarted" {
		return
	}
	if e.byRole == nil {
		e.byRole = map[string][]run.Event{}
	}
	e.byRole[ev.Role] = append(e.byRole[ev.Role], ev)
}

// A coder built in Go, with its own runner and prompt, does the coder's
// steps in place of cadre.yaml's runner; the auditor keeps cadre.yaml's.
func TestRolesRunGoBuiltAgents(t *testing.T) {
	repo := gitRepo(t, map[string]string{
		"cadre.yaml": "defaults: {runner: fake}\nrunners:\n  fake: {type: script, scenario: scenario.yaml}\n",
		"scenario.yaml": `rules:
  - role: coder
    actions:
      - write: {path: from-yaml.txt, content: "yaml\n"}
    signal: {result: SUCCESS, confidence: 9}
  - role: auditor
    signal: {result: PASS, confidence: 9, rating: 9}
`,
		"tasks/hello.md": "---\nstage: code\n---\n# Say hello\n\n## Goal\nWrite hello.txt.\n",
	})
	script := `cat > seen-prompt.txt; printf 'Wrote it.\n\n### SIGNAL BLOCK\n- Agent: coder\n- Result: SUCCESS\n- Loop Summary: wrote it\n- Confidence: 9\n'`
	r, err := agent.NewRunner("exec", agent.WithName("go-coder"), agent.WithCommand("/bin/sh", "-c", script))
	if err != nil {
		t.Fatal(err)
	}
	coder, err := agent.New("coder", r)
	if err != nil {
		t.Fatal(err)
	}
	coder = coder.WithPrompt("MARKER-7f3: write the file the task asks for.")
	var evs events
	sum, err := run.Start(context.Background(), repo, run.Options{Roles: map[string]*agent.Agent{"coder": coder}, OnEvent: evs.on})
	if err != nil || sum.Status != "completed" {
		t.Fatalf("run: %+v, %v", sum, err)
	}
	if got := evs.byRole["coder"]; len(got) != 1 || got[0].Runner != "go-coder" {
		t.Fatalf("coder steps %+v, want one on the Go-built runner go-coder", got)
	}
	if got := evs.byRole["auditor"]; len(got) != 1 || got[0].Runner != "fake" {
		t.Fatalf("auditor steps %+v, want one on cadre.yaml's runner fake", got)
	}
	branch := sum.Items[0].Branch
	seen, err := exec.Command("git", "-C", repo, "show", branch+":seen-prompt.txt").Output()
	if err != nil {
		t.Fatalf("the Go-built coder's work is not on %s: %v", branch, err)
	}
	if !strings.Contains(string(seen), "MARKER-7f3") {
		t.Errorf("the coder's prompt lacks the agent's WithPrompt text:\n%s", seen)
	}
	if exec.Command("git", "-C", repo, "cat-file", "-e", branch+":from-yaml.txt").Run() == nil {
		t.Error("cadre.yaml's coder ran too")
	}
}

// Options.Limits.MaxIterations bounds the moa loop in place of
// cadre.yaml's limits.max_iterations.
func TestLimitsBoundTheLoop(t *testing.T) {
	files := map[string]string{
		"cadre.yaml": "defaults: {runner: fake}\nrunners:\n  fake: {type: script, scenario: scenario.yaml}\nlimits: {max_iterations: 3}\n",
		"scenario.yaml": `rules:
  - role: architect
    say: "## Design\nOne file.\n"
    signal: {result: SUCCESS, confidence: 9}
  - role: executor
    actions:
      - write: {path: out.txt, content: "x\n"}
    say: "## Summary\nWrote out.txt.\n\n## Changes\nout.txt\n"
    signal: {result: SUCCESS, confidence: 9}
  - role: critic
    say: "## Review\nNot yet.\n"
    signal: {result: INSUFFICIENT, confidence: 9, rating: 2, verdict: needs-fixes}
`,
		"tasks/hello.md": "---\nstage: code\n---\n# Say hello\n\n## Goal\nWrite out.txt.\n",
	}
	count := func(lim run.Limits) int {
		var evs events
		if _, err := run.Start(context.Background(), gitRepo(t, files), run.Options{Workflow: "moa", Limits: lim, OnEvent: evs.on}); err != nil {
			t.Logf("run: %v", err)
		}
		return len(evs.byRole["executor"])
	}
	if n := count(run.Limits{}); n != 3 {
		t.Errorf("no Limits: the executor ran %d times, want cadre.yaml's 3", n)
	}
	if n := count(run.Limits{MaxIterations: 1}); n != 1 {
		t.Errorf("MaxIterations 1: the executor ran %d times, want 1", n)
	}
	if _, err := run.Start(context.Background(), gitRepo(t, files), run.Options{Limits: run.Limits{MaxIterations: -1}}); err == nil ||
		!strings.Contains(err.Error(), "Options.Limits.MaxIterations") {
		t.Errorf("a negative limit: err = %v", err)
	}
}

// An agent's runner may not take a name cadre.yaml gives another role.
func TestRolesRefuseATakenRunnerName(t *testing.T) {
	repo := gitRepo(t, map[string]string{
		"cadre.yaml":     "defaults: {runner: fake}\nrunners:\n  fake: {type: script, scenario: scenario.yaml}\n",
		"scenario.yaml":  "rules: []\n",
		"tasks/hello.md": "---\nstage: code\n---\n# Say hello\n",
	})
	r, err := agent.NewRunner("exec", agent.WithName("fake"), agent.WithCommand("true"))
	if err != nil {
		t.Fatal(err)
	}
	coder, _ := agent.New("coder", r)
	_, err = run.Start(context.Background(), repo, run.Options{Roles: map[string]*agent.Agent{"coder": coder}})
	if err == nil || !strings.Contains(err.Error(), `runner name "fake" is cadre.yaml's too`) {
		t.Fatalf("err = %v, want the name clash refused", err)
	}
	_, err = run.Start(context.Background(), repo, run.Options{Roles: map[string]*agent.Agent{"auditor": coder}})
	if err == nil || !strings.Contains(err.Error(), "Options.Roles[auditor]: want an agent doing auditor") {
		t.Fatalf("err = %v, want an agent of another role refused", err)
	}
}
