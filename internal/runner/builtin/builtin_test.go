package builtin

import (
	"slices"
	"strings"
	"testing"

	"github.com/cadre-dev/cadre/internal/config"
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

// TestConfigRefusesScenarioOfEveryOtherType: only the script runner reads
// runners.NAME.scenario, so cadre.yaml refuses it on an entry of any other
// registered type instead of ignoring it.
func TestConfigRefusesScenarioOfEveryOtherType(t *testing.T) {
	for _, typ := range Registry(nil).Types() {
		if typ == "script" {
			continue
		}
		_, err := config.Parse("cadre.yaml", []byte("runners:\n  x: {type: "+typ+", scenario: s.yaml}\n"), nil)
		if err == nil || !strings.Contains(err.Error(), "runners.x.scenario:") {
			t.Errorf("type %s with a scenario: error = %v, want it refused naming runners.x.scenario", typ, err)
		}
	}
}
