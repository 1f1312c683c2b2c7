package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/cadre-dev/cadre/internal/item/taskfile"
	"github.com/cadre-dev/cadre/internal/workflow"
	"github.com/cadre-dev/cadre/internal/workspace"
)

// loadTargets reads the task files a run works on, in dependency order.
func (e *Engine) loadTargets(ctx context.Context, runID string, opts Options) ([]*taskfile.Task, error) {
	if w := opts.Workflow; w != "" && w != workflow.RunnerWorkflow {
		if _, ok := e.d.Workflows.Get(w); !ok {
			return nil, fmt.Errorf("%w: --workflow %s: unknown workflow (available: runner, %s)", ErrPreflight, w, strings.Join(e.d.Workflows.Names(), ", "))
		}
	}
	if opts.Column != "" && !validStage(opts.Column) {
		return nil, fmt.Errorf("%w: --column %q: unknown stage (want one of %s)", ErrPreflight, opts.Column, strings.Join(taskfile.Stages, ", "))
	}
	targets := opts.Targets
	var issues []*taskfile.Task // generated task files: issues and a prompt
	if opts.Prompt != "" {
		t, err := e.promptTask(runID, opts.Prompt)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrPreflight, err)
		}
		if len(targets) == 0 && opts.Query.Empty() {
			return []*taskfile.Task{t}, nil
		}
		issues = append(issues, t)
	}
	if !opts.Query.Empty() {
		if e.d.Forge == nil {
			return nil, fmt.Errorf("%w: issue query: %w", ErrPreflight, errNoForge)
		}
		found, err := e.d.Forge.Issues(ctx, opts.Query)
		if err != nil {
			return nil, fmt.Errorf("%w: issue query: %w", ErrPreflight, err)
		}
		if len(found) == 0 {
			return nil, fmt.Errorf("%w: no issue matches the query", ErrPreflight)
		}
		for _, is := range found {
			targets = append(targets, fmt.Sprintf("%s#%d", is.Repo, is.Number))
		}
	}
	if len(targets) == 0 {
		dir := filepath.Join(e.d.Root, e.d.Config.TasksDir)
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			return nil, fmt.Errorf("%w: %s: no directory %s in this repository: add task files there, set tasks_dir in cadre.yaml, or name the task files or issues to run",
				ErrPreflight, e.d.Config.Where("tasks_dir"), e.d.Config.TasksDir)
		}
		targets = []string{dir}
	}
	var paths []string
	for _, t := range targets {
		fi, err := os.Stat(t)
		if err != nil && isIssueRef(t) {
			if e.d.Forge == nil {
				return nil, fmt.Errorf("%w: %s: %w", ErrPreflight, t, errNoForge)
			}
			is, err := e.d.Forge.Issue(ctx, t)
			if err != nil {
				return nil, fmt.Errorf("%w: issue %s: %w", ErrPreflight, t, err)
			}
			if reason := e.refuseIssue(is); reason != "" {
				return nil, fmt.Errorf("%w: issue %s: %s", ErrPreflight, t, reason)
			}
			task, err := e.issueTask(runID, is)
			if err != nil {
				return nil, fmt.Errorf("%w: issue %s: %w", ErrPreflight, t, err)
			}
			issues = append(issues, task)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %s: no such task file or directory", ErrPreflight, relErr(errors.New(t), e.d.Root))
		}
		if !fi.IsDir() {
			paths = append(paths, t)
			continue
		}
		found, err := taskfile.Find(t)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrPreflight, err)
		}
		paths = append(paths, found...)
	}
	seen := map[string]string{}
	var tasks []*taskfile.Task
	for _, p := range paths {
		abs, err := filepath.Abs(p)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrPreflight, err)
		}
		if rel, err := filepath.Rel(e.d.Root, abs); err != nil || strings.HasPrefix(rel, "..") {
			return nil, fmt.Errorf("%w: %s is outside the repository %s", ErrPreflight, p, e.d.Root)
		}
		t, err := taskfile.Load(abs)
		if err != nil {
			return nil, fmt.Errorf("%w: %s", ErrPreflight, relErr(err, e.d.Root))
		}
		if err := workspace.CheckItemID(t.ID); err != nil {
			return nil, fmt.Errorf("%w: %s: %w: rename the file", ErrPreflight, relErr(errors.New(abs), e.d.Root), err)
		}
		if prev, dup := seen[t.ID]; dup {
			if prev == abs {
				continue
			}
			return nil, fmt.Errorf("%w: task id %q is used by both %s and %s: rename one", ErrPreflight, t.ID, prev, abs)
		}
		seen[t.ID] = abs
		if w := t.Workflow; w != "" && w != workflow.RunnerWorkflow && opts.Workflow == "" {
			if _, ok := e.d.Workflows.Get(w); !ok {
				return nil, fmt.Errorf("%w: %s: workflow %q is unknown (available: runner, %s)", ErrPreflight, relErr(errors.New(abs), e.d.Root), w, strings.Join(e.d.Workflows.Names(), ", "))
			}
		}
		if opts.Column != "" && t.Stage != opts.Column {
			continue
		}
		tasks = append(tasks, t)
	}
	tasks = append(tasks, issues...)
	if len(tasks) == 0 {
		what := relErr(errors.New("no task files found in "+strings.Join(targets, ", ")), e.d.Root)
		if opts.Column != "" {
			what = fmt.Sprintf("no task in stage %s", opts.Column)
		}
		return nil, fmt.Errorf("%w: %s", ErrPreflight, what)
	}
	if err := e.checkDeps(tasks); err != nil {
		return nil, err
	}
	if err := e.checkContexts(tasks); err != nil {
		return nil, err
	}
	return orderByDeps(tasks)
}

