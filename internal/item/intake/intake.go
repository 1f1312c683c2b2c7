// Package intake turns what a run names into the task files it works on:
// task files and directories of them, issues of the code host (by
// reference or by query) and cadre do's prompt, each issue and prompt
// given a task file of its own under the run's state. Everything is
// checked before a run starts: the files load, their ids are unique and
// valid, their dependencies and context documents exist, their workflows
// are known; the tasks come out in dependency order.
//
// Every error is a reason not to start the run; the engine marks them as
// its pre-flight errors.
package intake

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/cadre-dev/cadre/internal/codehost"
	"github.com/cadre-dev/cadre/internal/config"
	"github.com/cadre-dev/cadre/internal/item/taskfile"
	"github.com/cadre-dev/cadre/internal/workflow"
	"github.com/cadre-dev/cadre/internal/workspace"
)

// Loader loads the items of runs in one repository.
type Loader struct {
	Root      string // the repository's top level
	StateDir  string // its .cadre directory, where generated task files go
	Config    config.Config
	Workflows *workflow.Registry
	Forge     codehost.Forge // nil without access to the code host
	// Tracker is where tracker keys (PROJ-123, ENG-42) are fetched from;
	// nil without tracker: in cadre.yaml.
	Tracker codehost.Tracker
}

// Want is what a run names to work on.
type Want struct {
	Targets  []string // task files, directories of them, issue references
	Column   string   // only the tasks in this stage (--column)
	Workflow string   // --workflow, which overrides the task files' own
	Query    codehost.IssueQuery
	Prompt   string // cadre do's prompt
}

// Load reads the task files a run works on, in dependency order: the
// prompt's task alone when the run has nothing else to work on, else the
// task files and issues named (the issue query's matches among them, the
// tasks directory when none is named), each checked before anything
// starts. runID names the run whose state holds the generated task files.
func (l *Loader) Load(ctx context.Context, runID string, w Want) ([]*taskfile.Task, error) {
	if err := l.checkWant(w); err != nil {
		return nil, err
	}
	targets := w.Targets
	var issues []*taskfile.Task // generated task files: issues and a prompt
	if w.Prompt != "" {
		t, err := l.PromptTask(runID, w.Prompt)
		if err != nil {
			return nil, err
		}
		if len(targets) == 0 && w.Query.Empty() {
			return []*taskfile.Task{t}, nil
		}
		issues = append(issues, t)
	}
	if !w.Query.Empty() {
		refs, err := l.queryTargets(ctx, w.Query)
		if err != nil {
			return nil, err
		}
		targets = append(targets, refs...)
	}
	if len(targets) == 0 {
		dir, err := l.tasksDir()
		if err != nil {
			return nil, err
		}
		targets = []string{dir}
	}
	paths, named, err := l.resolveTargets(ctx, runID, targets)
	if err != nil {
		return nil, err
	}
	issues = append(issues, named...)
	tasks, err := l.loadTaskFiles(paths, w)
	if err != nil {
		return nil, err
	}
	tasks = append(tasks, issues...)
	if len(tasks) == 0 {
		if w.Column != "" {
			return nil, fmt.Errorf("no task in stage %s", w.Column)
		}
		return nil, errors.New(l.rel(errors.New("no task files found in " + strings.Join(targets, ", "))))
	}
	if err := l.checkDeps(tasks); err != nil {
		return nil, err
	}
	if err := l.checkContexts(tasks); err != nil {
		return nil, err
	}
	return orderByDeps(tasks)
}

// CheckWorkflows refuses a defaults.workflow that names no workflow,
// unless flag (--workflow) overrides it: the run would start and fail
// every prompt or issue item, and a dry run would print a plan for it.
// (--workflow and a task file's workflow: are checked as the targets
// load.)
func (l *Loader) CheckWorkflows(flag string) error {
	w := l.Config.Defaults.Workflow
	if _, ok := l.Workflows.Get(w); ok || flag != "" || w == workflow.PipelineWorkflow {
		return nil
	}
	return fmt.Errorf("%s: unknown workflow %q (available: runner, %s)", l.Config.Where("defaults.workflow"), w,
		strings.Join(l.Workflows.Names(), ", "))
}

// checkWant refuses a --workflow that names no workflow (runner aside)
// and a --column that names no stage.
func (l *Loader) checkWant(w Want) error {
	if f := w.Workflow; f != "" && f != workflow.PipelineWorkflow {
		if _, ok := l.Workflows.Get(f); !ok {
			return fmt.Errorf("--workflow %s: unknown workflow (available: runner, %s)", f, strings.Join(l.Workflows.Names(), ", "))
		}
	}
	if w.Column != "" && !validStage(w.Column) {
		return fmt.Errorf("--column %q: unknown stage (want one of %s)", w.Column, strings.Join(taskfile.Stages, ", "))
	}
	return nil
}

// queryTargets asks the forge for the issues matching q and names each
// as repo#number. A query matching none is refused: the run would have
// nothing to do.
func (l *Loader) queryTargets(ctx context.Context, q codehost.IssueQuery) ([]string, error) {
	if l.Forge == nil {
		return nil, fmt.Errorf("issue query: %w", errNoForge)
	}
	found, err := l.Forge.Issues(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("issue query: %w", err)
	}
	if len(found) == 0 {
		return nil, errors.New("no issue matches the query")
	}
	var refs []string
	for _, is := range found {
		refs = append(refs, fmt.Sprintf("%s#%d", is.Repo, is.Number))
	}
	return refs, nil
}

