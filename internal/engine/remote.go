package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/workspace"
)

// A remote item's worktree lives in this process's repository, the
// worker's own clone, and its branch travels between workers through a
// git remote: fetched before the item's first step in this process,
// pushed after every step that committed, under a lease on the head this
// process last fetched or pushed. Between two steps this process learns
// that another worker moved the branch from the journal: a completed
// commit step whose commit it has not accounted for (every committing
// step pushes before it completes), or a commit step that was started
// before (its worker may have pushed and died before journaling it). Only
// then does it fetch again; an item that stayed here costs no git process
// between steps.

// OpenOptions say how an executor's process works on a run's items.
type OpenOptions struct {
	// Remote, when set, names the git remote of this process's
	// repository (e.g. "origin") through which the items' branches
	// travel between workers on different machines.
	Remote string
}

// remoteError is a fetch or push of a remote item that failed: the step
// is retried (the remote may be back, another worker may take it) rather
// than failing the item.
type remoteError struct{ err error }

func (e *remoteError) Error() string { return e.err.Error() }
func (e *remoteError) Unwrap() error { return e.err }

// isRemoteErr says whether err is a remote item's failed fetch or push.
func isRemoteErr(err error) bool {
	var re *remoteError
	return errors.As(err, &re)
}

// remoteItem is what this process knows of a remote item's branch.
type remoteItem struct {
	name   string // the git remote
	branch string // the item's branch, set by provision

	mu   sync.Mutex
	head string // the remote's branch as last fetched or pushed here; "" none
	// own is the head this process last pushed: the commits it holds
	// are all in the journal (see committedBefore).
	own string
	// seen are the commits of the item's completed commit steps in the
	// journal that this process accounted for (fetched or pushed).
	seen map[string]bool
	// wips are the journal's WIP records (wipRec.key) this process
	// accounted for: saved here, restored here or found stale.
	wips map[string]bool
	// saved is the tree of the last WIP this process saved or restored:
	// leftovers with this tree are in the journal and on the remote, and
	// may go.
	saved string
	// n numbers the item's WIP records: the latest journaled one's, one
	// more for each this process saves.
	n int
}

// checkRemote refuses a remote this repository does not have, and a run
// in place, whose items have no worktree to move between machines: a
// person must fix either (ErrPermanent).
func (e *Engine) checkRemote(ctx context.Context, opts Options, remote string) error {
	if opts.InPlace {
		return permanentError{errors.New("its items work in place: only items in worktrees can work through a remote")}
	}
	if strings.HasPrefix(remote, "-") {
		return permanentError{fmt.Errorf("remote %q is not a remote's name", remote)}
	}
	if _, err := e.repo.Git(ctx, "remote", "get-url", remote); err != nil {
		err = fmt.Errorf("remote %q: %w (add it with git remote add)", remote, err)
		if ctx.Err() != nil {
			return err // git was cut short, not refused
		}
		return permanentError{err}
	}
	return nil
}

// remoteAuther is a Forge whose credential goes with the requests to the
// remote: it returns the URL to use (the remote's, read once) and the
// header, or remote itself and "" when the remote takes none from it.
type remoteAuther interface {
	RemoteAuth(ctx context.Context, dir, remote string) (target, header string, err error)
}

// remoteTarget is where a remote item's fetches and pushes go, and with
// which credential header (never given to git: see workspace.PushLease).
func (e *Engine) remoteTarget(ctx context.Context, ir *itemRun) (string, string, error) {
	if ra, ok := e.d.Forge.(remoteAuther); ok {
		return ra.RemoteAuth(ctx, e.d.Root, ir.remote.name)
	}
	return ir.remote.name, "", nil
}

