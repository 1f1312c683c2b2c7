package cli_test

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cadre-dev/cadre/internal/cli"
	"github.com/cadre-dev/cadre/internal/config"
	"github.com/cadre-dev/cadre/internal/modelsim"
	"github.com/cadre-dev/cadre/internal/runner"
	"github.com/cadre-dev/cadre/internal/runner/builtin"
)

// allTypes is a registry with every built-in runner type; the check looks
// at types and settings only, so the factories are never called.
// writeExe writes an executable shell script.
func writeExe(t *testing.T, path, script string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+script), 0o755); err != nil {
		t.Fatal(err)
	}
}

// gitRepo makes a git checkout holding files.
func gitRepo(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := exec.Command("git", "init", "--quiet", dir).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	return dir
}

// runCadre runs cadre args in dir with only vars in its environment.
func runCadre(t *testing.T, dir string, vars map[string]string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return runCadreWith(t, builtin.Registry, dir, vars, args...)
}

// runCadreWith is runCadre with the runner types of types.
func runCadreWith(t *testing.T, types func(map[string]config.Price) *runner.Registry, dir string, vars map[string]string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	f := &cli.Factory{
		IO:      cli.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut},
		Getenv:  func(k string) string { return vars[k] },
		Dir:     func() (string, error) { return dir, nil },
		Runners: types,
		Crash:   func(string) {},
	}
	code = cli.Execute(f, args)
	return code, out.String(), errOut.String()
}

// rows parses the check's table into its lines by runner name.
func rows(t *testing.T, out string) map[string]string {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) == 0 || !strings.HasPrefix(lines[0], "RUNNER") {
		t.Fatalf("no table header in:\n%s", out)
	}
	m := map[string]string{}
	for _, l := range lines[1:] {
		if l == "" {
			break // the sandbox line follows the table
		}
		m[strings.Fields(l)[0]] = l
	}
	return m
}

// checkConfig is the cadre.yaml of TestRunnersCheck; %[1]s is a model API
// server's URL, %[2]s a URL where nothing listens.
const checkConfig = `defaults: {runner: claude}
roles:
  planner: {runner: api}
runners:
  api: {type: anthropic, env: [WORK_KEY], model: claude-haiku-4-5, url: "%[1]s"}
  local: {type: openai, url: "%[1]s/v1"}
  ollama: {url: "%[2]s"}
  agent: {type: exec, command: ./scripts/agent.sh}
  fake: {type: script, scenario: scenario.yaml}
  cx: {type: codex, command: codex-beta}
`

// closedURL returns a URL on which nothing listens: a port just released.
func closedURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr
}

