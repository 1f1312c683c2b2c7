package eval_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/cadre-dev/cadre/eval"
	"github.com/cadre-dev/cadre/internal/store"
	"github.com/cadre-dev/cadre/run"
)

// moaRepo is a repository whose one task goes through the moa workflow
// once: the executor's work is reviewed by the critic, checked by the
// gatekeeper and scored by the judge, so a run records every kind of row.
func moaRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"cadre.yaml": `defaults: {runner: fake}
runners:
  fake: {type: script, scenario: scenario.yaml}
roles:
  executor:
    rubric: {correctness: "does what the task asks", clarity: "easy to follow"}
    requirements: {commands: []}
`,
		"scenario.yaml": `rules:
  - role: architect
    say: "## Design\nOne file.\n"
    signal: {result: SUCCESS, confidence: 9}
  - role: executor
    actions:
      - write: {path: out.txt, content: "x\n"}
    say: "## Summary\nWrote out.txt.\n"
    signal: {result: SUCCESS, confidence: 9}
    usage: {input_tokens: 100, output_tokens: 20, cost_usd: 0.25}
  - role: critic
    say: "## Review\nFine.\n"
    signal: {result: PASS, summary: looks right, confidence: 9, rating: 8, verdict: pass}
  - role: judge
    say: |
      {"scores":{"correctness":9,"clarity":7},"overall":8,"reasoning":"Right and clear."}
    signal: {result: PASS, confidence: 9, rating: 8}
`,
		"tasks/hello.md": "---\nstage: code\n---\n# Say hello\n\n## Goal\nWrite out.txt.\n",
	}
	for name, text := range files {
		os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755)
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

// A program records a whole evaluation and reads it back as the same
// Evaluation, and the same rows, as a run writes: read the executor's
// evaluation a run recorded, record it again from Go, compare.
func TestRecordEvaluationAsARunDoes(t *testing.T) {
	ctx := context.Background()
	repo := moaRepo(t)
	sum, err := run.Start(ctx, repo, run.Options{Workflow: "moa", Limits: run.Limits{MaxIterations: 1}})
	if err != nil || sum.Status != "completed" {
		t.Fatalf("run: %+v, %v", sum, err)
	}
	scores, err := eval.OpenScores(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	defer scores.Close()
	byRun, err := scores.Evaluations(ctx, eval.Filter{Role: "executor", Source: eval.SourceRun})
	if err != nil || len(byRun) != 1 {
		t.Fatalf("the run's executor evaluations: %+v, %v; want one", byRun, err)
	}
	want := byRun[0]
	if want.Gatekeeper == nil || want.Judge == nil || want.Review == nil || want.Passed == nil || want.Usage == nil {
		t.Fatalf("the run's evaluation lacks a part: %+v", want)
	}
	if want.Judge.Overall != 8 || want.Judge.Scores["clarity"] != 7 || !want.Judge.Passed || want.Usage.CostUSD != 0.25 {
		t.Errorf("the run's evaluation = judge %+v, usage %+v", want.Judge, want.Usage)
	}

	mine := want
	mine.Source, mine.Run, mine.Item, mine.Step = "", "", "", ""
	if err := scores.RecordEvaluation(ctx, mine); err != nil {
		t.Fatal(err)
	}
	byAPI, err := scores.Evaluations(ctx, eval.Filter{Role: "executor", Source: eval.SourceBench})
	if err != nil || len(byAPI) != 1 {
		t.Fatalf("the program's evaluations: %+v, %v; want one", byAPI, err)
	}
	got := byAPI[0]
	if got.Run != "api" || got.Step == "" {
		t.Errorf("recorded as run %q step %q, want run api and a step id", got.Run, got.Step)
	}
	got.Source, got.Run, got.Item, got.Step = want.Source, want.Run, want.Item, want.Step
	if !reflect.DeepEqual(got, want) {
		t.Errorf("read back\n%s\nwant the run's\n%s", dump(got), dump(want))
	}
	compareRows(t, repo)
}

// compareRows checks the program's rows against the run's, field by
// field, but for where they come from.
func compareRows(t *testing.T, repo string) {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(repo, ".cadre", "cadre.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rows := map[string]map[string]store.Evaluation{}
	all, err := st.Evaluations(ctx, store.EvalFilter{Role: "executor"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range all {
		src := r.Source
		if rows[src] == nil {
			rows[src] = map[string]store.Evaluation{}
		}
		r.ID, r.CreatedAt, r.Source, r.RunID, r.ItemID, r.StepID = 0, time.Time{}, "", "", "", ""
		rows[src][r.Kind] = r
	}
	byRun, byAPI := rows[store.SourceRun], rows[store.SourceBench]
	if len(byRun) != 4 || len(byAPI) != 4 {
		t.Fatalf("rows by kind: run %d, program %d; want 4 each", len(byRun), len(byAPI))
	}
	for kind, w := range byRun {
		if g := byAPI[kind]; !reflect.DeepEqual(g, w) {
			t.Errorf("%s row: program's %s, run's %s", kind, dump(g), dump(w))
		}
	}
}

func dump(v any) string {
	b, _ := json.MarshalIndent(v, "", "  ")
	return string(b)
}
