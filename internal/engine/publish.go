package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/cadre-dev/cadre/internal/codehost"
	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/item/intake"
	"github.com/cadre-dev/cadre/internal/reply"
	"github.com/cadre-dev/cadre/internal/report"
	"github.com/cadre-dev/cadre/internal/store"
	"github.com/cadre-dev/cadre/internal/workflow"
)

// Issue is an issue item's issue, as the code host gave it.
type Issue = codehost.Issue

// issueOf reads an issue item's record, when the item came from an issue.
func (e *Engine) issueOf(it store.Item) (Issue, bool) { return intake.IssueOf(it) }

// learnCredential has the code host resolve a credential it would learn
// late, when ir is an issue item (whose end calls the code host): from
// then on it is masked in what the item's agents print. A failure is the
// publishing step's to report.
func (e *Engine) learnCredential(ctx context.Context, ir *itemRun) {
	if c, ok := e.d.Forge.(codehost.Credentialed); ok {
		if _, issue := ir.issueOf(e); issue {
			c.LearnCredential(ctx)
		}
	}
}

// issueOf is Engine.issueOf of the item, read once per item run.
func (ir *itemRun) issueOf(e *Engine) (Issue, bool) {
	ir.issueOnce.Do(func() { ir.issue, ir.isIssue = e.issueOf(ir.it) })
	return ir.issue, ir.isIssue
}

// comment posts (or adopts, by its marker) a comment of kind on an
// issue item's issue once, as a journaled step. Comments are best effort:
// a failure of the code host is a warning; only a failed journal write is
// returned.
func (e *Engine) comment(ctx context.Context, ir *itemRun, kind, body string) error {
	is, ok := ir.issueOf(e)
	if !ok || e.d.Forge == nil || !e.d.Config.Host().Comments || is.Key != "" && e.d.Tracker == nil {
		return nil
	}
	id := ir.it.ID + "/publish/comment-" + kind
	if rec, err := e.d.Store.GetStep(ctx, ir.run, id); err == nil && rec.Status == store.StepCompleted {
		return nil
	}
	rec := store.Step{RunID: ir.run, ItemID: ir.it.ID, ID: id, Kind: "comment"}
	if err := e.d.Store.StartStep(ctx, rec); err != nil {
		return journalErr(ir.it.ID, err)
	}
	marker := fmt.Sprintf("cadre:%s:%s:%s", ir.run, ir.it.ID, kind)
	if err := e.postComment(ctx, is, marker, body); err != nil {
		rec.Error = err.Error()
		if err := e.failStep(ctx, rec, nil); err != nil {
			return err
		}
		e.publish(ir, event.Event{Type: event.Warning, Message: "comment on issue: " + err.Error()})
		return nil
	}
	rec.Status = store.StepCompleted
	return e.finishStep(ctx, rec)
}

// errNoChanges says an issue item's branch holds no commit past its base:
// its agents changed nothing, so nothing is pushed and no pull request
// opened.
var errNoChanges = errors.New("its agents changed nothing, so no pull request was opened")

// publish pushes a completed issue item's branch and opens (or adopts) its
// pull request, each once, as journaled steps.
func (e *Engine) publishItem(ctx context.Context, ir *itemRun) (string, error) {
	is, ok := ir.issueOf(e)
	if !ok || e.d.Forge == nil || ir.rs.opts.InPlace {
		return "", nil
	}
	branch := currentBranch(ctx, ir)
	pushID := ir.it.ID + "/publish/push#1"
	if rec, err := e.d.Store.GetStep(ctx, ir.run, pushID); err != nil || rec.Status != store.StepCompleted {
		if ahead, err := ir.repo.Ahead(ctx, e.baseRef(ctx)); err == nil && !ahead {
			return "", errNoChanges
		}
		if err := e.guardCI(ctx, ir); err != nil {
			return "", err
		}
		rec := store.Step{RunID: ir.run, ItemID: ir.it.ID, ID: pushID, Kind: report.KindPush}
		if err := e.d.Store.StartStep(ctx, rec); err != nil {
			return "", journalErr(ir.it.ID, err)
		}
		if err := e.d.Forge.Push(ctx, ir.dir, branch); err != nil {
			rec.Error = err.Error()
			return "", e.failStep(ctx, rec, fmt.Errorf("push %s: %w", branch, err))
		}
		e.d.Crash(CrashPushed)
		rec.Status = store.StepCompleted
		rec.Result, _ = json.Marshal(report.PublishRecord{Branch: branch})
		if err := e.finishStep(ctx, rec); err != nil {
			return "", err
		}
	}
	prID := report.PRStepID(ir.it.ID)
	if rec, err := e.d.Store.GetStep(ctx, ir.run, prID); err == nil && rec.Status == store.StepCompleted {
		return report.ReadPublishRecord(rec).Output, nil
	}
	rec := store.Step{RunID: ir.run, ItemID: ir.it.ID, ID: prID, Kind: report.KindPR}
	if err := e.d.Store.StartStep(ctx, rec); err != nil {
		return "", journalErr(ir.it.ID, err)
	}
	title, body := e.prText(ctx, ir, is)
	pr := codehost.PullRequest{Repo: is.Repo, Head: branch, Base: e.d.Config.BaseBranch,
		Title: title, Body: body, Issue: is.Number, Draft: e.d.Config.Host().Draft, Labels: e.d.Config.Host().Labels}
	err := e.guardSensitive(ctx, ir, &pr)
	url, number := "", 0
	if err == nil {
		url, number, err = e.d.Forge.EnsurePR(ctx, pr)
	}
	if err != nil {
		rec.Error = err.Error()
		return "", e.failStep(ctx, rec, fmt.Errorf("pull request: %w", err))
	}
	e.d.Crash(CrashPRCreated)
	rec.Status = store.StepCompleted
	rec.Result, _ = json.Marshal(report.PublishRecord{Branch: branch, Output: url, Number: number, Title: title})
	if err := e.finishStep(ctx, rec); err != nil {
		return "", err
	}
	return url, e.trackReview(ctx, ir, is, url, title)
}

