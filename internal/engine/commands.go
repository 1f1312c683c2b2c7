package engine

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/proc"
	"github.com/cadre-dev/cadre/internal/runner/cliutil"
	"github.com/cadre-dev/cadre/internal/sandbox"
)

var commandNames = []string{"install", "build", "test", "lint"}

// runChecks runs the project's configured commands in the item's tree and
// writes a Markdown summary (the integration-checker's input).
func (fx *flowExec) runChecks(ctx context.Context, id string) (map[string]int, string, error) {
	exits, sum, outPath, err := fx.runCommands(ctx, id, commandNames)
	if err != nil {
		return nil, "", err
	}
	return exits, outPath, writeStepFile(fx.ir.outDir, outPath, []byte(sum))
}

// runCommands runs the named project commands that cadre.yaml configures
// and returns their exit codes and a Markdown summary. Their log is a step
// log like an agent's: never written through a link, secrets masked.
func (fx *flowExec) runCommands(ctx context.Context, id string, names []string) (map[string]int, string, string, error) {
	e, ir := fx.e, fx.ir
	byName := e.d.Config.Commands.ByName()
	_, outPath, logPath := ir.stepFiles(id)
	log, err := cliutil.OpenLog(logPath, e.d.Mask)
	if err != nil {
		return nil, "", "", fmt.Errorf("item %s: %w", ir.it.ID, err)
	}
	defer log.Close()
	exits := map[string]int{}
	var sum strings.Builder
	fmt.Fprintf(&sum, "# Checks (%s)\n\n| command | exit | baseline |\n| --- | --- | --- |\n", id)
	timeout := time.Duration(e.d.Config.Defaults.Timeout)
	for _, name := range names {
		line := byName[name]
		if strings.TrimSpace(line) == "" {
			continue
		}
		fmt.Fprintf(log, "$ %s\n", line)
		code, err := e.projectCommand(ctx, ir, id, line, log, timeout)
		if err != nil {
			fmt.Fprintf(log, "[cadre: %s]\n", err)
		}
		exits[name] = code
		base := "-"
		if b, ok := fx.baseline[name]; ok {
			base = fmt.Sprint(b)
		}
		fmt.Fprintf(&sum, "| `%s` (%s) | %d | %s |\n", line, name, code, base)
	}
	fmt.Fprintf(&sum, "\nFull output: %s\n", logPath)
	return exits, sum.String(), outPath, nil
}

// projectCommand runs one of the project's commands in the item's tree
// and returns its exit code (-1 when it could not run or was stopped,
// with the reason). The command line
// comes from cadre.yaml, written by the repository's owner, so it runs
// through the shell as written; but what it runs (a test script, a
// Makefile) is the tree's, which agents that read a stranger's text have
// changed, so it runs under the item's confinement, like the agents.
func (e *Engine) projectCommand(ctx context.Context, ir *itemRun, step, line string, log io.Writer, timeout time.Duration) (int, error) {
	spec := proc.Spec{Path: "/bin/sh", Args: []string{"-c", line}, Dir: ir.dir,
		Env: proc.MinimalEnv(os.LookupEnv, nil, nil), Log: log, Timeout: timeout}
	if p := e.stepSandbox(ir, event.Event{Step: step}); p != nil {
		prep, err := p.Prepare(ctx, sandbox.Step{Dir: ir.dir, Env: spec.Env})
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
