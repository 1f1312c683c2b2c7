// Package remote carries an item's branch between the machines that work
// on it, through a git remote: fetched before the item's first step in a
// process, pushed after every step that committed, and its uncommitted
// changes saved as work-in-progress commits between steps. The journal
// says which commits and work-in-progress are current; see Item.
package remote

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/cadre-dev/cadre/internal/store"
	"github.com/cadre-dev/cadre/internal/workspace"
)

// Crash points, where tests kill the process.
const (
	// CrashPushed: after a step pushed its commit, before it is journaled.
	CrashPushed = "remote-pushed"
	// CrashWIPPushed: after a step pushed its uncommitted changes, before
	// it is journaled.
	CrashWIPPushed = "wip-pushed"
)

// Deps are what an item's remote needs from the process around it.
type Deps struct {
	Store     *store.Store
	Repo      *workspace.Repo      // the repository's main checkout, where fetches land
	Worktrees *workspace.Worktrees // a fetch waits for no worktree being added
	Base      string               // the base branch
	// Auth, when set, says where the remote's fetches and pushes go and
	// with which credential header (never given to git); nil: the remote
	// itself, with none.
	Auth  func(ctx context.Context, remote string) (target, header string, err error)
	Crash func(point string)
	Warn  func(run, item, msg string)
	// Mask, when set, rewrites the files of a WIP before it is pushed:
	// cadre's secrets masked, as in a commit.
	Mask func([]byte) []byte
}

// New is what this process knows of item of run, whose branch travels
// through the git remote name; tree is the item's tree as provisioned,
// gitMu serialises git in it.
func New(d *Deps, name, run, item string, tree func() *workspace.Repo, gitMu *sync.Mutex) *Item {
	return &Item{d: d, name: name, run: run, id: item, tree: tree, gitMu: gitMu}
}

// Ready readies a commit step of the item (mark) whose tree may hold a
// commit of the step already: tried says the journal has the step
// started before. It brings the tree to what other workers pushed and
// says whether the tree must be searched for the step's commit: when
// tried, or when its head came from the remote rather than from this
// process's own push. A nil Item (not a remote item) changes nothing.
// The caller holds the item's git lock.
func (it *Item) Ready(ctx context.Context, mark workspace.Mark, tried bool) (bool, error) {
	if it == nil {
		return tried, nil
	}
	if err := it.remoteCommit(ctx, tried); err != nil {
		if !errors.Is(err, workspace.ErrNotFastForward) {
			return false, err
		}
		// This process's own commit of the step, on a worktree behind
		// the remote, whose push was refused before it could adopt the
		// remote's commit of the step (its fetch failed).
		if ok, uerr := it.unstackRepeat(ctx, mark); uerr != nil || !ok {
			if uerr != nil {
				err = uerr
			}
			return false, err
		}
	}
	if !tried {
		it.mu.Lock()
		tried = it.head != "" && it.head != it.own
		it.mu.Unlock()
	}
	return tried, nil
}

// Branch is the item's branch, "" until Fetch.
func (it *Item) Branch() string {
	if it == nil {
		return ""
	}
	return it.branch
}

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

// Error is a fetch or push of a remote item that failed: the step
// is retried (the remote may be back, another worker may take it) rather
// than failing the item.
type Error struct{ err error }

func (e *Error) Error() string { return e.err.Error() }
func (e *Error) Unwrap() error { return e.err }

// IsErr says whether err is a remote item's failed fetch or push.
func IsErr(err error) bool {
	var re *Error
	return errors.As(err, &re)
}

