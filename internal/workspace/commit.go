package workspace

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cadre-dev/cadre/internal/commitmsg"
)

// CommitAll stages every change and commits it with message and mark's
// trailers (none for a zero mark), after checking that nothing under
// .cadre/ is staged; with nothing to commit it makes an empty commit, a
// base to branch from (a fixture, the demo's repository).
func (r *Repo) CommitAll(ctx context.Context, message string, mark Mark) (string, error) {
	return r.Commit(ctx, message, mark, CommitOptions{AllowEmpty: true})
}

// CommitExcept is CommitAll leaving the paths in except (and their changes)
// out of the commit, for work that belongs to someone else.
func (r *Repo) CommitExcept(ctx context.Context, message string, mark Mark, except []string) (string, error) {
	return r.Commit(ctx, message, mark, CommitOptions{Except: except})
}

// CommitOptions say what Commit leaves out and checks.
type CommitOptions struct {
	// AllowEmpty makes a commit even with nothing to commit; without it
	// Commit makes none and returns "".
	AllowEmpty bool
	// Except: paths (and their changes) left out, work of someone else.
	Except []string
	// Base: the branch the tree's branch was made from; the paths Check
	// sees are then the branch's whole change since it (its commits
	// included), not only what this commit adds.
	Base string
	// Check sees the changed paths before the commit is made; an error
	// refuses the commit (the changes stay staged).
	Check func(paths []string) error
	// Only, when set, commits these paths alone: nothing else is staged,
	// and what was staged before stays out of the commit.
	Only []string
	// Mask, when set, rewrites each file the commit takes (the paths
	// Check sees but Except's, or Only's) before it is made: a file it
	// changes is written back to the tree and staged so. cadre masks its
	// own secrets with it, which an agent may have written into its work.
	Mask func([]byte) []byte
	// Describe gives the message a body saying what the commit changes:
	// its files and their lines (commitmsg.Body). It costs a git process.
	Describe bool
}

// Commit stages every change but opt.Except, refuses the commit when a
// path under .cadre/ is staged or opt.Check says no, and commits with
// message and mark's trailers (none for a zero mark). It returns the new
// commit, or "" when there was nothing to commit (no empty commit is
// made). Staging, listing and committing take three git processes (four
// with paths to leave out, one more to describe a commit after the
// branch's first): the list of paths comes from one diff of the index
// against the merge base with opt.Base, which covers what status and a
// diff of the branch would each give.
func (r *Repo) Commit(ctx context.Context, message string, mark Mark, opt CommitOptions) (string, error) {
	if len(opt.Only) > 0 {
		return r.commitOnly(ctx, message, mark, opt.Only, opt.Mask)
	}
	if !r.stageSnapshot(ctx) {
		if _, err := r.Git(ctx, "add", "-A", "--", "."); err != nil {
			return "", err
		}
	}
	if len(opt.Except) > 0 {
		args := append([]string{"reset", "--quiet", "--"}, opt.Except...)
		if _, err := r.Git(ctx, args...); err != nil {
			// A path that never existed makes reset fail; unstage one by one.
			for _, p := range opt.Except {
				r.Git(ctx, "reset", "--quiet", "--", p)
			}
		}
	}
	paths, changes, err := r.stagedChanges(ctx, opt.Base, opt.Describe)
	if err != nil {
		return "", err
	}
	for _, p := range paths {
		if p == StateDir || strings.HasPrefix(p, StateDir+"/") {
			return "", fmt.Errorf("%w: %s is staged (is %s/ in .gitignore or info/exclude?)", ErrStateStaged, p, StateDir)
		}
	}
	if opt.Check != nil {
		if err := opt.Check(paths); err != nil {
			return "", err
		}
	}
	masked, err := r.maskFiles(ctx, paths, opt.Except, opt.Mask)
	if err != nil {
		return "", err
	}
	if masked {
		changes = nil // counted before the secrets were masked
	}
	if opt.Describe && len(paths) > 0 {
		if changes == nil {
			out, err := r.Git(ctx, "diff", "--cached", "--numstat", "-z", "--no-renames")
			if err != nil {
				return "", err
			}
			changes = commitmsg.ParseNumstat(out)
		}
		if body := commitmsg.Body(changes); body != "" {
			message += "\n\n" + body
		}
	}
	if opt.AllowEmpty {
		if _, err := r.Git(ctx, r.commitArgs(message, mark, "--allow-empty")...); err != nil {
			return "", err
		}
		return r.Head(ctx)
	}
	if len(paths) == 0 {
		return "", nil // nothing changed, even on the branch
	}
	if _, err := r.Git(ctx, r.commitArgs(message, mark)...); err != nil {
		// git commit refuses an empty commit; what it refused is asked
		// only then, sparing the usual commit a process.
		if _, derr := r.Git(ctx, "diff", "--cached", "--quiet"); derr == nil {
			return "", nil
		}
		return "", err
	}
	return r.Head(ctx)
}

