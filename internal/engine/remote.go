package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/store"
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

// journaled reads the item's steps in the journal: the commits of its
// completed commit steps, and its latest WIP record (nil when none).
func (e *Engine) journaled(ctx context.Context, ir *itemRun) (map[string]bool, *wipRec, error) {
	steps, err := e.d.Store.ItemSteps(ctx, ir.run, ir.it.ID)
	if err != nil {
		return nil, nil, fmt.Errorf("item %s: %w", ir.it.ID, err)
	}
	out := map[string]bool{}
	var latest *wipRec
	for _, st := range steps {
		if sha := stepCommit(st); sha != "" {
			out[sha] = true
		}
		// The highest number, not the step's place in the journal: the
		// steps of one wave may end out of order (and workers' clocks
		// differ).
		if w := stepWIP(st); w != nil && (latest == nil || w.N >= latest.n) {
			latest = &wipRec{step: st.ID, w: w.WIP, n: w.N}
		}
	}
	return out, latest, nil
}

// stepCommit is the commit a completed commit step journaled, or "".
func stepCommit(st store.Step) string {
	if st.Kind != "commit" || st.Status != store.StepCompleted {
		return ""
	}
	var r struct {
		Commit string `json:"commit"`
	}
	json.Unmarshal(st.Result, &r)
	return r.Commit
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

func listPaths(paths []string) string {
	if len(paths) > 5 {
		return strings.Join(paths[:5], ", ") + fmt.Sprintf(" and %d more", len(paths)-5)
	}
	return strings.Join(paths, ", ")
}

// dropWIP deletes a completed remote item's work-in-progress ref from the
// remote: its changes are committed, and scratch refs must not pile up in
// the project's repository. A failure is a warning: the ref holds nothing
// the branch lacks.
func (e *Engine) dropWIP(ctx context.Context, ir *itemRun) {
	rem := ir.remote
	if rem == nil || rem.branch == "" {
		return
	}
	target, header, err := e.remoteTarget(ctx, ir)
	if err == nil {
		err = e.repo.DeleteWIP(ctx, target, rem.branch, header)
	}
	if err != nil {
		e.publish(ir, event.Event{Type: event.Warning, Message: fmt.Sprintf("delete %s from %s: %v", workspace.WIPRef(rem.branch), rem.name, err)})
	}
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

// Uncommitted changes travel too: a step of a remote item that leaves its
// worktree with any ends by committing them off the branch (a WIP commit
// whose parent is the head), pushing that to the remote's scratch ref
// workspace.WIPRef and recording it in the step's journal record, where a
// clean tree is recorded as an empty WIP. The journal, not the ref, says
// which is current: a process that provisions the item, or finds in the
// journal a WIP it did not account for, brings the worktree to the latest
// one, restoring its files as uncommitted changes when its parent is the
// head (one whose parent is not came before a commit, which holds what it
// took of it: the rest, such as the files a plan task's commit left to
// other tasks, is restored on the head).

// wipRec is a WIP the journal has: the step that recorded it and what it
// recorded (the zero WIP for a clean tree).
type wipRec struct {
	step string
	w    workspace.WIP
	n    int
}

// wipJSON is a WIP as a step's result records it, with its number.
type wipJSON struct {
	workspace.WIP
	N int `json:"n"`
}

func (r *wipRec) key() string { return r.step + "\x00" + r.w.Commit }

// stepWIP is the WIP a finished step recorded, nil when it recorded none
// (not a remote item's step, or one that leaves the tree alone).
func stepWIP(st store.Step) *wipJSON {
	if st.Status == store.StepStarted || len(st.Result) == 0 {
		return nil
	}
	var r struct {
		WIP *wipJSON `json:"wip"`
	}
	if json.Unmarshal(st.Result, &r) != nil {
		return nil
	}
	return r.WIP
}

// noteWIP saves a remote item's uncommitted changes as the step rec
// ends: a WIP commit pushed to the remote and recorded in rec's result,
// or an empty WIP there for a clean tree, before the caller journals rec.
// A failed push is a remoteError: the step is tried again.
func (e *Engine) noteWIP(ctx context.Context, ir *itemRun, rec *store.Step) error {
	rem := ir.remote
	if rem == nil || rem.branch == "" {
		return nil // not provisioned: the tree is not the item's
	}
	ir.gitMu.Lock()
	defer ir.gitMu.Unlock()
	w, err := ir.repo.TakeWIP(ctx, fmt.Sprintf("cadre: %s's uncommitted changes after step %s", ir.it.ID, oneLine(rec.ID)))
	if err != nil {
		return fmt.Errorf("item %s: save uncommitted changes: %w", ir.it.ID, err)
	}
	if w.Commit != "" {
		target, header, err := e.remoteTarget(ctx, ir)
		if err != nil {
			return fmt.Errorf("item %s: %w", ir.it.ID, err)
		}
		if err := ir.repo.PushWIP(ctx, target, rem.branch, header, w.Commit); err != nil {
			return &remoteError{fmt.Errorf("item %s: push uncommitted changes to %s: %w", ir.it.ID, rem.name, err)}
		}
	}
	res := map[string]json.RawMessage{}
	if len(rec.Result) > 0 {
		if err := json.Unmarshal(rec.Result, &res); err != nil {
			return fmt.Errorf("item %s: step %s: result: %w", ir.it.ID, rec.ID, err)
		}
	}
	rem.mu.Lock()
	rem.n++
	res["wip"], _ = json.Marshal(wipJSON{WIP: w, N: rem.n})
	rec.Result, _ = json.Marshal(res)
	if rem.wips == nil {
		rem.wips = map[string]bool{}
	}
	rem.wips[(&wipRec{step: rec.ID, w: w}).key()] = true
	if w.Tree != "" {
		rem.saved = w.Tree
	}
	rem.mu.Unlock()
	e.d.Crash(CrashWIPPushed)
	return nil
}

// restoreWIP brings a remote item's worktree, just provisioned at the
// branch's head, to the journal's latest WIP, if any.
func (e *Engine) restoreWIP(ctx context.Context, ir *itemRun) error {
	if ir.remote == nil {
		return nil
	}
	_, wip, err := e.journaled(ctx, ir)
	if err != nil || wip == nil {
		// No step recorded a WIP: there is nothing to restore, and what
		// the tree holds is this process's own (a step it did not end).
		return err
	}
	ir.gitMu.Lock()
	defer ir.gitMu.Unlock()
	return e.syncWIP(ctx, ir, wip)
}

// syncWIP makes the item's uncommitted changes those of wip (none for
// nil or an empty WIP). A WIP whose parent is not the head came before a
// commit, which may have taken only some of its changes (a plan task's
// commit leaves the files of other tasks out, and may have been pushed
// by a worker that died before journaling the WIP it left): the rest are
// restored on the head (see restoreAfter). Leftovers that are something
// else are put aside (see putAside). The caller holds ir.gitMu.
func (e *Engine) syncWIP(ctx context.Context, ir *itemRun, wip *wipRec) error {
	rem := ir.remote
	var w workspace.WIP
	if wip != nil {
		w = wip.w
	}
	stale := false
	if w.Commit != "" {
		head, err := ir.repo.Head(ctx)
		if err != nil {
			return fmt.Errorf("item %s: %w", ir.it.ID, err)
		}
		stale = w.Base != head
	}
	want := w.Tree
	if stale {
		want = "" // the tree wanted is the head's with the rest of w
	}
	msg := fmt.Sprintf("cadre: %s's uncommitted changes, not those another worker left after %s", ir.it.ID, stepOf(wip))
	there, err := e.putAside(ctx, ir, msg, want)
	if err != nil {
		return err
	}
	if w.Commit != "" && !there {
		if err := e.fetchCommit(ctx, ir, w.Commit); err != nil {
			return err
		}
		if stale {
			err = e.restoreAfter(ctx, ir, wip)
		} else {
			err = ir.repo.RestoreWIP(ctx, w.Commit)
		}
		if err != nil {
			return fmt.Errorf("item %s: restore the uncommitted changes of step %s (%.12s): %w", ir.it.ID, wip.step, w.Commit, err)
		}
	}
	if wip != nil {
		rem.mu.Lock()
		if rem.wips == nil {
			rem.wips = map[string]bool{}
		}
		rem.wips[wip.key()] = true
		rem.n = max(rem.n, wip.n)
		if w.Tree != "" && !stale {
			rem.saved = w.Tree
		}
		rem.mu.Unlock()
	}
	return nil
}

// restoreAfter restores what wip, taken before the commits since its
// parent, changed that they did not; its changes to paths they changed
// are not restored (the head's stay), with a warning naming those whose
// content differs from the WIP's.
func (e *Engine) restoreAfter(ctx context.Context, ir *itemRun, wip *wipRec) error {
	_, clashed, err := ir.repo.RestoreWIPAfter(ctx, wip.w)
	if err != nil {
		return err
	}
	if len(clashed) > 0 {
		e.publish(ir, event.Event{Type: event.Warning, Message: fmt.Sprintf("step %s's uncommitted changes to %s are not restored: a commit of %s since changed them otherwise (git show %.12s -- PATH shows them)", wip.step, listPaths(clashed), ir.remote.branch, wip.w.Commit)})
	}
	return nil
}

func stepOf(wip *wipRec) string {
	if wip == nil {
		return "its last step"
	}
	return wip.step
}

// putAside leaves the item's worktree without uncommitted changes, unless
// they make the tree want (then it says so). Leftovers that are the last
// WIP this process saved or restored are in the journal and on the remote
// and are dropped; others are put aside in the stash under msg with a warning,
// never lost. The caller holds ir.gitMu.
func (e *Engine) putAside(ctx context.Context, ir *itemRun, msg, want string) (bool, error) {
	dirty, err := ir.repo.Dirty(ctx)
	if err != nil {
		return false, fmt.Errorf("item %s: %w", ir.it.ID, err)
	}
	var paths []string
	for _, p := range dirty {
		if p != workspace.StateDir && !strings.HasPrefix(p, workspace.StateDir+"/") {
			paths = append(paths, p)
		}
	}
	if len(paths) == 0 {
		return false, nil
	}
	tree, err := ir.repo.TreeOfChanges(ctx)
	if err != nil {
		return false, fmt.Errorf("item %s: %w", ir.it.ID, err)
	}
	if want != "" && tree == want {
		return true, nil
	}
	rem := ir.remote
	rem.mu.Lock()
	saved := rem.saved
	rem.mu.Unlock()
	if tree == saved {
		if err := ir.repo.DiscardChanges(ctx); err != nil {
			return false, fmt.Errorf("item %s: drop uncommitted changes saved before: %w", ir.it.ID, err)
		}
		return false, nil
	}
	if err := ir.repo.SaveChanges(ctx, msg); err != nil {
		return false, fmt.Errorf("item %s: put aside uncommitted changes: %w", ir.it.ID, err)
	}
	e.publish(ir, event.Event{Type: event.Warning, Message: fmt.Sprintf("another worker continued %s: this worktree's uncommitted changes (%s) are in git stash list as %q", rem.branch, listPaths(paths), msg)})
	return false, nil
}

// fetchCommit brings a commit of the remote by its id.
func (e *Engine) fetchCommit(ctx context.Context, ir *itemRun, sha string) error {
	target, header, err := e.remoteTarget(ctx, ir)
	if err != nil {
		return fmt.Errorf("item %s: %w", ir.it.ID, err)
	}
	if err := e.repo.FetchCommit(ctx, target, header, sha); err != nil {
		return &remoteError{fmt.Errorf("item %s: fetch uncommitted changes %.12s from %s: %w", ir.it.ID, sha, ir.remote.name, err)}
	}
	return nil
}
