// Package exec is the runner for any command: the prompt goes to its stdin,
// its stdout is the agent's reply, and the CADRE_* variables (docs/runners.md)
// say where the context and output files are.
package exec

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/cadre-dev/cadre/internal/proc"
	"github.com/cadre-dev/cadre/internal/runner"
	"github.com/cadre-dev/cadre/internal/runner/cliutil"
)

// Runner runs one configured command per step.
type Runner struct {
	name    string
	command string
	args    []string
	pass    []string
	lookup  func(string) (string, bool)
}

// Type describes the exec runner type: it runs the command its settings
// name, and so has nothing to install or probe of its own.
var Type = runner.Descriptor{Type: "exec", Kind: runner.TypeExec}

// New builds an exec runner from its settings; the command is required.
// A command written as a relative path (./scripts/agent.sh) is resolved
// against the repository root, not the item's working tree, so one script
// serves every worktree.
func New(s runner.Settings) (runner.Runner, error) {
	if strings.TrimSpace(s.Command) == "" {
		return nil, fmt.Errorf("runners.%s.command is empty: set the program to run", s.Name)
	}
	return &Runner{name: s.Name, command: cliutil.Resolve(s.Command, s.BaseDir), args: s.Args, pass: s.Env, lookup: os.LookupEnv}, nil
}

// Name returns the configured instance name.
func (r *Runner) Name() string { return r.name }

// Locate finds the command as a step would (runner.Locator).
func (r *Runner) Locate() error {
	return cliutil.Outcome(r.name, "", proc.Locate(r.command, proc.MinimalEnv(r.lookup, r.pass, nil)), nil)
}

// Capabilities of an arbitrary command: it may edit files; nothing else is known.
func (r *Runner) Capabilities() runner.Caps { return runner.Caps{EditsFiles: true} }

// Run starts the command in inv.Dir with the prompt on stdin.
func (r *Runner) Run(ctx context.Context, inv runner.Invocation) (runner.Result, error) {
	log, err := cliutil.OpenLog(inv.LogPath, inv.Mask)
	if err != nil {
		return runner.Result{}, err
	}
	defer log.Close()
	fmt.Fprintf(log, "$ %s %s\n", r.command, strings.Join(r.args, " "))
	// A plain command cannot be told the re-ask or the model in a flag, so
	// the exec runner also gives them as variables.
	vars := cliutil.Vars(inv)
	vars["CADRE_REASK"] = strconv.FormatBool(inv.Reask)
	vars["CADRE_MODEL"] = inv.Model
	spec := proc.Spec{
		Path:    r.command,
		Args:    r.args,
		Dir:     inv.Dir,
		Env:     proc.MinimalEnv(r.lookup, r.pass, vars),
		Stdin:   strings.NewReader(inv.Text()),
		Log:     log,
		Timeout: inv.Timeout,
		Grace:   inv.Grace,
		OnStart: inv.OnStart,
	}
	// A plain command has no home files of its own and no model endpoint
	// but those its *_BASE_URL variables name.
	release, err := cliutil.Confine(ctx, inv, &spec, nil, nil)
	if err != nil {
		return runner.Result{ExitCode: -1}, cliutil.Outcome(r.name, "", err, nil)
	}
	defer release()
	res, err := proc.Run(ctx, spec)
	out := runner.Result{ExitCode: res.ExitCode, Output: string(res.Stdout), StderrTail: res.StderrTail}
	return out, cliutil.Outcome(r.name, "", err, nil)
}
