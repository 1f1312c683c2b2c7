package modelsim

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// The real agent CLIs (installed by .ci/install-agents into .tools/npm)
// run headless against modelsim: the scenario makes the model call the
// CLI's own file-writing tool, then answer with a SIGNAL BLOCK. Each test
// skips with a message when its CLI is not installed.
//
//	go test ./internal/modelsim -run RealCLI -record   # refresh testdata/transcripts
var (
	record = flag.Bool("record", false, "write the real CLIs' JSON output to testdata/transcripts")
	dump   = flag.String("dump", "", "write every request body the real CLIs send to this directory")
)

const helloContent = "hello from modelsim\n"

// finalText is the scripted last answer; its SIGNAL BLOCK is what cadre
// reads from an agent.
const finalText = `Created hello.txt with the greeting.

### SIGNAL BLOCK
- Agent: coder
- Result: SUCCESS
- Loop Summary: wrote hello.txt
- Confidence: 9
- Next: auditor
- Context: hello.txt holds the greeting
**Signature**: hello:1:1
`

// scenarioFor scripts the hello.txt exchange: one tool call, then text.
func scenarioFor(tool, input string) string {
	return fmt.Sprintf(`conversations:
  - name: hello
    match: {contains: "Create hello.txt", tool: %s}
    turns:
      - text: I will create the file.
        tools:
          - name: %s
            input: %s
        usage: {input_tokens: 1200, output_tokens: 40, cache_read_tokens: 100}
      - text: %q
        usage: {input_tokens: 1300, output_tokens: 60}
`, tool, tool, input, finalText)
}

// realCLI finds an agent CLI in the repository's .tools/npm or on PATH.
func realCLI(t *testing.T, name string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("real agent CLIs are skipped in -short mode")
	}
	local, err := filepath.Abs(filepath.Join("..", "..", ".tools", "npm", "node_modules", ".bin", name))
	if err == nil {
		if _, err := os.Stat(local); err == nil {
			return local
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	t.Skipf("%s is not installed: run .ci/install-agents to install the agent CLIs into .tools/npm", name)
	return ""
}

// lockedBuffer is a log writer the server and the test share.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) entries(t *testing.T) []LogEntry {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []LogEntry
	sc := bufio.NewScanner(bytes.NewReader(l.b.Bytes()))
	for sc.Scan() {
		var e LogEntry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("log line %q: %v", sc.Text(), err)
		}
		out = append(out, e)
	}
	return out
}

// simulate starts modelsim with the scenario text for one test.
func simulate(t *testing.T, scenario string) (string, *lockedBuffer) {
	t.Helper()
	sc, err := Parse("scenario.yaml", []byte(scenario))
	if err != nil {
		t.Fatal(err)
	}
	log := &lockedBuffer{}
	h := New(sc, log)
	if *dump != "" {
		h = dumpBodies(t, *dump, h)
	}
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := Start(ctx, "127.0.0.1:0", h)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		if err := srv.Wait(); err != nil {
			t.Errorf("server: %v", err)
		}
	})
	return srv.URL, log
}

// dumpBodies saves each request body under dir, for studying what a CLI
// sends.
func dumpBodies(t *testing.T, dir string, next http.Handler) http.Handler {
	var mu sync.Mutex
	n := 0
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		n++
		name := filepath.Join(dir, fmt.Sprintf("%s-%02d.json", t.Name(), n))
		mu.Unlock()
		os.MkdirAll(filepath.Dir(name), 0o755)
		os.WriteFile(name, append([]byte(r.URL.String()+"\n"), body...), 0o644)
		r.Body = io.NopCloser(bytes.NewReader(body))
		next.ServeHTTP(w, r)
	})
}

// sandbox is a throwaway HOME and a git repository to work in.
type sandbox struct {
	home, repo string
	stdin      string // what the CLI reads on stdin
}

