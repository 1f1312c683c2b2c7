package bench_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"testing"

	"github.com/goccy/go-yaml"

	"github.com/cadre-dev/cadre/agent"
	"github.com/cadre-dev/cadre/eval"
	"github.com/cadre-dev/cadre/internal/bench"
	"github.com/cadre-dev/cadre/internal/store"
)

// The scripted contestants: good writes the file the case asks for and
// passes its test command; bad answers without touching the tree.
const scenarios = `
good.yaml: |
  rules:
    - role: executor
      actions:
        - write: {path: hello.sh, content: "echo hello\n"}
      signal: {result: SUCCESS, confidence: 9}
      usage: {input_tokens: 100, output_tokens: 10, cost_usd: 0.02}
bad.yaml: |
  rules:
    - role: executor
      say: I could not do it.
      signal: {result: SUCCESS, confidence: 3}
      usage: {input_tokens: 100, output_tokens: 10, cost_usd: 0.01}
judge.yaml: |
  rules:
    - role: judge
      say: '{"scores":{"works":8},"overall":8,"reasoning":"prints hello"}'
`

// benchFixture writes a repository bench dir with one executor case and
// the scenarios, and returns the loaded case and the directory.
func benchFixture(t testing.TB) ([]bench.Case, string) {
	t.Helper()
	dir := t.TempDir()
	var sc map[string]string
	if err := yaml.Unmarshal([]byte(scenarios), &sc); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"bench/hello.yaml": `role: executor
prompt: Write hello.sh printing hello.
fixture: fx
rubric: {works: it prints hello}
requirements: {allowed_files: [hello.sh]}
commands:
  build: sh -n hello.sh
  test: test "$(sh hello.sh)" = hello
`,
		"bench/fx/README.md": "# hello\n",
	}
	for k, v := range sc {
		files[k] = v
	}
	writeFiles(t, dir, files)
	cases, err := bench.LoadDir(filepath.Join(dir, "bench"), knownRoles(t))
	if err != nil {
		t.Fatal(err)
	}
	return cases, dir
}

func scriptRunner(t testing.TB, dir, name string) agent.Runner {
	t.Helper()
	r, err := agent.NewRunner("script", agent.WithName(name), agent.WithScenario(filepath.Join(dir, name+".yaml")))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func openStore(t testing.TB) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "cadre.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func newBench(t testing.TB, st *store.Store, dir string) *bench.Bench {
	return &bench.Bench{Store: st, Judge: bench.Contestant{Runner: scriptRunner(t, dir, "judge")},
		Runners: map[string]bench.Contestant{"good": {Runner: scriptRunner(t, dir, "good")}, "bad": {Runner: scriptRunner(t, dir, "bad")}}}
}

func TestExecuteEvaluatesAndRanks(t *testing.T) {
	ctx := context.Background()
	cases, dir := benchFixture(t)
	st := openStore(t)
	opts := bench.Options{Runners: []string{"bad", "good"}, Repeat: 2}
	run, err := bench.Open(ctx, st, dir, opts, false)
	if err != nil {
		t.Fatal(err)
	}
	b := newBench(t, st, dir)
	sum, err := b.Execute(ctx, run.ID, bench.Jobs(cases, opts.Runners, opts.Repeat))
	if err != nil {
		t.Fatal(err)
	}
	if sum.Ran != 4 || sum.Failed != 0 {
		t.Fatalf("summary %+v, want 4 jobs run, none failed", sum)
	}
	rows, err := bench.Leaderboard(ctx, st, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].Runner != "good" || rows[1].Runner != "bad" {
		t.Fatalf("leaderboard %+v, want good then bad", rows)
	}
	if g := rows[0]; g.PassRate != 1 || g.MeanScore != 0.8 || g.MeanCostUSD != 0.02 || g.Cases != 2 {
		t.Errorf("good row %+v, want pass 1, score 0.8, cost 0.02 over 2 cases", g)
	}
	if b := rows[1]; b.PassRate != 0 || b.MeanScore != 0 {
		t.Errorf("bad row %+v, want pass 0, score 0 (not judged)", b)
	}
	evs, err := st.Evaluations(ctx, store.EvalFilter{Source: store.SourceBench, RunID: run.ID}, 0)
	if err != nil {
		t.Fatal(err)
	}
	var steps []string
	for _, e := range evs {
		steps = append(steps, e.StepID)
		if e.Kind != store.KindBench || e.Role != "executor" || e.Usage == nil {
			t.Errorf("evaluation %+v: want kind bench, role executor, with usage", e)
		}
		var d bench.Detail
		if err := json.Unmarshal(e.Detail, &d); err != nil {
			t.Fatal(err)
		}
		switch e.Runner {
		case "good":
			if d.Judge == nil || d.Judge.Scores["works"] != 8 || len(d.Checks) == 0 {
				t.Errorf("good detail %+v: want checks and the judge's scores", d)
			}
			if !slices.ContainsFunc(d.Checks, func(c eval.Check) bool { return c.Name == "command test" && c.Passed }) {
				t.Errorf("good detail %+v: want the case's test command run and passed", d.Checks)
			}
		case "bad":
			if d.Judge != nil || !slices.ContainsFunc(d.Checks, func(c eval.Check) bool { return c.Name == "diff_nonempty" && !c.Passed }) {
				t.Errorf("bad detail %+v: want a failed diff check and no judge", d)
			}
		}
	}
	slices.Sort(steps)
	want := []string{"executor/hello/bad#1", "executor/hello/bad#2", "executor/hello/good#1", "executor/hello/good#2"}
	if !slices.Equal(steps, want) {
		t.Errorf("recorded steps %v, want %v", steps, want)
	}
	r, err := st.GetRun(ctx, run.ID)
	if err != nil || r.Status != store.RunCompleted || r.Workflow != store.WorkflowBench {
		t.Errorf("run %+v, %v: want a completed bench run", r, err)
	}
}

