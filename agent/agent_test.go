package agent_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cadre-dev/cadre/agent"
)

func shRunner(t *testing.T, script string) agent.Runner {
	t.Helper()
	r, err := agent.NewRunner("exec", agent.WithCommand("/bin/sh", "-c", script))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

const okBlock = `printf '### SIGNAL BLOCK\n- Result: SUCCESS\n- Confidence: 9\n'`

// The prompt the agent receives carries the role's template, the task and
// the context, and the agent runs in the directory asked for.
func TestInvokeRendersRoleTaskAndContext(t *testing.T) {
	dir := t.TempDir()
	r := shRunner(t, `cat > prompt.txt; pwd > where.txt; `+okBlock)
	a, err := agent.New("executor", r, agent.WithDir(dir))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := a.Invoke(context.Background(), "Rename Foo to Bar", "the architect says: keep the API")
	if err != nil {
		t.Fatal(err)
	}
	if resp.Signal == nil || resp.Signal.Result != "SUCCESS" || resp.Asks != 1 {
		t.Fatalf("response = %+v", resp)
	}
	prompt, err := os.ReadFile(filepath.Join(dir, "prompt.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"You are the **executor**", "Rename Foo to Bar", "the architect says: keep the API", "### SIGNAL BLOCK"} {
		if !strings.Contains(string(prompt), want) {
			t.Errorf("prompt lacks %q:\n%s", want, prompt)
		}
	}
	where, _ := os.ReadFile(filepath.Join(dir, "where.txt"))
	if got, _ := filepath.EvalSymlinks(strings.TrimSpace(string(where))); got != mustEval(t, dir) {
		t.Errorf("agent ran in %q, want %q", got, dir)
	}
}

func mustEval(t *testing.T, p string) string {
	t.Helper()
	got, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// An agent that writes its result to CADRE_OUTPUT: that file is the text.
func TestInvokeReadsTheOutputFile(t *testing.T) {
	r := shRunner(t, `cat >/dev/null; printf '# Result\nwritten\n' > "$CADRE_OUTPUT"; `+okBlock)
	a, err := agent.New("executor", r, agent.WithDir(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := a.Invoke(context.Background(), "task", "")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(resp.Text, "# Result\nwritten\n") || resp.Signal == nil {
		t.Fatalf("text = %q, signal %v; want the file with the reply's block", resp.Text, resp.Signal)
	}
}

func TestInvokeFailsAfterOneReask(t *testing.T) {
	r := shRunner(t, `cat >/dev/null; echo "$CADRE_REASK" >> asks.txt; echo no block`)
	dir := t.TempDir()
	a, err := agent.New("executor", r, agent.WithDir(dir))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := a.Invoke(context.Background(), "task", "")
	if !errors.Is(err, agent.ErrNoSignal) {
		t.Fatalf("err = %v, want ErrNoSignal", err)
	}
	asks, _ := os.ReadFile(filepath.Join(dir, "asks.txt"))
	if string(asks) != "false\ntrue\n" || resp.Asks != 2 || resp.Text != "no block\n" {
		t.Fatalf("asks = %q, resp = %+v; want one ask and one re-ask", asks, resp)
	}
}

func TestInvokeReportsExit(t *testing.T) {
	a, err := agent.New("executor", shRunner(t, `cat >/dev/null; echo boom >&2; exit 3`), agent.WithDir(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	_, err = a.Invoke(context.Background(), "task", "")
	var ee *agent.ExitError
	if !errors.As(err, &ee) || ee.Code != 3 || !strings.Contains(ee.Stderr, "boom") {
		t.Fatalf("err = %v, want an ExitError with code 3 and the stderr", err)
	}
}

func TestRoleDirOverridesARole(t *testing.T) {
	roles := t.TempDir()
	if err := os.WriteFile(filepath.Join(roles, "executor.md"), []byte("House rules: tabs only.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	a, err := agent.New("executor", shRunner(t, `head -n 1; `+okBlock), agent.WithRoleDir(roles), agent.WithDir(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := a.Invoke(context.Background(), "task", "")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(resp.Text, "House rules: tabs only.\n") {
		t.Fatalf("text = %q, want the override's first line", resp.Text)
	}
}

func TestBadInput(t *testing.T) {
	if _, err := agent.NewRunner("nope"); err == nil || !strings.Contains(err.Error(), `unknown runner "nope"`) {
		t.Errorf("unknown runner type: err = %v", err)
	}
	if _, err := agent.NewRunner("script"); err == nil || !strings.Contains(err.Error(), "scenario") {
		t.Errorf("script without scenario: err = %v", err)
	}
	r := shRunner(t, okBlock)
	if _, err := agent.New("wizard", r); err == nil || !strings.Contains(err.Error(), `unknown role "wizard"`) {
		t.Errorf("unknown role: err = %v", err)
	}
	a, err := agent.New("executor", r)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.WithPrompt("{{.Nope").Invoke(context.Background(), "t", ""); err == nil || !strings.Contains(err.Error(), "custom prompt") {
		t.Errorf("bad custom prompt: err = %v", err)
	}
	if _, err := a.WithRunner(agent.Runner{}).Invoke(context.Background(), "t", ""); !errors.Is(err, agent.ErrNoRunner) {
		t.Errorf("zero runner: err = %v", err)
	}
}

func TestTriageFallsBackToStandard(t *testing.T) {
	d, err := agent.Triage(context.Background(), shRunner(t, `cat >/dev/null; echo "use the fancy workflow"`), "do it")
	if err != nil {
		t.Fatal(err)
	}
	if d.Workflow != "standard" || d.Warning == "" || strings.Join(d.Roles, ",") != "architect,executor,critic" {
		t.Fatalf("decision = %+v, want standard with a warning", d)
	}
}

func TestRunnerTypes(t *testing.T) {
	got := strings.Join(agent.Types(), ",")
	if !strings.Contains(got, "claude") || !strings.Contains(got, "script") || !strings.Contains(got, "ollama") {
		t.Fatalf("Types = %s", got)
	}
}
