package cli

import (
	"context"
	"fmt"
	"path/filepath"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/cadre-dev/cadre/internal/runlock"
	"github.com/cadre-dev/cadre/internal/runstop"
	"github.com/cadre-dev/cadre/internal/workspace"
)

// StopOptions are the arguments of cadre stop.
type StopOptions struct {
	Run string
	Now bool
}

// NewCmdStop builds cadre stop.
func NewCmdStop(f *Factory, runF func(context.Context, *Factory, *StopOptions) error) *cobra.Command {
	opts := &StopOptions{}
	cmd := &cobra.Command{
		Use:   "stop [RUN] [--now]",
		Short: "Stop the active run: start no new step (--now also cancels running steps)",
		Long: `Ask the active run (or RUN) to stop. By default running steps finish and no new step
starts; with --now the running agents are cancelled (their process groups are killed). Either
way the run can be continued with cadre resume. A run on the Temporal engine is stopped
through its items' workflows (a stop signal, or with --now a cancellation), even when the
process that started it is gone.` + exitStatusSimple,
		Example: `  cadre stop        # graceful
  cadre stop --now  # cancel running agents too`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.Run = args[0]
			}
			if runF != nil {
				return runF(cmd.Context(), f, opts)
			}
			return runStop(cmd.Context(), f, opts)
		},
	}
	cmd.Flags().BoolVar(&opts.Now, "now", false, "also cancel running steps")
	return cmd
}

func runStop(ctx context.Context, f *Factory, opts *StopOptions) error {
	root, err := f.repoRoot(ctx)
	if err != nil {
		return err
	}
	stateDir := filepath.Join(root, workspace.StateDir)
	lock, err := runLock(ctx, root)
	if err != nil {
		return err
	}
	h, active := runlock.Holder(lock)
	if active && elsewhere(h, stateDir) {
		// Its journal and stop requests are in its own checkout.
		if opts.Run == "" || opts.Run == h.Run {
			return usageErr(fmt.Errorf("%s holds this repository: run cadre stop there", who(h, stateDir)))
		}
		active = false
	}
	run, pid := h.Run, h.PID
	if active && run == watchRun && (opts.Run == "" || opts.Run == watchRun) {
		return stopWatch(f, stateDir, pid, opts.Now)
	}
	if active && opts.Run != "" && opts.Run != run {
		return usageErr(fmt.Errorf("run %s is not active (the active run is %s)", opts.Run, run))
	}
	if hasJournal(root) {
		if !active {
			run = opts.Run
		}
		st, id, err := f.openRun(ctx, run)
		if err != nil && active {
			return err
		}
		if err == nil {
			defer st.Close()
			// A Temporal run's workflows go on without the process that
			// started them: it is stopped through them.
			n, onTemporal, err := f.stopOnTemporal(ctx, st, stateDir, id, active, opts.Now)
			if err != nil {
				return err
			}
			if onTemporal {
				what := "told to start no new step (running steps finish; cadre stop --now cancels them)"
				if opts.Now {
					what = "cancelled"
				}
				fmt.Fprintf(f.IO.ErrOut, "cadre: run %s: %d item workflow(s) %s\n", id, n, what)
				return nil
			}
		}
	}
	if !active {
		return usageErr(fmt.Errorf("no active run in %s", root))
	}
	if err := runstop.Request(stateDir, run); err != nil {
		return err
	}
	if opts.Now {
		if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
			return fmt.Errorf("signal run %s (pid %d): %w", run, pid, err)
		}
		fmt.Fprintf(f.IO.ErrOut, "cadre: cancelling run %s (pid %d)\n", run, pid)
		return nil
	}
	fmt.Fprintf(f.IO.ErrOut, "cadre: run %s will stop after its running step (cadre stop --now cancels it)\n", run)
	return nil
}

// stopWatch asks the cadre watch holding the repository to stop after
// its running step, or with now at once.
func stopWatch(f *Factory, stateDir string, pid int, now bool) error {
	if err := runstop.Request(stateDir, watchRun); err != nil {
		return err
	}
	if now {
		if err := runstop.RequestNow(stateDir, watchRun); err != nil {
			return err
		}
		if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
			return fmt.Errorf("signal cadre watch (pid %d): %w", pid, err)
		}
		fmt.Fprintf(f.IO.ErrOut, "cadre: cancelling cadre watch (pid %d)\n", pid)
		return nil
	}
	fmt.Fprintf(f.IO.ErrOut, "cadre: cadre watch (pid %d) will stop after its running step (cadre stop --now cancels it)\n", pid)
	return nil
}