func TestRunnersCheck(t *testing.T) {
	bin := t.TempDir()
	writeExe(t, filepath.Join(bin, "claude"), "echo '2.0.14 (Claude Code)'\n")
	writeExe(t, filepath.Join(bin, "codex"), "echo 'codex-cli 0.46.0'; echo 'more text'\n")
	writeExe(t, filepath.Join(bin, "gemini"), "echo 'env: node: No such file or directory' >&2; exit 127\n")
	// Found on PATH but not executable: not a usable CLI.
	if err := os.WriteFile(filepath.Join(bin, "aider"), []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(modelsim.New(modelsim.Scenario{}, nil))
	defer srv.Close()
	down := closedURL(t)
	repo := gitRepo(t, map[string]string{"cadre.yaml": fmt.Sprintf(checkConfig, srv.URL, down)})
	writeExe(t, filepath.Join(repo, "scripts", "agent.sh"), "cat\n")
	vars := map[string]string{"PATH": bin, "WORK_KEY": "sk-ant-secret-value"}

	// Runners cadre.yaml uses are missing: the check fails, --strict or not.
	code, out, stderr := runCadre(t, repo, vars, "runners", "check")
	if code != 1 {
		t.Fatalf("exit %d, want 1: runners in use are missing; stderr: %s", code, stderr)
	}
	got := rows(t, out)
	tests := []struct {
		name   string
		used   bool
		status string
		detail []string
	}{
		{"claude", true, "ready", []string{"2.0.14 (Claude Code)", filepath.Join(bin, "claude")}},
		{"codex", false, "ready", []string{"codex-cli 0.46.0"}},
		{"cx", true, "missing", []string{"codex-beta not found on PATH (runners.cx.command); install: npm install -g @openai/codex"}},
		{"gemini", false, "missing", []string{"--version exited 127: env: node: No such file or directory", "npm install -g @google/gemini-cli"}},
		{"opencode", false, "missing", []string{"opencode not found on PATH; install: npm install -g opencode-ai"}},
		{"qwen", false, "missing", []string{"qwen not found on PATH; install: npm install -g @qwen-code/qwen-code"}},
		{"copilot", false, "missing", []string{"copilot not found on PATH; install: npm install -g @github/copilot"}},
		{"crush", false, "missing", []string{"crush not found on PATH; install: npm install -g @charmland/crush"}},
		{"aider", false, "missing", []string{"install: python -m pip install aider-install && aider-install"}},
		{"anthropic", false, "missing", []string{"url https://api.anthropic.com", "ANTHROPIC_API_KEY is not set"}},
		{"api", true, "ready", []string{"url " + srv.URL, "WORK_KEY is set", "model claude-haiku-4-5"}},
		{"openai", false, "missing", []string{"OPENAI_API_KEY is not set"}},
		{"local", true, "ready", []string{"url " + srv.URL + "/v1", "OPENAI_API_KEY not set (sent only when set)"}},
		// Nothing listens: not ready, with the URL and the error.
		{"ollama", true, "missing", []string{"url " + down + " does not answer: ", "connection refused", "fix runners.ollama.url"}},
		{"agent", true, "ready", []string{filepath.Join(repo, "scripts", "agent.sh")}},
		{"fake", true, "missing", []string{"scenario scenario.yaml not found (runners.fake.scenario)"}},
		{"exec", false, "-", []string{"type: exec"}},
		{"script", false, "-", []string{"type: script"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			line, ok := got[tt.name]
			if !ok {
				t.Fatalf("no line for %s in:\n%s", tt.name, out)
			}
			f := strings.Fields(line)
			used, status := len(f) > 3 && f[2] == "yes", f[2]
			if used {
				status = f[3]
			}
			if used != tt.used || status != tt.status {
				t.Errorf("used %v status %s, want %v %s: %q", used, status, tt.used, tt.status, line)
			}
			for _, d := range tt.detail {
				if !strings.Contains(line, d) {
					t.Errorf("line %q lacks %q", line, d)
				}
			}
		})
	}
	if len(got) != len(tests) {
		t.Errorf("%d runners listed, want %d:\n%s", len(got), len(tests), out)
	}
	if strings.Contains(out, "sk-ant-secret-value") {
		t.Errorf("the API key's value is in the output:\n%s", out)
	}
	if !strings.Contains(stderr, "missing runners that cadre.yaml uses: cx, fake, ollama") {
		t.Errorf("stderr %q does not name the missing runners in use", stderr)
	}
}

// A runner cadre.yaml uses and that is missing fails the check.
func TestRunnersCheckFailsOnMissingUsedRunner(t *testing.T) {
	bin := t.TempDir()
	writeExe(t, filepath.Join(bin, "claude"), "echo 2.0.14\n")
	tests := []struct {
		name     string
		config   string
		wantCode int
	}{
		{"default runner found", "defaults: {runner: claude}\n", 0},
		{"unused missing runners do not count", "roles:\n  judge: {runner: claude}\n", 0},
		{"default runner missing", "defaults: {runner: codex}\n", 1},
		{"role runner missing", "roles:\n  judge: {runner: gemini}\n", 1},
		{"configured runner of an unknown type", "runners:\n  mine: {type: cursor, command: cursor}\n", 1},
		// runner auto is the model selector, not a runner: its candidates
		// are what the run uses.
		{"selector candidates found", "defaults: {runner: auto}\nselector: {candidates: [claude/sonnet]}\n", 0},
		{"selector candidate missing", "roles:\n  judge: {runner: auto}\nselector: {candidates: [claude, codex/gpt-5]}\n", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			repo := gitRepo(t, map[string]string{"cadre.yaml": tt.config})
			code, out, stderr := runCadre(t, repo, map[string]string{"PATH": bin}, "runners", "check")
			if code != tt.wantCode {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.wantCode, out, stderr)
			}
			if _, ok := rows(t, out)["auto"]; ok {
				t.Errorf("a row for auto, which is no runner:\n%s", out)
			}
		})
	}
}

