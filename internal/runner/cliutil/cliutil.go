// Package cliutil holds what the runners of agent CLIs (claude, codex,
// gemini, opencode, qwen, copilot, crush, aider; exec in part) share:
// reading their settings into an Agent (NewAgent, Factory), running one
// step of the CLI (Step: the step log, the CADRE_* variables, the
// sandbox, the command line written to the log, how a finished process
// becomes Run's error), building its arguments (Flag, HasFlag, the
// directories outside the working tree an agent may use), reading its
// event stream (Events), and the short-text helpers of progress notes and
// error messages. The step log, the cost estimate and the text helpers
// serve the HTTP API runners too.
package cliutil

import (
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"

	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/proc"
	"github.com/cadre-dev/cadre/internal/runner"
	"github.com/cadre-dev/cadre/internal/runner/price"
)

// MaxArgPrompt keeps a prompt given as one argument well under Linux's
// 128 KiB limit on one argument; a longer prompt goes on stdin or in a file.
const MaxArgPrompt = 100 << 10

// Lengths of a progress note and of an error message, in characters.
const (
	NoteMax = 120
	MsgMax  = 400
)

// Agent is what a runner of an agent CLI keeps of its settings, and how it
// starts the CLI. A runner embeds it and adds its own flags, environment
// and reading of the output.
type Agent struct {
	Instance string   // the runner's instance name (runners.NAME)
	Command  string   // the CLI, resolved against the repository root
	Install  string   // how to install the CLI, for the error when it is missing
	Args     []string // the settings' args, added after the runner's own flags
	Pass     []string // the variables passed through to the agent
	URL      string   // the base URL the CLI is pointed at, if any
	Model    string   // the model of a step that names none
	// Lookup reads the variables passed through; os.LookupEnv.
	Lookup func(string) (string, bool)
	// Home lists the files and directories, relative to the user's home,
	// a sandboxed step copies into its fresh home: the CLI's settings
	// and credentials, nothing else of the home.
	Home []string
	// Hosts are the CLI's own model endpoints (URLs), reachable under
	// network: model-only when URL is not set.
	Hosts []string
	// Caps are what the CLI can do (Capabilities).
	Caps runner.Caps
	// Prices turn the tokens of a CLI that reports no cost into an
	// estimate (see Estimate); nil means the built-in prices.
	Prices *price.Table
}

// NewAgent reads the settings every agent-CLI runner takes alike, with the
// defaults of d, the runner type's descriptor. It checks s.URL (when set)
// with CheckURL and d.URLExample; the command is d.Program when none is
// set, a relative path resolved against s.BaseDir; the variables passed
// through are d.Env when s.Env lists none; the prices are s's. The install
// command, the capabilities, the sandbox's home files and model hosts are
// d's.
func NewAgent(s runner.Settings, d runner.Descriptor) (Agent, error) {
	if err := CheckURL(s.Name, s.URL, d.URLExample); err != nil {
		return Agent{}, err
	}
	cmd := strings.TrimSpace(s.Command)
	if cmd == "" {
		cmd = d.Program
	}
	pass := s.Env
	if len(pass) == 0 {
		pass = d.Env
	}
	return Agent{Instance: s.Name, Command: Resolve(cmd, s.BaseDir), Install: d.Install, Args: s.Args, Pass: pass,
		URL: s.URL, Model: s.Model, Lookup: os.LookupEnv, Home: d.SandboxHome, Hosts: d.ModelHosts, Caps: d.Caps, Prices: s.Prices}, nil
}

// Factory returns a factory of the runners of type d: each reads its
// settings with NewAgent, and wrap makes the runner around the Agent (or
// refuses settings the CLI cannot use).
func Factory(d runner.Descriptor, wrap func(Agent) (runner.Runner, error)) runner.Factory {
	return func(s runner.Settings) (runner.Runner, error) {
		a, err := NewAgent(s, d)
		if err != nil {
			return nil, err
		}
		return wrap(a)
	}
}

