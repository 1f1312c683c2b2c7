package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cadre-dev/cadre/internal/config"
	"github.com/cadre-dev/cadre/internal/runner"
)

// TestInitPicksAnAgentCLIOnPath: cadre init proposes the first agent CLI,
// in the registry's order of preference, whose program is on PATH, and
// names every one it found.
func TestInitPicksAnAgentCLIOnPath(t *testing.T) {
	bin := t.TempDir()
	writeExe(t, filepath.Join(bin, "aider"), "exit 0\n")
	writeExe(t, filepath.Join(bin, "codex"), "exit 0\n")
	repo := gitRepo(t, nil)
	code, _, stderr := runCadre(t, repo, map[string]string{"PATH": bin}, "init")
	if code != 0 {
		t.Fatalf("exit %d; stderr: %s", code, stderr)
	}
	text, err := os.ReadFile(filepath.Join(repo, "cadre.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"# Agent CLIs found on PATH: codex, aider.\n", "defaults: {runner: codex,"} {
		if !strings.Contains(string(text), want) {
			t.Errorf("cadre.yaml lacks %q:\n%s", want, text)
		}
	}
}

// TestInitReadsDescriptors: cadre init finds an agent CLI by its
// descriptor's program and proposes its type, and with none on PATH
// proposes the registry's first agent CLI.
func TestInitReadsDescriptors(t *testing.T) {
	types := func(map[string]config.Price) *runner.Registry {
		r := runner.NewRegistry()
		r.Add(runner.Descriptor{Type: "exec", Kind: runner.TypeExec}, nil)
		for _, typ := range []string{"zed", "yak"} {
			r.Add(runner.Descriptor{Type: typ, Kind: runner.TypeCLI, Program: typ + "-cli", Install: "get " + typ,
				Env: []string{"KEY"}, SandboxHome: []string{"." + typ}}, nil)
		}
		return r
	}
	bin := t.TempDir()
	writeExe(t, filepath.Join(bin, "yak-cli"), "exit 0\n")
	for _, tt := range []struct {
		name, path, want string
	}{
		{"found", bin, "defaults: {runner: yak,"},
		{"none found", t.TempDir(), "defaults: {runner: zed,"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			repo := gitRepo(t, nil)
			code, _, stderr := runCadreWith(t, types, repo, map[string]string{"PATH": tt.path}, "init")
			if code != 0 {
				t.Fatalf("exit %d; stderr: %s", code, stderr)
			}
			if text, _ := os.ReadFile(filepath.Join(repo, "cadre.yaml")); !strings.Contains(string(text), tt.want) {
				t.Errorf("cadre.yaml lacks %q:\n%s", tt.want, text)
			}
		})
	}
}