func TestRunnersCheckOutsideRepo(t *testing.T) {
	code, out, stderr := runCadre(t, t.TempDir(), map[string]string{"PATH": t.TempDir()}, "runners", "check", "--strict")
	if code != 0 {
		t.Fatalf("exit %d, want 0: nothing is configured outside a checkout; stderr: %s", code, stderr)
	}
	got := rows(t, out)
	if len(got) != 13 || !strings.Contains(got["claude"], "npm install -g @anthropic-ai/claude-code") ||
		!strings.Contains(got["qwen"], "npm install -g @qwen-code/qwen-code") {
		t.Errorf("want the 13 built-in types with install hints, got:\n%s", out)
	}
	// With no bwrap on PATH, the last line says the default (auto) falls
	// back to running agents unconfined.
	if !strings.Contains(out, "\n\nsandbox: none (sandbox.mode auto falls back): bwrap does not work here: sandbox unavailable: bwrap (bubblewrap) not found in PATH") {
		t.Errorf("no sandbox line in:\n%s", out)
	}
	if !strings.Contains(stderr, "not in a git checkout") {
		t.Errorf("stderr %q does not say why only built-ins are shown", stderr)
	}
}

func TestRunnersCheckBadConfig(t *testing.T) {
	repo := gitRepo(t, map[string]string{"cadre.yaml": "runners:\n  api: {type: anthropic, url: 'not a url'}\n"})
	code, _, stderr := runCadre(t, repo, nil, "runners", "check")
	if code != 2 || !strings.Contains(stderr, "runners.api.url") {
		t.Errorf("exit %d stderr %q, want 2 naming runners.api.url", code, stderr)
	}
}

func TestRunnersListStays(t *testing.T) {
	repo := gitRepo(t, map[string]string{"cadre.yaml": fmt.Sprintf(checkConfig, "http://127.0.0.1:9", "http://127.0.0.1:9")})
	for _, args := range [][]string{{"runners"}, {"runners", "list"}} {
		code, out, stderr := runCadre(t, repo, nil, args...)
		if code != 0 || !strings.Contains(out, "TYPES\n  aider\n") || !strings.Contains(out, "CONFIGURED (cadre.yaml)") ||
			!strings.Contains(out, "type=exec") {
			t.Errorf("%v: exit %d, stdout:\n%s\nstderr: %s", args, code, out, stderr)
		}
	}
}