// fetchItem fetches the base and the item's branch from the remote and
// returns the start point of the item's worktree: the remote's branch
// when it has one, else the remote's base (a new item).
func (e *Engine) fetchItem(ctx context.Context, ir *itemRun, branch string) (string, error) {
	rem := ir.remote
	rem.branch = branch
	if err := e.fetch(ctx, ir, true); err != nil {
		return "", err
	}
	if rem.head != "" {
		return workspace.TrackingRef(rem.name, branch), nil
	}
	// No commit of the item was pushed yet: uncommitted changes an
	// earlier step left are on the base as it was then, which a new
	// worktree starts from so that they can be restored.
	_, wip, err := e.journaled(ctx, ir)
	if err != nil {
		return "", err
	}
	if wip != nil && wip.w.Commit != "" {
		if err := e.fetchCommit(ctx, ir, wip.w.Commit); err != nil {
			return "", err
		}
		return wip.w.Base, nil
	}
	return workspace.TrackingRef(rem.name, e.d.Config.BaseBranch), nil
}

// fetch brings the remote's branch of the item (and the base, when base)
// into this repository and notes its head. The commits the journal has
// now are accounted for: the fetched branch holds every pushed one.
func (e *Engine) fetch(ctx context.Context, ir *itemRun, base bool) error {
	rem := ir.remote
	seen, _, err := e.journaled(ctx, ir)
	if err != nil {
		return err
	}
	target, header, err := e.remoteTarget(ctx, ir)
	if err != nil {
		return fmt.Errorf("item %s: %w", ir.it.ID, err)
	}
	want := []string{rem.branch}
	if base {
		want = append(want, e.d.Config.BaseBranch)
	}
	var heads map[string]string
	// Not beside a worktree being added: git fetch reads every worktree's
	// HEAD, which git worktree add writes as a placeholder first.
	err = e.wts.Exclusive(func() (err error) {
		heads, err = e.repo.FetchBranches(ctx, target, header, rem.name, want...)
		return err
	})
	if err != nil {
		return &remoteError{fmt.Errorf("item %s: %w", ir.it.ID, err)}
	}
	if base && heads[e.d.Config.BaseBranch] == "" {
		return fmt.Errorf("item %s: remote %s has no branch %s (cadre.yaml base_branch)", ir.it.ID, rem.name, e.d.Config.BaseBranch)
	}
	rem.mu.Lock()
	rem.head, rem.seen = heads[rem.branch], seen
	rem.mu.Unlock()
	return nil
}

// catchUp brings an item's worktree that this process already provisioned
// to the remote's branch, when the journal says another worker moved it
// since this process last fetched or pushed.
func (e *Engine) catchUp(ctx context.Context, ir *itemRun) error {
	if ir.remote == nil {
		return nil
	}
	now, wip, err := e.journaled(ctx, ir)
	if err != nil {
		return err
	}
	rem := ir.remote
	rem.mu.Lock()
	moved := false
	for sha := range now {
		moved = moved || !rem.seen[sha]
	}
	// A WIP this process did not account for: another worker ran a
	// step of the item since and left the tree as it says.
	moved = moved || wip != nil && !rem.wips[wip.key()]
	rem.mu.Unlock()
	if !moved {
		return nil
	}
	return e.refresh(ctx, ir, wip)
}

// refresh fetches the item's branch and brings its worktree to it and to
// the journal's latest WIP (a commit step may have pushed and died before
// journaling, so the branch is fetched even when only the WIP moved).
func (e *Engine) refresh(ctx context.Context, ir *itemRun, wip *wipRec) error {
	ir.gitMu.Lock()
	defer ir.gitMu.Unlock()
	if err := e.fetch(ctx, ir, false); err != nil {
		return err
	}
	if _, err := e.bringUp(ctx, ir); err != nil {
		return err
	}
	return e.syncWIP(ctx, ir, wip)
}

