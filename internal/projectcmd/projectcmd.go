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
	exits := map[string]int{}
	var sum strings.Builder
	fmt.Fprintf(&sum, "# Checks (%s)\n\n| command | exit | baseline |\n| --- | --- | --- |\n", b.Step)
	for _, name := range names {
		line := b.Lines[name]
		if strings.TrimSpace(line) == "" {
			continue
		}
		fmt.Fprintf(log, "$ %s\n", line)
		code, err := b.run(ctx, line, log)
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

// run runs one command line in the tree, confined when b says so, and
// returns its exit code.
func (b Batch) run(ctx context.Context, line string, log io.Writer) (int, error) {
	spec := proc.Spec{Path: "/bin/sh", Args: []string{"-c", line}, Dir: b.Dir,
		Env: proc.MinimalEnv(os.LookupEnv, nil, nil), Log: log, Timeout: b.Timeout}
	if p := b.Sandbox; p != nil {
		prep, err := p.Prepare(ctx, sandbox.Step{Dir: b.Dir, Env: spec.Env})
		if err != nil {
			return -1, fmt.Errorf("prepare the sandbox: %w", err)
		}
		defer prep.Close()
		spec.Sandbox = prep.Sandbox
		spec.Env = proc.SetEnv(spec.Env, prep.Env)
		fmt.Fprintf(log, "[cadre: sandboxed by bubblewrap, network %s]\n", p.Network)
	}
	res, err := proc.Run(ctx, spec)
	return res.ExitCode, err
}
