package eval_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cadre-dev/cadre/agent"
	"github.com/cadre-dev/cadre/eval"
)

func scriptRunner(t *testing.T, yaml string) agent.Runner {
	t.Helper()
	path := filepath.Join(t.TempDir(), "scenario.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := agent.NewRunner("script", agent.WithScenario(path))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

var rubric = eval.Rubric{"correctness": "right", "clarity": "clear"}

func TestJudgeReasksOnce(t *testing.T) {
	r := scriptRunner(t, `
rules:
  - role: judge
    reask: false
    say: '{"scores":{"correctness":12,"clarity":5}}'
  - role: judge
    reask: true
    say: '{"scores":{"correctness":9,"clarity":5}}'
`)
	j, err := eval.NewJudge(r).Evaluate(context.Background(), "resp", "task", rubric)
	if err != nil {
		t.Fatal(err)
	}
	if j.Overall != 7 || j.Scores["correctness"] != 9 {
		t.Fatalf("judgement = %+v, want the re-ask's scores with overall their mean 7", j)
	}
}

func TestJudgeFailsWhenStillUnusable(t *testing.T) {
	r := scriptRunner(t, `
rules:
  - role: judge
    say: '{"scores":{"correctness":9}}'
`)
	_, err := eval.NewJudge(r).Evaluate(context.Background(), "resp", "task", rubric)
	if !errors.Is(err, eval.ErrNoJudgement) || !strings.Contains(err.Error(), `not scored: "clarity"`) {
		t.Fatalf("err = %v, want ErrNoJudgement naming the missing criterion", err)
	}
}

// The judge is shown the task and the response, fenced as data, and the
// rubric's criteria.
func TestJudgePrompt(t *testing.T) {
	dir := t.TempDir()
	r, err := agent.NewRunner("exec", agent.WithCommand("/bin/sh", "-c", `cat > prompt.txt; echo '{"scores":{"correctness":1,"clarity":2}}'`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := eval.NewJudge(r, eval.WithDir(dir)).Evaluate(context.Background(), "THE RESPONSE", "THE TASK", rubric); err != nil {
		t.Fatal(err)
	}
	p, _ := os.ReadFile(filepath.Join(dir, "prompt.txt"))
	for _, want := range []string{"THE RESPONSE", "THE TASK", "- clarity: clear", `"scores"`} {
		if !strings.Contains(string(p), want) {
			t.Errorf("judge prompt lacks %q", want)
		}
	}
}

func TestSelectorErrors(t *testing.T) {
	ctx := context.Background()
	if _, _, _, err := (eval.Selector{Scores: &eval.MemoryScores{}, Candidates: []string{"Bad Name"}}).Select(ctx, "x"); err == nil || !strings.Contains(err.Error(), "candidates[0]") {
		t.Errorf("bad candidate: err = %v", err)
	}
	if _, _, _, err := (eval.Selector{Scores: &eval.MemoryScores{}}).Select(ctx, "x"); err == nil {
		t.Error("no candidates: want an error")
	}
	if _, _, _, err := (eval.Selector{Candidates: []string{"claude"}}).Select(ctx, "x"); err == nil {
		t.Error("no scores: want an error")
	}
}

func TestValidateWorkChecksTheDiff(t *testing.T) {
	req := eval.Requirements{ForbiddenPaths: []string{".github/**"}, Commands: []string{"test"}}
	res := eval.Gatekeeper{}.ValidateWork(eval.Response{Text: "x", Files: []string{".github/workflows/ci.yml"},
		Commands: map[string]int{"test": 0}}, req)
	if res.Passed || !strings.Contains(res.Summary(), ".github/workflows/ci.yml") {
		t.Fatalf("result = %s, want the forbidden path reported", res.Summary())
	}
}
