package builtin

import (
	"slices"
	"testing"

	"github.com/cadre-dev/cadre/internal/runner"
)

// Every runner type SPEC §9 names must be reachable, from the CLI and the
// Go API alike, since both build runners from this registry.
func TestRegistryHasEveryType(t *testing.T) {
	want := []string{"aider", "anthropic", "claude", "codex", "copilot", "crush", "exec", "gemini", "ollama", "openai", "opencode", "qwen", "script"}
	if got := Registry(nil).Types(); !slices.Equal(got, want) {
		t.Fatalf("types = %v, want %v", got, want)
	}
}

func TestRegistryBuildsExec(t *testing.T) {
	r, err := Registry(nil).New("exec", runner.Settings{Name: "sh", Command: "/bin/sh"})
	if err != nil {
		t.Fatal(err)
	}
	if r.Name() != "sh" {
		t.Fatalf("name = %q, want sh", r.Name())
	}
	if _, err := Registry(nil).New("exec", runner.Settings{Name: "sh"}); err == nil {
		t.Fatal("exec without a command: want an error")
	}
}
