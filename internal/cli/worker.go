package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/cadre-dev/cadre/internal/engine"
	"github.com/cadre-dev/cadre/internal/temporal"
)

// TemporalOptions say where the Temporal engine's server and queue are.
type TemporalOptions struct {
	Address   string
	Namespace string
	TaskQueue string
	// Heartbeat is how long a step's worker may go silent before Temporal
	// gives the step to another worker (cadre run only; 0: the default).
	Heartbeat time.Duration
}

func addTemporalFlags(cmd *cobra.Command, o *TemporalOptions) {
	fl := cmd.Flags()
	fl.StringVar(&o.Address, "temporal-address", "127.0.0.1:7233", "Temporal frontend `HOST:PORT`")
	fl.StringVar(&o.Namespace, "namespace", "default", "Temporal namespace")
	fl.StringVar(&o.TaskQueue, "task-queue", "cadre", "Temporal task queue the workers poll")
}

// NewCmdWorker builds cadre worker.
func NewCmdWorker(f *Factory) *cobra.Command {
	o := &TemporalOptions{}
	cmd := &cobra.Command{
		Use:   "worker --temporal-address HOST:PORT --task-queue Q",
		Short: "Perform the steps of runs started with --engine temporal",
		Long: `Poll a Temporal task queue and run the item workflows and steps of runs started with
cadre run --engine temporal, for the repository in the current directory. Start as many
workers as the machine can take agents; when one dies, another continues its items from
their last journaled step.

For now every worker of a task queue works in the same repository on the same machine:
the items' worktrees and the journal (.cadre) are shared, not fetched per worker.

EXIT STATUS
  0  stopped (Ctrl-C or SIGTERM)
  1  the worker lost its connection or could not start
  2  usage or config error`,
		Example: `  cadre worker --temporal-address 127.0.0.1:7233 --task-queue cadre`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runWorker(cmd.Context(), f, o)
		},
	}
	addTemporalFlags(cmd, o)
	return cmd
}

func runWorker(ctx context.Context, f *Factory, o *TemporalOptions) error {
	ws, err := f.workspace(ctx)
	if err != nil {
		return err
	}
	c, err := temporal.Dial(ctx, o.Address, o.Namespace, f.IO.ErrOut)
	if err != nil {
		return err
	}
	defer c.Close()
	st, err := openStore(ctx, ws.root)
	if err != nil {
		return err
	}
	defer st.Close()
	progress := &temporal.Progress{}
	e, flush, err := f.newEngine(ctx, ws, st, f.eventSink(false), progress)
	if err != nil {
		return err
	}
	defer flush()
	fmt.Fprintf(f.IO.ErrOut, "cadre: worker for %s polling %s on %s\n", ws.root, o.TaskQueue, o.Address)
	if err := temporal.Serve(ctx, c, o.TaskQueue, e, progress); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// runTemporal runs eo's items as Temporal workflows, journaled here.
func runTemporal(ctx context.Context, f *Factory, ws workspaceCtx, eo engine.Options, o *TemporalOptions, asJSON bool) (engine.Summary, error) {
	c, err := temporal.Dial(ctx, o.Address, o.Namespace, f.IO.ErrOut)
	if err != nil {
		return engine.Summary{}, err
	}
	defer c.Close()
	timeout := eo.Timeout
	if timeout == 0 {
		timeout = time.Duration(ws.cfg.Defaults.Timeout)
	}
	s := &temporal.Starter{Client: c, TaskQueue: o.TaskQueue, StepTimeout: timeout, Heartbeat: o.Heartbeat}
	var sum engine.Summary
	err = f.withEngine(ctx, ws, asJSON, func(e *engine.Engine) error {
		var err error
		sum, err = e.StartWith(ctx, eo, s.Drive)
		return err
	})
	return sum, err
}

// Engines cadre run can use.
const (
	engineEmbedded = "embedded"
	engineTemporal = "temporal"
)

// addEngineFlags declares cadre run's --engine and its Temporal flags.
func addEngineFlags(cmd *cobra.Command, opts *RunOptions) {
	cmd.Flags().StringVar(&opts.Engine, "engine", engineEmbedded, "where items run: embedded (this process) or temporal (cadre workers)")
	addTemporalFlags(cmd, &opts.Temporal)
	cmd.Flags().DurationVar(&opts.Temporal.Heartbeat, "heartbeat-timeout", temporal.DefaultHeartbeat,
		"how long a worker may go silent before its running step moves to another worker")
}

// checkEngine refuses an engine cadre does not have, and Temporal flags
// without the Temporal engine, which would otherwise be ignored silently.
func checkEngine(cmd *cobra.Command, opts *RunOptions) error {
	switch opts.Engine {
	case engineEmbedded:
		for _, name := range []string{"temporal-address", "namespace", "task-queue", "heartbeat-timeout"} {
			if cmd.Flags().Changed(name) {
				return usageErr(fmt.Errorf("--%s needs --engine temporal", name))
			}
		}
	case engineTemporal:
		if opts.DryRun {
			return usageErr(errors.New("--dry-run runs on the embedded engine only: drop --engine temporal"))
		}
		if opts.Serve.Addr != "" {
			return usageErr(errors.New("--serve runs on the embedded engine only: drop --engine temporal"))
		}
		if opts.Temporal.Heartbeat < time.Second {
			return usageErr(fmt.Errorf("--heartbeat-timeout %s: want at least 1s", opts.Temporal.Heartbeat))
		}
	default:
		return usageErr(fmt.Errorf("--engine %q: want embedded or temporal", opts.Engine))
	}
	return nil
}
