package builtin_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cadre-dev/cadre/internal/config"
	"github.com/cadre-dev/cadre/internal/runner"
	"github.com/cadre-dev/cadre/internal/runner/builtin"
	"github.com/cadre-dev/cadre/internal/runner/cliutil/clitest"
	"github.com/cadre-dev/cadre/internal/runner/httpapi/apitest"
	"github.com/cadre-dev/cadre/internal/runner/price"
)

// Every runner type cadre documents must be reachable, from the CLI and
// the Go API alike, since both build runners from this registry.
func TestRegistryHasEveryType(t *testing.T) {
	want := []string{"aider", "anthropic", "claude", "codex", "copilot", "crush", "exec", "gemini", "ollama", "openai", "opencode", "qwen", "script"}
	if got := builtin.Registry(nil).Types(); !slices.Equal(got, want) {
		t.Fatalf("types = %v, want %v", got, want)
	}
}

func TestRegistryBuildsExec(t *testing.T) {
	r, err := builtin.Registry(nil).New("exec", runner.Settings{Name: "sh", Command: "/bin/sh"})
	if err != nil {
		t.Fatal(err)
	}
	if r.Name() != "sh" {
		t.Fatalf("name = %q, want sh", r.Name())
	}
	if _, err := builtin.Registry(nil).New("exec", runner.Settings{Name: "sh"}); err == nil {
		t.Fatal("exec without a command: want an error")
	}
}

// TestConfigRefusesScenarioOfEveryOtherType: only the script runner reads
// runners.NAME.scenario, so cadre.yaml refuses it on an entry of any other
// registered type instead of ignoring it.
func TestConfigRefusesScenarioOfEveryOtherType(t *testing.T) {
	for _, typ := range builtin.Registry(nil).Types() {
		if typ == "script" {
			continue
		}
		_, err := config.Parse("cadre.yaml", []byte("runners:\n  x: {type: "+typ+", scenario: s.yaml}\n"), nil)
		if err == nil || !strings.Contains(err.Error(), "runners.x.scenario:") {
			t.Errorf("type %s with a scenario: error = %v, want it refused naming runners.x.scenario", typ, err)
		}
	}
}

// TestEveryTypeDescribed: every registered type has a descriptor complete
// for its kind, since the configuration's checks, cadre runners check and
// cadre init read it instead of lists of their own.
func TestEveryTypeDescribed(t *testing.T) {
	kinds := map[runner.TypeKind][]string{}
	for _, d := range builtin.Descriptors() {
		if err := d.Check(); err != nil {
			t.Error(err)
		}
		kinds[d.Kind] = append(kinds[d.Kind], d.Type)
	}
	want := map[runner.TypeKind][]string{
		runner.TypeCLI:    {"claude", "codex", "gemini", "opencode", "qwen", "copilot", "crush", "aider"},
		runner.TypeAPI:    {"anthropic", "openai", "ollama"},
		runner.TypeExec:   {"exec"},
		runner.TypeScript: {"script"},
	}
	for k, types := range want {
		if !slices.Equal(kinds[k], types) {
			t.Errorf("types of kind %s = %v, want %v (claude first: cadre init's preference)", k, kinds[k], types)
		}
	}
}

// TestCLIRunnersRunTheirDescriptor: the runner of an agent CLI type runs
// its descriptor's program and, when it is missing, says its descriptor's
// install command, so cadre runners check and a run say the same.
func TestCLIRunnersRunTheirDescriptor(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	reg := builtin.Registry(nil)
	for _, d := range reg.Descriptors() {
		if d.Kind != runner.TypeCLI {
			continue
		}
		r, err := reg.New(d.Type, runner.Settings{Name: "x"})
		if err != nil {
			t.Fatalf("%s: %v", d.Type, err)
		}
		l, ok := r.(runner.Locator)
		if !ok {
			t.Fatalf("%s: the runner of an agent CLI does not locate it", d.Type)
		}
		err = l.Locate()
		if err == nil || !strings.Contains(err.Error(), d.Program) || !strings.Contains(err.Error(), "install it ("+d.Install+")") {
			t.Errorf("%s with its CLI missing: %v, want %q named and %q", d.Type, err, d.Program, d.Install)
		}
	}
}

// TestConfigRefusesWhatEachKindIgnores: cadre.yaml refuses a setting that
// a type's kind, as its descriptor says, would ignore, and accepts those
// it reads, for every registered type.
func TestConfigRefusesWhatEachKindIgnores(t *testing.T) {
	settings := []struct {
		yaml, key string
		refusedBy []runner.TypeKind
	}{
		{"command: x", "command", []runner.TypeKind{runner.TypeAPI, runner.TypeScript}},
		{"args: [x]", "args", []runner.TypeKind{runner.TypeAPI, runner.TypeScript}},
		{"env: [A, B]", "env", []runner.TypeKind{runner.TypeAPI, runner.TypeScript}},
		{"url: 'http://h:1'", "url", []runner.TypeKind{runner.TypeExec, runner.TypeScript}},
		{"scenario: s.yaml", "scenario", []runner.TypeKind{runner.TypeCLI, runner.TypeAPI, runner.TypeExec}},
	}
	for _, d := range builtin.Descriptors() {
		for _, s := range settings {
			_, err := config.Parse("cadre.yaml", []byte("runners:\n  x: {type: "+d.Type+", "+s.yaml+"}\n"), nil)
			refused := err != nil && strings.Contains(err.Error(), "runners.x."+s.key+":")
			if want := slices.Contains(s.refusedBy, d.Kind); refused != want {
				t.Errorf("type %s (%s) with %s: error %v, want refused %v", d.Type, d.Kind, s.yaml, err, want)
			}
		}
	}
}

// TestRegistryPricesReachRunners: the project's prices reach the runners
// the registry builds, an agent CLI's and a model API's alike, which
// estimate the cost of a step from them.
func TestRegistryPricesReachRunners(t *testing.T) {
	reg := builtin.Registry(map[string]price.Price{"house-model": {InputPerMTok: 1e6, OutputPerMTok: 1e6}})
	transcript, err := filepath.Abs("../codex/testdata/success.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	srv, _ := apitest.Serve(t, 200, nil, `{"model":"house-model","choices":[{"message":{"content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":2,"completion_tokens":3}}`)
	tests := []struct {
		typ  string
		s    runner.Settings
		inv  runner.Invocation
		want float64
	}{
		{"codex", runner.Settings{Command: clitest.Script(t, "codex", fmt.Sprintf("cat %q\n", transcript))}, clitest.Invocation(t), 315 + 24448 + 1222},
		{"openai", runner.Settings{URL: srv.URL, Env: []string{"CADRE_TEST_NO_KEY"}}, apitest.Invocation(t, "judge", "Judge.\n"), 2 + 3},
	}
	for _, tt := range tests {
		t.Run(tt.typ, func(t *testing.T) {
			tt.s.Name, tt.s.Model = tt.typ, "house-model"
			r, err := reg.New(tt.typ, tt.s)
			if err != nil {
				t.Fatal(err)
			}
			res, err := r.Run(t.Context(), tt.inv)
			if err != nil || !res.Usage.CostEstimated || res.Usage.CostUSD != tt.want {
				t.Errorf("usage %+v (%v), want the project's price: $%v estimated", res.Usage, err, tt.want)
			}
		})
	}
}