// commitArgs is git commit's argv with message, mark's trailers and extra.
func (r *Repo) commitArgs(message string, mark Mark, extra ...string) []string {
	args := append([]string{"commit", "--quiet", "--no-verify"}, extra...)
	args = append(args, "-m", message)
	if mark.Step != "" {
		args = append(args, "-m", TrailerKey+": "+mark.Step+"\n"+RunTrailerKey+": "+mark.Run)
	}
	return append(append([]string(nil), r.committer()...), args...)
}

// commitOnly commits the changes of paths alone (none under .cadre/),
// masked by mask when it is set, returning "" when they have none.
func (r *Repo) commitOnly(ctx context.Context, message string, mark Mark, paths []string, mask func([]byte) []byte) (string, error) {
	for _, p := range paths {
		if p == StateDir || strings.HasPrefix(p, StateDir+"/") {
			return "", fmt.Errorf("%w: %s", ErrStateStaged, p)
		}
	}
	changed, err := r.Git(ctx, append([]string{"status", "--porcelain", "-z", "--"}, paths...)...)
	if err != nil {
		return "", err
	}
	if changed == "" {
		return "", nil
	}
	if _, err := r.maskFiles(ctx, paths, nil, mask); err != nil {
		return "", err
	}
	// Added first: --only commits a path git knows, new ones included.
	if _, err := r.Git(ctx, append([]string{"add", "-A", "--"}, paths...)...); err != nil {
		return "", err
	}
	args := append(r.commitArgs(message, mark, "--only"), "--")
	if _, err := r.Git(ctx, append(args, paths...)...); err != nil {
		return "", err
	}
	return r.Head(ctx)
}

// maskFiles rewrites through mask (when set) the regular files at paths
// (relative to the tree's top) but those under except, and stages the
// ones it changed. A deleted path, a link or a directory (a submodule) is
// left as it is.
func (r *Repo) maskFiles(ctx context.Context, paths, except []string, mask func([]byte) []byte) (bool, error) {
	changed, err := r.maskInPlace(paths, except, mask)
	if err != nil || len(changed) == 0 {
		return false, err
	}
	_, err = r.Git(ctx, append([]string{"add", "--"}, changed...)...)
	return true, err
}

// maskInPlace rewrites through mask (when set) the regular files at paths
// but those under except, and returns the ones it changed as literal
// pathspecs.
func (r *Repo) maskInPlace(paths, except []string, mask func([]byte) []byte) ([]string, error) {
	if mask == nil {
		return nil, nil
	}
	var changed []string
	for _, p := range paths {
		if slices.ContainsFunc(except, func(e string) bool { return p == e || strings.HasPrefix(p, strings.TrimSuffix(e, "/")+"/") }) {
			continue
		}
		full := filepath.Join(r.Dir, filepath.FromSlash(p))
		info, err := os.Lstat(full)
		if err != nil || !info.Mode().IsRegular() {
			continue
		}
		data, err := os.ReadFile(full)
		if err != nil {
			return changed, fmt.Errorf("mask %s: %w", p, err)
		}
		out := mask(data)
		if bytes.Equal(out, data) {
			continue
		}
		if err := os.WriteFile(full, out, info.Mode().Perm()); err != nil {
			return changed, fmt.Errorf("mask %s: %w", p, err)
		}
		// Literal: a file name is never read as a pattern.
		changed = append(changed, ":(literal)"+p)
	}
	return changed, nil
}

// stagedChanges is stagedSince, and, when describe is set and HEAD is
// base's tip (the branch's first commit), what each path changes: HEAD is
// then the merge base, so one diff gives both the paths and the commit's
// own changes. changes is nil when it was not taken.
func (r *Repo) stagedChanges(ctx context.Context, base string, describe bool) (paths []string, changes []commitmsg.Change, err error) {
	if describe && base != "" && r.atTip(ctx, base) {
		if out, err := r.Git(ctx, "diff", "--cached", "--numstat", "-z", "--no-renames", "--merge-base", base, "--"); err == nil {
			changes = commitmsg.ParseNumstat(out)
			for _, c := range changes {
				paths = append(paths, c.Path)
			}
			return paths, changes, nil
		}
	}
	paths, err = r.stagedSince(ctx, base)
	return paths, nil, err
}

// stagedSince lists the paths the index changes against the merge base of
// HEAD and base (against HEAD when base is ""), renames as a deletion and
// an addition. When base does not exist (or git predates --merge-base),
// it is what is staged plus what the branch changed since base, if
// anything.
func (r *Repo) stagedSince(ctx context.Context, base string) ([]string, error) {
	split := func(out string) []string {
		var paths []string
		for _, p := range strings.Split(out, "\x00") {
			if p != "" {
				paths = append(paths, p)
			}
		}
		return paths
	}
	if base != "" {
		if out, err := r.Git(ctx, "diff", "--cached", "--name-only", "-z", "--no-renames", "--merge-base", base, "--"); err == nil {
			return split(out), nil
		}
	}
	staged, err := r.Git(ctx, "diff", "--cached", "--name-only", "-z", "--no-renames")
	if err != nil {
		return nil, err
	}
	paths := split(staged)
	if base != "" {
		if out, err := r.Git(ctx, "diff", "--name-only", "-z", "--no-renames", base+"...HEAD", "--"); err == nil {
			paths = append(paths, split(out)...)
		}
	}
	return paths, nil
}