// checkDeps refuses a dependency that names no task: neither one of the
// run nor a task file beside the dependent one (where unmetDeps looks).
// A typo would otherwise leave the task skipped, waiting for a task that
// can never complete.
func (e *Engine) checkDeps(tasks []*taskfile.Task) error {
	ids := map[string]bool{}
	for _, t := range tasks {
		ids[t.ID] = true
	}
	for _, t := range tasks {
		for _, d := range t.DependsOn {
			if ids[d] {
				continue
			}
			dep := filepath.Join(filepath.Dir(t.Path), d+".md")
			if _, err := os.Stat(dep); err != nil && errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("%w: %s: depends_on: no task %q (no %s): fix the id or add the task", ErrPreflight,
					relErr(errors.New(t.Path), e.d.Root), d, relErr(errors.New(dep), e.d.Root))
			}
		}
	}
	return nil
}

// checkContexts refuses a context document that is not a file of the
// repository: the paths are relative to its root (the agent's working
// tree mirrors it), and a typo would hand every agent a path to nothing.
func (e *Engine) checkContexts(tasks []*taskfile.Task) error {
	for _, t := range tasks {
		for _, c := range t.Contexts {
			where := relErr(errors.New(t.Path), e.d.Root)
			if !filepath.IsLocal(filepath.FromSlash(c)) {
				return fmt.Errorf("%w: %s: contexts: %q is not inside the repository: give a path relative to its root, e.g. docs/auth.md", ErrPreflight, where, c)
			}
			if fi, err := os.Stat(filepath.Join(e.d.Root, filepath.FromSlash(c))); err != nil || fi.IsDir() {
				return fmt.Errorf("%w: %s: contexts: no file %s in the repository: fix the path (relative to the repository's root) or remove it", ErrPreflight, where, c)
			}
		}
	}
	return nil
}

// relErr shortens absolute paths in a task file error to repository-relative ones.
func relErr(err error, root string) string {
	return strings.ReplaceAll(err.Error(), root+string(filepath.Separator), "")
}

func validStage(s string) bool {
	for _, st := range taskfile.Stages {
		if st == s {
			return true
		}
	}
	return false
}

// orderByDeps sorts tasks so each comes after the tasks it depends on;
// ties keep file order. A cycle is a pre-flight error naming its tasks.
func orderByDeps(tasks []*taskfile.Task) ([]*taskfile.Task, error) {
	index := map[string]*taskfile.Task{}
	for _, t := range tasks {
		index[t.ID] = t
	}
	var out []*taskfile.Task
	state := map[string]int{} // 1 visiting, 2 done
	var visit func(t *taskfile.Task, path []string) error
	visit = func(t *taskfile.Task, path []string) error {
		switch state[t.ID] {
		case 1:
			return fmt.Errorf("%w: tasks depend on each other in a cycle: %s", ErrPreflight, strings.Join(append(path, t.ID), " → "))
		case 2:
			return nil
		}
		state[t.ID] = 1
		for _, d := range t.DependsOn {
			if dep, ok := index[d]; ok {
				if err := visit(dep, append(path, t.ID)); err != nil {
					return err
				}
			}
		}
		state[t.ID] = 2
		out = append(out, t)
		return nil
	}
	for _, t := range tasks {
		if err := visit(t, nil); err != nil {
			return nil, err
		}
	}
	return out, nil
}
