// Package copilot runs GitHub Copilot CLI headless: `copilot -p PROMPT
// --output-format json --allow-all-tools`, in the item's working tree.
//
// With a URL the CLI runs in its bring-your-own-key mode: the URL becomes
// COPILOT_PROVIDER_BASE_URL (an OpenAI-compatible server) and
// COPILOT_OFFLINE=true, so it needs no GitHub login and makes no other
// network call; without one it uses the GitHub account of
// COPILOT_GITHUB_TOKEN or of `copilot login`.
//
// Its JSON lines give the progress (tool executions), the reply (the last
// assistant message), a session.error event on failure and a closing
// result with the session id. They carry no tokens: the CLI records them
// in its session log, COPILOT_HOME/session-state/ID/events.jsonl, as one
// session.usage_record per model call, which the runner sums once the
// process has ended. Copilot bills premium requests, not dollars, so the
// cost is estimated from the price table.
package copilot

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/runner"
	"github.com/cadre-dev/cadre/internal/runner/cliutil"
	"github.com/cadre-dev/cadre/internal/safefile"
)

// Type describes the copilot runner type: the CLI and how to install it,
// the variables passed through when the settings list none (the token
// Copilot CLI takes before a stored login, its state directory, and the
// bring-your-own-key provider's settings; GH_TOKEN and GITHUB_TOKEN are
// left out, as they are often cadre's own GitHub token), and, under a
// sandbox, the step's fresh home gets Copilot CLI's configuration and
// login (~/.copilot/config.json, settings.json), not its sessions or MCP
// servers, while model-only lets it reach GitHub's Copilot API and the
// GitHub endpoints its login uses.
var Type = runner.Descriptor{
	Type: "copilot", Kind: runner.TypeCLI,
	Caps:    runner.Caps{EditsFiles: true, ModelChoice: true, Streams: true},
	Program: "copilot", Install: "npm install -g @github/copilot",
	Env: []string{
		"COPILOT_GITHUB_TOKEN", "COPILOT_HOME", "COPILOT_MODEL",
		"COPILOT_PROVIDER_BASE_URL", "COPILOT_PROVIDER_TYPE", "COPILOT_PROVIDER_API_KEY",
		"COPILOT_PROVIDER_WIRE_API", "COPILOT_OFFLINE",
	},
	URLExample:  "http://host:port/v1",
	SandboxHome: []string{".copilot/config.json", ".copilot/settings.json"},
	ModelHosts: []string{"https://api.githubcopilot.com", "https://api.individual.githubcopilot.com",
		"https://api.business.githubcopilot.com", "https://api.enterprise.githubcopilot.com",
		"https://api.github.com", "https://github.com"},
}

// Runner runs one Copilot CLI process per step.
type Runner struct{ cliutil.Agent }

// New builds a copilot runner. Command defaults to "copilot"; Env lists
// the variables passed through; URL, when set, is an OpenAI-compatible
// server used instead of GitHub's (bring your own key); Model is the
// default --model; Args are added after cadre's own flags. Copilot CLI
// edits files, takes a model per step and streams its events; its cost is
// estimated from Prices.
func New(s runner.Settings) (runner.Runner, error) { return cliutil.New[Runner](Type)(s) }

// Run runs Copilot CLI on inv.Prompt in inv.Dir.
func (r *Runner) Run(ctx context.Context, inv runner.Invocation) (runner.Result, error) {
	args, stdin := r.argv(inv)
	p := &parser{progress: inv.Progress}
	var (
		usage event.Usage
		model string
	)
	// The session log is read before a sandbox's fresh home, where the
	// CLI wrote it, is removed.
	readUsage := func(log io.Writer, hostPath func(string) string) {
		if p.sessionID == "" {
			return
		}
		var uerr error
		if usage, model, uerr = sessionUsage(hostPath(r.stateDir()), p.sessionID); uerr != nil {
			fmt.Fprintf(log, "cadre: no usage: %v\n", uerr)
		}
	}
	return r.Step(ctx, inv, cliutil.Call{Args: args, Stdin: stdin, Set: r.vars(), OnLine: cliutil.Events(p.event), Then: readUsage,
		Result: func([]byte, int) (runner.Result, *runner.Error) {
			out := runner.Result{Output: p.reply, SessionID: p.sessionID, Model: r.ModelFor(inv), Usage: usage}
			if out.Model == "" {
				out.Model = model
			}
			if out.Usage.CostUSD == 0 {
				out.Usage = cliutil.Estimate(r.Prices, out.Model, out.Usage)
			}
			return out, p.failure
		}})
}

