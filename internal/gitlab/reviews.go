package gitlab

import (
	"context"
	"errors"
	"fmt"
	"github.com/cadre-dev/cadre/internal/fence"
	"net/http"
	"strings"
	"time"

	gl "gitlab.com/gitlab-org/api/client-go/v2"
)

// discussions lists every discussion of merge request iid, oldest first.
func (c *Client) discussions(ctx context.Context, op, project string, iid int) ([]*gl.Discussion, error) {
	var out []*gl.Discussion
	err := pages(ctx, c, op, func(lo gl.ListOptions, ro ...gl.RequestOptionFunc) ([]*gl.Discussion, *gl.Response, error) {
		return c.api.Discussions.ListMergeRequestDiscussions(project, int64(iid), &gl.ListMergeRequestDiscussionsOptions{ListOptions: lo}, ro...)
	}, func(d *gl.Discussion) bool {
		out = append(out, d)
		return true
	})
	return out, err
}

// Threads lists the discussions of merge request iid people opened, one
// per discussion as its first note has it; those GitLab opened itself
// (system notes: "added 2 commits") are left out.
func (c *Client) Threads(ctx context.Context, project string, iid int) ([]Thread, error) {
	op := fmt.Sprintf("list threads of !%d of %s", iid, project)
	if err := checkItem(project, iid); err != nil {
		return nil, fmt.Errorf("gitlab: %s: %w", op, err)
	}
	ds, err := c.discussions(ctx, op, project, iid)
	if err != nil {
		return nil, err
	}
	var out []Thread
	for _, d := range ds {
		if len(d.Notes) == 0 || d.Notes[0] == nil || d.Notes[0].System {
			continue
		}
		n := d.Notes[0]
		t := Thread{Discussion: d.ID, NoteID: n.ID, Author: n.Author.Username, Body: n.Body, Resolved: n.Resolved, Created: deref(n.CreatedAt)}
		if p := n.Position; p != nil {
			t.Path, t.Line = p.NewPath, int(p.NewLine)
			if t.Line == 0 && p.OldLine != 0 {
				t.Path, t.Line = p.OldPath, int(p.OldLine)
			}
		}
		out = append(out, t)
	}
	return out, nil
}

// Reply replies with body in discussion of merge request iid, unless a
// note of that discussion carries marker already (as EnsureIssueNote
// keys its notes).
func (c *Client) Reply(ctx context.Context, project string, iid int, discussion, marker, body string) error {
	op := fmt.Sprintf("reply in thread %s of !%d of %s", discussion, iid, project)
	if err := checkItem(project, iid); err != nil {
		return fmt.Errorf("gitlab: %s: %w", op, err)
	}
	if discussion == "" || strings.ContainsAny(discussion, "/?#") {
		return fmt.Errorf("gitlab: %s: thread id %q is not one", op, discussion)
	}
	return c.postOnce(ctx, op, fmt.Sprintf("%s!%d", project, iid), marker, body, func(tag string) (bool, error) {
		ds, err := c.discussions(ctx, op, project, iid)
		if err != nil {
			return false, err
		}
		for _, d := range ds {
			if d.ID != discussion {
				continue
			}
			for _, n := range d.Notes {
				if n != nil && !n.System && fence.Carries(n.Body, tag) {
					return true, nil
				}
			}
			return false, nil
		}
		return false, fmt.Errorf("gitlab: %s: no such thread", op)
	}, func(body string) error {
		_, _, err := c.api.Discussions.AddMergeRequestDiscussionNote(project, int64(iid), discussion,
			&gl.AddMergeRequestDiscussionNoteOptions{Body: &body}, gl.WithContext(ctx))
		return err
	})
}

// mrNotes lists every note of merge request iid, system notes included,
// oldest first.
func (c *Client) mrNotes(ctx context.Context, op, project string, iid int) ([]Note, error) {
	var out []Note
	err := pages(ctx, c, op, func(lo gl.ListOptions, ro ...gl.RequestOptionFunc) ([]*gl.Note, *gl.Response, error) {
		opt := &gl.ListMergeRequestNotesOptions{ListOptions: lo, OrderBy: gl.Ptr("created_at"), Sort: gl.Ptr("asc")}
		return c.api.Notes.ListMergeRequestNotes(project, int64(iid), opt, ro...)
	}, func(n *gl.Note) bool {
		out = append(out, noteOf(n))
		return true
	})
	return out, err
}

// EnsureMRNote posts body on merge request iid unless a note carrying
// marker is there already, as EnsureIssueNote does on an issue.
func (c *Client) EnsureMRNote(ctx context.Context, project string, iid int, marker, body string) error {
	op := fmt.Sprintf("note on !%d of %s", iid, project)
	if err := checkItem(project, iid); err != nil {
		return fmt.Errorf("gitlab: %s: %w", op, err)
	}
	return c.postOnce(ctx, op, fmt.Sprintf("%s!%d", project, iid), marker, body, func(tag string) (bool, error) {
		notes, err := c.mrNotes(ctx, op, project, iid)
		return hasTag(notes, tag), err
	}, func(body string) error {
		_, _, err := c.api.Notes.CreateMergeRequestNote(project, int64(iid), &gl.CreateMergeRequestNoteOptions{Body: &body}, gl.WithContext(ctx))
		return err
	})
}

