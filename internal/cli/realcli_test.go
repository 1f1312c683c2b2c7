package cli_test

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

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

// TestRealClaudeRunCompletesTask runs a task with Claude Code itself as the
// coder and auditor, pointed at cadre modelsim: Claude Code performs the
// scripted Write, cadre commits the file, and the step's tokens and cost
// come from Claude Code's own result event.
func TestRealClaudeRunCompletesTask(t *testing.T) {
	bin := findCLI(t, "claude")
	sc, err := modelsim.Parse("claude.yaml", []byte(claudeScenario))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, err := modelsim.Start(ctx, "127.0.0.1:0", modelsim.New(sc, io.Discard))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()

	repo := t.TempDir()
	os.MkdirAll(filepath.Join(repo, "tasks"), 0o755)
	os.WriteFile(filepath.Join(repo, "tasks", "hello.md"), []byte("---\nstage: code\n---\n# Say hello\n\n## Goal\nWrite hello.txt.\n"), 0o644)
	cfg := "defaults: {runner: claude, timeout: 3m}\nrunners:\n  claude: {command: " + bin + ", url: \"" + srv.URL + "\"}\n"
	os.WriteFile(filepath.Join(repo, "cadre.yaml"), []byte(cfg), 0o644)
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-test-key")
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"-c", "user.email=t@example.com", "-c", "user.name=T", "commit", "--allow-empty", "-qm", "init"}, {"add", "-A"}, {"-c", "user.email=t@example.com", "-c", "user.name=T", "commit", "-qm", "tasks"}} {
		c := exec.Command("git", args...)
		c.Dir = repo
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}

	var out, errOut strings.Builder
	f := cli.NewFactory()
	f.IO.Out, f.IO.ErrOut = &out, &errOut
	f.Dir = func() (string, error) { return repo, nil }
	if code := cli.Execute(f, []string{"run", "--json"}); code != 0 {
		t.Fatalf("cadre run exited %d\n%s\n%s", code, errOut.String(), out.String())
	}
	show := exec.Command("git", "show", "cadre/hello-say-hello:hello.txt")
	show.Dir = repo
	got, err := show.Output()
	if err != nil || string(got) != "hello from claude\n" {
		t.Fatalf("hello.txt on the branch = %q, %v", got, err)
	}

	st, err := store.Open(ctx, filepath.Join(repo, ".cadre", "cadre.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	r, _ := st.LatestRun(ctx)
	steps, _ := st.Steps(ctx, r.ID)
	var coder store.Step
	for _, s := range steps {
		if s.Role == "coder" {
			coder = s
		}
	}
	// Claude Code sums the two turns itself; cadre takes its result event.
	if coder.Usage.InputTokens < 4100 || coder.Usage.OutputTokens < 90 || coder.Usage.CostUSD <= 0 || coder.Usage.CostEstimated {
		t.Errorf("coder usage %+v: want Claude Code's reported totals and cost", coder.Usage)
	}
	var ev struct {
		Usage struct {
			CostUSD float64 `json:"cost_usd"`
		}
	}
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.Contains(line, `"type":"runCompleted"`) {
			json.Unmarshal([]byte(line), &ev)
		}
	}
	if ev.Usage.CostUSD <= 0 {
		t.Errorf("runCompleted carries no cost: %s", out.String())
	}
	if strings.Contains(out.String()+errOut.String(), "sk-ant-test-key") {
		t.Error("the API key leaked into cadre's output")
	}
}
