package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/item/intake"
	"github.com/cadre-dev/cadre/internal/item/taskfile"
	"github.com/cadre-dev/cadre/internal/store"
)

// intake is the loader of this repository's items.
func (e *Engine) intake() *intake.Loader {
	return &intake.Loader{Root: e.d.Root, StateDir: e.StateDir(), Config: e.d.Config, Workflows: e.d.Workflows, Forge: e.d.Forge, Tracker: e.d.Tracker}
}

// loadTargets reads the task files a run of opts works on, checked and in
// dependency order (intake.Loader.Load); a refusal is a pre-flight error.
func (e *Engine) loadTargets(ctx context.Context, runID string, opts Options) ([]*taskfile.Task, error) {
	tasks, err := e.intake().Load(ctx, runID, wanted(opts))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPreflight, err)
	}
	if err := e.refuseUnconfined(runID, opts, tasks); err != nil {
		return nil, err
	}
	if opts.Again {
		return tasks, nil
	}
	keep, said, err := e.intake().Published(ctx, e.d.Store, tasks)
	switch {
	case err != nil:
		return nil, fmt.Errorf("%w: %w", ErrPreflight, err)
	case len(said) > 0 && len(keep) == 0:
		os.RemoveAll(filepath.Join(e.StateDir(), "runs", runID)) // no run is made
		return nil, &intake.Followed{Lines: said}
	}
	for _, line := range said {
		e.d.Bus.Publish(event.Event{Run: runID, Type: event.Warning, Message: line})
	}
	return keep, nil
}

// refuseUnconfined refuses, before the run starts, a run with an item
// that may not run unconfined where nothing confines it (unconfinedRefusal).
// On Temporal the workers confine the agents, and each refuses such an
// item as it begins it.
func (e *Engine) refuseUnconfined(runID string, opts Options, tasks []*taskfile.Task) error {
	if e.d.Sandbox != nil || opts.Temporal != nil {
		return nil
	}
	in := e.intake()
	var why string
	var others []string
	for _, t := range tasks {
		switch msg := e.unconfinedRefusal(store.Item{ID: t.ID, Source: in.Source(t), Ref: t.Path}); {
		case msg == "":
		case why == "":
			why = msg
		default:
			others = append(others, t.ID)
		}
	}
	if why == "" {
		return nil
	}
	os.RemoveAll(filepath.Join(e.StateDir(), "runs", runID)) // no run is made
	if len(others) > 0 {
		why += " (so are items " + strings.Join(others, ", ") + ")"
	}
	return fmt.Errorf("%w: %s", ErrPreflight, why)
}

// wanted is what a run of opts names to work on.
func wanted(opts Options) intake.Want {
	return intake.Want{Targets: opts.Targets, Column: opts.Column, Workflow: opts.Workflow, Query: opts.Query, Prompt: opts.Prompt}
}

// checkWorkflows refuses a defaults.workflow that names no workflow
// unless --workflow overrides it (intake.Loader.CheckWorkflows).
func (e *Engine) checkWorkflows(opts Options) error {
	if err := e.intake().CheckWorkflows(opts.Workflow); err != nil {
		return fmt.Errorf("%w: %w", ErrPreflight, err)
	}
	return nil
}

// relErr shortens absolute paths in a task file error to repository-relative ones.
func relErr(err error, root string) string {
	return strings.ReplaceAll(err.Error(), root+string(filepath.Separator), "")
}