func TestExecuteResumesOnlyUnfinishedJobs(t *testing.T) {
	cases, dir := benchFixture(t)
	st := openStore(t)
	opts := bench.Options{Runners: []string{"good", "bad"}, Repeat: 3}
	jobs := bench.Jobs(cases, opts.Runners, opts.Repeat)
	run, err := bench.Open(context.Background(), st, dir, opts, false)
	if err != nil {
		t.Fatal(err)
	}

	// Interrupted after two jobs.
	ctx, cancel := context.WithCancel(context.Background())
	b := newBench(t, st, dir)
	var first []string
	b.Progress = func(p bench.Progress) {
		first = append(first, p.Job.StepID())
		if len(first) == 2 {
			cancel()
		}
	}
	if _, err := b.Execute(ctx, run.ID, jobs); !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted Execute: err = %v, want context.Canceled", err)
	}
	// Killed between recording a job's evaluation and finishing its step:
	// the step is started again, as a SIGKILL would leave it.
	third := jobs[2]
	if err := st.StartStep(context.Background(), store.Step{RunID: run.ID, ID: third.StepID(), Kind: "bench"}); err != nil {
		t.Fatal(err)
	}
	score, passed := 0.5, true
	if err := st.RecordEvaluation(context.Background(), store.Evaluation{Source: store.SourceBench, Kind: store.KindBench, RunID: run.ID,
		ItemID: third.Case.ID(), StepID: third.StepID(), Role: "executor", Runner: third.Runner, Passed: &passed, Score: &score}); err != nil {
		t.Fatal(err)
	}

	// The same options resume the same run.
	again, err := bench.Open(context.Background(), st, dir, bench.Options{Runners: []string{"bad", "good"}, Repeat: 3}, false)
	if err != nil || !again.Resumed || again.ID != run.ID {
		t.Fatalf("Open again = %+v, %v; want run %s resumed", again, err, run.ID)
	}
	b.Progress = nil
	var second []string
	b.Progress = func(p bench.Progress) { second = append(second, p.Job.StepID()) }
	sum, err := b.Execute(context.Background(), run.ID, jobs)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Skipped != 2 || sum.Ran != 4 {
		t.Errorf("resumed summary %+v, want 2 skipped and 4 run", sum)
	}
	for _, id := range first {
		if slices.Contains(second, id) {
			t.Errorf("job %s ran again after completing", id)
		}
	}
	evs, err := st.Evaluations(context.Background(), store.EvalFilter{RunID: run.ID}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != len(jobs) {
		t.Errorf("%d evaluations recorded, want one per job (%d)", len(evs), len(jobs))
	}

	// Finished: the same options now start a new benchmark; so does fresh.
	next, err := bench.Open(context.Background(), st, dir, opts, false)
	if err != nil || next.Resumed || next.ID == run.ID {
		t.Errorf("Open after completion = %+v, %v; want a new run", next, err)
	}
	other, err := bench.Open(context.Background(), st, dir, bench.Options{Runners: []string{"good"}, Repeat: 3}, false)
	if err != nil || other.Resumed {
		t.Errorf("Open with other runners = %+v, %v; want a new run", other, err)
	}
}