func currentBranch(ctx context.Context, ir *itemRun) string {
	branch, err := ir.repo.Branch(ctx)
	if err != nil {
		return ""
	}
	return branch
}

// prText is the pull request's title and body: the pr-composer's output when
// the workflow had one (reply.PullRequest), else the issue's title and the
// item's commits; always closing the issue.
func (e *Engine) prText(ctx context.Context, ir *itemRun, is Issue) (string, string) {
	title, body := is.Title, ""
	if out := e.composerOutput(ctx, ir); out != "" {
		// The composer's output goes public: never through a link.
		data, _ := readText(ir.outDir, out)
		title, body = reply.PullRequest(data, title)
	}
	if body == "" {
		log, _ := ir.repo.Git(context.Background(), "log", "--format=- %s", e.baseRef(context.Background())+"..HEAD")
		body = "Changes:\n\n" + strings.TrimSpace(log)
	}
	if is.Key != "" {
		// The tracker's issue is closed by the tracker (tracker.states),
		// not by the forge: the key names it, for integrations that link.
		return title, body + fmt.Sprintf("\n\nResolves %s (%s)\n", is.Key, is.URL)
	}
	return title, body + fmt.Sprintf("\n\nCloses #%d\n", is.Number)
}

// composerOutput is the output file of the item's last completed
// pr-composer step, as the journal has it: a composer that failed, or
// one of a workflow's earlier attempt with a later one completed, is not
// the one whose text goes public.
func (e *Engine) composerOutput(ctx context.Context, ir *itemRun) string {
	steps, err := e.d.Store.ItemSteps(ctx, ir.run, ir.it.ID)
	if err != nil {
		return ""
	}
	for i := len(steps) - 1; i >= 0; i-- {
		if st := steps[i]; st.Role == "pr-composer" && st.Status == store.StepCompleted {
			// Each attempt's output has a name of its own, which the
			// journal keeps; the item's directory is this machine's.
			_, out, _ := ir.stepFiles(st.ID)
			if st.OutputPath != "" {
				out = filepath.Join(filepath.Dir(out), filepath.Base(st.OutputPath))
			}
			return out
		}
	}
	return ""
}

// finishIssue publishes a completed issue item and reports its end on the
// issue; a publishing failure fails the item (its work stays on its branch).
func (e *Engine) finishIssue(ctx context.Context, ir *itemRun, ok bool, reason string) (string, error) {
	if _, isIssue := ir.issueOf(e); !isIssue {
		return "", nil
	}
	if !ok {
		return "", e.comment(ctx, ir, "failed", "cadre could not complete this issue: "+e.publicReason(reason)+"\n\n"+e.logPointer(ir))
	}
	url, err := e.publishItem(ctx, ir)
	if errors.Is(err, workflow.ErrPaused) {
		// A person decides whether it is pushed; a tracker's issue says so
		// where its people look.
		return "", both(err, e.trackPaused(ctx, ir))
	}
	if errors.Is(err, errNoChanges) {
		e.publish(ir, event.Event{Type: event.Warning, Message: "nothing to publish: " + err.Error()})
		return "", e.comment(ctx, ir, "done", "cadre finished this issue: "+err.Error()+".")
	}
	if isJournalErr(err) {
		return "", err
	}
	if err != nil {
		return "", both(err, e.comment(ctx, ir, "failed", "cadre finished the work but could not publish it: "+e.publicReason(err.Error())+"\n\n"+e.logPointer(ir)))
	}
	msg := "cadre finished this issue"
	if url != "" {
		msg += ": " + url
	}
	return url, e.comment(ctx, ir, "done", msg)
}
