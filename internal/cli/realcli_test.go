package cli_test

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cadre-dev/cadre/internal/cli"
	"github.com/cadre-dev/cadre/internal/modelsim"
	"github.com/cadre-dev/cadre/internal/store"
)

// findCLI looks for an agent CLI installed by .ci/install-agents, then on
// PATH; the test skips, saying how to install it, when there is none.
func findCLI(t *testing.T, name string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("real agent CLI test (not with -short)")
	}
	local, _ := filepath.Abs(filepath.Join("..", "..", ".tools", "npm", "node_modules", ".bin", name))
	if _, err := os.Stat(local); err == nil {
		return local
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	t.Skipf("%s is not installed: run .ci/install-agents (it installs the agent CLIs into .tools/npm)", name)
	return ""
}

const claudeScenario = `conversations:
  - name: coder
    match: {role: coder, tool: Write}
    turns:
      - text: I will write the file.
        tools:
          - name: Write
            input: {file_path: "{{cwd}}/hello.txt", content: "hello from claude\n"}
        usage: {input_tokens: 2000, output_tokens: 50}
      - text: |
          Wrote hello.txt.

          ### SIGNAL BLOCK
          - Agent: coder
          - Result: SUCCESS
          - Loop Summary: wrote hello.txt
          - Confidence: 9
          - Next: auditor
        usage: {input_tokens: 2100, output_tokens: 40}
  - name: auditor
    match: {role: auditor, tool: Write}
    turns:
      - text: |
          ### Summary
          hello.txt holds the greeting.

          ### SIGNAL BLOCK
          - Agent: auditor
          - Result: PASS
          - Confidence: 9
          - Rating: 9
        usage: {input_tokens: 1800, output_tokens: 60}
default:
  text: OK
`

// realRun is one end-to-end run of cadre with a real agent CLI as coder and
// auditor, pointed at cadre modelsim.
type realRun struct {
	cli      string            // binary name
	runner   string            // cadre.yaml runners entry, with %s for the binary and %u for the modelsim URL
	scenario string            // modelsim scenario
	env      map[string]string // environment of cadre (and so of the agent)
	setup    func(home string) // prepares the CLI's home
	content  string            // hello.txt as the CLI should write it
	sandbox  string            // cadre.yaml's sandbox section, if any
}

func (rr realRun) run(t *testing.T) store.Usage {
	t.Helper()
	repo := rr.prepare(t)
	var out, errOut strings.Builder
	f := cli.NewFactory()
	f.IO.Out, f.IO.ErrOut = &out, &errOut
	f.Dir = func() (string, error) { return repo, nil }
	if code := cli.Execute(f, []string{"run", "--json"}); code != 0 {
		logs, _ := exec.Command("sh", "-c", "tail -n 30 "+repo+"/.cadre/runs/*/items/hello/logs/*.log").CombinedOutput()
		t.Fatalf("cadre run exited %d\n%s\n%s\n%s", code, errOut.String(), out.String(), logs)
	}
	if os.Getenv("CADRE_KEEP_LOGS") != "" {
		logs, _ := exec.Command("sh", "-c", "cat "+repo+"/.cadre/runs/*/items/hello/logs/*.log").CombinedOutput()
		t.Logf("%s", logs)
	}
	show := exec.Command("git", "show", "cadre/hello-say-hello:hello.txt")
	show.Dir = repo
	got, err := show.Output()
	if err != nil || string(got) != rr.content {
		t.Fatalf("hello.txt on the branch = %q, %v", got, err)
	}
	// A sandbox asked for, or the default (auto) where bubblewrap works:
	// the CLI completed the task confined.
	if want := map[bool]string{true: "model-only", false: "allow"}[rr.sandbox != ""]; rr.sandbox != "" || sandboxWorks() {
		logs, _ := filepath.Glob(filepath.Join(repo, ".cadre", "runs", "*", "items", "hello", "logs", "*coder*.log"))
		var text []byte
		for _, l := range logs {
			b, _ := os.ReadFile(l)
			text = append(text, b...)
		}
		if !strings.Contains(string(text), "[cadre: sandboxed by bubblewrap, network "+want+"]") {
			t.Errorf("the coder's log does not say it ran in the sandbox (network %s):\n%s", want, text)
		}
	}
	for _, v := range rr.env {
		if len(v) > 6 && strings.Contains(out.String()+errOut.String(), v) {
			t.Errorf("%q leaked into cadre's output", v)
		}
	}
	return coderStep(t, repo).Usage
}

