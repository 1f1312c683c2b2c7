// Package crush runs Crush headless: `crush run --quiet` with the prompt on
// stdin, in the item's working tree. Crush's non-interactive run approves every tool
// call itself (nobody is there to answer), so the agent can edit files and
// run commands.
//
// `crush run` prints only the final answer, as plain text, on stdout, and
// an error as one "Error: …" line on stderr; it has no JSON output and
// reports no tokens, so this runner reports no usage. The provider and its
// base URL come from Crush's own crush.json (it has no variable for a base
// URL), so the runner takes no URL.
//
// These formats come from Crush's documentation and source (internal/cmd/
// run.go): its npm package downloads its binary from GitHub while
// installing, which the machines the tests run on cannot reach, so no
// transcript of the real CLI was recorded.
package crush

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/cadre-dev/cadre/internal/runner"
	"github.com/cadre-dev/cadre/internal/runner/cliutil"
)

// Type describes the crush runner type: the CLI and how to install it, the
// variables passed through when the settings list none (the provider keys
// Crush reads, and where its configuration lives), and, under a sandbox,
// the step's fresh home gets Crush's global configuration and the
// providers and keys it stores (~/.config/crush/crush.json,
// ~/.local/share/crush/crush.json), not its sessions. Crush's providers
// are whatever crush.json names, so it has no model host of its own: list
// the provider's host in sandbox.allow_hosts. It takes no URL from cadre.
// An untrusted tree's crush.json and .crush.json (MCP servers and language
// servers it would start) are hidden by cadre: Crush has no option to skip
// them.
var Type = runner.Descriptor{
	Type: "crush", Kind: runner.TypeCLI,
	Caps:    runner.Caps{EditsFiles: true, ModelChoice: true},
	Program: "crush", Install: "npm install -g @charmland/crush",
	Env: []string{
		"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "OPENROUTER_API_KEY",
		"GROQ_API_KEY", "CRUSH_GLOBAL_CONFIG", "CRUSH_GLOBAL_DATA",
	},
	SandboxHome: []string{".config/crush/crush.json", ".local/share/crush/crush.json"},
}

// Runner runs one Crush process per step.
type Runner struct{ cliutil.Agent }

// New builds a crush runner. Command defaults to "crush"; Env lists the
// variables passed through; Model is the default --model (model or
// provider/model); Args are added after cadre's own flags. A URL is
// refused: set the provider's base_url in crush.json. Crush edits files
// and takes a model per step; it prints its answer at the end and reports
// no usage.
func New(s runner.Settings) (runner.Runner, error) {
	if s.URL != "" {
		return nil, fmt.Errorf("runners.%s.url: crush takes its provider's base URL from crush.json (providers.NAME.base_url), not from cadre", s.Name)
	}
	return cliutil.New[Runner](Type)(s)
}

// Run runs Crush on inv.Prompt in inv.Dir.
func (r *Runner) Run(ctx context.Context, inv runner.Invocation) (runner.Result, error) {
	args, stdin := r.argv(inv)
	var errLine string
	onLine := func(stream, line string) {
		if stream == "stderr" && strings.HasPrefix(line, "Error: ") {
			errLine = strings.TrimPrefix(line, "Error: ")
		}
	}
	return r.Step(ctx, inv, cliutil.Call{Args: args, Stdin: stdin, OnLine: onLine,
		Result: func(stdout []byte, exit int) (runner.Result, *runner.Error) {
			// The answer is all of stdout (proc keeps it bounded).
			out := runner.Result{Output: strings.TrimSpace(string(stdout)), Model: r.ModelFor(inv)}
			if exit != 0 && errLine != "" {
				return out, classify(errLine)
			}
			return out, nil
		}})
}

// argv builds the CLI's arguments; the prompt goes on stdin, which `crush
// run` reads when no prompt argument is given, so no length limit applies.
func (r *Runner) argv(inv runner.Invocation) ([]string, io.Reader) {
	args := []string{"run", "--quiet"}
	args = append(args, cliutil.Flag("--model", r.ModelFor(inv))...)
	args = append(args, cliutil.Flag("--session", inv.Session)...)
	return append(args, r.Args...), strings.NewReader(inv.Text())
}

// classify turns the error line into a *runner.Error by its words.
func classify(msg string) *runner.Error {
	m := strings.ToLower(msg)
	kind := runner.KindBackend
	switch {
	case cliutil.ContainsAny(m, "no providers configured", "401", "403", "invalid x-api-key", "invalid api key", "unauthorized", "authentication"):
		kind = runner.KindAuth
	case cliutil.ContainsAny(m, "credit balance", "insufficient_quota", "exceeded your current quota", "billing"):
		kind = runner.KindQuota
	case cliutil.ContainsAny(m, "429", "rate limit", "rate_limit", "too many requests", "overloaded"):
		kind = runner.KindRateLimit
	case cliutil.ContainsAny(m, "prompt is too long", "context length", "context window", "maximum context"):
		kind = runner.KindTurnLimit
	}
	return &runner.Error{Kind: kind, Msg: cliutil.Short(msg, cliutil.MsgMax), RetryAfter: cliutil.RetryAfter(msg)}
}
