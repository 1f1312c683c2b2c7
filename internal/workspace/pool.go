package workspace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// poolDir holds the prepared worktrees, under the worktrees directory. Its
// name starts with a dot, which no item id does, and List looks only at the
// directory's direct children, so a prepared worktree is never taken for
// an item's.
const poolDir = ".pool"

// pool keeps worktrees checked out at the base ahead of need (limits.
// worktree_pool), for repositories where checking out is the slow part of
// starting an item: a new item takes a ready one, which costs a branch and
// a rename instead of a checkout, and a goroutine prepares the next.
//
// Prepared worktrees are checked out with every filter driver switched off,
// as an untrusted item's is; a trusted item takes one only while the
// repository defines no filter driver, when the two checkouts are the same.
type pool struct {
	w    *Worktrees
	repo *Repo // untrusted: filters off
	base string
	size int

	mu      sync.Mutex
	ready   []string // prepared worktree directories, oldest first
	next    int      // number of the next directory
	stopped bool

	wake   chan struct{}
	done   chan struct{}
	cancel context.CancelFunc // stops a preparation under way (StopPool)
}

// StartPool removes the prepared worktrees a killed run left behind, then
// keeps n worktrees checked out at base ready for Ensure: the first before
// it returns (the first item needs one at once, and would otherwise check
// it out itself), the others in the background. StopPool removes those
// still unused. n ≤ 0 does nothing.
func (w *Worktrees) StartPool(ctx context.Context, base string, n int) error {
	if n <= 0 {
		return nil
	}
	if err := w.cleanPool(ctx); err != nil {
		return err
	}
	p := &pool{w: w, repo: w.repo.Untrusted(), base: base, size: n, wake: make(chan struct{}, 1), done: make(chan struct{})}
	first := filepath.Join(w.dir, poolDir, "0")
	p.next = 1
	if err := p.prepare(ctx, first); err == nil {
		p.ready = append(p.ready, first)
	}
	w.poolMu.Lock()
	w.pool = p
	w.poolMu.Unlock()
	fctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	p.cancel = cancel
	go p.fill(fctx)
	p.poke()
	return nil
}

// StopPool stops preparing worktrees and removes the prepared ones no item
// took, so none is left registered after the run.
func (w *Worktrees) StopPool(ctx context.Context) error {
	w.poolMu.Lock()
	p := w.pool
	w.pool = nil
	w.poolMu.Unlock()
	if p == nil {
		return nil
	}
	p.mu.Lock()
	p.stopped = true
	p.mu.Unlock()
	// A checkout under way is cut short: what it leaves, cleanPool removes.
	p.cancel()
	p.poke()
	<-p.done
	return w.cleanPool(ctx)
}

// cleanPool removes every prepared worktree: each registered one with git,
// any directory git no longer knows by hand, and then the registrations
// whose directories are gone. A preparation or a hand-over cut short by a
// kill leaves at worst such a directory or registration: never one an
// item is given.
func (w *Worktrees) cleanPool(ctx context.Context) error {
	dir := filepath.Join(w.dir, poolDir)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("clean worktree pool: %w", err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		// Twice --force: a checkout cut short leaves its worktree locked
		// ("initializing"), which one --force does not remove.
		if _, err := w.repo.Git(ctx, "worktree", "remove", "--force", "--force", "--", p); err != nil {
			if err := os.RemoveAll(p); err != nil {
				return fmt.Errorf("clean worktree pool: %w", err)
			}
		}
	}
	w.unlockAdmins(ctx, func(gitdir string) bool { return strings.HasPrefix(gitdir, dir+string(filepath.Separator)) })
	if _, err := w.repo.Git(ctx, "worktree", "prune"); err != nil {
		return fmt.Errorf("clean worktree pool: %w", err)
	}
	os.Remove(dir)
	return nil
}

