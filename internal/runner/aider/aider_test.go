package aider

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/runner"
	"github.com/cadre-dev/cadre/internal/runner/cliutil/clitest"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestParseTranscripts(t *testing.T) {
	// Aider keeps no session, and its reply is its whole stdout.
	parse := func(t *testing.T, tt clitest.Transcript) (runner.Result, *runner.Error, []string) {
		p := &parser{}
		notes := clitest.Feed(t, tt.File, &p.progress, p.line)
		return runner.Result{Usage: p.total(), Model: p.model}, p.failure, notes
	}
	clitest.Transcripts(t, "", parse,
		clitest.Transcript{
			File:  "success.txt",
			Usage: event.Usage{InputTokens: 4300, CacheWriteTokens: 1500, CacheReadTokens: 2100, OutputTokens: 187, CostUSD: 0.02},
			Model: "anthropic/claude-sonnet-4-5-20250929",
			Notes: []string{"Tokens: 4.3k sent, 1.5k cache write, 2.1k cache hit, 187 received. Cost: $0.02 message, $0.02 session.", "Applied edit to hello.txt"},
		},
		// The rate limit was retried away: the run succeeded.
		clitest.Transcript{File: "rate-limit-recovered.txt", Usage: event.Usage{InputTokens: 12000, OutputTokens: 310, CostUSD: 0.0181},
			Model: "gpt-5", Notes: []string{"Retrying in 0.2 seconds..."}},
		clitest.Transcript{File: "auth.txt", Model: "anthropic/claude-sonnet-4-5-20250929", Kind: runner.KindAuth, Msg: "invalid x-api-key"},
		clitest.Transcript{File: "rate-limit.txt", Model: "anthropic/claude-sonnet-4-5-20250929", Kind: runner.KindRateLimit, Msg: "litellm.RateLimitError"},
		clitest.Transcript{File: "quota.txt", Model: "gpt-5", Kind: runner.KindQuota, Msg: "exceeded your current quota"},
		clitest.Transcript{File: "turn-limit.txt", Model: "anthropic/claude-sonnet-4-5-20250929", Kind: runner.KindTurnLimit, Msg: "has hit a token limit"},
	)
}

func TestTokensLine(t *testing.T) {
	tests := []struct {
		lines []string
		want  event.Usage
	}{
		{[]string{"Tokens: 950 sent, 12 received."}, event.Usage{InputTokens: 950, OutputTokens: 12}},
		{[]string{"Tokens: 12k sent, 1.1k received. Cost: $0.0031 message, $0.0031 session."}, event.Usage{InputTokens: 12000, OutputTokens: 1100, CostUSD: 0.0031}},
		// Two model calls: tokens add up, the session figure is the total.
		{[]string{
			"Tokens: 2.0k sent, 100 received. Cost: $0.01 message, $0.01 session.",
			"Tokens: 3.0k sent, 200 received. Cost: $0.02 message, $0.03 session.",
		}, event.Usage{InputTokens: 5000, OutputTokens: 300, CostUSD: 0.03}},
		// Without a session figure the message costs add up.
		{[]string{
			"Tokens: 1k sent, 1 received. Cost: $0.25 message.",
			"Tokens: 1k sent, 1 received. Cost: $0.50 message.",
		}, event.Usage{InputTokens: 2000, OutputTokens: 2, CostUSD: 0.75}},
	}
	for _, tt := range tests {
		p := &parser{}
		for _, l := range tt.lines {
			p.line("stdout", l)
		}
		if diff := cmp.Diff(tt.want, p.total(), cmpopts.EquateApprox(0, 1e-12)); diff != "" {
			t.Errorf("%q: usage mismatch (-want +got):\n%s", tt.lines, diff)
		}
	}
}

// cli builds the runners of the tests around fake CLIs.
var cli = clitest.CLI{Name: "aider", Factory: New}

func TestConformance(t *testing.T) {
	reply := func(text string, u event.Usage) string {
		return clitest.Cat("Aider v0.86.1\nMain model: fake-model with diff edit format\n" + text +
			fmt.Sprintf("\nTokens: %d sent, %d received. Cost: $%g message, $%g session.\n", u.InputTokens, u.OutputTokens, u.CostUSD, u.CostUSD))
	}
	cli.Conformance(t, clitest.Fakes(reply, clitest.Say), true)
}