// A benchmark scored by one judge is not continued by another: its
// leaderboard would mix two judges' scales.
func TestOpenResumesOnlyWithTheSameJudge(t *testing.T) {
	_, dir := benchFixture(t)
	st := openStore(t)
	ctx := context.Background()
	opts := bench.Options{Runners: []string{"good"}, Repeat: 1, Judge: "claude"}
	run, err := bench.Open(ctx, st, dir, opts, false)
	if err != nil {
		t.Fatal(err)
	}
	other := opts
	other.Judge = "codex"
	if o, err := bench.Open(ctx, st, dir, other, false); err != nil || o.Resumed || o.ID == run.ID {
		t.Errorf("Open with judge codex = %+v, %v; want a new run", o, err)
	}
	if again, err := bench.Open(ctx, st, dir, opts, false); err != nil || !again.Resumed || again.ID != run.ID {
		t.Errorf("Open with judge claude again = %+v, %v; want run %s resumed", again, err, run.ID)
	}
}

func TestRank(t *testing.T) {
	rows := []bench.Row{
		{Role: "planner", Runner: "a", MeanScore: 0.5},
		{Role: "executor", Runner: "cheap", MeanScore: 0.8, PassRate: 1, MeanCostUSD: 0.01},
		{Role: "executor", Runner: "dear", MeanScore: 0.8, PassRate: 1, MeanCostUSD: 0.10},
		{Role: "executor", Runner: "best", MeanScore: 0.9, PassRate: 0.5, MeanCostUSD: 1},
		{Role: "executor", Runner: "passes", MeanScore: 0.8, PassRate: 1, MeanCostUSD: 0.01, MeanLatencyMS: 10},
		{Role: "executor", Runner: "flaky", MeanScore: 0.8, PassRate: 0.5},
		{Role: "executor", Runner: "z", Model: "m"},
		{Role: "executor", Runner: "y"},
	}
	bench.Rank(rows)
	var got []string
	for _, r := range rows {
		got = append(got, r.Role+":"+r.Candidate())
	}
	want := []string{
		"executor:best",   // highest score wins over pass rate and cost
		"executor:cheap",  // equal score and pass rate: cheaper first
		"executor:passes", // equal cost: faster first
		"executor:dear",
		"executor:flaky", // lower pass rate
		"executor:y",     // ties by name
		"executor:z/m",
		"planner:a",
	}
	if !slices.Equal(got, want) {
		t.Errorf("Rank order\n got %v\nwant %v", got, want)
	}
}

// BenchmarkBenchOverhead measures cadre's own work per benchmark job
// beyond the runner's and the judge's time: the work dir, git status, the
// prompt, the gatekeeper, the journal and the score store. The runners are
// scripted, so they take next to no time themselves. The case has no
// commands: their time is the case's, not cadre's.
func BenchmarkBenchOverhead(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	var sc map[string]string
	if err := yaml.Unmarshal([]byte(scenarios), &sc); err != nil {
		b.Fatal(err)
	}
	sc["bench/hello.yaml"] = "role: executor\nprompt: Write hello.sh.\nfixture: fx\nrubric: {works: it prints hello}\n"
	sc["bench/fx/README.md"] = "# hello\n"
	writeFiles(b, dir, sc)
	cases, err := bench.LoadDir(filepath.Join(dir, "bench"), knownRoles(b))
	if err != nil {
		b.Fatal(err)
	}
	st := openStore(b)
	bn := newBench(b, st, dir)
	var overhead, total float64
	bn.Progress = func(p bench.Progress) {
		if p.Err != nil || !p.Outcome.Passed {
			b.Fatalf("job %s: passed %v, err %v", p.Job.StepID(), p.Outcome.Passed, p.Err)
		}
		o := p.Outcome
		overhead += float64(o.Total-o.AgentTime-o.JudgeTime) / 1e6
		total += float64(o.Total) / 1e6
	}
	run, err := bench.Open(ctx, st, dir, bench.Options{Runners: []string{"good"}, Repeat: b.N}, true)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	if _, err := bn.Execute(ctx, run.ID, bench.Jobs(cases, []string{"good"}, b.N)); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(overhead/float64(b.N), "overhead-ms/case")
	b.ReportMetric(total/float64(b.N), "total-ms/case")
}