// unlockAdmins unlocks the registrations of the worktrees whose .git (the
// gitdir git records) match says, so that prune removes those whose
// directory is gone: git locks a worktree while it checks it out, and a
// checkout killed early (StopPool, a killed run, a cancelled Ensure)
// leaves the lock, which prune respects.
func (w *Worktrees) unlockAdmins(ctx context.Context, match func(gitdir string) bool) {
	common, _, err := w.repo.gitDirs(ctx)
	if err != nil {
		return
	}
	admins, _ := filepath.Glob(filepath.Join(common, "worktrees", "*", "gitdir"))
	for _, f := range admins {
		data, err := os.ReadFile(f)
		if err != nil || !match(strings.TrimSpace(string(data))) {
			continue
		}
		os.Remove(filepath.Join(filepath.Dir(f), "locked"))
	}
}

func (p *pool) poke() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// fill prepares worktrees until the pool holds size of them, each time it
// is woken (at the start, after a hand-over), until stopped.
func (p *pool) fill(ctx context.Context) {
	defer close(p.done)
	for range p.wake {
		for {
			p.mu.Lock()
			if p.stopped || len(p.ready) >= p.size {
				stopped := p.stopped
				p.mu.Unlock()
				if stopped {
					return
				}
				break
			}
			dir := filepath.Join(p.w.dir, poolDir, strconv.Itoa(p.next))
			p.next++
			p.mu.Unlock()
			if err := p.prepare(ctx, dir); err != nil {
				break // items go on without what is missing: each gets a plain worktree add
			}
			p.mu.Lock()
			p.ready = append(p.ready, dir)
			p.mu.Unlock()
		}
	}
}

// prepare checks out a detached worktree at the base: the one git
// process a plain worktree add costs, spent ahead of need.
func (p *pool) prepare(ctx context.Context, dir string) error {
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return err
	}
	p.w.mu.Lock()
	defer p.w.mu.Unlock()
	_, err := p.repo.Git(ctx, "worktree", "add", "--quiet", "--detach", "--", dir, p.base)
	return err
}

// take hands a prepared worktree to item on a new branch from base (the
// base branch, or the commit origin has it at), at path, or returns nil
// when none is ready or the hand-over fails (the caller then creates the
// worktree as usual). The prepared worktree is switched to the new branch
// where it stands (the files base changed since it was prepared are
// checked out, none while the base has not moved), then moved: its registration is pointed at path
// first and the directory renamed after, so a kill in between leaves a
// directory the next run's cleanPool removes and a registration it
// prunes, never an item worktree on the wrong branch.
func (p *pool) take(ctx context.Context, repo *Repo, branch, base, path string) *Repo {
	if !repo.untrusted && p.repo.filterConfig(ctx) != "" {
		return nil // checked out without the filters a trusted item gets
	}
	p.mu.Lock()
	if len(p.ready) == 0 {
		p.mu.Unlock()
		return nil
	}
	dir := p.ready[0]
	p.ready = p.ready[1:]
	p.mu.Unlock()
	p.poke()
	wt := repo.child(dir)
	repo.inherit(ctx, wt)
	discard := func() {
		// Removed now, so the branch it may hold is free for the plain
		// worktree add the caller falls back to; what is left goes at the
		// end of the run (cleanPool).
		p.w.mu.Lock()
		defer p.w.mu.Unlock()
		if _, err := p.w.repo.Git(ctx, "worktree", "remove", "--force", "--", dir); err != nil {
			os.RemoveAll(dir)
			p.w.repo.Git(ctx, "worktree", "prune")
		}
	}
	if _, err := wt.Git(ctx, "checkout", "--quiet", "--no-track", "-b", branch, base); err != nil {
		discard()
		return nil
	}
	admin, ok := linkedGitDir(dir)
	if !ok {
		discard()
		return nil
	}
	if err := writeFileAtomic(filepath.Join(admin, "gitdir"), []byte(filepath.Join(path, ".git")+"\n")); err != nil {
		discard()
		return nil
	}
	if err := os.Rename(dir, path); err != nil {
		discard()
		return nil
	}
	moved := repo.child(path)
	repo.inherit(ctx, moved)
	return moved
}

// writeFileAtomic replaces path through a temp file and a rename, so a
// kill leaves the old content or the new.
func writeFileAtomic(path string, data []byte) error {
	tmp := path + ".cadre-tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}