// bringUp moves the item's worktree to the remote's head as last fetched,
// when it is not there. Only a fast-forward is made: a worktree with
// commits the remote's branch lacks is refused, never reset. Uncommitted
// changes are this process's leftovers of work the item went on without
// (it continued from the pushed branch elsewhere): they are put aside in
// the stash, not lost, or dropped when they are the last WIP saved here,
// which the caller then brings back (see syncWIP). It says whether the
// head moved.
func (e *Engine) bringUp(ctx context.Context, ir *itemRun) (bool, error) {
	rem := ir.remote
	rem.mu.Lock()
	want := rem.head
	rem.mu.Unlock()
	if want == "" {
		return false, nil
	}
	head, err := ir.repo.Head(ctx)
	if err != nil {
		return false, fmt.Errorf("item %s: %w", ir.it.ID, err)
	}
	if head == want {
		return false, nil
	}
	msg := fmt.Sprintf("cadre: %s's uncommitted changes at %.12s, before %s moved to %.12s", ir.it.ID, head, rem.branch, want)
	if _, err := e.putAside(ctx, ir, msg, ""); err != nil {
		return false, err
	}
	if err := ir.repo.FastForward(ctx, want); err != nil {
		if errors.Is(err, workspace.ErrNotFastForward) {
			return false, fmt.Errorf("item %s refused: %s's branch %s is at %.12s, which does not contain this worktree's %.12s: "+
				"its commits here were never pushed and the item went on without them; keep what you need, then remove the worktree %s and the branch (git worktree remove --force, git branch -D) so that it starts again from the remote's: %w",
				ir.it.ID, rem.name, rem.branch, want, head, ir.dir, err)
		}
		return false, fmt.Errorf("item %s: bring the worktree to %s's %s: %w", ir.it.ID, rem.name, rem.branch, err)
	}
	return true, nil
}

// pushItem pushes a remote item's branch after step mark committed sha
// (or found it made), unless the remote already has its head, and returns
// the step's commit: sha, or the remote's when the push is refused because
// the remote holds a commit of the step already (see adoptPushed). The
// lease is the head this process last fetched or pushed: a push over
// another worker's commits is refused, never forced.
func (e *Engine) pushItem(ctx context.Context, ir *itemRun, sha string, mark workspace.Mark) (string, error) {
	rem := ir.remote
	if rem == nil {
		return sha, nil
	}
	rem.mu.Lock()
	rem.seen[sha] = true // the step journals it once this returns
	rem.mu.Unlock()
	head, err := ir.repo.Head(ctx)
	if err != nil {
		return sha, fmt.Errorf("push %s: %w", rem.branch, err)
	}
	rem.mu.Lock()
	lease := rem.head
	rem.mu.Unlock()
	if head == lease {
		return sha, nil
	}
	target, header, err := e.remoteTarget(ctx, ir)
	if err != nil {
		return sha, fmt.Errorf("push %s: %w", rem.branch, err)
	}
	if err := ir.repo.PushLease(ctx, target, rem.branch, header, lease); err != nil {
		if errors.Is(err, workspace.ErrRemoteMoved) && head == sha {
			found, aerr := e.adoptPushed(ctx, ir, sha, lease, mark)
			if aerr != nil {
				return sha, aerr
			}
			if found != "" {
				return found, nil
			}
		}
		return sha, &remoteError{fmt.Errorf("push %s to %s: %w", rem.branch, rem.name, err)}
	}
	rem.mu.Lock()
	rem.head, rem.own = head, head
	rem.seen[head] = true
	rem.mu.Unlock()
	e.d.Crash(CrashRemotePushed)
	return sha, nil
}

// adoptPushed is a refused push of sha, the commit step mark just made
// on lease: when the commits the remote's branch gained since lease hold
// one of the same step, a worker pushed it and died before the journal
// heard of the step (or its git push, orphaned, landed after it died), so
// sha repeats it. The branch here goes back to the remote's head, sha
// dropped, and the remote's commit is the step's. It returns "" when the
// remote's new commits hold none of the step: they are another's, and
// the step is tried again.
func (e *Engine) adoptPushed(ctx context.Context, ir *itemRun, sha, lease string, mark workspace.Mark) (string, error) {
	rem := ir.remote
	if err := e.fetch(ctx, ir, false); err != nil {
		return "", err
	}
	rem.mu.Lock()
	now := rem.head
	rem.mu.Unlock()
	if now == "" {
		return "", nil
	}
	found, err := ir.repo.FindStepCommitIn(ctx, lease, now, mark)
	if err != nil || found == "" {
		if err != nil {
			err = fmt.Errorf("item %s: %w", ir.it.ID, err)
		}
		return "", err
	}
	if err := ir.repo.Unstack(ctx, now); err != nil {
		return "", fmt.Errorf("item %s: drop commit %.12s, which repeats step %s's %.12s on %s's %s: %w", ir.it.ID, sha, mark.Step, found, rem.name, rem.branch, err)
	}
	rem.mu.Lock()
	rem.seen[found] = true
	rem.mu.Unlock()
	e.publish(ir, event.Event{Type: event.Warning, Message: fmt.Sprintf("step %s: %s's %s has its commit %.12s already, pushed by a worker the journal did not hear from: that commit is the step's, this worker's %.12s is dropped", mark.Step, rem.name, rem.branch, found, sha)})
	return found, nil
}

