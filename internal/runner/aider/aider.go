// Package aider runs Aider headless: `aider --message=… --yes-always
// --no-auto-commits --no-stream --no-pretty`, in the item's working tree.
// Aider edits the files itself and leaves committing to cadre; its history
// files go to /dev/null and it does not touch .gitignore, so the only changes
// in the tree are the agent's.
//
// Aider writes plain text, so the reply is its whole stdout and progress is
// the lines that say what it did. Tokens and cost come from its
// `Tokens: 4.3k sent, 187 received. Cost: $0.02 message, $0.02 session.`
// lines: tokens summed, the cost the last session figure (reported by
// Aider, rounded as Aider prints it). Aider keeps no resumable session.
// Authentication, rate-limit, quota and context-window errors it prints are
// returned as a *runner.Error unless a later model call succeeded.
package aider

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/runner"
	"github.com/cadre-dev/cadre/internal/runner/cliutil"
)

// Type describes the aider runner type: the CLI and how to install it, the
// variables passed through when the settings list none (the provider keys
// and endpoint Aider reads most often), and, under a sandbox, the step's
// fresh home gets Aider's settings (~/.aider.conf.yml), while model-only
// lets it reach the OpenAI and Anthropic APIs (another provider:
// runners.NAME.url or sandbox.allow_hosts).
var Type = runner.Descriptor{
	Type: "aider", Kind: runner.TypeCLI,
	Caps:    runner.Caps{EditsFiles: true, ReportsCost: true, ModelChoice: true, Streams: true},
	Program: "aider", Install: "python -m pip install aider-install && aider-install",
	Env: []string{
		"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENAI_API_BASE",
		"GEMINI_API_KEY", "OPENROUTER_API_KEY", "DEEPSEEK_API_KEY",
	},
	URLExample:  "https://host:port/v1",
	SandboxHome: []string{".aider.conf.yml"},
	ModelHosts:  []string{"https://api.openai.com", "https://api.anthropic.com"},
}

// Runner runs one Aider process per step.
type Runner struct{ cliutil.Agent }

// New builds an aider runner. Command defaults to "aider"; a relative path is
// resolved against BaseDir. Env lists the variables passed through (default:
// common provider keys); URL, when set, is passed as --openai-api-base (for
// an OpenAI-compatible server); Model is the default --model; Args are added
// after cadre's own flags. Aider edits files, reports its cost, takes a
// model per step and prints what it does as it goes.
func New(s runner.Settings) (runner.Runner, error) { return cliutil.New[Runner](Type)(s) }

// Run runs Aider on inv.Prompt in inv.Dir.
func (r *Runner) Run(ctx context.Context, inv runner.Invocation) (runner.Result, error) {
	msgFile := ""
	// A prompt too long for one argument goes in a --message-file.
	if len(inv.Text()) > cliutil.MaxArgPrompt {
		var err error
		if msgFile, err = writeMessage(inv.Text()); err != nil {
			return runner.Result{}, fmt.Errorf("runner %s: %w", r.Instance, err)
		}
		defer os.Remove(msgFile)
	}
	p := &parser{progress: inv.Progress}
	return r.Step(ctx, inv, cliutil.Call{Args: r.argv(inv, msgFile), PromptFlag: "--message=", OnLine: p.line,
		Result: func(stdout []byte, _ int) (runner.Result, *runner.Error) {
			out := runner.Result{Output: string(stdout), Usage: p.total(), Model: p.model}
			if out.Model == "" {
				out.Model = r.ModelFor(inv)
			}
			return out, p.failure
		}})
}

// argv builds the CLI's arguments. msgFile, when set, holds a prompt too
// long for one argument.
func (r *Runner) argv(inv runner.Invocation, msgFile string) []string {
	args := []string{
		"--yes-always", "--no-auto-commits", "--no-stream", "--no-pretty",
		// Keep the working tree to the agent's own changes, and the run to
		// the prompt: no .gitignore edits, history files, update checks,
		// release notes, analytics or URL scraping.
		"--no-gitignore", "--input-history-file", os.DevNull, "--chat-history-file", os.DevNull,
		"--no-check-update", "--no-show-release-notes", "--no-analytics", "--no-detect-urls",
	}
	args = append(args, cliutil.Flag("--model", r.ModelFor(inv))...)
	if r.URL != "" {
		args = append(args, "--openai-api-base", r.URL)
	}
	// Aider reads only the files it is given: add the context read-only.
	if inv.ContextPath != "" {
		args = append(args, "--read", inv.ContextPath)
	}
	args = append(args, r.Args...)
	if msgFile != "" {
		return append(args, "--message-file", msgFile)
	}
	// The "=" form keeps a prompt starting with "-" from reading as a flag.
	return append(args, "--message="+inv.Text())
}

