package agent_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/cadre-dev/cadre/agent"
)

// scenario writes a script-runner scenario (docs/script-runner.md) to a
// temporary file, so the examples run offline and deterministically.
func scenario(yaml string) string {
	dir, err := os.MkdirTemp("", "cadre-example-*")
	if err != nil {
		panic(err)
	}
	path := filepath.Join(dir, "scenario.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		panic(err)
	}
	return path
}

// An agent is a role reached through a runner; Invoke runs the role's
// prompt on a task and returns the reply with its SIGNAL BLOCK.
func Example() {
	r, err := agent.NewRunner("script", agent.WithScenario(scenario(`
rules:
  - role: architect
    say: "## Design\nA token bucket per client, in memory."
    signal: {result: SUCCESS, summary: designed the limiter, confidence: 8, next: executor}
    usage: {input_tokens: 1200, output_tokens: 300, cost_usd: 0.01}
`)))
	if err != nil {
		fmt.Println(err)
		return
	}
	architect, err := agent.New("architect", r)
	if err != nil {
		fmt.Println(err)
		return
	}
	resp, err := architect.Invoke(context.Background(), "Add rate limiting to the API", "")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(resp.Signal.Result, "-", resp.Signal.Summary, "- next:", resp.Signal.Next)
	fmt.Printf("confidence %d, %d tokens in, $%.2f\n", *resp.Signal.Confidence, resp.Usage.InputTokens, resp.Usage.CostUSD)
	// Output:
	// SUCCESS - designed the limiter - next: executor
	// confidence 8, 1200 tokens in, $0.01
}

// WithRunner and WithPrompt return modified copies: the original agent is
// unchanged. Here the exec runner runs /bin/sh, which gets the prompt on
// stdin and echoes its first line.
func ExampleAgent_WithPrompt() {
	echo, err := agent.NewRunner("exec", agent.WithName("echo"), agent.WithCommand("/bin/sh", "-c",
		`head -n 1; printf '### SIGNAL BLOCK\n- Result: SUCCESS\n- Loop Summary: echoed\n'`))
	if err != nil {
		fmt.Println(err)
		return
	}
	executor, err := agent.New("executor", echo)
	if err != nil {
		fmt.Println(err)
		return
	}
	terse := executor.WithPrompt("Answer in one word.")
	for _, a := range []*agent.Agent{executor, terse} {
		resp, err := a.Invoke(context.Background(), "Fix the typo in README", "")
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%s: %q\n", resp.Runner, firstLine(resp.Text))
	}
	other, err := agent.NewRunner("exec", agent.WithName("other"), agent.WithCommand("/bin/sh", "-c",
		`cat >/dev/null; printf '### SIGNAL BLOCK\n- Result: FAIL\n'`))
	if err != nil {
		fmt.Println(err)
		return
	}
	resp, err := terse.WithRunner(other).Invoke(context.Background(), "Fix the typo in README", "")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(resp.Runner, resp.Signal.Result, "; terse still runs on", terse.Runner().Name())
	// Output:
	// echo: "You are the **executor** for item `prompt`: Fix the typo in README."
	// echo: "Answer in one word."
	// other FAIL ; terse still runs on echo
}

func firstLine(s string) string {
	for i, c := range s {
		if c == '\n' {
			return s[:i]
		}
	}
	return s
}

// A reply without a SIGNAL BLOCK is asked once more with a corrective
// prompt, as the cadre engine does.
func ExampleAgent_Invoke_reask() {
	r, err := agent.NewRunner("script", agent.WithScenario(scenario(`
rules:
  - role: critic
    reask: false
    say: "Looks fine to me."
  - role: critic
    reask: true
    say: "Looks fine to me."
    signal: {result: PASS, rating: 8, confidence: 7}
`)))
	if err != nil {
		fmt.Println(err)
		return
	}
	critic, err := agent.New("critic", r)
	if err != nil {
		fmt.Println(err)
		return
	}
	resp, err := critic.Invoke(context.Background(), "Review the rate limiter", "## Design\nA token bucket per client.")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(resp.Asks, "asks:", resp.Signal.Result, "rating", *resp.Signal.Rating)
	// Output:
	// 2 asks: PASS rating 8
}

// Triage routes a task to a workflow, as `cadre run --workflow auto` does.
func ExampleTriage() {
	r, err := agent.NewRunner("script", agent.WithScenario(scenario(`
rules:
  - role: triage
    say: |
      `+"```json"+`
      {"workflow": "DEBUG", "roles": ["debugger", "executor", "verifier"], "reasoning": "A stack trace: diagnose first.", "answer": null}
      `+"```"+`
`)))
	if err != nil {
		fmt.Println(err)
		return
	}
	d, err := agent.Triage(context.Background(), r, "panic: nil map in handler.go:42")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(d.Workflow, d.Roles, d.Reasoning)
	// Output:
	// debug [debugger executor verifier] A stack trace: diagnose first.
}

// Roles lists the built-in roles with what each is for.
func ExampleRoles() {
	for _, r := range agent.Roles() {
		if r.Name == "judge" {
			fmt.Println(r.Name + ": " + r.Description)
		}
	}
	// Output:
	// judge: Judges the work against the goal's win-state and rates it; passes it on or sends it back to the planner.
}