// argv builds the CLI's arguments and, for a prompt too long for one
// argument, its stdin (the CLI reads a piped prompt).
func (r *Runner) argv(inv runner.Invocation) ([]string, io.Reader) {
	args := []string{"--output-format", "json", "--allow-all-tools", "--no-color"}
	args = append(args, cliutil.Flag("--model", r.ModelFor(inv))...)
	// The output file lives outside the working tree: allow the agent there.
	args = append(args, cliutil.Flag("--add-dir", cliutil.OutsideDirs(inv)...)...)
	args = append(args, cliutil.Flag("--resume", inv.Session)...)
	args = append(args, r.Args...)
	if len(inv.Text()) > cliutil.MaxArgPrompt {
		return args, strings.NewReader(inv.Text())
	}
	return append(args, "-p", inv.Text()), nil
}

// vars are the variables set for the CLI: no self-update, and the local
// provider when set.
func (r *Runner) vars() map[string]string {
	// A CLI that replaces itself mid-run would change what was tested.
	set := map[string]string{"COPILOT_AUTO_UPDATE": "false"}
	if r.URL != "" {
		set["COPILOT_PROVIDER_BASE_URL"] = r.URL
		set["COPILOT_OFFLINE"] = "true"
	}
	return set
}

// stateDir is where the CLI keeps its state, sessions included:
// COPILOT_HOME when the agent gets one, else ~/.copilot of the agent's HOME.
func (r *Runner) stateDir() string {
	dir, ok := "", false
	if slices.Contains(r.Pass, "COPILOT_HOME") {
		dir, ok = r.Lookup("COPILOT_HOME")
	}
	if !ok || dir == "" {
		home, _ := r.Lookup("HOME")
		dir = filepath.Join(home, ".copilot")
	}
	return dir
}

// usageRecord is a session.usage_record event of the session log.
type usageRecord struct {
	Type string `json:"type"`
	Data struct {
		Usage struct {
			Model           string  `json:"model"`
			InputTokens     int64   `json:"inputTokens"`
			OutputTokens    int64   `json:"outputTokens"`
			CacheReadTokens int64   `json:"cacheReadTokens"`
			CacheWrite      int64   `json:"cacheWriteTokens"`
			Cost            float64 `json:"cost"`
		} `json:"usage"`
	} `json:"data"`
}

// sessionUsage sums the usage records of session id's log, under the
// state directory dir, and names the model of the last one. The agent can
// write there, so a link in the log's place is refused, not read through.
func sessionUsage(dir, id string) (event.Usage, string, error) {
	data, err := safefile.ReadFile(dir, filepath.Join(dir, "session-state", filepath.Base(id), "events.jsonl"))
	if err != nil {
		return event.Usage{}, "", fmt.Errorf("read copilot session log: %w", err)
	}
	var u event.Usage
	var model string
	for line := range strings.Lines(string(data)) {
		if !strings.Contains(line, `"session.usage_record"`) {
			continue
		}
		rec, ok := cliutil.StdoutJSON[usageRecord]("stdout", line)
		if !ok || rec.Type != "session.usage_record" {
			continue
		}
		x := rec.Data.Usage
		u.InputTokens += x.InputTokens
		u.OutputTokens += x.OutputTokens
		u.CacheReadTokens += x.CacheReadTokens
		u.CacheWriteTokens += x.CacheWrite
		u.CostUSD += x.Cost
		model = x.Model
	}
	return u, model, nil
}