// coderStep is the coder's step of the repository's latest run.
func coderStep(t *testing.T, repo string) store.Step {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(repo, ".cadre", "cadre.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	r, _ := st.LatestRun(ctx)
	steps, _ := st.Steps(ctx, r.ID)
	for _, s := range steps {
		if s.Role == "coder" {
			return s
		}
	}
	t.Fatal("no coder step in the journal")
	return store.Step{}
}

// prepare makes a repository with the hello task and a cadre.yaml whose
// runner is the CLI against a modelsim serving the scenario (stopped when
// the test ends), and points HOME and the environment at the test's.
func (rr realRun) prepare(t *testing.T) string {
	t.Helper()
	bin := findCLI(t, rr.cli)
	sc, err := modelsim.Parse(rr.cli+".yaml", []byte(rr.scenario))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	srv, err := modelsim.Start(ctx, "127.0.0.1:0", modelsim.New(sc, io.Discard))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })

	repo := t.TempDir()
	os.MkdirAll(filepath.Join(repo, "tasks"), 0o755)
	os.WriteFile(filepath.Join(repo, "tasks", "hello.md"), []byte("---\nstage: code\n---\n# Say hello\n\n## Goal\nWrite hello.txt.\n"), 0o644)
	entry := strings.NewReplacer("%s", bin, "%u", srv.URL).Replace(rr.runner)
	cfg := "defaults: {runner: " + rr.cli + ", timeout: 3m}\nprices:\n  modelsim: {input_per_mtok: 1, output_per_mtok: 4}\nrunners:\n  " + rr.cli + ": " + entry + "\n"
	if rr.sandbox != "" {
		cfg += "sandbox: " + rr.sandbox + "\n"
	}
	os.WriteFile(filepath.Join(repo, "cadre.yaml"), []byte(cfg), 0o644)
	home := t.TempDir()
	t.Setenv("HOME", home)
	for k, v := range rr.env {
		t.Setenv(k, strings.ReplaceAll(v, "$HOME", home))
	}
	if rr.setup != nil {
		rr.setup(home)
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"-c", "user.email=t@example.com", "-c", "user.name=T", "commit", "-qm", "tasks"}} {
		c := exec.Command("git", args...)
		c.Dir = repo
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}

	return repo
}

func signalText(role, extra string) string {
	return "          ### SIGNAL BLOCK\n          - Agent: " + role + "\n          - Result: SUCCESS\n          - Confidence: 9\n" + extra
}

// TestRealClaudeRunCompletesTask: Claude Code performs the scripted Write
// itself, cadre commits the file, and the step's tokens and cost come from
// Claude Code's own result event.
func TestRealClaudeRunCompletesTask(t *testing.T) {
	u := realRun{cli: "claude", runner: `{command: %s, url: "%u"}`, scenario: claudeScenario,
		env: map[string]string{"ANTHROPIC_API_KEY": "sk-ant-test-key"}, content: "hello from claude\n"}.run(t)
	// Claude Code sums the two turns itself; cadre takes its result event.
	if u.InputTokens < 4100 || u.OutputTokens < 90 || u.CostUSD <= 0 || u.CostEstimated {
		t.Errorf("coder usage %+v: want Claude Code's reported totals and cost", u)
	}
}

// codexScenario has Codex apply a patch through its exec_command tool.
var codexScenario = `conversations:
  - name: coder
    match: {role: coder, tool: exec_command}
    turns:
      - tools:
          - name: exec_command
            input: {cmd: ` + strconv.Quote("apply_patch <<'EOF'\n"+codexPatch+"EOF\n") + `, workdir: "{{cwd}}"}
        usage: {input_tokens: 3000, output_tokens: 80}
      - text: |
` + signalText("coder", "") + `        usage: {input_tokens: 3100, output_tokens: 30}
  - name: auditor
    match: {role: auditor}
    turns:
      - text: |
          Looks right.
` + signalText("auditor", "          - Rating: 9\n") + `default:
  text: OK
`

