package engine

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/cadre-dev/cadre/internal/eval"
	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/runner"
	"github.com/cadre-dev/cadre/internal/workflow"
	"github.com/cadre-dev/cadre/internal/workspace"
)

// tamperError fails an item whose agent changed what makes git run
// programs; unlike an agent's failure it is never retried.
type tamperError struct{ msg string }

func (e *tamperError) Error() string { return e.msg }

// hiddenDir is where an untrusted item's executable configuration waits
// while its agents run: per item, not per run, so a new run after a crash
// finds and puts back what the crashed one hid.
func (e *Engine) hiddenDir(item string) string {
	return filepath.Join(e.StateDir(), "hidden", item)
}

// shield hides an untrusted item's executable configuration from its
// agents for as long as one of them runs; the returned function ends this
// agent's share. Parallel agents of one item share one tree, so the files
// go when the first starts and come back when the last ends. A trusted
// item's tree is left as it is.
func (e *Engine) shield(ctx context.Context, ir *itemRun) (func() error, error) {
	if ir.trusted {
		return func() error { return nil }, nil
	}
	ir.shieldMu.Lock()
	defer ir.shieldMu.Unlock()
	if ir.shielded == 0 {
		if err := ir.repo.Hide(ctx, e.hiddenDir(ir.it.ID)); err != nil {
			return nil, fmt.Errorf("item %s: %w", ir.it.ID, err)
		}
	}
	ir.shielded++
	return func() error {
		ir.shieldMu.Lock()
		defer ir.shieldMu.Unlock()
		ir.shielded--
		if ir.shielded > 0 {
			return nil
		}
		if err := ir.repo.Unhide(context.WithoutCancel(ctx), e.hiddenDir(ir.it.ID)); err != nil {
			return fmt.Errorf("item %s: %w", ir.it.ID, err)
		}
		return nil
	}, nil
}

// unshieldLeftovers puts back what a crashed run hid in the item's tree,
// and what a reviewing agent it killed had changed there.
func (e *Engine) unshieldLeftovers(ctx context.Context, ir *itemRun) error {
	if err := ir.repo.Unhide(ctx, e.hiddenDir(ir.it.ID)); err != nil {
		return fmt.Errorf("item %s: %w", ir.it.ID, err)
	}
	return e.undoInterruptedReview(ctx, ir)
}

// reviewMark notes the tree a reviewing agent works on while it runs:
// per item, not per run, so a new run after a crash finds it. The agent
// cannot write there.
func (e *Engine) reviewMark(item string) workspace.ReviewMark {
	return workspace.ReviewMark{Root: e.StateDir(), Path: filepath.Join(e.StateDir(), "reviewing", item)}
}

// undoInterruptedReview puts the item's tree back as it was before a
// reviewing agent whose run was killed mid-step: its partial edits would
// otherwise be taken for the work when the step runs again.
func (e *Engine) undoInterruptedReview(ctx context.Context, ir *itemRun) error {
	mark := e.reviewMark(ir.it.ID)
	tree, role, err := mark.Read()
	if err != nil || tree == "" {
		return err
	}
	if err := e.discardEdits(ctx, ir, role, "", tree); err != nil {
		return err
	}
	return mark.Clear()
}

// checkGitState compares the repository's git state with its snapshot
// before the step. A change is put back at once, so neither cadre's next
// git command nor the user's runs what the agent planted, and fails the
// item naming what changed.
func checkGitState(ctx context.Context, repo *workspace.Repo, step string, before *workspace.GitState) error {
	changed, err := before.Changed(context.WithoutCancel(ctx), repo)
	if err != nil {
		return err
	}
	if len(changed) == 0 {
		return nil
	}
	names := make([]string, len(changed))
	for i, p := range changed {
		names[i] = before.Name(p)
	}
	msg := fmt.Sprintf("agent step %s changed %s, which makes git run programs", step, strings.Join(names, ", "))
	if err := before.Restore(changed); err != nil {
		return &tamperError{msg + " (" + err.Error() + ")"}
	}
	return &tamperError{msg + " (put back as it was)"}
}

