package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"regexp"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/cadre-dev/cadre/internal/engine"
	"github.com/cadre-dev/cadre/internal/item/intake"
	"github.com/cadre-dev/cadre/internal/proc"
	"github.com/cadre-dev/cadre/internal/runspec"
	"github.com/cadre-dev/cadre/internal/sandbox"
	"github.com/cadre-dev/cadre/internal/store"
)

// Version is set at build time with -ldflags "-X ...cli.Version=v1.2.3".
var Version = "dev"

const exitStatusRunning = `

EXIT STATUS
  0    every item completed
  1    an item failed or the run hard-stopped
  2    usage, config or pre-flight error (nothing was started)
  3    the run is paused waiting for a human
  130  interrupted or stopped (resumable with cadre resume)`

const exitStatusSimple = `

EXIT STATUS
  0  success
  2  usage or config error`

// NewCmdRoot builds the cadre command tree.
func NewCmdRoot(f *Factory) *cobra.Command {
	root := &cobra.Command{
		Use:   "cadre",
		Short: "Resolve issues and task files with a fleet of AI coding agents",
		Long: `cadre drives AI coding agents (agent CLIs, model APIs, any command) through role-based
workflows on task files: plan, code, audit, commit. Every step is journaled, so an
interrupted run resumes without repeating paid work.` + exitStatusRunning,
		Example: `  cadre demo                 # see it work, nothing to install
  cadre run --in-place       # run every task under tasks/
  cadre status               # what the last run did`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(f.IO.Out)
	root.SetErr(f.IO.ErrOut)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return usageErr(flagValueError(c, err)) })
	root.AddCommand(NewCmdInit(f, nil), NewCmdRun(f, nil), NewCmdDo(f, nil), NewCmdResume(f, nil), NewCmdRetry(f, nil), NewCmdStop(f, nil), NewCmdWatch(f, nil), NewCmdStatus(f, nil),
		NewCmdDemo(f, nil), NewCmdReport(f, nil), NewCmdScores(f, nil), NewCmdBench(f, nil), NewCmdWorktrees(f, nil), NewCmdWorkflows(f), NewCmdApprove(f, nil), NewCmdModelsim(f), NewCmdVersion(f), NewCmdRoles(f), NewCmdRunners(f), NewCmdServe(f, nil), NewCmdWorker(f))
	// cobra's completion command is kept, with the EXIT STATUS every
	// command documents.
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() == "completion" {
			c.Long += exitStatusSimple
			for _, sub := range c.Commands() {
				sub.Long += exitStatusSimple
			}
		}
	}
	return root
}

// Main runs cadre with os.Args and returns the process exit code.
func Main() int {
	// The network bridge of a model-only sandbox: cadre's own binary, run
	// inside the sandbox before the agent, with none of the commands.
	if len(os.Args) > 1 && os.Args[1] == sandbox.BridgeCommand {
		return sandbox.RunBridge(os.Args[2:], os.Stderr)
	}
	// A reader that goes away (cadre run | head) must not kill a run
	// mid-step: with SIGPIPE taken here, a write to a closed stdout fails
	// with EPIPE instead, the output is dropped and the run goes on to its
	// end. Taken, not ignored: an ignored signal would be inherited by the
	// agents and their pipelines (yes | head would never end).
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	// Before anything reads a secret: agents run as the same user and
	// must not read this process's environment or memory through /proc.
	if err := proc.HideSelf(); err != nil {
		fmt.Fprintln(os.Stderr, "cadre: "+err.Error())
		return 2
	}
	return Execute(NewFactory(), os.Args[1:])
}

// Execute runs the command line args with f and returns the exit code.
func Execute(f *Factory, args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := NewCmdRoot(f)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	return exitCode(f, err)
}

// oneLineErr is an error's text on one line; cobra's suggestions for an
// unknown command ("\n\nDid you mean this?\n\tdo\n\trun\n") read as a
// question.
func oneLineErr(msg string) string {
	if head, tail, ok := strings.Cut(msg, "\n\nDid you mean this?\n"); ok {
		names := strings.Fields(tail)
		switch len(names) {
		case 0:
			return head
		case 1:
			return head + "; did you mean " + names[0] + "?"
		}
		return head + "; did you mean " + strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1] + "?"
	}
	return strings.ReplaceAll(msg, "\n", " ")
}

// exitCode prints err as one line and maps it to an exit code.
func exitCode(f *Factory, err error) int {
	if err == nil {
		return 0
	}
	var se silentExit
	if errors.As(err, &se) {
		return int(se)
	}
	var fw *intake.Followed
	if errors.As(err, &fw) {
		// Nothing to do is not a failure: every issue named has its
		// pull request.
		for _, line := range fw.Lines {
			fmt.Fprintln(f.IO.ErrOut, line)
		}
		return 0
	}
	code := 1
	var ee *exitError
	var fs *engine.FaultStop
	switch {
	case errors.As(err, &ee):
		code = ee.code
	case errors.As(err, &fs):
		code = 130 // stopped, resumable
	case errors.Is(err, engine.ErrPreflight), errors.Is(err, engine.ErrNothingToResume), errors.Is(err, runspec.ErrNotRetryable), errors.Is(err, store.ErrDamaged):
		code = 2
	case errors.Is(err, context.Canceled):
		code = 130
	case isUsage(err):
		code = 2
	}
	msg := oneLineErr(err.Error())
	msg = strings.TrimPrefix(msg, engine.ErrPreflight.Error()+": ")
	fmt.Fprintln(f.IO.ErrOut, "cadre: "+msg)
	return code
}

// badValue matches pflag's error for a value of the wrong kind, which ends
// with the parser's own message (strconv.ParseInt: parsing "x": …).
var badValue = regexp.MustCompile(`^invalid argument "(.*)" for "(?:-\w, )?--([\w-]+)" flag: `)

// flagValueError says what a flag wants instead of how parsing failed.
func flagValueError(c *cobra.Command, err error) error {
	m := badValue.FindStringSubmatch(err.Error())
	if m == nil {
		return err
	}
	fl := c.Flags().Lookup(m[2])
	if fl == nil {
		return err
	}
	want := map[string]string{"int": "a whole number", "float64": "a number", "bool": "true or false",
		"duration": "a duration such as 90s, 20m or 1h"}[fl.Value.Type()]
	if want == "" {
		return err
	}
	return fmt.Errorf("--%s %q: want %s", m[2], m[1], want)
}

// isUsage recognises cobra's own argument errors.
func isUsage(err error) bool {
	s := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand", "accepts ", "requires at least", "invalid argument"} {
		if strings.Contains(s, p) {
			return true
		}
	}
	return false
}
