package intake

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/cadre-dev/cadre/internal/item/taskfile"
)

// checkDeps refuses a dependency that names no task: neither one of the
// run nor a task file beside the dependent one (where the engine looks
// for dependencies outside the run). A typo would otherwise leave the
// task skipped, waiting for a task that can never complete.
func (l *Loader) checkDeps(tasks []*taskfile.Task) error {
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
				return fmt.Errorf("%s: depends_on: no task %q (no %s): fix the id or add the task",
					l.rel(errors.New(t.Path)), d, l.rel(errors.New(dep)))
			}
		}
	}
	return nil
}

// checkContexts refuses a context document that is not a file of the
// repository: the paths are relative to its root (the agent's working
// tree mirrors it), and a typo would hand every agent a path to nothing.
func (l *Loader) checkContexts(tasks []*taskfile.Task) error {
	for _, t := range tasks {
		for _, c := range t.Contexts {
			where := l.rel(errors.New(t.Path))
			if !filepath.IsLocal(filepath.FromSlash(c)) {
				return fmt.Errorf("%s: contexts: %q is not inside the repository: give a path relative to its root, e.g. docs/auth.md", where, c)
			}
			if fi, err := os.Stat(filepath.Join(l.Root, filepath.FromSlash(c))); err != nil || fi.IsDir() {
				return fmt.Errorf("%s: contexts: no file %s in the repository: fix the path (relative to the repository's root) or remove it", where, c)
			}
			if !l.resolvesInside(c) {
				return fmt.Errorf("%s: contexts: %s leads out of the repository through a symbolic link: give a document of the repository itself", where, c)
			}
		}
	}
	return nil
}

// resolvesInside says whether rel, a path relative to the repository's
// root, is still inside it once its links are followed: the agents are
// handed what it leads to.
func (l *Loader) resolvesInside(rel string) bool {
	root, err := filepath.EvalSymlinks(l.Root)
	if err != nil {
		return false
	}
	real, err := filepath.EvalSymlinks(filepath.Join(l.Root, filepath.FromSlash(rel)))
	if err != nil {
		return false
	}
	inside, err := filepath.Rel(root, real)
	return err == nil && filepath.IsLocal(inside)
}

// orderByDeps sorts tasks so each comes after the tasks it depends on;
// ties keep file order. A cycle is refused, naming its tasks.
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
			return fmt.Errorf("tasks depend on each other in a cycle: %s", strings.Join(append(path, t.ID), " → "))
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