// approvedNote is the system note GitLab writes when someone approves.
const approvedNote = "approved this merge request"

// Approvals lists who approved merge request iid, and when, and how many
// approvals it still needs. The time is GitLab's approved_at where it
// gives one, else that of the approver's latest "approved this merge
// request" system note; zero when neither says.
func (c *Client) Approvals(ctx context.Context, project string, iid int) ([]Approval, int, error) {
	op := fmt.Sprintf("approvals of !%d of %s", iid, project)
	if err := checkItem(project, iid); err != nil {
		return nil, 0, fmt.Errorf("gitlab: %s: %w", op, err)
	}
	conf, _, err := c.api.MergeRequestApprovals.GetConfiguration(project, int64(iid), gl.WithContext(ctx))
	if err != nil {
		return nil, 0, c.fail(op, err)
	}
	var out []Approval
	timed := true
	for _, a := range conf.ApprovedBy {
		if a == nil || a.User == nil {
			continue
		}
		out = append(out, Approval{Author: a.User.Username, At: deref(a.ApprovedAt)})
		timed = timed && a.ApprovedAt != nil
	}
	if timed {
		return out, int(conf.ApprovalsLeft), nil
	}
	notes, err := c.mrNotes(ctx, op, project, iid)
	if err != nil {
		return nil, 0, err
	}
	for i := range out {
		if !out[i].At.IsZero() {
			continue
		}
		for _, n := range notes {
			if n.System && n.Author == out[i].Author && strings.HasPrefix(strings.TrimSpace(n.Body), approvedNote) && n.Created.After(out[i].At) {
				out[i].At = n.Created
			}
		}
	}
	return out, int(conf.ApprovalsLeft), nil
}

// HeadPushed returns when sha became the head of merge request iid: the
// creation time of the merge request's diff version whose head is sha.
// It is zero when no version has that head (GitLab has not taken the push
// in yet).
func (c *Client) HeadPushed(ctx context.Context, project string, iid int, sha string) (time.Time, error) {
	op := fmt.Sprintf("versions of !%d of %s", iid, project)
	if err := checkItem(project, iid); err != nil {
		return time.Time{}, fmt.Errorf("gitlab: %s: %w", op, err)
	}
	var at time.Time
	err := pages(ctx, c, op, func(lo gl.ListOptions, ro ...gl.RequestOptionFunc) ([]*gl.MergeRequestDiffVersion, *gl.Response, error) {
		return c.api.MergeRequests.GetMergeRequestDiffVersions(project, int64(iid), &gl.GetMergeRequestDiffVersionsOptions{ListOptions: lo}, ro...)
	}, func(v *gl.MergeRequestDiffVersion) bool {
		// A head pushed twice (a force-push back) counts from its last push.
		if t := deref(v.CreatedAt); v.HeadCommitSHA == sha && t.After(at) {
			at = t
		}
		return true
	})
	return at, err
}

// ResetsApprovals reports whether a push takes the project's approvals
// back (reset_approvals_on_push). An instance without approval settings
// (GitLab Free answers 404 or 403) resets none: false.
func (c *Client) ResetsApprovals(ctx context.Context, project string) (bool, error) {
	op := "approval settings of " + project
	if err := CheckProject(project); err != nil {
		return false, fmt.Errorf("gitlab: %s: %w", op, err)
	}
	conf, _, err := c.api.Projects.GetApprovalConfiguration(project, gl.WithContext(ctx))
	if err != nil {
		err = c.fail(op, err)
		if e := (*Error)(nil); errors.As(err, &e) && (e.Status == http.StatusNotFound || e.Status == http.StatusForbidden) {
			return false, nil
		}
		return false, err
	}
	return conf.ResetApprovalsOnPush, nil
}

// Members maps the project's active members, inherited from its groups
// included, to their access level (30 developer, 40 maintainer, 50
// owner); one a group and the project both list has the higher.
func (c *Client) Members(ctx context.Context, project string) (map[string]int, error) {
	op := "members of " + project
	if err := CheckProject(project); err != nil {
		return nil, fmt.Errorf("gitlab: %s: %w", op, err)
	}
	out := map[string]int{}
	err := pages(ctx, c, op, func(lo gl.ListOptions, ro ...gl.RequestOptionFunc) ([]*gl.ProjectMember, *gl.Response, error) {
		return c.api.ProjectMembers.ListAllProjectMembers(project, &gl.ListProjectMembersOptions{ListOptions: lo}, ro...)
	}, func(m *gl.ProjectMember) bool {
		if m.State == "active" || m.State == "" {
			out[m.Username] = max(out[m.Username], int(m.AccessLevel))
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