func newSandbox(t *testing.T) sandbox {
	t.Helper()
	root := t.TempDir()
	s := sandbox{home: filepath.Join(root, "home"), repo: filepath.Join(root, "repo")}
	for _, d := range []string{s.home, s.repo, filepath.Join(root, "tmp")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	git := exec.Command("git", "init", "-q", s.repo)
	if out, err := git.CombinedOutput(); err != nil {
		t.Fatalf("git init: %v: %s", err, out)
	}
	return s
}

// run runs a CLI in the sandbox with a minimal environment plus env, and
// returns its stdout. A non-zero exit is returned as an *exec.ExitError.
func (s sandbox) run(t *testing.T, bin string, env []string, args ...string) ([]byte, error) {
	t.Helper()
	out, _, err := s.run2(t, bin, env, args...)
	return out, err
}

// run2 is run returning stderr too.
func (s sandbox) run2(t *testing.T, bin string, env []string, args ...string) ([]byte, []byte, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = s.repo
	cmd.Env = append([]string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + s.home,
		"TMPDIR=" + filepath.Join(filepath.Dir(s.home), "tmp"),
		"LANG=C.UTF-8",
		"TERM=dumb",
		"NO_COLOR=1",
	}, env...)
	cmd.Stdin = strings.NewReader(s.stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("%s did not finish in time; stderr:\n%s", filepath.Base(bin), tail(stderr.String()))
	}
	if err != nil {
		t.Logf("%s exited: %v", filepath.Base(bin), err)
	}
	return stdout.Bytes(), stderr.Bytes(), err
}

