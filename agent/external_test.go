package agent_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// externalMain is a program outside this module using the public API only:
// if anything it needs were internal, or the packages did not build as a
// dependency, it would not compile.
const externalMain = `package main

import (
	"context"
	"fmt"
	"os"

	"github.com/cadre-dev/cadre/agent"
	"github.com/cadre-dev/cadre/eval"
	"github.com/cadre-dev/cadre/run"
)

func main() {
	ctx := context.Background()
	r, err := agent.NewRunner("script", agent.WithScenario("scenario.yaml"))
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	a, err := agent.New("executor", r)
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	resp, err := a.Invoke(ctx, "Add a greeting", "")
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	hello, _ := os.ReadFile("hello.txt")
	fmt.Printf("result=%s summary=%q file=%q cost=%.2f\n", resp.Signal.Result, resp.Signal.Summary, hello, resp.Usage.CostUSD)
	gate := eval.Gatekeeper{}.Validate(resp.Text, eval.Requirements{Sections: []string{"Summary"}, Results: []string{"SUCCESS"}})
	fmt.Println("gatekeeper:", gate.Summary())
	judgeRunner, err := agent.NewRunner("exec", agent.WithCommand("/bin/sh", "-c", ` + "`" + `cat >/dev/null; echo '{"scores":{"greeting":7},"overall":7}'` + "`" + `))
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	j, err := eval.NewJudge(judgeRunner).Evaluate(ctx, resp.Text, "Add a greeting", eval.Rubric{"greeting": "it greets"})
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println("judge overall:", j.Overall)
	sum, err := run.Start(ctx, "repo", run.Options{InPlace: true})
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println("run:", sum.Status, sum.Items[0].ID, sum.Items[0].Stage)
}
`

const externalScenario = `rules:
  - role: executor
    actions:
      - write: {path: hello.txt, content: "hello\n"}
    say: "## Summary\nWrote hello.txt."
    signal: {result: SUCCESS, summary: greeting added, confidence: 9}
    usage: {cost_usd: 0.25}
  - role: coder
    actions:
      - write: {path: greet.txt, content: "hi\n"}
    signal: {result: SUCCESS, confidence: 9}
  - role: auditor
    signal: {result: PASS, confidence: 9, rating: 9}
`

// TestExternalModule builds and runs a throwaway module that requires this
// one (through a replace directive) and imports agent, eval and run, as a user's
// program would: it proves the API is reachable from outside the module,
// builds offline from the module cache, and works end to end.
func TestExternalModule(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not on PATH; cannot build an external module")
	}
	if testing.Short() {
		t.Skip("builds a module: skipped with -short")
	}
	repo, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	sum, err := os.ReadFile(filepath.Join(repo, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"go.mod": "module example.com/user\n\ngo 1.26\n\nrequire github.com/cadre-dev/cadre v0.0.0\n\n" +
			"replace github.com/cadre-dev/cadre => " + repo + "\n",
		"go.sum":        string(sum),
		"main.go":       externalMain,
		"scenario.yaml": externalScenario,
	}
	// A repository with one task, for run.Start.
	files["repo/cadre.yaml"] = "defaults: {runner: fake}\nrunners:\n  fake: {type: script, scenario: ../scenario.yaml}\n"
	files["repo/tasks/t.md"] = "---\nstage: code\n---\n# Greet\n"
	for name, text := range files {
		os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"},
		{"-c", "user.email=t@example.com", "-c", "user.name=T", "commit", "-qm", "init"}} {
		if out, err := exec.Command("git", append([]string{"-C", filepath.Join(dir, "repo")}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, goBin, "run", ".")
	cmd.Dir = dir
	// Offline: every dependency must come from the module cache the parent
	// build filled, as the replace makes this repository the dependency.
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", "GOPROXY=off", "GOTOOLCHAIN=local")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go run in the external module: %v\n%s", err, out)
	}
	want := `result=SUCCESS summary="greeting added" file="hello\n" cost=0.25
gatekeeper: passed 3/3 checks
judge overall: 7
run: completed t completed
`
	if got := string(out); !strings.HasSuffix(got, want) {
		t.Fatalf("external program printed:\n%s\nwant it to end with:\n%s", got, want)
	}
}
