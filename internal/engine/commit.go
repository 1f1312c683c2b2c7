package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/cadre-dev/cadre/internal/item/taskfile"
	"github.com/cadre-dev/cadre/internal/store"
	"github.com/cadre-dev/cadre/internal/workspace"
)

// commit commits a completed task in place, once: a commit already carrying
// the step's trailer (a crash after committing) is adopted, not repeated.
func (e *Engine) commit(ctx context.Context, ir *itemRun) error {
	// In place the task file is part of the commit: it must be current.
	if err := ir.board.flush(); err != nil {
		return fmt.Errorf("update task %s: %w", ir.it.ID, err)
	}
	id := ir.it.ID + "/commit"
	prev, err := e.d.Store.GetStep(ctx, ir.run, id)
	if err == nil && prev.Status == store.StepCompleted {
		return nil
	}
	tried := err == nil // started before: a crash may have left its commit unrecorded
	rec := store.Step{RunID: ir.run, ItemID: ir.it.ID, ID: id, Kind: "commit"}
	if err := e.d.Store.StartStep(ctx, rec); err != nil {
		return err
	}
	sha := ""
	if tried {
		if sha, err = ir.repo.FindStepCommit(ctx, workspace.Mark{Step: id, Run: ir.run}); err != nil {
			return err
		}
	}
	if sha == "" {
		sha, err = ir.repo.Commit(ctx, commitMessage(ir.task), workspace.Mark{Step: id, Run: ir.run},
			workspace.CommitOptions{Base: e.d.Config.BaseBranch, Check: outsideLinks(ir)})
		if err != nil {
			rec.Status, rec.Error = store.StepFailed, err.Error()
			e.d.Store.FinishStep(context.WithoutCancel(ctx), rec)
			return fmt.Errorf("commit %s: %w", ir.it.ID, err)
		}
		e.d.Crash(CrashCommitted)
	}
	rec.Status = store.StepCompleted
	rec.Result, _ = json.Marshal(map[string]string{"commit": sha})
	return e.d.Store.FinishStep(ctx, rec)
}

// commitMessage names the task; the title is untrusted text, so it is
// reduced to one short line (it travels as one argv element, never a shell).
func commitMessage(t *taskfile.Task) string {
	return fmt.Sprintf("cadre: complete task %s: %s", t.ID, shorten(t.Title, 60))
}

// shorten puts untrusted or long text on one line of at most n runes.
func shorten(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		s = string(r[:n]) + "…"
	}
	return s
}