// guardedInvoke runs one agent step with the item's executable
// configuration hidden (when untrusted) and the repository's git state
// checked around it. A *tamperError says the agent changed that state.
func (e *Engine) guardedInvoke(ctx context.Context, ir *itemRun, rn runner.Runner, inv runner.Invocation, rubric eval.Rubric, pass int, quoted ...string) (asked, error) {
	release, err := e.shield(ctx, ir)
	if err != nil {
		return asked{}, err
	}
	before, err := ir.repo.Snapshot(ctx)
	if err != nil {
		release()
		return asked{}, err
	}
	inv.Untrusted = !ir.trusted
	if inv.Untrusted {
		inv.GitConfig = ir.repo.AgentGitConfig(ctx)
	}
	reviewed, print, unlock, err := e.holdTree(ctx, ir, inv.Role)
	if err != nil {
		release()
		return asked{}, err
	}
	got, err := e.invoke(ctx, rn, inv, rubric, pass, quoted...)
	// The check comes first: putting the files back runs git.
	if terr := checkGitState(ctx, ir.repo, inv.Step, before); terr != nil {
		unlock()
		release()
		return got, terr
	}
	if reviewed != "" {
		var rerr error
		if now, ferr := ir.repo.Fingerprint(); ferr != nil || now != print {
			rerr = e.discardEdits(ctx, ir, inv.Role, inv.Step, reviewed)
		}
		if rerr == nil {
			rerr = e.reviewMark(ir.it.ID).Clear()
		}
		if rerr != nil && err == nil {
			err = rerr
		}
	}
	unlock()
	if rerr := release(); rerr != nil && err == nil {
		err = rerr
	}
	return got, err
}

// holdTree takes the item's tree for one agent step. A role that changes
// nothing (a reviewer) holds it alone, so that what changes while it runs
// is its doing, and gets the tree's state (a TreeOfChanges) to put back
// afterwards, with its fingerprint, which spares the comparison when the
// reviewer touched nothing; the others share it.
func (e *Engine) holdTree(ctx context.Context, ir *itemRun, role string) (tree string, print uint64, unlock func(), err error) {
	if !workflow.ChangesNothing(role) {
		ir.treeMu.RLock()
		return "", 0, ir.treeMu.RUnlock, nil
	}
	ir.treeMu.Lock()
	fail := func(err error) (string, uint64, func(), error) {
		ir.treeMu.Unlock()
		return "", 0, nil, fmt.Errorf("item %s: %w", ir.it.ID, err)
	}
	if tree, print, err = ir.repo.TreeState(ctx); err != nil {
		return fail(err)
	}
	if err := e.reviewMark(ir.it.ID).Note(tree, role); err != nil {
		return fail(err)
	}
	return tree, print, ir.treeMu.Unlock, nil
}

// discardEdits puts the tree back as it was before a reviewing agent ran
// and reports what it had changed: a reviewer's verdict is its work, and
// its edits must not be committed as the item's. step is empty for a
// reviewer whose run was killed while it ran.
func (e *Engine) discardEdits(ctx context.Context, ir *itemRun, role, step, tree string) error {
	paths, err := ir.repo.RevertTo(context.WithoutCancel(ctx), tree)
	if err != nil {
		return fmt.Errorf("item %s: put back what %s changed: %w", ir.it.ID, role, err)
	}
	if len(paths) == 0 {
		return nil
	}
	when := "while reviewing"
	if step == "" {
		when = "while reviewing, before its run was killed"
	}
	msg := fmt.Sprintf("%s changed %s %s; its edits were discarded (a reviewing role does not change the work)",
		role, oneLine(strings.Join(paths, ", ")), when)
	e.publish(ir, event.Event{Type: event.Warning, Role: role, Step: step, Message: msg})
	return nil
}
