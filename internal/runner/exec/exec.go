// Package exec is the runner for any command: the prompt goes to its stdin,
// its stdout is the agent's reply, and the CADRE_* variables of SPEC §9 say
// where the context and output files are.
package exec

import (
	"context"
	"errors"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/cadre-dev/cadre/internal/proc"
	"github.com/cadre-dev/cadre/internal/runner"
)

// Runner runs one configured command per step.
type Runner struct {
	name    string
	command string
	args    []string
	pass    []string
	lookup  func(string) (string, bool)
}

// New builds an exec runner from its settings; the command is required.
// A command written as a relative path (./scripts/agent.sh) is resolved
// against the repository root, not the item's working tree, so one script
// serves every worktree.
func New(s runner.Settings) (runner.Runner, error) {
	if strings.TrimSpace(s.Command) == "" {
		return nil, fmt.Errorf("runners.%s.command is empty: set the program to run", s.Name)
	}
	cmd := s.Command
	if strings.Contains(cmd, "/") && !filepath.IsAbs(cmd) && s.BaseDir != "" {
		cmd = filepath.Join(s.BaseDir, cmd)
	}
	return &Runner{name: s.Name, command: cmd, args: s.Args, pass: s.Env, lookup: os.LookupEnv}, nil
}

// Name returns the configured instance name.
func (r *Runner) Name() string { return r.name }

// Capabilities of an arbitrary command: it may edit files; nothing else is known.
func (r *Runner) Capabilities() runner.Caps { return runner.Caps{EditsFiles: true} }

// Run starts the command in inv.Dir with the prompt on stdin.
func (r *Runner) Run(ctx context.Context, inv runner.Invocation) (runner.Result, error) {
	log, err := openLog(inv.LogPath)
	if err != nil {
		return runner.Result{}, err
	}
	defer log.Close()
	fmt.Fprintf(log, "$ %s %s\n", r.command, strings.Join(r.args, " "))
	env := proc.MinimalEnv(r.lookup, r.pass, map[string]string{
		"CADRE_CONTEXT":  inv.ContextPath,
		"CADRE_OUTPUT":   inv.OutputPath,
		"CADRE_ROLE":     inv.Role,
		"CADRE_ITEM":     inv.Item,
		"CADRE_STEP":     inv.Step,
		"CADRE_ATTEMPT":  strconv.Itoa(inv.Attempt),
		"CADRE_REASK":    strconv.FormatBool(inv.Reask),
		"CADRE_WORKTREE": inv.Dir,
		"CADRE_MODEL":    inv.Model,
	})
	res, err := proc.Run(ctx, proc.Spec{
		Path:    r.command,
		Args:    r.args,
		Dir:     inv.Dir,
		Env:     env,
		Stdin:   strings.NewReader(inv.Prompt),
		Log:     log,
		Timeout: inv.Timeout,
	})
	out := runner.Result{ExitCode: res.ExitCode, Output: string(res.Stdout), StderrTail: res.StderrTail}
	if errors.Is(err, osexec.ErrNotFound) {
		return out, fmt.Errorf("runner %s: %w: install it or fix runners.%s.command", r.name, err, r.name)
	}
	if err != nil {
		return out, fmt.Errorf("runner %s: %w", r.name, err)
	}
	return out, nil
}

// openLog opens the step's transcript for appending (a re-ask adds to it).
func openLog(path string) (*os.File, error) {
	if path == "" {
		return os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("create log dir: %w", err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open step log: %w", err)
	}
	return f, nil
}