const codexPatch = "*** Begin Patch\n*** Add File: hello.txt\n+hello from codex\n*** End Patch\n"

// TestRealCodexRunCompletesTask: Codex applies the scripted patch itself
// through its exec_command tool (a configurable provider base URL points it
// at modelsim); usage comes from turn.completed, cost from the price table.
func TestRealCodexRunCompletesTask(t *testing.T) {
	scenario := codexScenario
	u := realRun{cli: "codex", scenario: scenario, content: "hello from codex\n",
		runner: `{command: %s, url: "%u/v1", model: modelsim, args: [--dangerously-bypass-approvals-and-sandbox]}`,
		env:    map[string]string{"OPENAI_API_KEY": "sk-openai-test-key", "CODEX_HOME": "$HOME/.codex"},
		setup:  func(home string) { os.MkdirAll(filepath.Join(home, ".codex"), 0o755) }}.run(t)
	if u.InputTokens+u.CacheReadTokens < 6100 || u.OutputTokens < 110 || u.CostUSD <= 0 || !u.CostEstimated {
		t.Errorf("coder usage %+v: want Codex's turn.completed tokens and an estimated cost", u)
	}
}

// geminiScenario has Gemini CLI write the file with its write_file tool.
var geminiScenario = `conversations:
  - name: coder
    match: {role: coder, tool: write_file}
    turns:
      - tools:
          - name: write_file
            input: {file_path: "{{cwd}}/hello.txt", content: "hello from gemini\n"}
        usage: {input_tokens: 2500, output_tokens: 60}
      - text: |
` + signalText("coder", "") + `        usage: {input_tokens: 2600, output_tokens: 20}
  - name: auditor
    match: {role: auditor, tool: write_file}
    turns:
      - text: |
          Looks right.
` + signalText("auditor", "          - Rating: 9\n") + `default:
  text: OK
`

// geminiHome selects API-key auth and no usage statistics.
func geminiHome(home string) {
	os.MkdirAll(filepath.Join(home, ".gemini"), 0o755)
	os.WriteFile(filepath.Join(home, ".gemini", "settings.json"),
		[]byte(`{"security":{"auth":{"selectedType":"gemini-api-key"}},"privacy":{"usageStatisticsEnabled":false}}`), 0o644)
}

// TestRealGeminiRunCompletesTask: Gemini CLI writes the file itself with
// its write_file tool (GOOGLE_GEMINI_BASE_URL points it at modelsim); usage
// comes from its stats, cost from the price table.
func TestRealGeminiRunCompletesTask(t *testing.T) {
	scenario := geminiScenario
	u := realRun{cli: "gemini", scenario: scenario, content: "hello from gemini\n",
		runner: `{command: %s, url: "%u", model: gemini-2.5-pro}`,
		env:    map[string]string{"GEMINI_API_KEY": "gemini-test-key"},
		setup:  geminiHome}.run(t)
	if u.InputTokens+u.CacheReadTokens < 5100 || u.OutputTokens < 80 || u.CostUSD <= 0 || !u.CostEstimated {
		t.Errorf("coder usage %+v: want Gemini CLI's stats tokens and an estimated cost", u)
	}
}

// sandboxed is the sandbox section the sandboxed real-CLI tests run under;
// they skip, saying why, where bubblewrap cannot run.
func sandboxed(t *testing.T) string {
	t.Helper()
	if !sandboxWorks() {
		t.Skip("sandboxed real-CLI test: bubblewrap missing or the kernel forbids namespaces here")
	}
	return "{mode: bwrap, network: model-only}"
}