// Item is what this process knows of a remote item's branch.
type Item struct {
	d      *Deps
	run    string
	id     string
	tree   func() *workspace.Repo // the item's tree, once provisioned
	gitMu  *sync.Mutex            // serialises git in the tree
	name   string                 // the git remote
	branch string                 // the item's branch, set by Fetch

	mu   sync.Mutex
	head string // the remote's branch as last fetched or pushed here; "" none
	// own is the head this process last pushed: the commits it holds
	// are all in the journal (see Ready).
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

// target is where the item's fetches and pushes go, and with which
// credential header (never given to git: see workspace.PushLease).
func (it *Item) target(ctx context.Context) (string, string, error) {
	if it.d.Auth != nil {
		return it.d.Auth(ctx, it.name)
	}
	return it.name, "", nil
}

// Fetch fetches the base and the item's branch from the remote and
// returns the start point of the item's worktree: the remote's branch
// when it has one, else the remote's base (a new item).
func (it *Item) Fetch(ctx context.Context, branch string) (string, error) {
	rem := it
	rem.branch = branch
	if err := it.fetch(ctx, true); err != nil {
		return "", err
	}
	if rem.head != "" {
		return workspace.TrackingRef(rem.name, branch), nil
	}
	// No commit of the item was pushed yet: uncommitted changes an
	// earlier step left are on the base as it was then, which a new
	// worktree starts from so that they can be restored.
	_, wip, err := it.journaled(ctx)
	if err != nil {
		return "", err
	}
	if wip != nil && wip.w.Commit != "" {
		if err := it.fetchCommit(ctx, wip.w.Commit); err != nil {
			return "", err
		}
		return wip.w.Base, nil
	}
	return workspace.TrackingRef(rem.name, it.d.Base), nil
}

// fetch brings the remote's branch of the item (and the base, when base)
// into this repository and notes its head. The commits the journal has
// now are accounted for: the fetched branch holds every pushed one.
func (it *Item) fetch(ctx context.Context, base bool) error {
	rem := it
	seen, _, err := it.journaled(ctx)
	if err != nil {
		return err
	}
	target, header, err := it.target(ctx)
	if err != nil {
		return fmt.Errorf("item %s: %w", it.id, err)
	}
	want := []string{rem.branch}
	if base {
		want = append(want, it.d.Base)
	}
	var heads map[string]string
	// Not beside a worktree being added: git fetch reads every worktree's
	// HEAD, which git worktree add writes as a placeholder first.
	err = it.d.Worktrees.Exclusive(func() (err error) {
		heads, err = it.d.Repo.FetchBranches(ctx, target, header, rem.name, want...)
		return err
	})
	if err != nil {
		return &Error{fmt.Errorf("item %s: %w", it.id, err)}
	}
	if base && heads[it.d.Base] == "" {
		return fmt.Errorf("item %s: remote %s has no branch %s (cadre.yaml base_branch)", it.id, rem.name, it.d.Base)
	}
	rem.mu.Lock()
	rem.head, rem.seen = heads[rem.branch], seen
	rem.mu.Unlock()
	return nil
}

// CatchUp brings an item's worktree that this process already provisioned
// to the remote's branch, when the journal says another worker moved it
// since this process last fetched or pushed.
func (it *Item) CatchUp(ctx context.Context) error {
	if it == nil {
		return nil
	}
	now, wip, err := it.journaled(ctx)
	if err != nil {
		return err
	}
	rem := it
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
	return it.refresh(ctx, wip)
}

// refresh fetches the item's branch and brings its worktree to it and to
// the journal's latest WIP (a commit step may have pushed and died before
// journaling, so the branch is fetched even when only the WIP moved).
func (it *Item) refresh(ctx context.Context, wip *wipRec) error {
	it.gitMu.Lock()
	defer it.gitMu.Unlock()
	if err := it.fetch(ctx, false); err != nil {
		return err
	}
	if _, err := it.BringUp(ctx); err != nil {
		return err
	}
	return it.syncWIP(ctx, wip)
}

// BringUp moves the item's worktree to the remote's head as last fetched,
// when it is not there. Only a fast-forward is made: a worktree with
// commits the remote's branch lacks is refused, never reset. Uncommitted
// changes are this process's leftovers of work the item went on without
// (it continued from the pushed branch elsewhere): they are put aside in
// the stash, not lost, or dropped when they are the last WIP saved here,
// which the caller then brings back (see syncWIP). It says whether the
// head moved.
func (it *Item) BringUp(ctx context.Context) (bool, error) {
	rem := it
	rem.mu.Lock()
	want := rem.head
	rem.mu.Unlock()
	if want == "" {
		return false, nil
	}
	head, err := it.tree().Head(ctx)
	if err != nil {
		return false, fmt.Errorf("item %s: %w", it.id, err)
	}
	if head == want {
		return false, nil
	}
	msg := fmt.Sprintf("cadre: %s's uncommitted changes at %.12s, before %s moved to %.12s", it.id, head, rem.branch, want)
	if _, err := it.putAside(ctx, msg, ""); err != nil {
		return false, err
	}
	if err := it.tree().FastForward(ctx, want); err != nil {
		if errors.Is(err, workspace.ErrNotFastForward) {
			return false, fmt.Errorf("item %s refused: %s's branch %s is at %.12s, which does not contain this worktree's %.12s: "+
				"its commits here were never pushed and the item went on without them; keep what you need, then remove the worktree %s and the branch (git worktree remove --force, git branch -D) so that it starts again from the remote's: %w",
				it.id, rem.name, rem.branch, want, head, it.tree().Dir, err)
		}
		return false, fmt.Errorf("item %s: bring the worktree to %s's %s: %w", it.id, rem.name, rem.branch, err)
	}
	return true, nil
}

// Push pushes a remote item's branch after step mark committed sha
// (or found it made), unless the remote already has its head, and returns
// the step's commit: sha, or the remote's when the push is refused because
// the remote holds a commit of the step already (see adoptPushed). The
// lease is the head this process last fetched or pushed: a push over
// another worker's commits is refused, never forced.
func (it *Item) Push(ctx context.Context, sha string, mark workspace.Mark) (string, error) {
	rem := it
	if rem == nil {
		return sha, nil
	}
	rem.mu.Lock()
	rem.seen[sha] = true // the step journals it once this returns
	rem.mu.Unlock()
	head, err := it.tree().Head(ctx)
	if err != nil {
		return sha, fmt.Errorf("push %s: %w", rem.branch, err)
	}
	rem.mu.Lock()
	lease := rem.head
	rem.mu.Unlock()
	if head == lease {
		return sha, nil
	}
	target, header, err := it.target(ctx)
	if err != nil {
		return sha, fmt.Errorf("push %s: %w", rem.branch, err)
	}
	if err := it.tree().PushLease(ctx, target, rem.branch, header, lease); err != nil {
		if errors.Is(err, workspace.ErrRemoteMoved) && head == sha {
			found, aerr := it.adoptPushed(ctx, sha, lease, mark)
			if aerr != nil {
				return sha, aerr
			}
			if found != "" {
				return found, nil
			}
		}
		return sha, &Error{fmt.Errorf("push %s to %s: %w", rem.branch, rem.name, err)}
	}
	rem.mu.Lock()
	rem.head, rem.own = head, head
	rem.seen[head] = true
	rem.mu.Unlock()
	it.d.Crash(CrashPushed)
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
func (it *Item) adoptPushed(ctx context.Context, sha, lease string, mark workspace.Mark) (string, error) {
	rem := it
	if err := it.fetch(ctx, false); err != nil {
		return "", err
	}
	rem.mu.Lock()
	now := rem.head
	rem.mu.Unlock()
	if now == "" {
		return "", nil
	}
	found, err := it.tree().FindStepCommitIn(ctx, lease, now, mark)
	if err != nil || found == "" {
		if err != nil {
			err = fmt.Errorf("item %s: %w", it.id, err)
		}
		return "", err
	}
	if err := it.tree().Unstack(ctx, now); err != nil {
		return "", fmt.Errorf("item %s: drop commit %.12s, which repeats step %s's %.12s on %s's %s: %w", it.id, sha, mark.Step, found, rem.name, rem.branch, err)
	}
	rem.mu.Lock()
	rem.seen[found] = true
	rem.mu.Unlock()
	it.d.Warn(it.run, it.id, fmt.Sprintf("step %s: %s's %s has its commit %.12s already, pushed by a worker the journal did not hear from: that commit is the step's, this worker's %.12s is dropped", mark.Step, rem.name, rem.branch, found, sha))
	return found, nil
}

// unstackRepeat drops the worktree's head when it is a commit of step
// mark that the remote's branch (as last fetched) lacks, and the commits
// the branch has that the worktree lacks hold one of the same step, which
// the head repeats; it says whether it did.
func (it *Item) unstackRepeat(ctx context.Context, mark workspace.Mark) (bool, error) {
	rem := it
	rem.mu.Lock()
	now := rem.head
	rem.mu.Unlock()
	head, err := it.tree().Head(ctx)
	if err != nil || now == "" {
		return false, err
	}
	if mine, err := it.tree().FindStepCommitIn(ctx, now, head, mark); err != nil || mine != head {
		return false, err
	}
	theirs, err := it.tree().FindStepCommitIn(ctx, head, now, mark)
	if err != nil || theirs == "" {
		return false, err
	}
	if err := it.tree().Unstack(ctx, now); err != nil {
		return false, fmt.Errorf("item %s: drop commit %.12s, which repeats step %s's %.12s on %s's %s: %w", it.id, head, mark.Step, theirs, rem.name, rem.branch, err)
	}
	it.d.Warn(it.run, it.id, fmt.Sprintf("step %s: %s's %s has its commit %.12s already: this worker's unpushed %.12s is dropped", mark.Step, rem.name, rem.branch, theirs, head))
	return true, nil
}

// remoteCommit readies a commit step of a remote item: a step started
// before may have committed and pushed on a worker that died before
// journaling it, so the remote's branch is fetched and the worktree
// brought to it first, where FindStepCommit then finds the commit. The
// uncommitted changes the tree had then are the journal's latest WIP, on
// the head before: what the commit did not take of them (a plan task's
// leaves other tasks' files out) is restored. The caller holds it.gitMu.
func (it *Item) remoteCommit(ctx context.Context, tried bool) error {
	if it == nil || !tried {
		return nil
	}
	if err := it.fetch(ctx, false); err != nil {
		return err
	}
	moved, err := it.BringUp(ctx)
	if err != nil || !moved {
		return err
	}
	_, wip, err := it.journaled(ctx)
	if err != nil {
		return err
	}
	return it.syncWIP(ctx, wip)
}