// tasksDir is the repository's tasks directory, the target of a run that
// names none; a run refuses to start without it.
func (l *Loader) tasksDir() (string, error) {
	dir := filepath.Join(l.Root, l.Config.TasksDir)
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("%s: no directory %s in this repository: add task files there, set tasks_dir in cadre.yaml, or name the task files or issues to run",
			l.Config.Where("tasks_dir"), l.Config.TasksDir)
	}
	return dir, nil
}

// resolveTargets turns the run's targets into the task files to load
// (a file as named, a directory as the task files found in it) and the
// tasks of the issues named. A target that is no file is an issue
// reference when it reads as one; otherwise it is refused.
func (l *Loader) resolveTargets(ctx context.Context, runID string, targets []string) (paths []string, issues []*taskfile.Task, err error) {
	for _, t := range targets {
		fi, err := os.Stat(t)
		if err != nil && IsIssueRef(t) {
			task, err := l.issueTarget(ctx, runID, t)
			if err != nil {
				return nil, nil, err
			}
			issues = append(issues, task)
			continue
		}
		if err != nil {
			return nil, nil, fmt.Errorf("%s: no such task file or directory", l.rel(errors.New(t)))
		}
		if !fi.IsDir() {
			paths = append(paths, t)
			continue
		}
		found, err := taskfile.Find(t)
		if err != nil {
			return nil, nil, err
		}
		paths = append(paths, found...)
	}
	return paths, issues, nil
}

// issueTarget fetches the issue ref names from the forge and makes its
// task file, unless the issue is one a run must not take (Refuse).
func (l *Loader) issueTarget(ctx context.Context, runID, ref string) (*taskfile.Task, error) {
	if IsTrackerRef(ref) {
		return l.trackerTarget(ctx, runID, ref)
	}
	if l.Forge == nil {
		return nil, fmt.Errorf("%s: %w", ref, errNoForge)
	}
	is, err := l.Forge.Issue(ctx, ref)
	if err != nil {
		return nil, fmt.Errorf("issue %s: %w", ref, err)
	}
	if reason := l.Refuse(is); reason != "" {
		return nil, fmt.Errorf("issue %s: %s", ref, reason)
	}
	task, err := l.IssueTask(runID, is)
	if err != nil {
		return nil, fmt.Errorf("issue %s: %w", ref, err)
	}
	return task, nil
}

// trackerTarget fetches a tracker's issue and makes its task file.
func (l *Loader) trackerTarget(ctx context.Context, runID, ref string) (*taskfile.Task, error) {
	if l.Tracker == nil {
		return nil, fmt.Errorf("%s reads as a tracker's issue key, and cadre.yaml names no tracker: set tracker: {type: jira | linear, ...} (docs/trackers.md)", ref)
	}
	is, err := l.Tracker.Issue(ctx, ref)
	if err != nil {
		return nil, fmt.Errorf("issue %s: %w", ref, err)
	}
	task, err := l.IssueTask(runID, is)
	if err != nil {
		return nil, fmt.Errorf("issue %s: %w", ref, err)
	}
	return task, nil
}

// loadTaskFiles loads the task files at paths, in order, keeping those in
// the stage of --column when set. A file named twice counts once; two
// files with one task id, and a task naming an unknown workflow when no
// --workflow overrides it, are refused.
func (l *Loader) loadTaskFiles(paths []string, w Want) ([]*taskfile.Task, error) {
	seen := map[string]string{}
	var tasks []*taskfile.Task
	for _, p := range paths {
		abs, t, err := l.loadTaskFile(p)
		if err != nil {
			return nil, err
		}
		if prev, dup := seen[t.ID]; dup {
			if prev == abs {
				continue
			}
			return nil, fmt.Errorf("task id %q is used by both %s and %s: rename one", t.ID, prev, abs)
		}
		seen[t.ID] = abs
		if f := t.Workflow; f != "" && f != workflow.PipelineWorkflow && w.Workflow == "" {
			if _, ok := l.Workflows.Get(f); !ok {
				return nil, fmt.Errorf("%s: workflow %q is unknown (available: runner, %s)", l.rel(errors.New(abs)), f, strings.Join(l.Workflows.Names(), ", "))
			}
		}
		if w.Column != "" && t.Stage != w.Column {
			continue
		}
		tasks = append(tasks, t)
	}
	return tasks, nil
}

// loadTaskFile loads the task file at p, which must be inside the
// repository and have a file name that is a valid item id; abs is its
// absolute path.
func (l *Loader) loadTaskFile(p string) (abs string, t *taskfile.Task, err error) {
	abs, err = taskfile.Abs(p)
	if err != nil {
		return "", nil, err
	}
	if !inside(l.Root, abs) {
		return "", nil, fmt.Errorf("%s is outside the repository %s", p, l.Root)
	}
	// cadre rewrites a task file (frontmatter, review): never through a
	// link to a file outside the repository.
	if fi, err := os.Lstat(abs); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		if real, err := filepath.EvalSymlinks(abs); err != nil || !inside(l.Root, real) {
			return "", nil, fmt.Errorf("%s is a symbolic link to a file outside the repository: copy the task into the repository", p)
		}
	}
	t, err = taskfile.Load(abs)
	if err != nil {
		return "", nil, errors.New(l.rel(err))
	}
	if err := workspace.CheckItemID(t.ID); err != nil {
		return "", nil, fmt.Errorf("%s: %w: rename the file", l.rel(errors.New(abs)), err)
	}
	return abs, t, nil
}

// rel is err's text with absolute paths in the repository shortened to
// repository-relative ones.
func (l *Loader) rel(err error) string {
	return strings.ReplaceAll(err.Error(), l.Root+string(filepath.Separator), "")
}

// inside says whether path lies in dir.
func inside(dir, path string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

func validStage(s string) bool {
	for _, st := range taskfile.Stages {
		if st == s {
			return true
		}
	}
	return false
}
