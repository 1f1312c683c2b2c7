package engine

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cadre-dev/cadre/internal/redact"
	"github.com/cadre-dev/cadre/internal/runner"
)

// An agent that got hold of one of cadre's secrets and put it in its
// reply, its own output file and a file of its work leaves it nowhere
// cadre writes: outputs, cycle log, archive, task file review, commit.
// The runner is handed the secrets to mask its log.
func TestAgentsSecretsAreMaskedWhereCadreWrites(t *testing.T) {
	const secret = "ghp_EngineSecret0123456789"
	masked := true
	e := newEnv(t, func(inv runner.Invocation) runner.Result {
		masked = masked && inv.Mask.Enabled()
		switch inv.Role {
		case "coder":
			os.WriteFile(filepath.Join(inv.Dir, "a.txt"), []byte("token "+secret+"\n"), 0o644)
			return runner.Result{Output: "used " + secret + "\n" + signalText("coder", "SUCCESS", -1)}
		case "auditor":
			os.WriteFile(inv.OutputPath, []byte("### Review\nthe coder printed "+secret+"\n"+signalText("auditor", "PASS", 9)), 0o644)
			return runner.Result{Output: "ignored"}
		}
		return passAll(inv)
	}, [2]string{"a", "code"})
	e.eng.d.Mask = redact.New(secret)
	if _, err := e.eng.Start(context.Background(), Options{InPlace: true}); err != nil {
		t.Fatal(err)
	}
	if !masked {
		t.Error("a runner was not handed the secrets to mask its log with")
	}
	state := filepath.Join(e.root, ".cadre")
	var seen []string
	filepath.Walk(state, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() || strings.HasSuffix(p, ".db") || strings.Contains(p, ".db-") {
			return nil // the journal masks itself, when told to (app wires it)
		}
		data, _ := os.ReadFile(p)
		if strings.Contains(string(data), secret) {
			t.Errorf("the secret is in %s", p)
		}
		if strings.Contains(string(data), redact.Mask) {
			seen = append(seen, tokenRE.ReplaceAllString(filepath.Base(p), ".md")) // an agent's output: its name without the token
		}
		return nil
	})
	for _, want := range []string{"code-coder-1.md", "audit-auditor-1.md", "current_cycle.md"} {
		if !strings.Contains(strings.Join(seen, " "), want) {
			t.Errorf("no mask in %s (masked: %v)", want, seen)
		}
	}
	if archives, _ := filepath.Glob(filepath.Join(state, "archive", "*.md")); len(archives) != 1 {
		t.Errorf("archives %v, want one", archives)
	}
	for _, f := range []string{"a.txt", "tasks/a.md"} {
		got := git(t, e.root, "show", "HEAD:"+f)
		if strings.Contains(got, secret) || !strings.Contains(got, redact.Mask) {
			t.Errorf("committed %s:\n%s", f, got)
		}
	}
}