func tail(s string) string {
	const n = 3000
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// saveTranscript keeps a CLI's JSON output for the runner parsers' tests
// when -record is given.
func saveTranscript(t *testing.T, name string, out []byte) {
	t.Helper()
	if !*record {
		return
	}
	path := filepath.Join("testdata", "transcripts", name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("recorded %s", path)
}

// jsonLines decodes JSONL output, failing on a line that is not JSON.
func jsonLines(t *testing.T, out []byte) []map[string]any {
	t.Helper()
	var evs []map[string]any
	for _, line := range bytes.Split(bytes.TrimSpace(out), []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var ev map[string]any
		if err := json.Unmarshal(line, &ev); err != nil {
			t.Fatalf("output line is not JSON: %q", line)
		}
		evs = append(evs, ev)
	}
	return evs
}

// checkHello asserts the CLI itself wrote hello.txt.
func checkHello(t *testing.T, s sandbox) {
	t.Helper()
	got, err := os.ReadFile(filepath.Join(s.repo, "hello.txt"))
	if err != nil {
		t.Fatalf("the CLI did not write hello.txt: %v", err)
	}
	if string(got) != helloContent {
		t.Errorf("hello.txt = %q, want %q", got, helloContent)
	}
}

// checkTurns asserts modelsim played both scripted turns of "hello".
func checkTurns(t *testing.T, log *lockedBuffer) {
	t.Helper()
	seen := map[int]bool{}
	for _, e := range log.entries(t) {
		if e.Rule == "hello" {
			seen[e.Turn] = true
		}
	}
	if !seen[0] || !seen[1] {
		t.Errorf("scripted turns played = %v, want turns 0 and 1 of \"hello\"", seen)
	}
}

func num(v any) float64 {
	f, _ := v.(float64)
	return f
}

// get walks a decoded JSON value by object keys.
func get(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// scenarioError scripts a model that answers the hello request with an
// HTTP error.
func scenarioError(tool string, status int, message string) string {
	return fmt.Sprintf(`conversations:
  - name: hello
    match: {contains: "Create hello.txt", tool: %s}
    turns:
      - error: {status: %d, message: %q}
`, tool, status, message)
}

const writeInput = `{file_path: "{{cwd}}/hello.txt", content: "hello from modelsim\n"}`

func TestRealCLIClaude(t *testing.T) {
	bin := realCLI(t, "claude")
	t.Parallel()
	claude := func(t *testing.T, s sandbox, url string, env []string, args ...string) ([]byte, error) {
		env = append([]string{
			"ANTHROPIC_BASE_URL=" + url,
			"ANTHROPIC_API_KEY=modelsim",
			"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		}, env...)
		return s.run(t, bin, env, append([]string{"-p", "Create hello.txt", "--permission-mode", "acceptEdits"}, args...)...)
	}
	result := func(t *testing.T, out []byte) map[string]any {
		t.Helper()
		evs := jsonLines(t, out)
		res := evs[len(evs)-1]
		if res["type"] != "result" {
			t.Fatalf("last event = %v, want the result event", res)
		}
		return res
	}
	t.Run("write", func(t *testing.T) {
		url, log := simulate(t, scenarioFor("Write", writeInput))
		s := newSandbox(t)
		out, err := claude(t, s, url, nil, "--output-format", "stream-json", "--verbose")
		if err != nil {
			t.Fatal(err)
		}
		saveTranscript(t, "claude-write.jsonl", out)
		checkHello(t, s)
		checkTurns(t, log)
		res := result(t, out)
		if res["is_error"] != false || res["subtype"] != "success" {
			t.Errorf("result is_error=%v subtype=%v, want a success", res["is_error"], res["subtype"])
		}
		if !strings.Contains(fmt.Sprint(res["result"]), "### SIGNAL BLOCK") {
			t.Errorf("result text %q has no SIGNAL BLOCK", res["result"])
		}
		if num(res["total_cost_usd"]) <= 0 || num(get(res, "usage", "output_tokens")) != 100 {
			t.Errorf("result cost %v, usage %v: want a cost and the scripted 40+60 output tokens", res["total_cost_usd"], res["usage"])
		}
	})
	t.Run("write-json", func(t *testing.T) {
		url, _ := simulate(t, scenarioFor("Write", writeInput))
		s := newSandbox(t)
		out, err := claude(t, s, url, nil, "--output-format", "json")
		if err != nil {
			t.Fatal(err)
		}
		saveTranscript(t, "claude-write.json", out)
		checkHello(t, s)
		var res map[string]any
		if err := json.Unmarshal(out, &res); err != nil {
			t.Fatalf("--output-format json: %v", err)
		}
		if !strings.Contains(fmt.Sprint(res["result"]), "### SIGNAL BLOCK") || num(res["total_cost_usd"]) <= 0 {
			t.Errorf("result = %v, want the final text and a cost", res)
		}
	})
	t.Run("rate-limit", func(t *testing.T) {
		url, _ := simulate(t, scenarioError("Write", http.StatusTooManyRequests, "modelsim: rate limit reached"))
		s := newSandbox(t)
		out, err := claude(t, s, url, []string{"CLAUDE_CODE_MAX_RETRIES=0"}, "--output-format", "stream-json", "--verbose")
		if err == nil {
			t.Error("claude exited 0 after a rate limit, want a failure")
		}
		saveTranscript(t, "claude-rate-limit.jsonl", out)
		res := result(t, out)
		if res["is_error"] != true || num(res["api_error_status"]) != http.StatusTooManyRequests {
			t.Errorf("result is_error=%v api_error_status=%v, want an error with status 429", res["is_error"], res["api_error_status"])
		}
	})
	t.Run("max-turns", func(t *testing.T) {
		url, _ := simulate(t, scenarioFor("Write", writeInput))
		s := newSandbox(t)
		out, err := claude(t, s, url, nil, "--output-format", "stream-json", "--verbose", "--max-turns", "1")
		if err == nil {
			t.Error("claude exited 0 at its turn limit, want a failure")
		}
		saveTranscript(t, "claude-max-turns.jsonl", out)
		res := result(t, out)
		if res["subtype"] != "error_max_turns" {
			t.Errorf("result subtype = %v, want error_max_turns", res["subtype"])
		}
	})
}

func TestRealCLICodex(t *testing.T) {
	bin := realCLI(t, "codex")
	t.Parallel()
	codex := func(t *testing.T, s sandbox, url string, args ...string) ([]byte, error) {
		codexHome := filepath.Join(s.home, ".codex")
		if err := os.MkdirAll(codexHome, 0o755); err != nil {
			t.Fatal(err)
		}
		base := []string{"exec", "--skip-git-repo-check", "--json", "--dangerously-bypass-approvals-and-sandbox",
			"-c", "model_provider=modelsim",
			"-c", `model_providers.modelsim.name="modelsim"`,
			"-c", fmt.Sprintf(`model_providers.modelsim.base_url="%s/v1"`, url),
			"-c", `model_providers.modelsim.wire_api="responses"`,
			"-c", `model_providers.modelsim.env_key="MODELSIM_KEY"`,
			"-c", "model_providers.modelsim.request_max_retries=0",
			"-c", "model_providers.modelsim.stream_max_retries=0",
		}
		return s.run(t, bin, []string{"CODEX_HOME=" + codexHome, "MODELSIM_KEY=modelsim"}, append(base, args...)...)
	}
	t.Run("write", func(t *testing.T) {
		patch := "*** Begin Patch\n*** Add File: hello.txt\n+hello from modelsim\n*** End Patch\n"
		url, log := simulate(t, scenarioFor("exec_command", fmt.Sprintf(`{cmd: %q, workdir: "{{cwd}}"}`,
			"apply_patch <<'EOF'\n"+patch+"EOF\n")))
		s := newSandbox(t)
		out, err := codex(t, s, url, "-m", "modelsim", "Create hello.txt")
		if err != nil {
			t.Fatal(err)
		}
		saveTranscript(t, "codex-write.jsonl", out)
		checkHello(t, s)
		checkTurns(t, log)
		evs := jsonLines(t, out)
		last := evs[len(evs)-1]
		if last["type"] != "turn.completed" {
			t.Fatalf("last event = %v, want turn.completed", last)
		}
		if num(get(last, "usage", "output_tokens")) != 100 || num(get(last, "usage", "cached_input_tokens")) != 100 {
			t.Errorf("turn.completed usage = %v, want the scripted 40+60 output and 100 cached tokens", last["usage"])
		}
		var text string
		for _, ev := range evs {
			if ev["type"] == "item.completed" && get(ev, "item", "type") == "agent_message" {
				text = fmt.Sprint(get(ev, "item", "text"))
			}
		}
		if !strings.Contains(text, "### SIGNAL BLOCK") {
			t.Errorf("final agent_message %q has no SIGNAL BLOCK", text)
		}
	})
	t.Run("rate-limit", func(t *testing.T) {
		url, _ := simulate(t, scenarioError("exec_command", http.StatusTooManyRequests, "modelsim: rate limit reached"))
		s := newSandbox(t)
		out, err := codex(t, s, url, "-m", "modelsim", "Create hello.txt")
		if err == nil {
			t.Error("codex exited 0 after a rate limit, want a failure")
		}
		saveTranscript(t, "codex-rate-limit.jsonl", out)
		evs := jsonLines(t, out)
		if last := evs[len(evs)-1]; last["type"] != "turn.failed" {
			t.Errorf("last event = %v, want turn.failed", last)
		}
	})
	// Codex's own models get a JavaScript "exec" tool (a freeform custom
	// tool) whose nested tools include apply_patch.
	t.Run("code-mode", func(t *testing.T) {
		js := `await tools.apply_patch("*** Begin Patch\n*** Add File: hello.txt\n+hello from modelsim\n*** End Patch\n");`
		url, log := simulate(t, scenarioFor("exec", fmt.Sprintf("%q", js)))
		s := newSandbox(t)
		out, err := codex(t, s, url, "Create hello.txt")
		if err != nil {
			t.Fatal(err)
		}
		saveTranscript(t, "codex-code-mode.jsonl", out)
		checkHello(t, s)
		checkTurns(t, log)
	})
}

func TestRealCLIGemini(t *testing.T) {
	bin := realCLI(t, "gemini")
	t.Parallel()
	// gemini runs the CLI with an API key login and no usage statistics;
	// extra adds settings.json entries.
	gemini := func(t *testing.T, s sandbox, url, extra string, args ...string) ([]byte, []byte, error) {
		dir := filepath.Join(s.home, ".gemini")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		settings := `{"security":{"auth":{"selectedType":"gemini-api-key"}},"privacy":{"usageStatisticsEnabled":false}` + extra + `}`
		if err := os.WriteFile(filepath.Join(dir, "settings.json"), []byte(settings), 0o644); err != nil {
			t.Fatal(err)
		}
		env := []string{"GEMINI_API_KEY=modelsim", "GEMINI_CLI_TRUST_WORKSPACE=true", "GOOGLE_GEMINI_BASE_URL=" + url}
		return s.run2(t, bin, env, append([]string{"-p", "Create hello.txt", "--approval-mode", "auto_edit"}, args...)...)
	}
	t.Run("write", func(t *testing.T) {
		url, log := simulate(t, scenarioFor("write_file", writeInput))
		s := newSandbox(t)
		out, _, err := gemini(t, s, url, "", "-o", "json")
		if err != nil {
			t.Fatal(err)
		}
		saveTranscript(t, "gemini-write.json", out)
		checkHello(t, s)
		checkTurns(t, log)
		var res map[string]any
		if err := json.Unmarshal(out, &res); err != nil {
			t.Fatalf("gemini -o json output: %v\n%s", err, out)
		}
		if !strings.Contains(fmt.Sprint(res["response"]), "### SIGNAL BLOCK") {
			t.Errorf("response %q has no SIGNAL BLOCK", res["response"])
		}
		// The main model's tokens are the scripted ones; the router's
		// request is answered by default and estimated.
		models, _ := get(res, "stats", "models").(map[string]any)
		found := false
		for _, m := range models {
			found = found || num(get(m, "tokens", "candidates")) == 100 && num(get(m, "tokens", "cached")) == 100
		}
		if !found {
			t.Errorf("stats.models = %v, want a model with the scripted 40+60 output and 100 cached tokens", models)
		}
	})
	t.Run("write-stream", func(t *testing.T) {
		url, _ := simulate(t, scenarioFor("write_file", writeInput))
		s := newSandbox(t)
		out, _, err := gemini(t, s, url, "", "-o", "stream-json")
		if err != nil {
			t.Fatal(err)
		}
		saveTranscript(t, "gemini-write-stream.jsonl", out)
		checkHello(t, s)
		evs := jsonLines(t, out)
		if last := evs[len(evs)-1]; last["type"] != "result" {
			t.Errorf("last event = %v, want the result event", last)
		}
	})
	// On failure Gemini CLI prints its -o json object to stderr, after
	// its log lines, and nothing to stdout.
	failure := func(t *testing.T, stderr []byte) map[string]any {
		t.Helper()
		i := bytes.LastIndex(stderr, []byte("{\n  \"session_id\""))
		if i < 0 {
			t.Fatalf("stderr holds no JSON result:\n%s", tail(string(stderr)))
		}
		var res map[string]any
		if err := json.NewDecoder(bytes.NewReader(stderr[i:])).Decode(&res); err != nil {
			t.Fatalf("stderr JSON result: %v", err)
		}
		return res
	}
	t.Run("rate-limit", func(t *testing.T) {
		url, _ := simulate(t, scenarioError("write_file", http.StatusTooManyRequests, "modelsim: rate limit reached"))
		s := newSandbox(t)
		out, stderr, err := gemini(t, s, url, `,"general":{"maxAttempts":1}`, "-o", "json")
		if err == nil {
			t.Error("gemini exited 0 after a rate limit, want a failure")
		}
		if len(bytes.TrimSpace(out)) > 0 {
			t.Errorf("stdout = %q, want nothing on failure", out)
		}
		saveTranscript(t, "gemini-rate-limit.stderr", stderr)
		if res := failure(t, stderr); num(get(res, "error", "code")) != http.StatusTooManyRequests {
			t.Errorf("result = %v, want error code 429", res)
		}
	})
	t.Run("max-turns", func(t *testing.T) {
		url, _ := simulate(t, scenarioFor("write_file", writeInput))
		s := newSandbox(t)
		_, stderr, err := gemini(t, s, url, `,"model":{"maxSessionTurns":1}`, "-o", "json")
		if err == nil {
			t.Error("gemini exited 0 at its turn limit, want a failure")
		}
		saveTranscript(t, "gemini-max-turns.stderr", stderr)
		if res := failure(t, stderr); get(res, "error", "type") != "FatalTurnLimitedError" {
			t.Errorf("result = %v, want a FatalTurnLimitedError", res)
		}
	})
}
