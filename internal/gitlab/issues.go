package gitlab

import (
	"context"
	"fmt"
	"github.com/cadre-dev/cadre/internal/fence"
	"strings"
	"time"

	gl "gitlab.com/gitlab-org/api/client-go/v2"
)

// Issue fetches issue iid of project with its notes people wrote (system
// notes left out), oldest first.
func (c *Client) Issue(ctx context.Context, project string, iid int) (Issue, error) {
	op := fmt.Sprintf("get issue #%d of %s", iid, project)
	if err := checkItem(project, iid); err != nil {
		return Issue{}, fmt.Errorf("gitlab: %s: %w", op, err)
	}
	is, _, err := c.api.Issues.GetIssue(project, int64(iid), gl.WithContext(ctx))
	if err != nil {
		return Issue{}, c.fail(op, err)
	}
	out := issueOf(is)
	notes, err := c.issueNotes(ctx, project, iid)
	if err != nil {
		return Issue{}, err
	}
	for _, n := range notes {
		if !n.System {
			out.Notes = append(out.Notes, n)
		}
	}
	return out, nil
}

func issueOf(is *gl.Issue) Issue {
	out := Issue{IID: int(is.IID), Title: is.Title, Body: is.Description, URL: is.WebURL, State: is.State,
		Labels: append([]string(nil), is.Labels...)}
	if is.Author != nil {
		out.Author = is.Author.Username
	}
	return out
}

