package engine

import (
	"context"
	"fmt"
	"sync"

	"github.com/cadre-dev/cadre/internal/workspace"
)

// A new item branches from the base as origin has it when the item
// starts, not from the checkout's own base branch, which cadre never
// fetches and which may be several merges behind: an item started from
// it would redo work already merged and conflict at once. The base is
// fetched into refs/remotes/origin/<base> with the token a push carries
// (the Forge's RemoteAuth), once for the items that start together; an
// item whose branch exists already (a resume) needs no fetch. A
// repository without an origin, or whose origin has no such branch,
// starts items from the local branch, as cadre always did (task files in
// a local repository, the demo). A fetch that fails starts the item from
// the local branch too, with a warning naming the remote and the error:
// the work goes on offline, and the pull request's conflict, if any, is
// the watch's to resolve. A run --in-place makes no branch and fetches
// nothing; a remote item (executor.OpenOptions.Remote) fetches its base
// itself.

// baseRemote is the remote new items' base is fetched from.
const baseRemote = "origin"

// baseFetches shares one fetch of the base among the items that start
// while it runs, and knows what items' work is measured against.
type baseFetches struct {
	mu  sync.Mutex
	cur *baseFetch
	ref string // baseRef's answer, "" until known
}

// baseFetch is one fetch of the base: the commit origin's base branch
// was at ("" to start from the local branch), and why not, to warn of.
type baseFetch struct {
	done   chan struct{}
	commit string
	warn   string
	err    error // ctx's, when the fetch was cut short
}

// startBase is what item ir's new branch starts from: origin's base
// branch as fetched now, or the local base branch (see above). The
// caller makes the branch only when it does not exist yet.
func (e *Engine) startBase(ctx context.Context, ir *itemRun, branch string) (string, error) {
	base := e.d.Config.BaseBranch
	if _, err := e.repo.RefCommit(ctx, "refs/heads/"+branch); err == nil {
		return base, nil // the item's branch is made: the base does not matter
	}
	f := e.fetchBase(ctx)
	if f.err != nil {
		return "", f.err
	}
	if f.warn != "" {
		e.warnItem(ir.run, ir.it.ID, fmt.Sprintf("%s; the item starts from the local branch %s", f.warn, base))
	}
	if f.commit == "" {
		return base, nil
	}
	return f.commit, nil
}

// fetchBase fetches the base from origin, or waits for the fetch under
// way when one is.
func (e *Engine) fetchBase(ctx context.Context) *baseFetch {
	b := &e.bases
	b.mu.Lock()
	if f := b.cur; f != nil {
		b.mu.Unlock()
		select {
		case <-f.done:
			return f
		case <-ctx.Done():
			return &baseFetch{err: ctx.Err()}
		}
	}
	f := &baseFetch{done: make(chan struct{})}
	b.cur = f
	b.mu.Unlock()
	f.commit, f.warn, f.err = e.originBase(ctx)
	b.mu.Lock()
	b.cur = nil
	if f.commit != "" {
		b.ref = workspace.TrackingRef(baseRemote, e.d.Config.BaseBranch)
	}
	b.mu.Unlock()
	close(f.done)
	return f
}

// originBase fetches origin's base branch and returns its commit; "" and
// no warning when there is no origin, or why the fetch failed.
func (e *Engine) originBase(ctx context.Context) (commit, warn string, err error) {
	base := e.d.Config.BaseBranch
	if _, err := e.repo.Git(ctx, "remote", "get-url", baseRemote); err != nil {
		return "", "", ctx.Err() // no origin: the local branch is the base
	}
	failed := func(err error) (string, string, error) {
		if ctx.Err() != nil {
			return "", "", ctx.Err()
		}
		return "", fmt.Sprintf("could not fetch %s from %s: %v", base, baseRemote, e.d.Mask.String(err.Error())), nil
	}
	target, header := baseRemote, ""
	if ra, ok := e.d.Forge.(remoteAuther); ok {
		if target, header, err = ra.RemoteAuth(ctx, e.d.Root, baseRemote); err != nil {
			return failed(err)
		}
	}
	heads, err := e.repo.FetchBranches(ctx, target, header, baseRemote, base)
	if err != nil {
		return failed(err)
	}
	if heads[base] == "" {
		return "", fmt.Sprintf("%s has no branch %s", baseRemote, base), nil
	}
	return heads[base], "", nil
}

// baseRef is what an item's work is measured against (the paths a commit
// changes, whether the branch has anything to publish, the pull request's
// commits and files): origin's base branch as last fetched, which new
// items start from and the pull request is compared with, or the local
// base branch where there is none. Looked up once per engine, unless a
// fetch made it known.
func (e *Engine) baseRef(ctx context.Context) string {
	b := &e.bases
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ref == "" {
		b.ref = e.d.Config.BaseBranch
		if tracking := workspace.TrackingRef(baseRemote, b.ref); e.hasRef(ctx, tracking) {
			b.ref = tracking
		}
	}
	return b.ref
}

// hasRef says whether the repository has ref.
func (e *Engine) hasRef(ctx context.Context, ref string) bool {
	_, err := e.repo.RefCommit(ctx, ref)
	return err == nil
}
