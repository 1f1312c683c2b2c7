package workflow

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBuiltinsValidateAgainstKnownRoles(t *testing.T) {
	known := map[string]bool{}
	for _, r := range strings.Fields("issue-analyst codebase-scout implementation-planner adjudicator code-writer test-writer code-reviewer fix-surgeon integration-checker pr-composer triage planner architect executor critic gatekeeper judge debugger tester verifier researcher documenter actor diagnoser") {
		known[r] = true
	}
	r, err := LoadDefs("", func(s string) bool { return known[s] })
	if err != nil {
		t.Fatal(err)
	}
	want := "auto cadre debug full loop moa quick research review simple standard test"
	if got := strings.Join(r.Names(), " "); got != want {
		t.Errorf("built-ins %q", got)
	}
	cadre, _ := r.Get("cadre")
	if got := strings.Join(cadre.Roles(), " "); got != "issue-analyst codebase-scout implementation-planner adjudicator code-writer test-writer code-reviewer fix-surgeon integration-checker pr-composer" {
		t.Errorf("cadre roles %q", got)
	}
	if !cadre.Phases[2].Critical || cadre.Phases[3].Critical || cadre.Phases[4].Critical {
		t.Error("phases 1-3 critical, 4-5 not")
	}
}

func TestValidationErrors(t *testing.T) {
	roles := func(s string) bool { return s != "ghost" }
	tests := []struct{ name, yaml, want string }{
		{"unknown role", "phases: [{name: p, steps: [{role: ghost}]}]", `unknown role "ghost"`},
		{"loop without bound", "phases: [{name: p, steps: [{loop: {until: result-pass, do: [{role: a}]}}]}]", "needs exactly one bound"},
		{"loop with two bounds", "phases: [{name: p, steps: [{loop: {until: result-pass, max: 2, max_between: 2, do: [{role: a}]}}]}]", "needs exactly one bound"},
		{"unknown bound", "phases: [{name: p, steps: [{loop: {until: result-pass, max: forever, do: [{role: a}]}}]}]", `bound "forever"`},
		{"zero bound", "phases: [{name: p, steps: [{loop: {until: result-pass, max: 0, do: [{role: a}]}}]}]", "at least 1"},
		{"unknown gate", "phases: [{name: p, steps: [{loop: {until: happy, max: 2, do: [{role: a}]}}]}]", `until "happy"`},
		{"unreachable between", "phases: [{name: p, steps: [{loop: {until: result-pass, max: 1, do: [{role: a}], between: [{role: b}]}}]}]", "between can never run"},
		{"unreachable after routed", "phases: [{name: p, steps: [{run: routed}, {role: a}]}]", "can never run"},
		{"unknown action", "phases: [{name: p, steps: [{run: deploy}]}]", `unknown action "deploy"`},
		{"two kinds", "phases: [{name: p, steps: [{role: a, run: commit}]}]", "exactly one of"},
		{"empty phase", "phases: [{name: p, steps: []}]", "no steps"},
		{"no phases", "description: x", "no phases"},
		{"duplicate phase", "phases: [{name: p, steps: [{role: a}]}, {name: p, steps: [{role: b}]}]", "used twice"},
		{"foreach not plan", "phases: [{name: p, steps: [{foreach: files, do: [{role: a}]}]}]", `foreach "files"`},
		{"nested foreach", "phases: [{name: p, steps: [{foreach: plan, do: [{foreach: plan, do: [{role: a}]}]}]}]", "inside foreach"},
		{"bad exhausted", "phases: [{name: p, steps: [{loop: {until: result-pass, max: 2, exhausted: explode, do: [{role: a}]}}]}]", `exhausted "explode"`},
		{"unknown key", "phases: [{name: p, critcal: true, steps: [{role: a}]}]", "critcal"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "mine.yaml"), []byte(tt.yaml), 0o644)
			_, err := LoadDefs(dir, roles)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "mine.yaml") {
				t.Errorf("err = %v, want %q naming mine.yaml", err, tt.want)
			}
			if err != nil && strings.Contains(err.Error(), "\n") {
				t.Errorf("multi-line error: %q", err)
			}
		})
	}
}

// A decoding error names the file and line as file:line, as cadre.yaml's
// do, not as the YAML library's "[line:column]".
func TestDecodeErrorNamesLine(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "mine.yaml")
	for _, tt := range []struct{ yaml, want string }{
		{"phases:\n  - name: w\n    steps:\n      - role: coder\n        bogus: 1\n", f + `:5: unknown field "bogus"`},
		{"phases:\n  - name: w\n    critical: maybe\n    steps: [{role: coder}]\n", f + ":3: "},
	} {
		os.WriteFile(f, []byte(tt.yaml), 0o644)
		_, err := LoadDefs(dir, nil)
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) || strings.Contains(err.Error(), "[") {
			t.Errorf("err = %v, want it to start %q", err, tt.want)
		}
	}
}

func TestUserWorkflowOverridesAndNameRules(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "simple.yaml"), []byte("description: mine\nphases: [{name: w, critical: true, steps: [{role: coder}]}]\n"), 0o644)
	r, err := LoadDefs(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := r.Get("simple"); d.Description != "mine" || d.Source != filepath.Join(dir, "simple.yaml") {
		t.Errorf("%+v", d)
	}
	os.WriteFile(filepath.Join(dir, "runner.yaml"), []byte("phases: [{name: w, steps: [{role: coder}]}]\n"), 0o644)
	if _, err := LoadDefs(dir, nil); err == nil || !strings.Contains(err.Error(), "cannot be redefined") {
		t.Errorf("err = %v", err)
	}
	os.Remove(filepath.Join(dir, "runner.yaml"))
	os.WriteFile(filepath.Join(dir, "x.yaml"), []byte("name: y\nphases: [{name: w, steps: [{role: coder}]}]\n"), 0o644)
	if _, err := LoadDefs(dir, nil); err == nil || !strings.Contains(err.Error(), "must match the file name") {
		t.Errorf("err = %v", err)
	}
}