func TestArgv(t *testing.T) {
	base := []string{"--yes-always", "--no-auto-commits", "--no-stream", "--no-pretty",
		"--no-gitignore", "--input-history-file", os.DevNull, "--chat-history-file", os.DevNull,
		"--no-check-update", "--no-show-release-notes", "--no-analytics", "--no-detect-urls"}
	tests := []struct {
		name    string
		s       runner.Settings
		inv     runner.Invocation
		msgFile string
		want    []string
	}{
		{"defaults", runner.Settings{}, runner.Invocation{Prompt: "Fix it."}, "",
			slices.Concat(base, []string{"--message=Fix it."})},
		{"model, url, context, extra args; no session to resume",
			runner.Settings{Model: "gpt-5", URL: "http://127.0.0.1:9/v1", Args: []string{"--edit-format", "whole"}},
			runner.Invocation{Prompt: "-h", Model: "o3", Session: "ignored", ContextPath: "/w/run/c.json"}, "",
			slices.Concat(base, []string{"--model", "o3", "--openai-api-base", "http://127.0.0.1:9/v1", "--read", "/w/run/c.json",
				"--edit-format", "whole", "--message=-h"})},
		{"long prompt in a message file", runner.Settings{Model: "gpt-5"}, runner.Invocation{Prompt: "long"}, "/tmp/m.md",
			slices.Concat(base, []string{"--model", "gpt-5", "--message-file", "/tmp/m.md"})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := New(tt.s)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, r.(*Runner).argv(tt.inv, tt.msgFile)); diff != "" {
				t.Errorf("argv mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestLongPrompt checks a prompt too long for one argument reaches Aider
// whole through the message file, which is removed afterwards.
func TestLongPrompt(t *testing.T) {
	r := cli.Fake(t, `while [ "$#" -gt 0 ]; do
  if [ "$1" = --message-file ]; then cp "$2" prompt.out; echo "$2" > file.out; fi
  shift
done
`, runner.Settings{})
	inv := clitest.Invocation(t)
	inv.Prompt = strings.Repeat("a long prompt\n", len(clitest.LongPrompt)/10)
	if _, err := r.Run(t.Context(), inv); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(inv.Dir, "prompt.out"))
	if err != nil || string(got) != inv.Prompt {
		t.Fatalf("message file held %d bytes (%v), want the %d-byte prompt", len(got), err, len(inv.Prompt))
	}
	name, _ := os.ReadFile(filepath.Join(inv.Dir, "file.out"))
	if _, err := os.Stat(strings.TrimSpace(string(name))); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("message file %s left behind: %v", name, err)
	}
}

// TestEnv checks the exact environment the CLI starts with.
func TestEnv(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "key-from-parent")
	cli.Envs(t, nil, clitest.EnvCase{Name: "default pass-through", Keys: []string{"OPENAI_API_KEY"},
		Vals: map[string]string{"OPENAI_API_KEY": "key-from-parent"}})
}

func TestRunReportsErrors(t *testing.T) {
	check := func(t *testing.T, rp clitest.Replay, res runner.Result, notes []string, _ runner.Invocation) {
		if !strings.HasPrefix(res.Output, "Aider v0.86.1") || res.Model == "" {
			t.Errorf("Output = %.40q, Model = %q; want Aider's stdout and model", res.Output, res.Model)
		}
		if rp.Kind == "" && (!strings.Contains(res.Output, "### SIGNAL BLOCK") || res.Usage.CostUSD != 0.02 || len(notes) == 0) {
			t.Errorf("Usage = %+v, notes %q; want the reply, Aider's cost and notes", res.Usage, notes)
		}
	}
	cli.Replays(t, runner.Settings{}, check,
		clitest.Replay{File: "auth.txt", Kind: runner.KindAuth},
		clitest.Replay{File: "rate-limit.txt", Kind: runner.KindRateLimit},
		clitest.Replay{File: "quota.txt", Kind: runner.KindQuota},
		clitest.Replay{File: "turn-limit.txt", Kind: runner.KindTurnLimit},
		clitest.Replay{File: "success.txt"},
	)
}

func TestNewAndMissingCLI(t *testing.T) {
	clitest.NewAndMissing(t, New, Type, "localhost", runner.Caps{EditsFiles: true, ReportsCost: true, ModelChoice: true, Streams: true}, func(r runner.Runner) string { return r.(*Runner).Command })
}
