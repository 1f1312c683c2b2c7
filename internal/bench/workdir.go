package bench

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/cadre-dev/cadre/internal/proc"
	"github.com/cadre-dev/cadre/internal/workspace"
)

// templates holds one committed repository per case, made once per bench.
// Every job of the case starts from a copy of its work tree and a minimal
// .git that borrows the template's objects (git alternates): a few file
// writes, where three git processes (init, add, commit) or a copy of the
// whole .git per job would cost more than the rest of the job.
type templates struct {
	dir  string // parent of the templates
	made map[string][]file
}

// file is one file of a template, by slash path; a directory when dir.
type file struct {
	path string
	data []byte
	mode os.FileMode
	dir  bool
}

func newTemplates(dir string) *templates { return &templates{dir: dir, made: map[string][]file{}} }

// workDir makes a fresh git repository with c's fixture committed, under
// parent, and returns its path. The agent's changes then show in git status.
func (t *templates) workDir(ctx context.Context, c Case, parent string) (string, error) {
	files, ok := t.made[c.ID()]
	if !ok {
		tpl, err := t.make(ctx, c)
		if err != nil {
			return "", err
		}
		if files, err = snapshot(os.DirFS(tpl)); err != nil {
			return "", fmt.Errorf("case template of %s: %w", c.ID(), err)
		}
		if files, err = withGitDir(files, tpl); err != nil {
			return "", fmt.Errorf("case template of %s: %w", c.ID(), err)
		}
		t.made[c.ID()] = files
	}
	dir, err := os.MkdirTemp(parent, "case-")
	if err != nil {
		return "", fmt.Errorf("work directory: %w", err)
	}
	if err := writeAll(dir, files); err != nil {
		return "", fmt.Errorf("work directory for %s: %w", c.ID(), err)
	}
	return dir, nil
}

// snapshot reads the regular files and directories of fsys, parents
// first, keeping the executable bit.
func snapshot(fsys fs.FS) ([]file, error) {
	var out []file
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case p == ".":
			return nil
		case p == ".git":
			return fs.SkipDir // see withGitDir
		case d.IsDir():
			out = append(out, file{path: p, dir: true})
			return nil
		case !d.Type().IsRegular():
			return nil // symlinks and devices have no place in a fixture
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		mode := os.FileMode(0o644)
		if info.Mode()&0o111 != 0 {
			mode = 0o755
		}
		out = append(out, file{path: p, data: data, mode: mode})
		return nil
	})
	return out, err
}

// withGitDir adds to a template's work tree the .git of a repository that
// has the template's commit checked out: HEAD, config, index and the branch
// as in the template, the objects borrowed through objects/info/alternates.
// Commits the agent makes go to the copy's own objects.
func withGitDir(files []file, tpl string) ([]file, error) {
	gitDir := filepath.Join(tpl, ".git")
	read := func(name string) ([]byte, error) { return os.ReadFile(filepath.Join(gitDir, name)) }
	head, err := read("HEAD")
	if err != nil {
		return nil, err
	}
	config, err := read("config")
	if err != nil {
		return nil, err
	}
	index, err := read("index")
	if err != nil {
		return nil, err
	}
	branch, err := read(filepath.Join("refs", "heads", "main"))
	if err != nil {
		return nil, err
	}
	return append(files,
		file{path: ".git", dir: true},
		file{path: ".git/objects", dir: true},
		file{path: ".git/objects/info", dir: true},
		file{path: ".git/refs", dir: true},
		file{path: ".git/HEAD", data: head, mode: 0o644},
		file{path: ".git/config", data: config, mode: 0o644},
		file{path: ".git/index", data: index, mode: 0o644},
		file{path: ".git/packed-refs", data: []byte(strings.TrimSpace(string(branch)) + " refs/heads/main\n"), mode: 0o644},
		file{path: ".git/objects/info/alternates", data: []byte(filepath.Join(gitDir, "objects") + "\n"), mode: 0o644},
	), nil
}

// make builds the template repository of c.
func (t *templates) make(ctx context.Context, c Case) (string, error) {
	dir, err := os.MkdirTemp(t.dir, "template-")
	if err != nil {
		return "", fmt.Errorf("case template: %w", err)
	}
	if c.fixture != nil {
		files, err := snapshot(c.fixture)
		if err == nil {
			err = writeAll(dir, files)
		}
		if err != nil {
			return "", fmt.Errorf("fixture of %s: %w", c.ID(), err)
		}
	}
	// No template: git's sample hooks would be copied into every job's
	// repository for nothing (hooks are disabled for cadre's git calls).
	repo := &workspace.Repo{Dir: dir}
	if _, err := repo.Git(ctx, "init", "--quiet", "--template=", "--initial-branch", "main"); err != nil {
		return "", fmt.Errorf("case template: %w", err)
	}
	if _, err := repo.CommitAll(ctx, "fixture of benchmark case "+c.ID(), workspace.Mark{}); err != nil {
		return "", fmt.Errorf("case template: %w", err)
	}
	return dir, nil
}

// changed lists the paths the agent changed in dir: git status, both
// sides of a rename.
func changed(ctx context.Context, dir string) ([]string, error) {
	files, err := (&workspace.Repo{Dir: dir}).Changed(ctx)
	if err != nil {
		return nil, fmt.Errorf("list changed files: %w", err)
	}
	return files, nil
}

// runCommands runs the commands names stands for in dir, in order, and
// returns their exit codes. Names the case defines no command for are
// returned as skipped: they are not checked, as in a run whose cadre.yaml
// leaves that command empty. The output goes to log.
func runCommands(ctx context.Context, dir string, names []string, cmds map[string]string, timeout time.Duration, log io.Writer) (exits map[string]int, skipped []string) {
	exits = map[string]int{}
	for _, name := range names {
		line := strings.TrimSpace(cmds[name])
		if line == "" {
			skipped = append(skipped, name)
			continue
		}
		fmt.Fprintf(log, "$ %s\n", line)
		// A case file is the repository owner's, like cadre.yaml: its
		// commands run through the shell as written.
		res, _ := proc.Run(ctx, proc.Spec{Path: "/bin/sh", Args: []string{"-c", line}, Dir: dir,
			Env: proc.MinimalEnv(os.LookupEnv, nil, nil), Log: log, Timeout: timeout})
		exits[name] = res.ExitCode
	}
	sort.Strings(skipped)
	return exits, skipped
}

// writeAll writes files under dir.
func writeAll(dir string, files []file) error {
	for _, f := range files {
		target := filepath.Join(dir, filepath.FromSlash(f.path))
		var err error
		if f.dir {
			err = os.MkdirAll(target, 0o755)
		} else {
			err = os.WriteFile(target, f.data, f.mode)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
