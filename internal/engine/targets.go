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

// loadTargets reads the task files a run works on, in dependency order:
// the prompt's task alone when the run has nothing else to work on, else
// the task files and issues named (the issue query's matches among them,
// the tasks directory when none is named), each checked before anything
// starts.
func (e *Engine) loadTargets(ctx context.Context, runID string, opts Options) ([]*taskfile.Task, error) {
	if err := e.checkTargetOptions(opts); err != nil {
		return nil, err
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
		refs, err := e.queryTargets(ctx, opts)
		if err != nil {
			return nil, err
		}
		targets = append(targets, refs...)
	}
	if len(targets) == 0 {
		dir, err := e.tasksDir()
		if err != nil {
			return nil, err
		}
		targets = []string{dir}
	}
	paths, named, err := e.resolveTargets(ctx, runID, targets)
	if err != nil {
		return nil, err
	}
	issues = append(issues, named...)
	tasks, err := e.loadTaskFiles(paths, opts)
	if err != nil {
		return nil, err
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

// checkTargetOptions refuses a --workflow that names no workflow (runner
// aside) and a --column that names no stage.
func (e *Engine) checkTargetOptions(opts Options) error {
	if w := opts.Workflow; w != "" && w != workflow.PipelineWorkflow {
		if _, ok := e.d.Workflows.Get(w); !ok {
			return fmt.Errorf("%w: --workflow %s: unknown workflow (available: runner, %s)", ErrPreflight, w, strings.Join(e.d.Workflows.Names(), ", "))
		}
	}
	if opts.Column != "" && !validStage(opts.Column) {
		return fmt.Errorf("%w: --column %q: unknown stage (want one of %s)", ErrPreflight, opts.Column, strings.Join(taskfile.Stages, ", "))
	}
	return nil
}

// queryTargets asks the forge for the issues matching the run's issue
// query and names each as repo#number. A query matching none is refused:
// the run would have nothing to do.
func (e *Engine) queryTargets(ctx context.Context, opts Options) ([]string, error) {
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
	var refs []string
	for _, is := range found {
		refs = append(refs, fmt.Sprintf("%s#%d", is.Repo, is.Number))
	}
	return refs, nil
}

// tasksDir is the repository's tasks directory, the target of a run that
// names none; a run refuses to start without it.
func (e *Engine) tasksDir() (string, error) {
	dir := filepath.Join(e.d.Root, e.d.Config.TasksDir)
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("%w: %s: no directory %s in this repository: add task files there, set tasks_dir in cadre.yaml, or name the task files or issues to run",
			ErrPreflight, e.d.Config.Where("tasks_dir"), e.d.Config.TasksDir)
	}
	return dir, nil
}

// resolveTargets turns the run's targets into the task files to load
// (a file as named, a directory as the task files found in it) and the
// tasks of the issues named. A target that is no file is an issue
// reference when it reads as one; otherwise it is refused.
func (e *Engine) resolveTargets(ctx context.Context, runID string, targets []string) (paths []string, issues []*taskfile.Task, err error) {
	for _, t := range targets {
		fi, err := os.Stat(t)
		if err != nil && isIssueRef(t) {
			task, err := e.issueTarget(ctx, runID, t)
			if err != nil {
				return nil, nil, err
			}
			issues = append(issues, task)
			continue
		}
		if err != nil {
			return nil, nil, fmt.Errorf("%w: %s: no such task file or directory", ErrPreflight, relErr(errors.New(t), e.d.Root))
		}
		if !fi.IsDir() {
			paths = append(paths, t)
			continue
		}
		found, err := taskfile.Find(t)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: %w", ErrPreflight, err)
		}
		paths = append(paths, found...)
	}
	return paths, issues, nil
}

// issueTarget fetches the issue ref names from the forge and makes its
// task file, unless the issue is one a run must not take (refuseIssue).
func (e *Engine) issueTarget(ctx context.Context, runID, ref string) (*taskfile.Task, error) {
	if e.d.Forge == nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrPreflight, ref, errNoForge)
	}
	is, err := e.d.Forge.Issue(ctx, ref)
	if err != nil {
		return nil, fmt.Errorf("%w: issue %s: %w", ErrPreflight, ref, err)
	}
	if reason := e.refuseIssue(is); reason != "" {
		return nil, fmt.Errorf("%w: issue %s: %s", ErrPreflight, ref, reason)
	}
	task, err := e.issueTask(runID, is)
	if err != nil {
		return nil, fmt.Errorf("%w: issue %s: %w", ErrPreflight, ref, err)
	}
	return task, nil
}

// loadTaskFiles loads the task files at paths, in order, keeping those in
// the stage of --column when set. A file named twice counts once; two
// files with one task id, and a task naming an unknown workflow when no
// --workflow overrides it, are refused.
func (e *Engine) loadTaskFiles(paths []string, opts Options) ([]*taskfile.Task, error) {
	seen := map[string]string{}
	var tasks []*taskfile.Task
	for _, p := range paths {
		abs, t, err := e.loadTaskFile(p)
		if err != nil {
			return nil, err
		}
		if prev, dup := seen[t.ID]; dup {
			if prev == abs {
				continue
			}
			return nil, fmt.Errorf("%w: task id %q is used by both %s and %s: rename one", ErrPreflight, t.ID, prev, abs)
		}
		seen[t.ID] = abs
		if w := t.Workflow; w != "" && w != workflow.PipelineWorkflow && opts.Workflow == "" {
			if _, ok := e.d.Workflows.Get(w); !ok {
				return nil, fmt.Errorf("%w: %s: workflow %q is unknown (available: runner, %s)", ErrPreflight, relErr(errors.New(abs), e.d.Root), w, strings.Join(e.d.Workflows.Names(), ", "))
			}
		}
		if opts.Column != "" && t.Stage != opts.Column {
			continue
		}
		tasks = append(tasks, t)
	}
	return tasks, nil
}

// loadTaskFile loads the task file at p, which must be inside the
// repository and have a file name that is a valid item id; abs is its
// absolute path.
func (e *Engine) loadTaskFile(p string) (abs string, t *taskfile.Task, err error) {
	abs, err = taskfile.Abs(p)
	if err != nil {
		return "", nil, fmt.Errorf("%w: %w", ErrPreflight, err)
	}
	if !inside(e.d.Root, abs) {
		return "", nil, fmt.Errorf("%w: %s is outside the repository %s", ErrPreflight, p, e.d.Root)
	}
	// cadre rewrites a task file (frontmatter, review): never through a
	// link to a file outside the repository.
	if fi, err := os.Lstat(abs); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		if real, err := filepath.EvalSymlinks(abs); err != nil || !inside(e.d.Root, real) {
			return "", nil, fmt.Errorf("%w: %s is a symbolic link to a file outside the repository: copy the task into the repository", ErrPreflight, p)
		}
	}
	t, err = taskfile.Load(abs)
	if err != nil {
		return "", nil, fmt.Errorf("%w: %s", ErrPreflight, relErr(err, e.d.Root))
	}
	if err := workspace.CheckItemID(t.ID); err != nil {
		return "", nil, fmt.Errorf("%w: %s: %w: rename the file", ErrPreflight, relErr(errors.New(abs), e.d.Root), err)
	}
	return abs, t, nil
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

// inside says whether path lies in dir.
func inside(dir, path string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}
