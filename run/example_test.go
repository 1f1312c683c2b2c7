package run_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/cadre-dev/cadre/agent"
	"github.com/cadre-dev/cadre/run"
)

// A repository with one task file and the script runner as its agent: Start
// runs the task through its stage pipeline (coder, then auditor) on its own
// branch, as `cadre run` would.
func Example() {
	repo, cleanup := sampleRepo()
	defer cleanup()

	var steps int
	sum, err := run.Start(context.Background(), repo, run.Options{
		OnEvent: func(ev run.Event) {
			if ev.Type == "stepCompleted" {
				steps++
			}
		},
	})
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	fmt.Println("run:", sum.Status)
	for _, it := range sum.Items {
		fmt.Printf("%s: %s, stage %s, %d agent steps, branch %s\n", it.ID, it.Status, it.Stage, it.Steps, it.Branch)
	}
	fmt.Println("steps seen:", steps)
	out, _ := exec.Command("git", "-C", repo, "log", "--format=%s", "cadre/hello-say-hello").Output()
	fmt.Printf("%s", out)

	_, err = run.Resume(context.Background(), repo, "", run.Options{})
	fmt.Println("resume:", errors.Is(err, run.ErrNothingToResume))
	// Output:
	// run: completed
	// hello: completed, stage completed, 2 agent steps, branch cadre/hello-say-hello
	// steps seen: 2
	// Say hello
	// init
	// resume: true
}

// sampleRepo makes a git repository with a task and a scripted agent.
func sampleRepo() (string, func()) {
	dir, _ := os.MkdirTemp("", "cadre-run-example")
	files := map[string]string{
		"cadre.yaml": "defaults: {runner: fake}\nrunners:\n  fake: {type: script, scenario: scenario.yaml}\n",
		"scenario.yaml": `rules:
  - role: coder
    actions:
      - write: {path: hello.txt, content: "hello\n"}
    signal: {result: SUCCESS, confidence: 9}
  - role: auditor
    signal: {result: PASS, confidence: 9, rating: 9}
`,
		"tasks/hello.md": "---\nstage: code\n---\n# Say hello\n\n## Goal\nWrite hello.txt.\n",
	}
	for name, text := range files {
		os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755)
		os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644)
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"},
		{"-c", "user.email=t@example.com", "-c", "user.name=T", "commit", "-qm", "init"}} {
		exec.Command("git", append([]string{"-C", dir}, args...)...).Run()
	}
	return dir, func() { os.RemoveAll(dir) }
}

// Workflows lists the built-in workflows with the roles each invokes.
func ExampleWorkflows() {
	for _, w := range run.Workflows() {
		if w.Name == "loop" || w.Name == "simple" {
			fmt.Println(w.Name, w.Roles)
		}
	}
	// Output:
	// loop [planner actor judge diagnoser]
	// simple [executor]
}

// A program gives a role its own agent, built in Go, and bounds the run's
// loops: the coder here is a shell command reached through the exec
// runner; the auditor is still cadre.yaml's.
func Example_roles() {
	repo, cleanup := sampleRepo()
	defer cleanup()

	r, err := agent.NewRunner("exec", agent.WithName("sh-coder"), agent.WithCommand("/bin/sh", "-c",
		`cat >/dev/null; echo hi > hello.txt; printf '### SIGNAL BLOCK\n- Agent: coder\n- Result: SUCCESS\n- Confidence: 9\n'`))
	if err != nil {
		fmt.Println(err)
		return
	}
	coder, err := agent.New("coder", r)
	if err != nil {
		fmt.Println(err)
		return
	}
	sum, err := run.Start(context.Background(), repo, run.Options{
		Roles:  map[string]*agent.Agent{"coder": coder},
		Limits: run.Limits{MaxAttempts: 1},
		OnEvent: func(ev run.Event) {
			if ev.Type == "stepStarted" {
				fmt.Println(ev.Role, "on", ev.Runner)
			}
		},
	})
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	fmt.Println("run:", sum.Status)
	// Output:
	// coder on sh-coder
	// auditor on fake
	// run: completed
}
