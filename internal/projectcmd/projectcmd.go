// Package projectcmd runs the project's own commands (cadre.yaml's
// commands: install, build, test, lint) in an item's tree, for the checks,
// the baseline and the gatekeeper. A command line comes from cadre.yaml,
// written by the repository's owner, so it runs through the shell as
// written; but what it runs (a test script, a Makefile) is the tree's,
// which agents that read a stranger's text have changed, so it runs under
// the item's confinement, like the agents.
package projectcmd

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/cadre-dev/cadre/internal/proc"
	"github.com/cadre-dev/cadre/internal/redact"
	"github.com/cadre-dev/cadre/internal/runner/cliutil"
	"github.com/cadre-dev/cadre/internal/sandbox"
)

// Names are the project's commands, in the order the checks run them.
var Names = []string{"install", "build", "test", "lint"}

// Batch is one step's run of the project's commands.
type Batch struct {
	Step    string            // the step, named in the summary
	Lines   map[string]string // each command's line by name; a blank one is not run
	Dir     string            // the item's tree
	Sandbox *sandbox.Policy   // the item's confinement; nil runs unconfined
	Timeout time.Duration     // each command's
	Grace   time.Duration     // between SIGTERM and SIGKILL of a command stopped or timed out (0: proc's default)
	// Log is the step log's path: written like an agent's, never through
	// a link, with Mask's secrets masked.
	Log  string
	Mask *redact.Redactor
	// Baseline is each command's exit before the work, shown beside.
	Baseline map[string]int
}

// Run runs the named commands that b.Lines configures, in order, and
// returns their exit codes (-1 for one that could not run or was
// stopped) and a Markdown summary.
func (b Batch) Run(ctx context.Context, names []string) (map[string]int, string, error) {
	log, err := cliutil.OpenLog(b.Log, b.Mask)
	if err != nil {
		return nil, "", err
	}
	defer log.Close()
	env := proc.MinimalEnv(os.LookupEnv, nil, nil)
	var run []string
	for _, name := range names {
		if strings.TrimSpace(b.Lines[name]) != "" {
			run = append(run, name)
		}
	}
	// One sandbox for the batch: its caches and proxy serve every command
	// (each still gets a fresh home).
	box, boxErr := b.confine(ctx, env, len(run) > 0)
	if box != nil {
		defer box.Close()
	}
	exits := map[string]int{}
	var sum strings.Builder
	fmt.Fprintf(&sum, "# Checks (%s)\n\n| command | exit | baseline |\n| --- | --- | --- |\n", b.Step)
	for _, name := range run {
		line := b.Lines[name]
		fmt.Fprintf(log, "$ %s\n", line)
		code, err := -1, boxErr
		if boxErr == nil {
			code, err = b.run(ctx, line, env, log, box)
		}
		if err != nil {
			fmt.Fprintf(log, "[cadre: %s]\n", err)
		}
		exits[name] = code
		base := "-"
		if c, ok := b.Baseline[name]; ok {
			base = fmt.Sprint(c)
		}
		fmt.Fprintf(&sum, "| `%s` (%s) | %d | %s |\n", line, name, code, base)
	}
	fmt.Fprintf(&sum, "\nFull output: %s\n", b.Log)
	return exits, sum.String(), nil
}

// run runs one command line in the tree, in the batch's sandbox when it
// has one, and returns its exit code.
func (b Batch) run(ctx context.Context, line string, env []string, log io.Writer, box *sandbox.Prepared) (int, error) {
	spec := proc.Spec{Path: "/bin/sh", Args: []string{"-c", line}, Dir: b.Dir, Env: env, Log: log, Timeout: b.Timeout, Grace: b.Grace}
	if box != nil {
		spec.Sandbox = box.Sandbox
		spec.Env = proc.SetEnv(spec.Env, box.Env)
		fmt.Fprintf(log, "[cadre: sandboxed by bubblewrap, network %s]\n", b.Sandbox.Network)
	}
	res, err := proc.Run(ctx, spec)
	return res.ExitCode, err
}

// confine prepares the batch's sandbox for commands of environment env
// (the caches, the proxy): nil when the batch runs unconfined or has no
// command to run.
func (b Batch) confine(ctx context.Context, env []string, needed bool) (*sandbox.Prepared, error) {
	if b.Sandbox == nil || !needed {
		return nil, nil
	}
	box, err := b.Sandbox.Prepare(ctx, sandbox.Step{Dir: b.Dir, Env: env})
	if err != nil {
		return nil, fmt.Errorf("prepare the sandbox: %w", err)
	}
	return box, nil
}
