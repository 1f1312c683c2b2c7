package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cadre-dev/cadre/internal/runspec"
	"github.com/cadre-dev/cadre/internal/store"
)

// RetryOptions are the arguments of cadre retry.
type RetryOptions struct {
	Run, Item string
	JSON      bool
	Plain     bool
}

// NewCmdRetry builds cadre retry.
func NewCmdRetry(f *Factory, runF func(context.Context, *Factory, *RetryOptions) error) *cobra.Command {
	opts := &RetryOptions{}
	cmd := &cobra.Command{
		Use:   "retry [RUN] ITEM",
		Short: "Go on with a failed or hard-stopped item, its attempts given again",
		Long: `Give a failed or hard-stopped item of RUN (without RUN, the latest run that has
ITEM) its attempts again and continue the run: the item goes on from where it stopped, in its
worktree, with its completed steps kept (replayed from the journal, never run again); the
decisions that had used up its attempts (the pipeline's limits.max_attempts) find as many
more, and an agent whose FAIL ended the item is asked again (its step's id ending /retryN).
The run's other unfinished items go on too, as with cadre resume.

While cadre watch holds the repository, the retry is handed to it: journaled, and taken up at
the watch's next pass (exit 0). While another run holds it, the retry is refused (exit 2) and
nothing changes.` + exitStatusRunning,
		Example: `  cadre retry add-login                      # the latest run that has the item
  cadre retry 20261122-101500-ab12 add-login`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) < 1 || len(args) > 2 {
				return usageErr(fmt.Errorf("want [RUN] ITEM: the item to retry, and optionally its run (see cadre status)"))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Item = args[len(args)-1]
			if len(args) == 2 {
				opts.Run = args[0]
			}
			if err := checkOutputFlags(opts.JSON, opts.Plain); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), f, opts)
			}
			return runRetry(cmd.Context(), f, opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "JSON-lines events on stdout")
	cmd.Flags().BoolVar(&opts.Plain, "plain", false, "one line per event on stderr instead of the live view")
	return cmd
}

func runRetry(ctx context.Context, f *Factory, opts *RetryOptions) error {
	ws, err := f.workspace(ctx)
	if err != nil {
		return err
	}
	if !hasJournal(ws.root) {
		return fmt.Errorf("%w: no run recorded here", runspec.ErrNotRetryable)
	}
	st, err := openStore(ctx, ws.root)
	if err != nil {
		return err
	}
	run := opts.Run
	if run == "" {
		if run, err = st.LatestRunOf(ctx, opts.Item); err != nil {
			st.Close()
			if errors.Is(err, store.ErrNotFound) {
				return fmt.Errorf("%w: no run has an item %q (see cadre status)", runspec.ErrNotRetryable, opts.Item)
			}
			return err
		}
	}
	// Nothing changes before the run holds the lock: the resume grants
	// the retry once it does, or, while a watch holds the repository,
	// the watch is asked to.
	err = runspec.CheckRetry(ctx, st, run, opts.Item)
	handed := false
	if err == nil {
		handed, err = handToWatch(ctx, f, ws, st, run, opts.Item)
	}
	if cerr := st.Close(); err == nil {
		err = cerr
	}
	if err != nil || handed {
		return err
	}
	return runResume(ctx, f, &ResumeOptions{Run: run, Budget: -1, JSON: opts.JSON, Plain: opts.Plain, Retry: []string{opts.Item}})
}
