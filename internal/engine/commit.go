package engine

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cadre-dev/cadre/internal/commitmsg"
	"github.com/cadre-dev/cadre/internal/store"
	"github.com/cadre-dev/cadre/internal/workspace"
)

// commit commits a completed task in place, once: a commit already carrying
// the step's trailer (a crash after committing) is adopted, not repeated.
func (e *Engine) commit(ctx context.Context, ir *itemRun) error {
	// In place the task file is part of the commit: it must be current.
	if err := ir.board.Flush(); err != nil {
		return fmt.Errorf("update task %s: %w", ir.it.ID, err)
	}
	return e.commitOnce(ctx, ir, ir.it.ID+"/commit", "", workspace.CommitOptions{Base: e.baseRef(ctx), Check: outsideLinks(ir), Describe: true})
}

// commitBoard commits, in place, the task file's last frontmatter (stage:
// completed) of an item whose declarative workflow made its own commits
// before that was written, so the next run in place finds a clean tree.
// Only the task file goes in; once, as commit does.
func (e *Engine) commitBoard(ctx context.Context, ir *itemRun) error {
	if !ir.rs.opts.InPlace || ir.task == nil || ir.task.Path == "" {
		return nil
	}
	if err := ir.board.Flush(); err != nil {
		return fmt.Errorf("update task %s: %w", ir.it.ID, err)
	}
	abs, err := filepath.Abs(ir.task.Path)
	if err != nil {
		return nil
	}
	rel, err := filepath.Rel(ir.repo.Dir, abs)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return nil // a task file outside the tree is not the tree's
	}
	return e.commitOnce(ctx, ir, ir.it.ID+"/complete", "Mark task "+ir.it.ID+" completed", workspace.CommitOptions{Only: []string{filepath.ToSlash(rel)}})
}

// commitOnce commits as step id, once: a commit already carrying the
// step's trailer (a crash after committing) is adopted, not repeated. Its
// subject is title, else the item's.
func (e *Engine) commitOnce(ctx context.Context, ir *itemRun, id, title string, opt workspace.CommitOptions) error {
	prev, err := e.d.Store.GetStep(ctx, ir.run, id)
	if err == nil && prev.Status == store.StepCompleted {
		return nil
	}
	tried := err == nil // started before: a crash may have left its commit unrecorded
	rec := store.Step{RunID: ir.run, ItemID: ir.it.ID, ID: id, Kind: "commit"}
	if err := e.d.Store.StartStep(ctx, rec); err != nil {
		return journalErr(ir.it.ID, err)
	}
	mark := workspace.Mark{Step: id, Run: ir.run}
	opt.Mask = e.commitMask()
	sha, err := e.committedBefore(ctx, ir, mark, tried)
	if err != nil {
		return err
	}
	if sha == "" {
		sha, err = ir.repo.Commit(ctx, e.commitSubject(ir, cmp.Or(title, ir.task.Title)), mark, opt)
		if err != nil {
			rec.Error = err.Error()
			return e.failStep(ctx, rec, fmt.Errorf("commit %s: %w", ir.it.ID, err))
		}
		e.d.Crash(CrashCommitted)
	}
	// A remote item's step completes once its commit is on the remote,
	// where another worker continues from.
	if sha, err = ir.remote.Push(ctx, sha, mark); err != nil {
		return err
	}
	rec.Status = store.StepCompleted
	res := map[string]string{"commit": sha}
	if sha == "" {
		res["nothing"] = nothingToCommit
	}
	rec.Result, _ = json.Marshal(res)
	if err := ir.remote.NoteWIP(ctx, &rec); err != nil {
		return err
	}
	return e.finishStep(ctx, rec)
}

// nothingToCommit is what a commit step with nothing to commit records:
// it makes no empty commit, and pushes nothing.
const nothingToCommit = "nothing to commit"

// commitMask is what a commit's files go through: cadre's secrets masked,
// which an agent may have written into its work; nil with none to mask.
func (e *Engine) commitMask() func([]byte) []byte {
	if !e.d.Mask.Enabled() {
		return nil
	}
	return e.d.Mask.Bytes
}

// commitSubject is a commit's subject: title in the configured format, its
// conventional type from the item's tags (an issue's labels) or the title.
func (e *Engine) commitSubject(ir *itemRun, title string) string {
	tags := ir.task.Tags
	if is, ok := ir.issueOf(e); ok {
		tags = append(slices.Clip(tags), is.Labels...)
	}
	return commitmsg.Subject(e.d.Config.Commit.Format, commitmsg.Kind(title, tags), title)
}