// unstackRepeat drops the worktree's head when it is a commit of step
// mark that the remote's branch (as last fetched) lacks, and the commits
// the branch has that the worktree lacks hold one of the same step, which
// the head repeats; it says whether it did.
func (e *Engine) unstackRepeat(ctx context.Context, ir *itemRun, mark workspace.Mark) (bool, error) {
	rem := ir.remote
	rem.mu.Lock()
	now := rem.head
	rem.mu.Unlock()
	head, err := ir.repo.Head(ctx)
	if err != nil || now == "" {
		return false, err
	}
	if mine, err := ir.repo.FindStepCommitIn(ctx, now, head, mark); err != nil || mine != head {
		return false, err
	}
	theirs, err := ir.repo.FindStepCommitIn(ctx, head, now, mark)
	if err != nil || theirs == "" {
		return false, err
	}
	if err := ir.repo.Unstack(ctx, now); err != nil {
		return false, fmt.Errorf("item %s: drop commit %.12s, which repeats step %s's %.12s on %s's %s: %w", ir.it.ID, head, mark.Step, theirs, rem.name, rem.branch, err)
	}
	e.publish(ir, event.Event{Type: event.Warning, Message: fmt.Sprintf("step %s: %s's %s has its commit %.12s already: this worker's unpushed %.12s is dropped", mark.Step, rem.name, rem.branch, theirs, head)})
	return true, nil
}

// committedBefore returns the commit of step mark the item's tree has,
// "" when none, for a commit step about to commit; tried says the
// journal has the step started before. A remote item's step may have
// been tried by a worker that pushed its commit and died before the
// journal of truth heard of the step (a Temporal worker's journal is a
// replica that dies with it), so its tree is searched whenever its head
// came from the remote rather than from this process's own push; a stale
// tree's push is refused instead (see adoptPushed). The caller holds
// ir.gitMu.
func (e *Engine) committedBefore(ctx context.Context, ir *itemRun, mark workspace.Mark, tried bool) (string, error) {
	if err := e.remoteCommit(ctx, ir, tried); err != nil {
		if !errors.Is(err, workspace.ErrNotFastForward) {
			return "", err
		}
		// This process's own commit of the step, on a worktree behind
		// the remote, whose push was refused before it could adopt the
		// remote's commit of the step (its fetch failed).
		if ok, uerr := e.unstackRepeat(ctx, ir, mark); uerr != nil || !ok {
			if uerr != nil {
				err = uerr
			}
			return "", err
		}
	}
	if !tried && ir.remote != nil {
		rem := ir.remote
		rem.mu.Lock()
		tried = rem.head != "" && rem.head != rem.own
		rem.mu.Unlock()
	}
	if !tried {
		return "", nil
	}
	return ir.repo.FindStepCommit(ctx, mark)
}

// remoteCommit readies a commit step of a remote item: a step started
// before may have committed and pushed on a worker that died before
// journaling it, so the remote's branch is fetched and the worktree
// brought to it first, where FindStepCommit then finds the commit. The
// uncommitted changes the tree had then are the journal's latest WIP, on
// the head before: what the commit did not take of them (a plan task's
// leaves other tasks' files out) is restored. The caller holds ir.gitMu.
func (e *Engine) remoteCommit(ctx context.Context, ir *itemRun, tried bool) error {
	if ir.remote == nil || !tried {
		return nil
	}
	if err := e.fetch(ctx, ir, false); err != nil {
		return err
	}
	moved, err := e.bringUp(ctx, ir)
	if err != nil || !moved {
		return err
	}
	_, wip, err := e.journaled(ctx, ir)
	if err != nil {
		return err
	}
	return e.syncWIP(ctx, ir, wip)
}
