package engine

import (
	"context"
	"encoding/json"
	"time"

	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/report"
	"github.com/cadre-dev/cadre/internal/store"
)

// recordBranch journals the branch of an item's worktree, once per run.
func (e *Engine) recordBranch(ctx context.Context, ir *itemRun, branch string) error {
	id := ir.it.ID + "/" + report.KindWorktree
	if rec, err := e.d.Store.GetStep(ctx, ir.run, id); err == nil && rec.Status == store.StepCompleted {
		return nil
	}
	rec := store.Step{RunID: ir.run, ItemID: ir.it.ID, ID: id, Kind: report.KindWorktree}
	if err := e.d.Store.StartStep(ctx, rec); err != nil {
		return journalErr(ir.it.ID, err)
	}
	rec.Status = store.StepCompleted
	rec.Result, _ = json.Marshal(report.PublishRecord{Branch: branch})
	return journalErr(ir.it.ID, e.d.Store.FinishStep(ctx, rec))
}

// publishedPR is the item's pull request as journaled by publishing; the
// zero record when it has none.
func (e *Engine) publishedPR(ctx context.Context, ir *itemRun) report.PublishRecord {
	rec, err := e.d.Store.GetStep(ctx, ir.run, report.PRStepID(ir.it.ID))
	if err != nil || rec.Status != store.StepCompleted {
		return report.PublishRecord{}
	}
	return report.ReadPublishRecord(rec)
}

// archiveCycle archives the item's cycle log when the item ends (or pauses
// incomplete). An item with a pull request is archived under it,
// <pr>_<pr-title-slug>.md, so the record is found from the PR; any other under the time and
// its own title. A failure to archive is a warning: the archive is a record,
// and the item's outcome stands without it.
func (e *Engine) archiveCycle(ctx context.Context, ir *itemRun, now time.Time, suffix string) {
	title := ir.task.Title
	pr := e.publishedPR(context.WithoutCancel(ctx), ir)
	if pr.Number > 0 && pr.Title != "" {
		title = pr.Title
	}
	if _, err := ir.cycle.Archive(e.StateDir(), now, title, pr.Number, suffix); err != nil {
		e.publish(ir, event.Event{Type: event.Warning, Message: "archive cycle log: " + err.Error()})
	}
}
