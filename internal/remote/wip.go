package remote

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/cadre-dev/cadre/internal/store"
	"github.com/cadre-dev/cadre/internal/workspace"
)

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

// journaled reads the item's steps in the journal: the commits of its
// completed commit steps, and its latest WIP record (nil when none).
func (it *Item) journaled(ctx context.Context) (map[string]bool, *wipRec, error) {
	steps, err := it.d.Store.ItemSteps(ctx, it.run, it.id)
	if err != nil {
		return nil, nil, fmt.Errorf("item %s: %w", it.id, err)
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

// NoteWIP saves a remote item's uncommitted changes as the step rec
// ends: a WIP commit pushed to the remote and recorded in rec's result,
// or an empty WIP there for a clean tree, before the caller journals rec.
// A failed push is an *Error: the step is tried again.
func (it *Item) NoteWIP(ctx context.Context, rec *store.Step) error {
	rem := it
	if rem == nil || rem.branch == "" {
		return nil // not provisioned: the tree is not the item's
	}
	it.gitMu.Lock()
	defer it.gitMu.Unlock()
	w, err := it.tree().TakeWIP(ctx, fmt.Sprintf("cadre: %s's uncommitted changes after step %s", it.id, oneLine(rec.ID)), it.d.Mask)
	if err != nil {
		return fmt.Errorf("item %s: save uncommitted changes: %w", it.id, err)
	}
	if w.Commit != "" {
		target, header, err := it.target(ctx)
		if err != nil {
			return fmt.Errorf("item %s: %w", it.id, err)
		}
		if err := it.tree().PushWIP(ctx, target, rem.branch, header, w.Commit); err != nil {
			return &Error{fmt.Errorf("item %s: push uncommitted changes to %s: %w", it.id, rem.name, err)}
		}
	}
	res := map[string]json.RawMessage{}
	if len(rec.Result) > 0 {
		if err := json.Unmarshal(rec.Result, &res); err != nil {
			return fmt.Errorf("item %s: step %s: result: %w", it.id, rec.ID, err)
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
	it.d.Crash(CrashWIPPushed)
	return nil
}

// RestoreWIP brings a remote item's worktree, just provisioned at the
// branch's head, to the journal's latest WIP, if any.
func (it *Item) RestoreWIP(ctx context.Context) error {
	if it == nil {
		return nil
	}
	_, wip, err := it.journaled(ctx)
	if err != nil || wip == nil {
		// No step recorded a WIP: there is nothing to restore, and what
		// the tree holds is this process's own (a step it did not end).
		return err
	}
	it.gitMu.Lock()
	defer it.gitMu.Unlock()
	return it.syncWIP(ctx, wip)
}

// syncWIP makes the item's uncommitted changes those of wip (none for
// nil or an empty WIP). A WIP whose parent is not the head came before a
// commit, which may have taken only some of its changes (a plan task's
// commit leaves the files of other tasks out, and may have been pushed
// by a worker that died before journaling the WIP it left): the rest are
// restored on the head (see restoreAfter). Leftovers that are something
// else are put aside (see putAside). The caller holds it.gitMu.
func (it *Item) syncWIP(ctx context.Context, wip *wipRec) error {
	rem := it
	var w workspace.WIP
	if wip != nil {
		w = wip.w
	}
	stale := false
	if w.Commit != "" {
		head, err := it.tree().Head(ctx)
		if err != nil {
			return fmt.Errorf("item %s: %w", it.id, err)
		}
		stale = w.Base != head
	}
	want := w.Tree
	if stale {
		want = "" // the tree wanted is the head's with the rest of w
	}
	msg := fmt.Sprintf("cadre: %s's uncommitted changes, not those another worker left after %s", it.id, stepOf(wip))
	there, err := it.putAside(ctx, msg, want)
	if err != nil {
		return err
	}
	if w.Commit != "" && !there {
		if err := it.fetchCommit(ctx, w.Commit); err != nil {
			return err
		}
		if stale {
			err = it.restoreAfter(ctx, wip)
		} else {
			err = it.tree().RestoreWIP(ctx, w.Commit)
		}
		if err != nil {
			return fmt.Errorf("item %s: restore the uncommitted changes of step %s (%.12s): %w", it.id, wip.step, w.Commit, err)
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
func (it *Item) restoreAfter(ctx context.Context, wip *wipRec) error {
	_, clashed, err := it.tree().RestoreWIPAfter(ctx, wip.w)
	if err != nil {
		return err
	}
	if len(clashed) > 0 {
		it.d.Warn(it.run, it.id, fmt.Sprintf("step %s's uncommitted changes to %s are not restored: a commit of %s since changed them otherwise (git show %.12s -- PATH shows them)", wip.step, listPaths(clashed), it.branch, wip.w.Commit))
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
// never lost. The caller holds it.gitMu.
func (it *Item) putAside(ctx context.Context, msg, want string) (bool, error) {
	dirty, err := it.tree().Dirty(ctx)
	if err != nil {
		return false, fmt.Errorf("item %s: %w", it.id, err)
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
	tree, err := it.tree().TreeOfChanges(ctx)
	if err != nil {
		return false, fmt.Errorf("item %s: %w", it.id, err)
	}
	if want != "" && tree == want {
		return true, nil
	}
	rem := it
	rem.mu.Lock()
	saved := rem.saved
	rem.mu.Unlock()
	if tree == saved {
		if err := it.tree().DiscardChanges(ctx); err != nil {
			return false, fmt.Errorf("item %s: drop uncommitted changes saved before: %w", it.id, err)
		}
		return false, nil
	}
	if err := it.tree().SaveChanges(ctx, msg); err != nil {
		return false, fmt.Errorf("item %s: put aside uncommitted changes: %w", it.id, err)
	}
	it.d.Warn(it.run, it.id, fmt.Sprintf("another worker continued %s: this worktree's uncommitted changes (%s) are in git stash list as %q", rem.branch, listPaths(paths), msg))
	return false, nil
}

// fetchCommit brings a commit of the remote by its id.
func (it *Item) fetchCommit(ctx context.Context, sha string) error {
	target, header, err := it.target(ctx)
	if err != nil {
		return fmt.Errorf("item %s: %w", it.id, err)
	}
	if err := it.d.Repo.FetchCommit(ctx, target, header, sha); err != nil {
		return &Error{fmt.Errorf("item %s: fetch uncommitted changes %.12s from %s: %w", it.id, sha, it.name, err)}
	}
	return nil
}

// DropWIP deletes a completed remote item's work-in-progress ref from the
// remote: its changes are committed, and scratch refs must not pile up in
// the project's repository. A failure is a warning: the ref holds nothing
// the branch lacks.
func (it *Item) DropWIP(ctx context.Context) {
	rem := it
	if rem == nil || rem.branch == "" {
		return
	}
	target, header, err := it.target(ctx)
	if err == nil {
		err = it.d.Repo.DeleteWIP(ctx, target, rem.branch, header)
	}
	if err != nil {
		it.d.Warn(it.run, it.id, fmt.Sprintf("delete %s from %s: %v", workspace.WIPRef(rem.branch), rem.name, err))
	}
}

func listPaths(paths []string) string {
	if len(paths) > 5 {
		return strings.Join(paths[:5], ", ") + fmt.Sprintf(" and %d more", len(paths)-5)
	}
	return strings.Join(paths, ", ")
}

// oneLine is s on one line of at most 200 runes.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 200 {
		s = string(r[:200]) + "…"
	}
	return s
}
