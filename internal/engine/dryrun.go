package engine

import (
	"context"
	"fmt"

	"github.com/cadre-dev/cadre/internal/dryrun"
	"github.com/cadre-dev/cadre/internal/item/taskfile"
)

// DryRun says, per item, which workflow would run and which roles it would
// invoke with which runner and model (package dryrun); it starts nothing
// and calls no agent. Its errors are pre-flight errors, the ones the run
// would refuse to start with.
func (e *Engine) DryRun(ctx context.Context, opts Options) ([]dryrun.Item, error) {
	p := dryrun.Planner{Intake: e.intake(), Roster: e.roster(), Flags: flags(opts),
		Locate: opts.Temporal == nil, WorkflowOf: func(t *taskfile.Task) string { return e.workflowOf(opts, t) },
		Sandbox: e.d.Sandbox}
	plan, err := p.Plan(ctx, wanted(opts))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPreflight, err)
	}
	if opts.Temporal == nil {
		for _, it := range plan {
			if why := e.refusesUnconfined(it.ID, it.Trusted); why != "" && it.Note == "" {
				return nil, fmt.Errorf("%w: %s", ErrPreflight, why)
			}
		}
	}
	return plan, nil
}
