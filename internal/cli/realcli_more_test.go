package cli_test

import "testing"

// helloScenario scripts a coder that writes hello.txt with the CLI's own
// file tool (tool, its input written with {{cwd}}), then reports, and an
// auditor that passes it.
func helloScenario(tool, input string) string {
	return `conversations:
  - name: coder
    match: {role: coder, tool: ` + tool + `}
    turns:
      - tools:
          - name: ` + tool + `
            input: ` + input + `
        usage: {input_tokens: 2500, output_tokens: 60}
      - text: |
` + signalText("coder", "") + `        usage: {input_tokens: 2600, output_tokens: 20}
  - name: auditor
    match: {role: auditor, tool: ` + tool + `}
    turns:
      - text: |
          Looks right.
` + signalText("auditor", "          - Rating: 9\n") + `default:
  text: OK
`
}

// TestRealOpenCodeRunCompletesTask: OpenCode writes the file itself with
// its write tool (the runner's url becomes the Anthropic provider's
// baseURL); tokens and cost come from its step_finish events.
func TestRealOpenCodeRunCompletesTask(t *testing.T) {
	u := realRun{cli: "opencode", content: "hello from opencode\n",
		scenario: helloScenario("write", `{filePath: "{{cwd}}/hello.txt", content: "hello from opencode\n"}`),
		runner:   `{command: %s, url: "%u/v1", model: anthropic/claude-sonnet-4-5}`,
		env:      map[string]string{"ANTHROPIC_API_KEY": "sk-ant-test-key"}}.run(t)
	if u.InputTokens < 5100 || u.OutputTokens < 80 || u.CostUSD <= 0 || u.CostEstimated {
		t.Errorf("coder usage %+v: want OpenCode's step_finish tokens and its own cost", u)
	}
}

// TestRealQwenRunCompletesTask: Qwen Code writes the file itself with its
// write_file tool (OPENAI_BASE_URL points it at modelsim's Chat
// Completions); usage comes from its result event, cost from the price
// table.
func TestRealQwenRunCompletesTask(t *testing.T) {
	u := realRun{cli: "qwen", content: "hello from qwen\n",
		scenario: helloScenario("write_file", `{file_path: "{{cwd}}/hello.txt", content: "hello from qwen\n"}`),
		runner:   `{command: %s, url: "%u/v1", model: modelsim}`,
		env:      map[string]string{"OPENAI_API_KEY": "sk-qwen-test-key"}}.run(t)
	if u.InputTokens+u.CacheReadTokens < 5100 || u.OutputTokens < 80 || u.CostUSD <= 0 || !u.CostEstimated {
		t.Errorf("coder usage %+v: want Qwen Code's result tokens and an estimated cost", u)
	}
}

// TestRealCopilotRunCompletesTask: Copilot CLI, in its bring-your-own-key
// mode with no GitHub login (the runner's url becomes
// COPILOT_PROVIDER_BASE_URL), writes the file itself with its create
// tool; tokens come from its session log, cost from the price table.
func TestRealCopilotRunCompletesTask(t *testing.T) {
	u := realRun{cli: "copilot", content: "hello from copilot\n",
		scenario: helloScenario("create", `{path: "{{cwd}}/hello.txt", file_text: "hello from copilot\n"}`),
		runner:   `{command: %s, url: "%u/v1", model: modelsim}`,
		env:      map[string]string{"COPILOT_PROVIDER_API_KEY": "copilot-test-key"}}.run(t)
	if u.InputTokens+u.CacheReadTokens < 5100 || u.OutputTokens < 80 || u.CostUSD <= 0 || !u.CostEstimated {
		t.Errorf("coder usage %+v: want Copilot CLI's session-log tokens and an estimated cost", u)
	}
}
