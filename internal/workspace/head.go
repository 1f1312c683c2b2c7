package workspace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Reading a few plain files of the repository in-process instead of
// starting git for them: each git process costs a fork and exec and git's
// own start-up, and a fleet of items asks these questions many times. Each
// reader understands only git's plain files layout and falls back to git
// for anything else (a reftable repository, a packed ref, an odd HEAD).

// headOf reads the HEAD file of the tree's git directory: the branch it is
// on ("" when detached) and, when detached, the commit.
func (r *Repo) headOf(ctx context.Context) (branch, sha string, ok bool) {
	_, gitDir, err := r.gitDirs(ctx)
	if err != nil {
		return "", "", false
	}
	data, err := os.ReadFile(filepath.Join(gitDir, "HEAD"))
	if err != nil {
		return "", "", false
	}
	head := strings.TrimSpace(string(data))
	if ref, isRef := strings.CutPrefix(head, "ref: "); isRef {
		name, ok := strings.CutPrefix(ref, "refs/heads/")
		return name, "", ok && plainBranch(name)
	}
	return "", head, isObjectID(head)
}

// Branch returns the branch the tree is on, or "HEAD" when it is detached,
// as git rev-parse --abbrev-ref HEAD does.
func (r *Repo) Branch(ctx context.Context) (string, error) {
	if branch, _, ok := r.headOf(ctx); ok {
		if branch == "" {
			return "HEAD", nil
		}
		return branch, nil
	}
	out, err := r.Git(ctx, "rev-parse", "--abbrev-ref", "HEAD")
	return strings.TrimSpace(out), err
}

// Head returns the commit HEAD names.
func (r *Repo) Head(ctx context.Context) (string, error) {
	if branch, sha, ok := r.headOf(ctx); ok {
		if branch == "" {
			return sha, nil
		}
		if id, ok := r.branchTip(ctx, branch); ok {
			return id, nil
		}
	}
	out, err := r.Git(ctx, "rev-parse", "HEAD")
	return strings.TrimSpace(out), err
}

// headAndTip reads HEAD's commit and the one branch points at, the
// branch's without a git process; ok is false when they cannot be read so.
func (r *Repo) headAndTip(ctx context.Context, branch string) (head, tip string, ok bool) {
	if !plainBranch(branch) {
		return "", "", false
	}
	if tip, ok = r.branchTip(ctx, branch); !ok {
		return "", "", false
	}
	head, err := r.Head(ctx)
	return head, tip, err == nil && isObjectID(head)
}

// atTip says whether HEAD is the commit branch points at: then HEAD is its
// own merge base with branch. false when that cannot be read without git.
func (r *Repo) atTip(ctx context.Context, branch string) bool {
	head, tip, ok := r.headAndTip(ctx, branch)
	return ok && head == tip
}

// branchTip reads the commit branch points at from its loose ref (where git
// writes a branch it moves), else from packed-refs (where a clone puts
// every branch, and older copies of loose ones).
func (r *Repo) branchTip(ctx context.Context, branch string) (string, bool) {
	common, _, err := r.gitDirs(ctx)
	if err != nil {
		return "", false
	}
	ref := "refs/heads/" + branch
	if data, err := os.ReadFile(filepath.Join(common, filepath.FromSlash(ref))); err == nil {
		id := strings.TrimSpace(string(data))
		return id, isObjectID(id)
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", false
	}
	data, err := os.ReadFile(filepath.Join(common, "packed-refs"))
	if err != nil {
		return "", false
	}
	for line := range strings.Lines(string(data)) {
		id, name, ok := strings.Cut(strings.TrimRight(line, "\n"), " ")
		if ok && name == ref {
			return id, isObjectID(id)
		}
	}
	return "", false
}

// isObjectID accepts a full SHA-1 or SHA-256 object name in lower-case hex.
func isObjectID(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// plainBranch reports whether name is a branch name git certainly accepts
// (git check-ref-format --branch): slash-separated components of ASCII
// letters, digits, '-', '_' and '.', none empty, none starting with '.' or
// '-', none ending with ".lock" or '.', no "..", not "HEAD". Every name it
// accepts is valid; a name it refuses may still be, and is asked of git.
func plainBranch(name string) bool {
	if name == "" || name == "HEAD" || strings.Contains(name, "..") {
		return false
	}
	for _, part := range strings.Split(name, "/") {
		if part == "" || part[0] == '.' || part[0] == '-' || strings.HasSuffix(part, ".lock") || strings.HasSuffix(part, ".") {
			return false
		}
		for i := 0; i < len(part); i++ {
			c := part[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
				return false
			}
		}
	}
	return true
}

// linkedGitDir reads the .git file of a linked worktree at dir ("gitdir:
// <path>"), the worktree's own git directory, absolute.
func linkedGitDir(dir string) (string, bool) {
	data, err := os.ReadFile(filepath.Join(dir, ".git"))
	if err != nil {
		return "", false
	}
	p, ok := strings.CutPrefix(strings.TrimSpace(string(data)), "gitdir: ")
	if !ok || p == "" {
		return "", false
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	return filepath.Clean(p), true
}

// inherit gives c, a new worktree of the repository r belongs to, what r
// already knows and holds for c too, so c's first steps do not ask git
// again: the common directory (c's own git directory is read from its .git
// file), and, while r's configuration is settled and c has no
// configuration of its own (no config.worktree) nor an include that could
// depend on the tree, the files configuration is read from and the filter
// drivers it defines. c's stamp is taken over its own base files, so a
// change to any of them is seen as before.
// r's own are asked of git when it has none yet: once for the run, not
// once per worktree.
func (r *Repo) inherit(ctx context.Context, c *Repo) {
	if _, _, err := r.gitDirs(ctx); err != nil {
		return
	}
	p := r.gitCache()
	p.mu.Lock()
	defer p.mu.Unlock()
	r.configOrigins(ctx, p)
	if c.untrusted && !p.haveFilters && p.stamp != "" {
		// As filterConfig would ask, once while the stamp holds.
		out, _ := git(ctx, r.Dir, "config", "--name-only", "--get-regexp", filterKeys)
		p.filters, p.haveFilters = out, true
	}
	gitDir, ok := linkedGitDir(c.Dir)
	if !ok {
		return
	}
	cc := c.gitCache()
	cc.mu.Lock()
	defer cc.mu.Unlock()
	cc.common, cc.gitDir = p.common, gitDir
	if p.stamp == "" || fingerprint(append(baseConfigFiles(p.common, p.gitDir), p.origins...)) != p.stamp {
		return
	}
	if _, err := os.Lstat(filepath.Join(gitDir, "config.worktree")); err == nil {
		return
	}
	stamp := fingerprint(append(baseConfigFiles(cc.common, cc.gitDir), p.origins...))
	if stamp == "" {
		return
	}
	cc.origins, cc.stamp = p.origins, stamp
	cc.filters, cc.haveFilters, cc.email = p.filters, p.haveFilters, p.email
}

// CommitsAhead counts the commits HEAD has that base does not.
func (r *Repo) CommitsAhead(ctx context.Context, base string) (int, error) {
	out, err := r.Git(ctx, "rev-list", "--count", "--end-of-options", base+"..HEAD")
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(out))
	if err != nil {
		return 0, fmt.Errorf("rev-list: %w", err)
	}
	return n, nil
}
