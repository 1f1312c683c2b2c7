package engine

import (
	"context"
	"encoding/json"
	"regexp"
	"strconv"
	"time"

	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/store"
)

// Where an item's work is published, as the journal records it: the
// worktree step names the item's branch once its worktree exists (so
// status can point at unpublished work too), the push and pull-request
// steps of publishing name the branch they pushed and the pull request.

// stepWorktree is the kind of the step that records an item's branch.
const stepWorktree = "worktree"

// publishRecord is the journaled result of the worktree, push and pr steps.
// Output keeps the key the pr step always used for the URL, so journals
// written before the other fields existed still read.
type publishRecord struct {
	Branch string `json:"branch,omitempty"`
	Output string `json:"output,omitempty"` // the pull request's URL
	Number int    `json:"number,omitempty"` // the pull request's number
	Title  string `json:"title,omitempty"`  // the pull request's title
}

// prStepID is the id of the step that opens an item's pull request.
func prStepID(item string) string { return item + "/publish/pr#1" }

// recordBranch journals the branch of an item's worktree, once per run.
func (e *Engine) recordBranch(ctx context.Context, ir *itemRun, branch string) error {
	id := ir.it.ID + "/" + stepWorktree
	if rec, err := e.d.Store.GetStep(ctx, ir.run, id); err == nil && rec.Status == store.StepCompleted {
		return nil
	}
	rec := store.Step{RunID: ir.run, ItemID: ir.it.ID, ID: id, Kind: stepWorktree}
	if err := e.d.Store.StartStep(ctx, rec); err != nil {
		return journalErr(ir.it.ID, err)
	}
	rec.Status = store.StepCompleted
	rec.Result, _ = json.Marshal(publishRecord{Branch: branch})
	return journalErr(ir.it.ID, e.d.Store.FinishStep(ctx, rec))
}

// publishedPR is the item's pull request as journaled by publishing; the
// zero record when it has none.
func (e *Engine) publishedPR(ctx context.Context, ir *itemRun) publishRecord {
	rec, err := e.d.Store.GetStep(ctx, ir.run, prStepID(ir.it.ID))
	if err != nil || rec.Status != store.StepCompleted {
		return publishRecord{}
	}
	return readPublishRecord(rec)
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

var pullNumberRE = regexp.MustCompile(`/pull/([0-9]+)/?$`)

// readPublishRecord decodes a worktree, push or pr step's result. A pr step
// journaled before numbers were recorded has only the URL, which holds it.
func readPublishRecord(rec store.Step) publishRecord {
	var r publishRecord
	if json.Unmarshal(rec.Result, &r) != nil {
		return publishRecord{}
	}
	if r.Number == 0 && r.Output != "" {
		if m := pullNumberRE.FindStringSubmatch(r.Output); m != nil {
			r.Number, _ = strconv.Atoi(m[1])
		}
	}
	return r
}

// addPublishing fills in the items' branches and pull requests from their
// journaled steps.
func addPublishing(byItem map[string]*ItemSummary, steps []store.Step) {
	for _, st := range steps {
		is := byItem[st.ItemID]
		if is == nil || st.Status != store.StepCompleted {
			continue
		}
		switch st.Kind {
		case stepWorktree, "push", "pr":
		default:
			continue
		}
		r := readPublishRecord(st)
		if r.Branch != "" && (is.Branch == "" || st.Kind == "pr") {
			is.Branch = r.Branch // the pushed branch is the one the pull request has
		}
		if st.Kind == "pr" && r.Output != "" {
			is.PR, is.PRNumber = r.Output, r.Number
		}
	}
}
