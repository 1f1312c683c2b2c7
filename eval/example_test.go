package eval_test

import (
	"context"
	"fmt"
	"os"

	"github.com/cadre-dev/cadre/agent"
	"github.com/cadre-dev/cadre/eval"
)

// The Gatekeeper checks a response deterministically, with no model.
func ExampleGatekeeper_Validate() {
	req := eval.Requirements{Sections: []string{"Summary", "Tests"}, Results: []string{"SUCCESS"}}
	response := "## Summary\nRenamed Foo to Bar.\n\n### SIGNAL BLOCK\n- Result: SUCCESS\n- Confidence: 8\n"
	res := eval.Gatekeeper{}.Validate(response, req)
	fmt.Println(res.Passed)
	fmt.Println(res.Summary())
	// Output:
	// false
	// failed 1/4 checks: section Tests: no heading "Tests"
}

// A judge scores a response against a rubric; here the exec runner runs a
// shell that answers with fixed JSON scores.
func ExampleJudge_Evaluate() {
	r, err := agent.NewRunner("exec", agent.WithCommand("/bin/sh", "-c",
		`cat >/dev/null; echo '{"scores":{"correctness":9,"clarity":6},"overall":8,"reasoning":"Right, but terse."}'`))
	if err != nil {
		fmt.Println(err)
		return
	}
	rubric := eval.Rubric{"correctness": "The answer is right.", "clarity": "The answer is easy to follow."}
	j, err := eval.NewJudge(r).Evaluate(context.Background(), "4", "What is 2+2?", rubric)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(j.Overall, j.Scores["correctness"], j.Scores["clarity"], j.Reasoning)
	// Output:
	// 8 9 6 Right, but terse.
}

// The Selector picks the runner (and model) that does a role best for the
// money from recorded scores; candidates without enough samples go first.
func ExampleSelector_Select() {
	scores := &eval.MemoryScores{}
	claude, _ := eval.ParseCandidate("claude")
	local, _ := eval.ParseCandidate("ollama/qwen2.5-coder")
	for range 3 {
		scores.Record("architect", claude, 0.9, 0.40)
		scores.Record("architect", local, 0.5, 0)
	}
	sel := eval.Selector{Scores: scores, Candidates: []string{"claude", "ollama/qwen2.5-coder"}, MinSamples: 3}
	runner, model, reason, err := sel.Select(context.Background(), "architect")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s %q\n%s\n", runner, model, reason)

	_, _, reason, _ = sel.Select(context.Background(), "critic")
	fmt.Println(reason)
	// Output:
	// claude ""
	// claude: 0.90 quality at $0.400 per step over 3 samples (score 0.65, explore 0.00); next ollama/qwen2.5-coder (score 0.50)
	// claude: 0 of 3 samples so far; trying candidates without enough data first, in listed order
}

// A program records its own evaluations in a repository's score store,
// where they persist: runner auto and cadre scores read them from then on.
func ExampleStoreScores_Record() {
	ctx := context.Background()
	repo, _ := os.MkdirTemp("", "scores")
	defer os.RemoveAll(repo)
	scores, err := eval.CreateScores(ctx, repo)
	if err != nil {
		fmt.Println(err)
		return
	}
	claude, _ := eval.ParseCandidate("claude/sonnet")
	for _, q := range []float64{0.9, 0.7} {
		if err := scores.Record(ctx, "architect", claude, q, 0.30); err != nil {
			fmt.Println(err)
		}
	}
	scores.Close()

	again, err := eval.OpenScores(ctx, repo)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer again.Close()
	stats, _ := again.Stats(ctx, "architect", []eval.Candidate{claude})
	s := stats[claude]
	fmt.Printf("%d samples, quality %.2f, $%.2f a step\n", s.Samples, s.MeanQuality, s.MeanCostUSD)
	// Output:
	// 2 samples, quality 0.80, $0.30 a step
}

// A program records a whole evaluation, as a run records one of its
// steps: the gatekeeper's checks, the judge's scores and pass, how the
// work ended and what the step cost; and reads it back.
func ExampleStoreScores_RecordEvaluation() {
	ctx := context.Background()
	repo, _ := os.MkdirTemp("", "scores")
	defer os.RemoveAll(repo)
	scores, err := eval.CreateScores(ctx, repo)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer scores.Close()

	response := "## Summary\nDone.\n\n### SIGNAL BLOCK\n- Result: SUCCESS\n- Confidence: 9\n"
	gate := eval.Gatekeeper{}.Validate(response, eval.Requirements{Sections: []string{"Summary"}})
	judged := eval.Judgement{Scores: map[string]float64{"correctness": 9, "clarity": 7}, Overall: 8, Reasoning: "Right."}
	claude, _ := eval.ParseCandidate("claude/sonnet")
	err = scores.RecordEvaluation(ctx, eval.Evaluation{Role: "executor", Candidate: claude,
		Gatekeeper: &eval.GatekeeperVerdict{Result: gate},
		Judge:      &eval.JudgeVerdict{Judgement: judged, Passed: true},
		Passed:     eval.Bool(true), Usage: &eval.StepUsage{CostUSD: 0.12, LatencyMS: 8000}})
	if err != nil {
		fmt.Println(err)
		return
	}
	evs, _ := scores.Evaluations(ctx, eval.Filter{Role: "executor"})
	for _, ev := range evs {
		fmt.Println(ev.Candidate, ev.Gatekeeper.Summary(), ev.Judge.Overall, *ev.Passed, ev.Usage.CostUSD)
	}
	stats, _ := scores.Stats(ctx, "executor", []eval.Candidate{claude})
	fmt.Printf("%d samples, quality %.2f\n", stats[claude].Samples, stats[claude].MeanQuality)
	// Output:
	// claude/sonnet passed 1/1 checks 8 true 0.12
	// 3 samples, quality 0.93
}
