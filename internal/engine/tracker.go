package engine

import (
	"context"
	"fmt"

	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/store"
)

// postComment posts a progress comment where the item's issue lives: the
// tracker for a tracker's issue, the forge otherwise.
func (e *Engine) postComment(ctx context.Context, is Issue, marker, body string) error {
	if is.Key != "" {
		return e.d.Tracker.Comment(ctx, is.Key, marker, body)
	}
	return e.d.Forge.EnsureComment(ctx, is.Repo, is.Number, marker, body)
}

// track performs a tracker write for a tracker's issue item once, as the
// journaled step item/publish/tracker-<kind>. Like comments, tracker
// writes are best effort: a failure is a warning, and only a failed
// journal write is returned.
func (e *Engine) track(ctx context.Context, ir *itemRun, kind string, do func(ctx context.Context, key string) error) error {
	is, ok := ir.issueOf(e)
	if !ok || is.Key == "" || e.d.Tracker == nil {
		return nil
	}
	id := ir.it.ID + "/publish/tracker-" + kind
	if rec, err := e.d.Store.GetStep(ctx, ir.run, id); err == nil && rec.Status == store.StepCompleted {
		return nil
	}
	rec := store.Step{RunID: ir.run, ItemID: ir.it.ID, ID: id, Kind: "tracker"}
	if err := e.d.Store.StartStep(ctx, rec); err != nil {
		return journalErr(ir.it.ID, err)
	}
	if err := do(ctx, is.Key); err != nil {
		rec.Error = err.Error()
		if err := e.failStep(ctx, rec, nil); err != nil {
			return err
		}
		e.publish(ir, event.Event{Type: event.Warning, Message: fmt.Sprintf("tracker issue %s: %v", is.Key, err)})
		return nil
	}
	rec.Status = store.StepCompleted
	return e.finishStep(ctx, rec)
}

// trackState moves a tracker's issue to state (tracker.states), once; an
// empty state leaves it alone.
func (e *Engine) trackState(ctx context.Context, ir *itemRun, kind, state string) error {
	if state == "" {
		return nil
	}
	return e.track(ctx, ir, kind, func(ctx context.Context, key string) error { return e.d.Tracker.Move(ctx, key, state) })
}

// trackReview links the pull request to a tracker's issue and moves it
// to tracker.states.review.
func (e *Engine) trackReview(ctx context.Context, ir *itemRun, is Issue, url, title string) error {
	if is.Key == "" || url == "" {
		return nil
	}
	if err := e.track(ctx, ir, "link", func(ctx context.Context, key string) error { return e.d.Tracker.Link(ctx, key, url, title) }); err != nil {
		return err
	}
	return e.trackState(ctx, ir, "review", e.d.Config.Tracker.States.Review)
}

// trackPaused tells a tracker's issue that its item waits for a person,
// and how to answer.
func (e *Engine) trackPaused(ctx context.Context, ir *itemRun) error {
	is, ok := ir.issueOf(e)
	if !ok || is.Key == "" {
		return nil
	}
	return e.comment(ctx, ir, "paused", fmt.Sprintf("cadre finished the work on this issue, but its branch changes CI configuration and waits for a person: "+
		"`cadre approve %s %s` pushes it for review, `cadre approve --reject %s %s` drops it.", ir.run, ir.it.ID, ir.run, ir.it.ID))
}
