package modelsim

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The agent CLIs added after Claude Code, Codex and Gemini CLI: OpenCode
// (Anthropic Messages), Qwen Code (OpenAI Chat Completions) and GitHub
// Copilot CLI in its bring-your-own-key mode (OpenAI Chat Completions).
// Their rate-limit runs are not repeated here: both CLIs retry a 429 for
// about a minute whatever their settings say (copilot-rate-limit.jsonl
// was recorded once that way). Crush is not here: its npm package downloads its binary from GitHub
// while installing, which this machine cannot reach.

func TestRealCLIOpenCode(t *testing.T) {
	bin := realCLI(t, "opencode")
	t.Parallel()
	opencode := func(t *testing.T, s sandbox, url string) ([]byte, error) {
		cfg := fmt.Sprintf(`{"provider":{"anthropic":{"options":{"baseURL":"%s/v1"}}}}`, url)
		env := []string{"PWD=" + s.repo, "ANTHROPIC_API_KEY=modelsim",
			`OPENCODE_PERMISSION={"edit":"allow","bash":"allow"}`, "OPENCODE_CONFIG_CONTENT=" + cfg}
		return s.runStdin(t, bin, env, "Create hello.txt", "run", "--format", "json", "--model", "anthropic/claude-sonnet-4-5")
	}
	t.Run("write", func(t *testing.T) {
		url, log := simulate(t, scenarioFor("write", `{filePath: "{{cwd}}/hello.txt", content: "hello from modelsim\n"}`))
		s := newSandbox(t)
		out, err := opencode(t, s, url)
		if err != nil {
			t.Fatal(err)
		}
		saveTranscript(t, "opencode-write.jsonl", out)
		checkHello(t, s)
		checkTurns(t, log)
		var text string
		var output float64
		for _, ev := range jsonLines(t, out) {
			switch ev["type"] {
			case "text":
				text = fmt.Sprint(get(ev, "part", "text"))
			case "step_finish":
				output += num(get(ev, "part", "tokens", "output"))
			}
		}
		if !strings.Contains(text, "### SIGNAL BLOCK") || output != 100 {
			t.Errorf("last text %q, output tokens %v: want the SIGNAL BLOCK and the scripted 40+60", text, output)
		}
	})
}

func TestRealCLIQwen(t *testing.T) {
	bin := realCLI(t, "qwen")
	t.Parallel()
	qwen := func(t *testing.T, s sandbox, url string, args ...string) ([]byte, error) {
		env := []string{"OPENAI_API_KEY=modelsim", "OPENAI_BASE_URL=" + url + "/v1", "OPENAI_MODEL=modelsim"}
		return s.run(t, bin, env, append([]string{"--auth-type", "openai", "--approval-mode", "auto-edit", "-o", "stream-json"}, args...)...)
	}
	t.Run("write", func(t *testing.T) {
		url, log := simulate(t, scenarioFor("write_file", writeInput))
		s := newSandbox(t)
		out, err := qwen(t, s, url, "Create hello.txt")
		if err != nil {
			t.Fatal(err)
		}
		saveTranscript(t, "qwen-write.jsonl", out)
		checkHello(t, s)
		checkTurns(t, log)
		evs := jsonLines(t, out)
		res := evs[len(evs)-1]
		if res["type"] != "result" || res["is_error"] != false {
			t.Fatalf("last event = %v, want a successful result", res)
		}
		if !strings.Contains(fmt.Sprint(res["result"]), "### SIGNAL BLOCK") ||
			num(get(res, "usage", "output_tokens")) != 100 || num(get(res, "usage", "cache_read_input_tokens")) != 100 {
			t.Errorf("result %v, usage %v: want the SIGNAL BLOCK, the scripted 40+60 output and 100 cached tokens", res["result"], res["usage"])
		}
	})
}

// copilotEnv points Copilot CLI at modelsim with no GitHub login:
// COPILOT_OFFLINE skips authentication, telemetry and updates, and
// requires the BYOK provider.
func copilotEnv(url string) []string {
	return []string{"COPILOT_OFFLINE=true", "COPILOT_PROVIDER_BASE_URL=" + url + "/v1",
		"COPILOT_PROVIDER_API_KEY=modelsim", "COPILOT_MODEL=modelsim", "COPILOT_AUTO_UPDATE=false"}
}

func TestRealCLICopilot(t *testing.T) {
	bin := realCLI(t, "copilot")
	t.Parallel()
	t.Run("write", func(t *testing.T) {
		url, log := simulate(t, scenarioFor("create", `{path: "{{cwd}}/hello.txt", file_text: "hello from modelsim\n"}`))
		s := newSandbox(t)
		out, err := s.run(t, bin, copilotEnv(url), "-p", "Create hello.txt", "--allow-all-tools", "--output-format", "json")
		if err != nil {
			t.Fatal(err)
		}
		saveTranscript(t, "copilot-write.jsonl", out)
		checkHello(t, s)
		checkTurns(t, log)
		evs := jsonLines(t, out)
		res := evs[len(evs)-1]
		sid, _ := res["sessionId"].(string)
		if res["type"] != "result" || num(res["exitCode"]) != 0 || sid == "" {
			t.Fatalf("last event = %v, want a result with exit code 0 and the session id", res)
		}
		// Copilot CLI prints no tokens; its session log records them.
		events, err := os.ReadFile(filepath.Join(s.home, ".copilot", "session-state", sid, "events.jsonl"))
		if err != nil {
			t.Fatalf("session log: %v", err)
		}
		saveTranscript(t, "copilot-write-events.jsonl", events)
		var output float64
		for _, ev := range jsonLines(t, events) {
			if ev["type"] == "session.usage_record" {
				output += num(get(ev, "data", "usage", "outputTokens"))
			}
		}
		if output != 100 {
			t.Errorf("session.usage_record output tokens = %v, want the scripted 40+60", output)
		}
	})
}

// runStdin is run with the prompt on stdin.
func (s sandbox) runStdin(t *testing.T, bin string, env []string, stdin string, args ...string) ([]byte, error) {
	t.Helper()
	s.stdin = stdin // s is a copy
	out, _, err := s.run2(t, bin, env, args...)
	return out, err
}