// writeMessage writes a long prompt to a private temporary file.
func writeMessage(prompt string) (string, error) {
	f, err := os.CreateTemp("", "cadre-aider-*.md")
	if err != nil {
		return "", fmt.Errorf("write message file: %w", err)
	}
	_, werr := f.WriteString(prompt)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("write message file: %w", err)
	}
	return f.Name(), nil
}

// parser reads Aider's output lines as they arrive.
type parser struct {
	progress    func(string)
	model       string
	usage       event.Usage
	sessionCost float64 // the last "$N session" figure, cumulative
	sawSession  bool
	messageCost float64 // the sum of the "$N message" figures
	failure     *runner.Error
}

var (
	modelLine = regexp.MustCompile(`^(?:Main model|Model): (\S+)`)
	tokenPart = regexp.MustCompile(`^([0-9]+(?:\.[0-9]+)?)(k?) (sent|cache write|cache hit|received)$`)
	costPart  = regexp.MustCompile(`\$([0-9]+(?:\.[0-9]+)?) message(?:, \$([0-9]+(?:\.[0-9]+)?) session)?`)
)

// line handles one line of output from either stream.
func (p *parser) line(_, line string) {
	line = strings.TrimSpace(line)
	switch {
	case line == "":
	case strings.HasPrefix(line, "Tokens: "):
		p.tokens(line)
		p.note(line)
		// A model call succeeded: errors before it were retried away.
		p.failure = nil
	case strings.HasPrefix(line, "Applied edit to "), strings.HasPrefix(line, "Retrying in "):
		p.note(line)
	default:
		if m := modelLine.FindStringSubmatch(line); m != nil && p.model == "" {
			p.model = m[1]
			return
		}
		p.error(line)
	}
}

// tokens reads "Tokens: 4.3k sent, 1.5k cache write, 2.1k cache hit, 187
// received. Cost: $0.02 message, $0.02 session."
func (p *parser) tokens(line string) {
	counts, cost, _ := strings.Cut(strings.TrimPrefix(line, "Tokens: "), " Cost: ")
	for _, part := range strings.Split(strings.TrimSuffix(counts, "."), ", ") {
		m := tokenPart.FindStringSubmatch(part)
		if m == nil {
			continue
		}
		n, _ := strconv.ParseFloat(m[1], 64)
		if m[2] == "k" {
			n *= 1000
		}
		v := int64(n + 0.5)
		switch m[3] {
		case "sent":
			p.usage.InputTokens += v
		case "cache write":
			p.usage.CacheWriteTokens += v
		case "cache hit":
			p.usage.CacheReadTokens += v
		case "received":
			p.usage.OutputTokens += v
		}
	}
	if m := costPart.FindStringSubmatch(cost); m != nil {
		msg, _ := strconv.ParseFloat(m[1], 64)
		p.messageCost += msg
		if m[2] != "" {
			p.sessionCost, _ = strconv.ParseFloat(m[2], 64)
			p.sawSession = true
		}
	}
}

// total is the usage with Aider's cost: its session total when it printed
// one, else the sum of the per-message costs.
func (p *parser) total() event.Usage {
	u := p.usage
	u.CostUSD = p.messageCost
	if p.sawSession {
		u.CostUSD = p.sessionCost
	}
	return u
}

// error notes an error Aider printed. The exception line of litellm names
// the kind; Aider's own explanation line counts only when no exception line
// came first (its rate-limit advice mentions quotas, which is no quota).
func (p *parser) error(line string) {
	l := strings.ToLower(line)
	var kind runner.Kind
	switch {
	case strings.Contains(line, "litellm.AuthenticationError"):
		kind = runner.KindAuth
	case strings.Contains(line, "litellm.RateLimitError"):
		kind = runner.KindRateLimit
		if cliutil.ContainsAny(l, "insufficient_quota", "exceeded your current quota", "credit balance", "billing") {
			kind = runner.KindQuota
		}
	case strings.Contains(line, "litellm.") && strings.Contains(l, "credit balance is too low"):
		kind = runner.KindQuota
	case strings.Contains(line, "litellm.ContextWindowExceededError"), strings.Contains(line, "has hit a token limit"):
		kind = runner.KindTurnLimit
	case strings.Contains(line, "litellm.") && cliutil.ContainsAny(l, "overloaded"):
		kind = runner.KindRateLimit
	case p.failure == nil && strings.Contains(line, "not able to authenticate you"):
		kind = runner.KindAuth
	case p.failure == nil && strings.Contains(line, "has rate limited you"):
		kind = runner.KindRateLimit
	default:
		return
	}
	p.failure = &runner.Error{Kind: kind, Msg: cliutil.Short(line, cliutil.MsgMax)}
}

func (p *parser) note(s string) { cliutil.Note(p.progress, s) }