// TestRealClaudeInterruptedKeepsUsage: Claude Code answers (the turn's
// 2,000 input tokens streamed), then runs a long command; cadre stop --now
// interrupts it before its result event. The step stays started, to run
// again, with the tokens its messages reported, their cost from the price
// table, and the model Claude Code said answered.
func TestRealClaudeInterruptedKeepsUsage(t *testing.T) {
	const scenario = `conversations:
  - name: coder
    match: {role: coder, tool: Bash}
    turns:
      - text: I will wait first.
        tools:
          - name: Bash
            input: {command: "until [ -e never ]; do sleep 0.2; done", description: "wait"}
        usage: {input_tokens: 2000, output_tokens: 50}
default:
  text: OK
`
	repo := realRun{cli: "claude", runner: `{command: %s, url: "%u", model: claude-opus-5-5}`, scenario: scenario,
		env: map[string]string{"ANTHROPIC_API_KEY": "sk-ant-test-key"}}.prepare(t)
	var out, errOut strings.Builder
	f := cli.NewFactory()
	f.IO.Out, f.IO.ErrOut = &out, &errOut
	f.Dir = func() (string, error) { return repo, nil }
	done := make(chan int, 1)
	go func() { done <- cli.Execute(f, []string{"run", "--json"}) }()
	// The stream has shown the tool call: the model has answered.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		logs, _ := filepath.Glob(filepath.Join(repo, ".cadre", "runs", "*", "items", "hello", "logs", "*coder*.log"))
		if len(logs) > 0 {
			if b, _ := os.ReadFile(logs[0]); strings.Contains(string(b), `"name":"Bash"`) {
				break
			}
		}
		select {
		case code := <-done:
			t.Fatalf("cadre run exited %d before the tool call\n%s", code, errOut.String())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no tool call in the coder's log\n%s", errOut.String())
		}
	}
	stop := cli.NewFactory()
	stop.IO.Out, stop.IO.ErrOut = io.Discard, io.Discard
	stop.Dir = f.Dir
	if code := cli.Execute(stop, []string{"stop", "--now"}); code != 0 {
		t.Fatalf("cadre stop --now exited %d", code)
	}
	if code := <-done; code != 130 {
		t.Errorf("the interrupted run exited %d, want 130\n%s", code, errOut.String())
	}
	s := coderStep(t, repo)
	if s.Status != store.StepStarted || s.Usage.InputTokens < 2000 || s.Usage.CostUSD <= 0 || !s.Usage.CostEstimated || s.Model != "claude-opus-5-5" {
		t.Errorf("interrupted coder step: %s, %+v, model %q; want started with the streamed usage, priced", s.Status, s.Usage, s.Model)
	}
}

// TestRealClaudeUnderSandbox: Claude Code completes the task under
// bubblewrap with network model-only: it reaches modelsim (its model
// endpoint) through the sandbox's bridge, writes in its worktree, and
// cadre commits the file.
func TestRealClaudeUnderSandbox(t *testing.T) {
	findCLI(t, "claude")
	realRun{cli: "claude", runner: `{command: %s, url: "%u"}`, scenario: claudeScenario, sandbox: sandboxed(t),
		env: map[string]string{"ANTHROPIC_API_KEY": "sk-ant-test-key"}, content: "hello from claude\n"}.run(t)
}

// TestRealCodexUnderSandbox: the same for Codex, its own sandbox turned
// off (cadre's confines it; a nested one cannot start).
func TestRealCodexUnderSandbox(t *testing.T) {
	findCLI(t, "codex")
	realRun{cli: "codex", scenario: codexScenario, content: "hello from codex\n", sandbox: sandboxed(t),
		runner: `{command: %s, url: "%u/v1", model: modelsim}`,
		env:    map[string]string{"OPENAI_API_KEY": "sk-openai-test-key", "CODEX_HOME": "$HOME/.codex"},
		setup:  func(home string) { os.MkdirAll(filepath.Join(home, ".codex"), 0o755) }}.run(t)
}

// TestRealGeminiUnderSandbox: the same for Gemini CLI, whose settings are
// copied into the step's fresh home.
func TestRealGeminiUnderSandbox(t *testing.T) {
	findCLI(t, "gemini")
	realRun{cli: "gemini", scenario: geminiScenario, content: "hello from gemini\n", sandbox: sandboxed(t),
		runner: `{command: %s, url: "%u", model: gemini-2.5-pro}`,
		env:    map[string]string{"GEMINI_API_KEY": "gemini-test-key"}, setup: geminiHome}.run(t)
}