func noteOf(n *gl.Note) Note {
	return Note{ID: n.ID, Author: n.Author.Username, Body: n.Body, System: n.System, Created: deref(n.CreatedAt)}
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// issueNotes lists every note of an issue, system notes included, oldest
// first.
func (c *Client) issueNotes(ctx context.Context, project string, iid int) ([]Note, error) {
	op := fmt.Sprintf("list notes of issue #%d of %s", iid, project)
	var out []Note
	err := pages(ctx, c, op, func(lo gl.ListOptions, ro ...gl.RequestOptionFunc) ([]*gl.Note, *gl.Response, error) {
		opt := &gl.ListIssueNotesOptions{ListOptions: lo, OrderBy: gl.Ptr("created_at"), Sort: gl.Ptr("asc")}
		return c.api.Notes.ListIssueNotes(project, int64(iid), opt, ro...)
	}, func(n *gl.Note) bool {
		out = append(out, noteOf(n))
		return true
	})
	return out, err
}

// Issues lists the project's issues q selects, newest first, without
// their notes.
func (c *Client) Issues(ctx context.Context, project string, q Query) ([]Issue, error) {
	op := "list issues of " + project
	if err := CheckProject(project); err != nil {
		return nil, fmt.Errorf("gitlab: %s: %w", op, err)
	}
	opt, err := issueQuery(q)
	if err != nil {
		return nil, fmt.Errorf("gitlab: %s: %w", op, err)
	}
	limit := q.Limit
	if limit <= 0 {
		limit = DefaultLimit
	}
	var out []Issue
	err = pages(ctx, c, op, func(lo gl.ListOptions, ro ...gl.RequestOptionFunc) ([]*gl.Issue, *gl.Response, error) {
		lo.PerPage = int64(min(limit, 100))
		opt.ListOptions = lo
		return c.api.Issues.ListProjectIssues(project, opt, ro...)
	}, func(is *gl.Issue) bool {
		out = append(out, issueOf(is))
		return len(out) < limit
	})
	return out, err
}

// issueQuery spells q as GitLab's list options.
func issueQuery(q Query) (*gl.ListProjectIssuesOptions, error) {
	opt := &gl.ListProjectIssuesOptions{OrderBy: gl.Ptr("created_at"), Sort: gl.Ptr("desc")}
	switch q.State {
	case "", "open", "opened":
		opt.State = gl.Ptr("opened")
	case "closed":
		opt.State = gl.Ptr("closed")
	case "all":
	default:
		return nil, fmt.Errorf("issue state %q must be open, closed or all", q.State)
	}
	if len(q.Labels) > 0 {
		opt.Labels = (*gl.LabelOptions)(&q.Labels)
	}
	switch m := strings.TrimSpace(q.Milestone); m {
	case "":
	case "*":
		opt.Milestone = gl.Ptr("Any")
	case "none":
		opt.Milestone = gl.Ptr("None")
	default:
		opt.Milestone = gl.Ptr(m)
	}
	switch a := strings.TrimPrefix(strings.TrimSpace(q.Assignee), "@"); a {
	case "":
	case "*":
		opt.AssigneeID = gl.AssigneeID(gl.UserIDAny)
	case "none":
		opt.AssigneeID = gl.AssigneeID(gl.UserIDNone)
	default:
		opt.AssigneeUsername = gl.Ptr(a)
	}
	return opt, nil
}

func checkItem(project string, iid int) error {
	if err := CheckProject(project); err != nil {
		return err
	}
	if iid <= 0 {
		return fmt.Errorf("number %d must be 1 or more", iid)
	}
	return nil
}

// hidden is marker as the HTML comment that keys a note: invisible on the
// page, findable in the body.
func hidden(marker string) string { return "<!-- cadre:" + marker + " -->" }

// checkMarker refuses a marker that would not stay one hidden comment.
func checkMarker(marker string) error {
	if marker == "" || strings.ContainsAny(marker, "<>\r\n") || strings.Contains(marker, "--") {
		return fmt.Errorf("marker %q must be non-empty, one line, without '<', '>' or '--'", marker)
	}
	return nil
}

// postOnce posts body with marker's tag appended, unless has finds a note
// carrying it already. A lost answer is looked for again, so a crash
// between posting and recording, or a retry, never posts twice.
func (c *Client) postOnce(ctx context.Context, op, key, marker, body string,
	has func(tag string) (bool, error), post func(body string) error) error {
	if err := checkMarker(marker); err != nil {
		return fmt.Errorf("gitlab: %s: %w", op, err)
	}
	tag := hidden(marker)
	unlock, err := c.lockItem(ctx, op, key)
	if err != nil {
		return err
	}
	defer unlock()
	if ok, err := has(tag); err != nil || ok {
		return err
	}
	err = c.fail(op, post(c.clean(body)+"\n\n"+tag))
	if err == nil || !ambiguous(err) || ctx.Err() != nil {
		return err
	}
	if ok, herr := has(tag); herr == nil && ok {
		return nil
	}
	return err
}

// lockItem holds key for a look-up-then-write, so two callers for the same
// item cannot both find nothing and both write.
func (c *Client) lockItem(ctx context.Context, op, key string) (unlock func(), err error) {
	unlock, err = c.items.Lock(ctx, key, nil)
	if err != nil {
		return nil, fmt.Errorf("gitlab: %s: %w", op, err)
	}
	return unlock, nil
}

// EnsureIssueNote posts body on issue iid unless a note carrying marker is
// there already. The marker travels in the note as a hidden HTML comment
// (<!-- cadre:MARKER -->), so a crash between posting and recording, or a
// lost answer, never posts twice.
func (c *Client) EnsureIssueNote(ctx context.Context, project string, iid int, marker, body string) error {
	op := fmt.Sprintf("note on issue #%d of %s", iid, project)
	if err := checkItem(project, iid); err != nil {
		return fmt.Errorf("gitlab: %s: %w", op, err)
	}
	return c.postOnce(ctx, op, fmt.Sprintf("%s#%d", project, iid), marker, body, func(tag string) (bool, error) {
		notes, err := c.issueNotes(ctx, project, iid)
		return hasTag(notes, tag), err
	}, func(body string) error {
		_, _, err := c.api.Notes.CreateIssueNote(project, int64(iid), &gl.CreateIssueNoteOptions{Body: &body}, gl.WithContext(ctx))
		return err
	})
}

func hasTag(notes []Note, tag string) bool {
	for _, n := range notes {
		if !n.System && fence.Carries(n.Body, tag) {
			return true
		}
	}
	return false
}

// since is a time GitLab reads exactly: whole seconds, UTC.
func since(t time.Time) *time.Time {
	u := t.UTC().Truncate(time.Second)
	return &u
}
