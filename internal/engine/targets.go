package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/item/intake"
	"github.com/cadre-dev/cadre/internal/item/taskfile"
	"github.com/cadre-dev/cadre/internal/report"
	"github.com/cadre-dev/cadre/internal/store"
)

// intake is the loader of this repository's items.
func (e *Engine) intake() *intake.Loader {
	return &intake.Loader{Root: e.d.Root, StateDir: e.StateDir(), Config: e.d.Config, Workflows: e.d.Workflows, Forge: e.d.Forge}
}

// loadTargets reads the task files a run of opts works on, checked and in
// dependency order (intake.Loader.Load); a refusal is a pre-flight error.
func (e *Engine) loadTargets(ctx context.Context, runID string, opts Options) ([]*taskfile.Task, error) {
	tasks, err := e.intake().Load(ctx, runID, wanted(opts))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPreflight, err)
	}
	if opts.Again {
		return tasks, nil
	}
	keep, said, err := e.followed(ctx, tasks)
	switch {
	case err != nil:
		return nil, fmt.Errorf("%w: %w", ErrPreflight, err)
	case len(said) > 0 && len(keep) == 0:
		os.RemoveAll(filepath.Join(e.StateDir(), "runs", runID)) // no run is made
		return nil, &Followed{Lines: said}
	}
	for _, line := range said {
		e.d.Bus.Publish(event.Event{Run: runID, Type: event.Warning, Message: line})
	}
	return keep, nil
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

// Followed is a run's refusal to start when every issue it names already
// has its pull request, open or merged: Lines say which (one per issue).
// Nothing failed; nothing ran.
type Followed struct{ Lines []string }

func (f *Followed) Error() string { return strings.Join(f.Lines, "; ") }

// prOwner is a code host that reports a head branch's pull request.
type prOwner interface {
	PRState(ctx context.Context, branch string) (found, merged, closed bool, err error)
}

// followed drops the issues whose pull request an earlier run opened and
// which is still open, or was merged: their work is done (cadre watch
// follows an open one), and a run would pay for it again. It returns the
// rest and a line for each dropped. A pull request closed unmerged is
// worked on again; one whose state cannot be read counts as open.
func (e *Engine) followed(ctx context.Context, tasks []*taskfile.Task) ([]*taskfile.Task, []string, error) {
	var keep []*taskfile.Task
	var said []string
	in := e.intake()
	for _, t := range tasks {
		if in.Source(t) != intake.SourceGitHub {
			keep = append(keep, t)
			continue
		}
		rec, err := e.d.Store.LastCompleted(ctx, report.PRStepID(t.ID))
		if errors.Is(err, store.ErrNotFound) {
			keep = append(keep, t)
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		pr := report.ReadPublishRecord(rec)
		state := "is open (cadre watch follows it)"
		if ps, ok := e.d.Forge.(prOwner); ok && pr.Branch != "" {
			found, merged, closed, err := ps.PRState(ctx, pr.Branch)
			switch {
			case err == nil && merged:
				state = "was merged"
			case err == nil && (closed || !found):
				keep = append(keep, t)
				continue
			}
		}
		said = append(said, fmt.Sprintf("%s: pull request #%d %s", t.ID, pr.Number, state))
		// Its task file was written under this run's directory: the run
		// does not take it.
		if dir := filepath.Dir(t.Path); strings.HasPrefix(dir, e.StateDir()+string(filepath.Separator)) {
			os.RemoveAll(dir)
		}
	}
	return keep, said, nil
}