// New is Factory for a runner type R that is an Agent and nothing more,
// as most are.
func New[R ~struct{ Agent }, P interface {
	*R
	runner.Runner
}](d runner.Descriptor) runner.Factory {
	return Factory(d, func(a Agent) (runner.Runner, error) {
		r := R{a}
		return P(&r), nil
	})
}

// Name returns the configured instance name.
func (a *Agent) Name() string { return a.Instance }

// Capabilities returns what the CLI can do.
func (a *Agent) Capabilities() runner.Caps { return a.Caps }

// Locate finds the CLI as a step would (runner.Locator).
func (a *Agent) Locate() error {
	return Outcome(a.Instance, a.Install, proc.Locate(a.Command, a.Env(nil)), nil)
}

// OpenLog opens the step's transcript (see OpenLog), its error naming the
// runner.
func (a *Agent) OpenLog(inv runner.Invocation) (io.WriteCloser, error) {
	log, err := OpenLog(inv.LogPath, inv.Mask)
	if err != nil {
		return nil, fmt.Errorf("runner %s: %w", a.Instance, err)
	}
	return log, nil
}

// Outcome is the error Run returns once the CLI has ended (see Outcome):
// a missing CLI says how to install it.
func (a *Agent) Outcome(err error, failure *runner.Error) error {
	return Outcome(a.Instance, a.Install, err, failure)
}

// ModelFor is the model a step asks for, else the runner's.
func (a *Agent) ModelFor(inv runner.Invocation) string { return Model(inv, a.Model) }

// Env is the agent's minimal environment: PATH, HOME, LANG, TERM, the
// variables passed through, and set (Vars and the runner's own).
func (a *Agent) Env(set map[string]string) []string { return proc.MinimalEnv(a.Lookup, a.Pass, set) }

// Resolve joins a command written as a relative path (./bin/agent) to
// baseDir, the repository root, so one command serves every working tree.
// A bare name is left for PATH to find.
func Resolve(cmd, baseDir string) string {
	if strings.Contains(cmd, "/") && !filepath.IsAbs(cmd) && baseDir != "" {
		return filepath.Join(baseDir, cmd)
	}
	return cmd
}

// CheckURL rejects a base URL the CLI could not use; an empty one is fine.
// The error names runners.NAME.url and shows example.
func CheckURL(name, raw, example string) error {
	if raw == "" {
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("runners.%s.url %q is not an http(s) URL: set it like %s", name, raw, example)
	}
	return nil
}

// Model is the model a step asks for, else def.
func Model(inv runner.Invocation, def string) string {
	if inv.Model != "" {
		return inv.Model
	}
	return def
}

// Outcome is the error Run returns once the agent's process has ended. err
// is how running it went: a missing command says to install it (with
// installHint, when there is one) or fix runners.NAME.command, and any other
// error is named after the runner. When the process ran, the failure the
// agent reported, if any, is returned as the runner's.
func Outcome(name, installHint string, err error, failure *runner.Error) error {
	switch {
	case errors.Is(err, osexec.ErrNotFound) && installHint != "":
		return fmt.Errorf("runner %s: %w: install it (%s) or fix runners.%s.command", name, err, installHint, name)
	case errors.Is(err, osexec.ErrNotFound):
		return fmt.Errorf("runner %s: %w: install it or fix runners.%s.command", name, err, name)
	case err != nil:
		return fmt.Errorf("runner %s: %w", name, err)
	case failure != nil:
		failure.Runner = name
		return failure
	}
	return nil
}

// Estimate adds the cost of u from the price table t (nil: the built-in
// prices), marked estimated; a model the table does not know keeps u as it
// is.
func Estimate(t *price.Table, model string, u event.Usage) event.Usage {
	if cost, ok := t.Estimate(model, u); ok {
		u.CostUSD, u.CostEstimated = cost, true
	}
	return u
}