// TestRunnersCheckProbesModelAPIs shows that a model API is ready only when
// its URL answers a real request carrying the key the runner would send.
func TestRunnersCheckProbesModelAPIs(t *testing.T) {
	type seen struct{ path, key, bearer, version string }
	requests := make(chan seen, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests <- seen{r.URL.Path, r.Header.Get("x-api-key"), r.Header.Get("Authorization"), r.Header.Get("anthropic-version")}
		switch {
		case r.Header.Get("x-api-key") == "sk-revoked":
			w.WriteHeader(http.StatusUnauthorized)
		case r.Method == http.MethodGet && (r.URL.Path == "/v1/models" || r.URL.Path == "/api/tags"):
			fmt.Fprint(w, `{"data":[],"models":[]}`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	down := closedURL(t)
	tests := []struct {
		name, entry string
		vars        map[string]string
		status      string
		detail      []string
		want        *seen // the request the server saw; nil: none
	}{
		{"anthropic answers with the key", `{type: anthropic, url: "%s", env: [K]}`, map[string]string{"K": "sk-ok"},
			"ready", []string{"url " + srv.URL + ", K is set"}, &seen{"/v1/models", "sk-ok", "", "2023-06-01"}},
		{"anthropic refuses the key", `{type: anthropic, url: "%s", env: [K]}`, map[string]string{"K": "sk-revoked"},
			"missing", []string{"refused the key", "HTTP 401", "check the API key in K"}, &seen{"/v1/models", "sk-revoked", "", "2023-06-01"}},
		{"openai base with /v1", `{type: openai, url: "%s/v1", env: [K]}`, map[string]string{"K": "sk-o"},
			"ready", []string{"url " + srv.URL + "/v1"}, &seen{"/v1/models", "", "Bearer sk-o", ""}},
		{"openai base without /v1", `{type: openai, url: "%s"}`, nil,
			"ready", []string{"OPENAI_API_KEY not set (sent only when set)"}, &seen{"/v1/models", "", "", ""}},
		{"ollama", `{type: ollama, url: "%s"}`, nil, "ready", []string{"url " + srv.URL}, &seen{"/api/tags", "", "", ""}},
		{"not that kind of server", `{type: ollama, url: "%s/other"}`, nil,
			"missing", []string{"GET " + srv.URL + "/other/api/tags: HTTP 404", "fix runners.m.url"}, &seen{"/other/api/tags", "", "", ""}},
		{"nothing listening", `{type: ollama, url: "` + down + `"}`, nil,
			"missing", []string{"url " + down + " does not answer: ", "connection refused"}, nil},
		{"vendor URL without its key", `{type: anthropic, env: [NO_SUCH_KEY]}`, nil,
			"missing", []string{"NO_SUCH_KEY is not set"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			entry := tt.entry
			if strings.Contains(entry, "%s") {
				entry = fmt.Sprintf(entry, srv.URL)
			}
			repo := gitRepo(t, map[string]string{"cadre.yaml": "defaults: {runner: m}\nrunners:\n  m: " + entry + "\n"})
			vars := map[string]string{"PATH": t.TempDir()}
			for k, v := range tt.vars {
				vars[k] = v
			}
			code, out, stderr := runCadre(t, repo, vars, "runners", "check", "--strict")
			line := rows(t, out)["m"]
			if f := strings.Fields(line); len(f) < 4 || f[3] != tt.status {
				t.Errorf("status of %q, want %s", line, tt.status)
			}
			for _, d := range tt.detail {
				if !strings.Contains(line, d) {
					t.Errorf("line %q lacks %q", line, d)
				}
			}
			if wantCode := map[string]int{"ready": 0, "missing": 1}[tt.status]; code != wantCode {
				t.Errorf("exit %d, want %d with --strict; stderr: %s", code, wantCode, stderr)
			}
			var got *seen
			select {
			case s := <-requests:
				got = &s
			default:
			}
			switch {
			case tt.want == nil && got != nil:
				t.Errorf("request %+v sent, want none", *got)
			case tt.want != nil && (got == nil || *got != *tt.want):
				t.Errorf("request %+v, want %+v", got, *tt.want)
			}
		})
	}
}

// TestRunnersCheckReadsDescriptors: the check knows a runner type only by
// its descriptor: an agent CLI's program and install command, a model
// API's base URL, key variable and probe, whatever types the registry
// holds.
func TestRunnersCheckReadsDescriptors(t *testing.T) {
	bin := t.TempDir()
	writeExe(t, filepath.Join(bin, "zed-cli"), "echo 'zed 1.0'\n")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path != "/probe":
			http.NotFound(w, r)
		case r.Header.Get("X-Key") != "k":
			w.WriteHeader(http.StatusUnauthorized)
		}
	}))
	defer srv.Close()
	types := func(map[string]config.Price) *runner.Registry {
		r := runner.NewRegistry()
		r.Add(runner.Descriptor{Type: "zed", Kind: runner.TypeCLI, Program: "zed-cli", Install: "get zed",
			Env: []string{"ZED_KEY"}, SandboxHome: []string{".zed"}}, nil)
		r.Add(runner.Descriptor{Type: "yak", Kind: runner.TypeCLI, Program: "yak-cli", Install: "get yak",
			Env: []string{"YAK_KEY"}, SandboxHome: []string{".yak"}}, nil)
		r.Add(runner.Descriptor{Type: "api", Kind: runner.TypeAPI, BaseURL: srv.URL, KeyEnv: "API_K",
			KeyRequired: func(base string) bool { return base == srv.URL },
			Probe: func(base, key string) (string, http.Header) {
				return base + "/probe", http.Header{"X-Key": {key}}
			}}, nil)
		r.Add(runner.Descriptor{Type: "cmd", Kind: runner.TypeExec}, nil)
		return r
	}
	for _, tt := range []struct {
		name string
		vars map[string]string
		want map[string][]string // runner: its status, then what its detail says
	}{
		{"without the key", nil, map[string][]string{
			"zed": {"ready", "zed 1.0 (" + filepath.Join(bin, "zed-cli") + ")"},
			"yak": {"missing", "yak-cli not found on PATH; install: get yak"},
			"api": {"missing", "url " + srv.URL + ", API_K is not set"},
			"cmd": {"-", "{type: cmd, command: ./agent.sh}"},
		}},
		{"with the key", map[string]string{"API_K": "k"}, map[string][]string{
			"api": {"ready", "url " + srv.URL + ", API_K is set"},
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			vars := map[string]string{"PATH": bin}
			for k, v := range tt.vars {
				vars[k] = v
			}
			code, out, stderr := runCadreWith(t, types, t.TempDir(), vars, "runners", "check")
			if code != 0 {
				t.Fatalf("exit %d; stderr: %s", code, stderr)
			}
			got := rows(t, out)
			if len(got) != 4 {
				t.Errorf("%d runners listed, want the registry's 4:\n%s", len(got), out)
			}
			for name, want := range tt.want {
				line := got[name]
				if f := strings.Fields(line); len(f) < 3 || f[2] != want[0] || !strings.Contains(line, want[1]) {
					t.Errorf("line %q, want status %s and %q", line, want[0], want[1])
				}
			}
		})
	}
}
