package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"unicode"

	"github.com/cadre-dev/cadre/internal/item/taskfile"
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
	return e.commitOnce(ctx, ir, ir.it.ID+"/commit", workspace.CommitOptions{Base: e.d.Config.BaseBranch, Check: outsideLinks(ir)})
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
	return e.commitOnce(ctx, ir, ir.it.ID+"/complete", workspace.CommitOptions{Only: []string{filepath.ToSlash(rel)}})
}

// commitOnce commits as step id, once: a commit already carrying the
// step's trailer (a crash after committing) is adopted, not repeated.
func (e *Engine) commitOnce(ctx context.Context, ir *itemRun, id string, opt workspace.CommitOptions) error {
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
		sha, err = ir.repo.Commit(ctx, commitMessage(ir.task), mark, opt)
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

// commitMessage names the task; the title is untrusted text, so it is
// reduced to one short line (it travels as one argv element, never a shell).
func commitMessage(t *taskfile.Task) string {
	return fmt.Sprintf("cadre: complete task %s: %s", t.ID, shorten(t.Title, 60))
}

// shorten puts untrusted or long text on one line of at most n runes.
// Control characters and bidirectional overrides are dropped: in a commit
// subject they would make a log or a terminal show other text than git
// holds (a reversed file name, a cleared line).
func shorten(s string, n int) string {
	s = strings.Join(strings.Fields(strings.Map(visible, s)), " ")
	if r := []rune(s); len(r) > n {
		s = string(r[:n]) + "…"
	}
	return s
}

// visible is r, or -1 (dropped) for a control character other than white
// space (which strings.Fields turns into separators) and for a
// bidirectional control (U+202A–U+202E, U+2066–U+2069, U+200E, U+200F,
// U+061C).
func visible(r rune) rune {
	if unicode.IsControl(r) && !unicode.IsSpace(r) || unicode.Is(unicode.Bidi_Control, r) {
		return -1
	}
	return r
}
