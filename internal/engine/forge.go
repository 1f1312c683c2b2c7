package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/item/taskfile"
	"github.com/cadre-dev/cadre/internal/safefile"
	"github.com/cadre-dev/cadre/internal/store"
)

// Issue is a work item from a code host, as the engine needs it.
type Issue struct {
	Repo   string // owner/repo
	Number int
	Title  string
	Body   string // body and comments: untrusted text
	URL    string
	Author string
	Labels []string
}

// Forge is the code host: issues in, branches, pull requests and progress
// comments out. Every mutating call must be idempotent by its key (the
// head branch for a pull request, the marker for a comment), so a resumed
// run never makes a second one.
type Forge interface {
	// Issue fetches one issue by reference ("42", "#42", "owner/repo#42").
	Issue(ctx context.Context, ref string) (Issue, error)
	// Issues lists the repository's issues matching q.
	Issues(ctx context.Context, q IssueQuery) ([]Issue, error)
	// Push publishes the item's branch from its worktree.
	Push(ctx context.Context, dir, branch string) error
	// EnsurePR opens the pull request for head, or adopts and updates the
	// one that exists; it returns its URL and number.
	EnsurePR(ctx context.Context, pr PullRequest) (url string, number int, err error)
	// EnsureComment posts body on the issue once per marker.
	EnsureComment(ctx context.Context, repo string, issue int, marker, body string) error
}

// IssueQuery selects issues to work on (cadre run --label ...).
type IssueQuery struct {
	Labels    []string `json:"labels,omitempty"`
	Milestone string   `json:"milestone,omitempty"`
	Assignee  string   `json:"assignee,omitempty"`
	State     string   `json:"state,omitempty"`
	Limit     int      `json:"limit,omitempty"`
}

// String describes the query for a person: "labels bug, p1; state open".
func (q IssueQuery) String() string {
	var parts []string
	if len(q.Labels) > 0 {
		parts = append(parts, "labels "+strings.Join(q.Labels, ", "))
	}
	for _, p := range []struct{ name, v string }{{"milestone", q.Milestone}, {"assignee", q.Assignee}, {"state", q.State}} {
		if p.v != "" {
			parts = append(parts, p.name+" "+p.v)
		}
	}
	if q.Limit > 0 {
		parts = append(parts, fmt.Sprintf("at most %d", q.Limit))
	}
	return strings.Join(parts, "; ")
}

// Empty says whether the query selects nothing by itself.
func (q IssueQuery) Empty() bool {
	return len(q.Labels) == 0 && q.Milestone == "" && q.Assignee == "" && q.State == "" && q.Limit == 0
}

// PullRequest is what EnsurePR opens.
type PullRequest struct {
	Repo, Head, Base, Title, Body string
	Issue                         int
	Draft                         bool
	Labels                        []string
}

var issueRefRE = regexp.MustCompile(`^(?:[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)?#?[0-9]+$|^https?://\S+/issues/[0-9]+$`)

// isIssueRef says whether a run target names an issue rather than a file.
func isIssueRef(s string) bool { return issueRefRE.MatchString(s) }

// githubItem is the engine's record of an issue item (items/<id>/issue.json).
type githubItem struct {
	Issue Issue  `json:"issue"`
	PR    string `json:"pr,omitempty"`
}

// issueTask turns an issue into a task file under the run's state, so the
// same machinery (frontmatter board, review, workflows) drives it. The file
// is cadre's own, never in the repository; the issue text stays untrusted
// and is given to agents fenced as data.
func (e *Engine) issueTask(run string, is Issue) (*taskfile.Task, error) {
	id := strings.NewReplacer("/", "-", "#", "-").Replace(is.Repo) + "-" + fmt.Sprint(is.Number)
	if e.d.Config.Repository == "" || strings.EqualFold(is.Repo, e.d.Config.Repository) {
		id = fmt.Sprint(is.Number)
	}
	path, err := e.generatedTask(run, id, fmt.Sprintf("source: github\nissue: %d\nrepository: %s\n", is.Number, is.Repo),
		shorten(is.Title, 200), is.Body)
	if err != nil {
		return nil, err
	}
	meta, _ := json.MarshalIndent(githubItem{Issue: is}, "", "  ")
	if err := safefile.Replace(filepath.Join(filepath.Dir(path), "issue.json"), meta); err != nil {
		return nil, err
	}
	return taskfile.Load(path)
}

// generatedTask writes the task file of an item that has none in the
// repository (an issue, a prompt) under the run's state; the file stem is
// the item id, and its workflow is defaults.workflow.
func (e *Engine) generatedTask(run, id, frontmatter, title, body string) (string, error) {
	dir := filepath.Join(e.StateDir(), "runs", run, "items", id)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	text := fmt.Sprintf("---\nstage: code\nworkflow: %s\n%s---\n# %s\n\n%s\n", e.d.Config.Defaults.Workflow, frontmatter, title, body)
	path := filepath.Join(dir, id+".md")
	return path, safefile.Replace(path, []byte(text))
}

// promptTask turns cadre do's prompt into a task file under the run's
// state, like an issue: the item id is "do-" and a short hash of the prompt.
func (e *Engine) promptTask(run, prompt string) (*taskfile.Task, error) {
	sum := sha256.Sum256([]byte(prompt))
	id := "do-" + hex.EncodeToString(sum[:3]) // the branch name adds the prompt's slug
	path, err := e.generatedTask(run, id, "source: prompt\n", shorten(prompt, 72), prompt)
	if err != nil {
		return nil, err
	}
	return taskfile.Load(path)
}

// issueOf reads an issue item's record, when the item came from an issue.
func (e *Engine) issueOf(it store.Item) (Issue, bool) {
	if it.Source != "github" {
		return Issue{}, false
	}
	dir := filepath.Dir(it.Ref)
	data, err := safefile.ReadFile(dir, filepath.Join(dir, "issue.json"))
	if err != nil {
		return Issue{}, false
	}
	var g githubItem
	if json.Unmarshal(data, &g) != nil {
		return Issue{}, false
	}
	return g.Issue, true
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
	if !ok || e.d.Forge == nil || !e.d.Config.GitHub.Comments {
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
	if err := e.d.Forge.EnsureComment(ctx, is.Repo, is.Number, marker, body); err != nil {
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
		rec := store.Step{RunID: ir.run, ItemID: ir.it.ID, ID: pushID, Kind: "push"}
		if err := e.d.Store.StartStep(ctx, rec); err != nil {
			return "", journalErr(ir.it.ID, err)
		}
		if err := e.d.Forge.Push(ctx, ir.dir, branch); err != nil {
			rec.Error = err.Error()
			return "", e.failStep(ctx, rec, fmt.Errorf("push %s: %w", branch, err))
		}
		e.d.Crash(CrashPushed)
		rec.Status = store.StepCompleted
		rec.Result, _ = json.Marshal(publishRecord{Branch: branch})
		if err := e.finishStep(ctx, rec); err != nil {
			return "", err
		}
	}
	prID := prStepID(ir.it.ID)
	if rec, err := e.d.Store.GetStep(ctx, ir.run, prID); err == nil && rec.Status == store.StepCompleted {
		return readPublishRecord(rec).Output, nil
	}
	rec := store.Step{RunID: ir.run, ItemID: ir.it.ID, ID: prID, Kind: "pr"}
	if err := e.d.Store.StartStep(ctx, rec); err != nil {
		return "", journalErr(ir.it.ID, err)
	}
	title, body := e.prText(ir, is)
	pr := PullRequest{Repo: is.Repo, Head: branch, Base: e.d.Config.BaseBranch,
		Title: title, Body: body, Issue: is.Number, Draft: e.d.Config.GitHub.Draft, Labels: e.d.Config.GitHub.Labels}
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
	rec.Result, _ = json.Marshal(publishRecord{Branch: branch, Output: url, Number: number, Title: title})
	return url, e.finishStep(ctx, rec)
}

func currentBranch(ctx context.Context, ir *itemRun) string {
	branch, err := ir.repo.Branch(ctx)
	if err != nil {
		return ""
	}
	return branch
}

// prText is the pull request's title and body: the pr-composer's output when
// the workflow had one ("# title" then the body, its SIGNAL BLOCK removed),
// else the issue's title and the item's commits; always closing the issue.
func (e *Engine) prText(ir *itemRun, is Issue) (string, string) {
	title, body := is.Title, ""
	matches, _ := filepath.Glob(filepath.Join(ir.outDir, "outputs", "pr-pr-composer-*.md"))
	if len(matches) > 0 {
		// The composer's output goes public: never through a link.
		data, _ := readText(ir.outDir, matches[len(matches)-1])
		title, body = composed(withoutSignal(data), title)
	}
	if body == "" {
		log, _ := ir.repo.Git(context.Background(), "log", "--format=- %s", e.d.Config.BaseBranch+"..HEAD")
		body = "Changes:\n\n" + strings.TrimSpace(log)
	}
	return title, body + fmt.Sprintf("\n\nCloses #%d\n", is.Number)
}

// composed splits a composer's text into the pull request's title and
// body: a first line "# title" or "Title: title" is the title (the latter
// is the composer's label, not the body's), the rest the body; else the
// whole text is the body under title.
func composed(text, title string) (string, string) {
	lines := strings.SplitN(strings.TrimSpace(text), "\n", 2)
	first := strings.TrimSpace(lines[0])
	t, ok := strings.CutPrefix(first, "# ")
	if !ok {
		t, ok = cutLabel(first, "title:")
	}
	if !ok {
		return title, strings.TrimSpace(text)
	}
	if t = strings.TrimSpace(t); t != "" {
		title = t
	}
	if len(lines) < 2 {
		return title, ""
	}
	return title, strings.TrimSpace(lines[1])
}

// cutLabel cuts label (lower case) off the start of s whatever its case:
// "Title:", "TITLE:", "**Title:**" alike.
func cutLabel(s, label string) (string, bool) {
	s = strings.TrimLeft(s, "*_ ")
	if len(s) < len(label) || !strings.EqualFold(s[:len(label)], label) {
		return "", false
	}
	return strings.TrimLeft(s[len(label):], "*_ "), true
}

// refuseIssue says why an issue may not be worked on, given the
// configured author allow-list and required label.
func (e *Engine) refuseIssue(is Issue) string {
	gh := e.d.Config.GitHub
	if len(gh.Authors) > 0 {
		allowed := false
		for _, a := range gh.Authors {
			allowed = allowed || strings.EqualFold(a, is.Author)
		}
		if !allowed {
			return fmt.Sprintf("author %q is not in github.authors", is.Author)
		}
	}
	if gh.RequireLabel != "" {
		for _, l := range is.Labels {
			if strings.EqualFold(l, gh.RequireLabel) {
				return ""
			}
		}
		return fmt.Sprintf("it lacks the label %q that github.require_label asks for", gh.RequireLabel)
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
		return "", e.comment(ctx, ir, "failed", "cadre could not complete this issue: "+oneLine(reason))
	}
	url, err := e.publishItem(ctx, ir)
	if isJournalErr(err) {
		return "", err
	}
	if err != nil {
		return "", both(err, e.comment(ctx, ir, "failed", "cadre finished the work but could not publish it: "+oneLine(err.Error())))
	}
	msg := "cadre finished this issue"
	if url != "" {
		msg += ": " + url
	}
	return url, e.comment(ctx, ir, "done", msg)
}

// errNoForge is returned for issue targets when no code host is configured.
var errNoForge = errors.New("issue targets need GitHub access: set GITHUB_TOKEN (or github.token_env) or log in with gh")
