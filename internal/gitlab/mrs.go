package gitlab

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"

	gl "gitlab.com/gitlab-org/api/client-go/v2"
)

// draftPrefix marks a draft merge request, as GitLab spells it.
const draftPrefix = "Draft: "

// draftRE matches the prefixes GitLab reads as "draft".
var draftRE = regexp.MustCompile(`(?i)^\s*(\[draft\]|\(draft\)|draft:|draft\s*-|\[wip\]|wip:)\s*`)

func undrafted(title string) string { return draftRE.ReplaceAllString(title, "") }

func mrOf(m *gl.BasicMergeRequest) MR {
	out := MR{IID: int(m.IID), URL: m.WebURL, State: m.State, Source: m.SourceBranch, Target: m.TargetBranch,
		Title: m.Title, Body: m.Description, SHA: m.SHA, Draft: m.Draft, HasConflicts: m.HasConflicts,
		MergeStatus: m.DetailedMergeStatus, Updated: deref(m.UpdatedAt)}
	if m.Author != nil {
		out.Author = m.Author.Username
	}
	return out
}

// MR fetches merge request iid as it stands, whether a rebase of it runs
// included.
func (c *Client) MR(ctx context.Context, project string, iid int) (MR, error) {
	op := fmt.Sprintf("get merge request !%d of %s", iid, project)
	if err := checkItem(project, iid); err != nil {
		return MR{}, fmt.Errorf("gitlab: %s: %w", op, err)
	}
	opt := &gl.GetMergeRequestsOptions{IncludeRebaseInProgress: gl.Ptr(true)}
	m, _, err := c.api.MergeRequests.GetMergeRequest(project, int64(iid), opt, gl.WithContext(ctx))
	if err != nil {
		return MR{}, c.fail(op, err)
	}
	out := mrOf(&m.BasicMergeRequest)
	out.MergeError, out.RebaseInProgress = oneLine(c.scrub(m.MergeError)), m.RebaseInProgress
	return out, nil
}

// Rebase asks GitLab to rebase merge request iid's source branch onto its
// target. GitLab does it in the background (202): the merge request's
// head moves when it is done, or its merge_error says why it could not
// be. GitLab refuses with 409 while a rebase is under way (or the merge
// request is no longer open): there is nothing to ask then, and what
// GitLab says of the merge request next tells how it went.
func (c *Client) Rebase(ctx context.Context, project string, iid int) error {
	op := fmt.Sprintf("rebase merge request !%d of %s", iid, project)
	if err := checkItem(project, iid); err != nil {
		return fmt.Errorf("gitlab: %s: %w", op, err)
	}
	unlock, err := c.lockItem(ctx, op, fmt.Sprintf("%s!%d", project, iid))
	if err != nil {
		return err
	}
	defer unlock()
	_, err = c.api.MergeRequests.RebaseMergeRequest(project, int64(iid), nil, gl.WithContext(ctx))
	var e *Error
	if err = c.fail(op, err); errors.As(err, &e) && e.Status == http.StatusConflict {
		return nil
	}
	return err
}

// FindMR returns the newest merge request from source branch in any
// state, nil when there is none.
func (c *Client) FindMR(ctx context.Context, project, source string) (*MR, error) {
	op := fmt.Sprintf("find merge request from %s of %s", source, project)
	if err := CheckProject(project); err != nil {
		return nil, fmt.Errorf("gitlab: %s: %w", op, err)
	}
	m, err := c.findMR(ctx, op, project, source, "")
	if m == nil || err != nil {
		return nil, err
	}
	out := mrOf(m)
	return &out, nil
}

// findMR looks for the newest merge request from source in state ("" for
// any).
func (c *Client) findMR(ctx context.Context, op, project, source, state string) (*gl.BasicMergeRequest, error) {
	opt := &gl.ListProjectMergeRequestsOptions{SourceBranch: gl.Ptr(source), OrderBy: gl.Ptr("created_at"), Sort: gl.Ptr("desc"),
		ListOptions: gl.ListOptions{PerPage: 20}}
	if state != "" {
		opt.State = gl.Ptr(state)
	}
	list, _, err := c.api.MergeRequests.ListProjectMergeRequests(project, opt, gl.WithContext(ctx))
	if err != nil {
		return nil, c.fail(op, err)
	}
	var best *gl.BasicMergeRequest
	for _, m := range list {
		// A fork's branch of the same name is not ours: cadre pushes to
		// the project itself.
		if m.SourceBranch == source && m.SourceProjectID == m.TargetProjectID && (best == nil || m.IID > best.IID) {
			best = m
		}
	}
	return best, nil
}

// EnsureMR opens a merge request from m.Source into m.Target, or brings
// the open one from m.Source up to m: title, description, labels. It looks
// for one first, and again after a create refused as existing or whose
// answer was lost, so a crash between opening and recording never opens
// two. A draft is a "Draft: " title prefix; an existing merge request
// keeps its draft state (a person may have marked it ready).
func (c *Client) EnsureMR(ctx context.Context, project string, m NewMR) (MR, bool, error) {
	op := fmt.Sprintf("merge request from %s of %s", m.Source, project)
	if err := CheckProject(project); err != nil {
		return MR{}, false, fmt.Errorf("gitlab: %s: %w", op, err)
	}
	if m.Source == "" || m.Target == "" || strings.TrimSpace(m.Title) == "" {
		return MR{}, false, fmt.Errorf("gitlab: %s: source, target and title must be set", op)
	}
	unlock, err := c.lockItem(ctx, op, project+"@"+m.Source)
	if err != nil {
		return MR{}, false, err
	}
	defer unlock()
	have, err := c.findMR(ctx, op, project, m.Source, "opened")
	if err != nil {
		return MR{}, false, err
	}
	if have != nil {
		got, err := c.adopt(ctx, project, have, m)
		return got, false, err
	}
	created, err := c.createMR(ctx, op, project, m)
	if err == nil {
		return created, true, nil
	}
	if ctx.Err() != nil || !(ambiguous(err) || alreadyExists(err)) {
		return MR{}, false, err
	}
	have, ferr := c.findMR(ctx, op, project, m.Source, "opened")
	if ferr != nil || have == nil {
		return MR{}, false, err
	}
	if alreadyExists(err) {
		got, aerr := c.adopt(ctx, project, have, m)
		return got, false, aerr
	}
	// The create went through; its answer did not come back.
	return mrOf(have), true, nil
}

// alreadyExists reports whether a create was refused because an open
// merge request from the same source exists (409, or 422 on old servers).
func alreadyExists(err error) bool {
	var e *Error
	return errors.As(err, &e) && (e.Status == http.StatusConflict || e.Status == http.StatusUnprocessableEntity) &&
		strings.Contains(strings.ToLower(e.Message), "already exists")
}

func (c *Client) createMR(ctx context.Context, op, project string, m NewMR) (MR, error) {
	title := c.clean(undrafted(m.Title))
	if m.Draft {
		title = draftPrefix + title
	}
	opt := &gl.CreateMergeRequestOptions{Title: gl.Ptr(title), Description: gl.Ptr(c.clean(m.Body)),
		SourceBranch: gl.Ptr(m.Source), TargetBranch: gl.Ptr(m.Target)}
	if labels := cleanLabels(m.Labels); len(labels) > 0 {
		opt.Labels = (*gl.LabelOptions)(&labels)
	}
	got, _, err := c.api.MergeRequests.CreateMergeRequest(project, opt, gl.WithContext(ctx))
	if err != nil {
		return MR{}, c.fail("open "+op, err)
	}
	return mrOf(&got.BasicMergeRequest), nil
}

func cleanLabels(labels []string) []string {
	var out []string
	for _, l := range labels {
		if l = strings.TrimSpace(l); l != "" && !slices.Contains(out, l) {
			out = append(out, l)
		}
	}
	return out
}

// adopt brings an open merge request up to m where it differs: title (its
// draft state kept), description, missing labels.
func (c *Client) adopt(ctx context.Context, project string, have *gl.BasicMergeRequest, m NewMR) (MR, error) {
	opt := &gl.UpdateMergeRequestOptions{}
	changed := false
	if want := c.clean(undrafted(m.Title)); want != undrafted(have.Title) {
		if have.Draft {
			want = draftPrefix + want
		}
		opt.Title, changed = gl.Ptr(want), true
	}
	if want := c.clean(m.Body); normalise(want) != normalise(have.Description) {
		opt.Description, changed = gl.Ptr(want), true
	}
	var missing []string
	for _, l := range cleanLabels(m.Labels) {
		if !slices.Contains(have.Labels, l) {
			missing = append(missing, l)
		}
	}
	if len(missing) > 0 {
		opt.AddLabels, changed = (*gl.LabelOptions)(&missing), true
	}
	if !changed {
		return mrOf(have), nil
	}
	op := fmt.Sprintf("update merge request !%d of %s", have.IID, project)
	got, _, err := c.api.MergeRequests.UpdateMergeRequest(project, int64(have.IID), opt, gl.WithContext(ctx))
	if err != nil {
		return mrOf(have), c.fail(op, err)
	}
	return mrOf(&got.BasicMergeRequest), nil
}

// normalise evens out the line endings GitLab may store a text with.
func normalise(s string) string { return strings.TrimSpace(strings.ReplaceAll(s, "\r\n", "\n")) }

// OpenMRs lists the project's open merge requests, a hundred a page, each
// page asked on condition.
func (c *Client) OpenMRs(ctx context.Context, project string) ([]MR, error) {
	op := "list open merge requests of " + project
	if err := CheckProject(project); err != nil {
		return nil, fmt.Errorf("gitlab: %s: %w", op, err)
	}
	opt := &gl.ListProjectMergeRequestsOptions{State: gl.Ptr("opened"), OrderBy: gl.Ptr("created_at"), Sort: gl.Ptr("desc")}
	return c.listMRs(ctx, op, project, opt, func(MR) bool { return true })
}

// UpdatedMRs lists the project's merge requests, in any state, updated at
// or after since, most recently updated first: one conditional request
// when fewer than a hundred were.
func (c *Client) UpdatedMRs(ctx context.Context, project string, after time.Time) ([]MR, error) {
	op := "list updated merge requests of " + project
	if err := CheckProject(project); err != nil {
		return nil, fmt.Errorf("gitlab: %s: %w", op, err)
	}
	opt := &gl.ListProjectMergeRequestsOptions{OrderBy: gl.Ptr("updated_at"), Sort: gl.Ptr("desc"), UpdatedAfter: since(after)}
	return c.listMRs(ctx, op, project, opt, func(m MR) bool { return !m.Updated.Before(after.Truncate(time.Second)) })
}

// listMRs reads the pages opt selects while keep holds.
func (c *Client) listMRs(ctx context.Context, op, project string, opt *gl.ListProjectMergeRequestsOptions, keep func(MR) bool) ([]MR, error) {
	var out []MR
	err := pages(ctx, c, op, func(lo gl.ListOptions, ro ...gl.RequestOptionFunc) ([]*gl.BasicMergeRequest, *gl.Response, error) {
		opt.ListOptions = lo
		return c.api.MergeRequests.ListProjectMergeRequests(project, opt, ro...)
	}, func(m *gl.BasicMergeRequest) bool {
		mr := mrOf(m)
		if !keep(mr) {
			return false
		}
		out = append(out, mr)
		return true
	})
	return out, err
}

// Merge merges merge request iid provided its head is still sha, the commit
// the caller saw pass; squash squashes its commits into one, with message
// as that commit's (or the merge commit's) message when not empty. GitLab
// refuses with 409 when the head moved (IsHeadMoved). When the answer is
// lost, or the merge is refused because it is merged already (an earlier
// call whose answer was lost), a merge request found merged at sha counts
// as merged by this call.
func (c *Client) Merge(ctx context.Context, project string, iid int, sha string, squash bool, message string) error {
	op := fmt.Sprintf("merge !%d of %s at %s", iid, project, sha)
	if err := checkItem(project, iid); err != nil {
		return fmt.Errorf("gitlab: %s: %w", op, err)
	}
	if !shaRE.MatchString(sha) {
		return fmt.Errorf("gitlab: %s: head must be a full commit id", op)
	}
	unlock, err := c.lockItem(ctx, op, fmt.Sprintf("%s!%d", project, iid))
	if err != nil {
		return err
	}
	defer unlock()
	opt := &gl.AcceptMergeRequestOptions{SHA: gl.Ptr(sha), Squash: gl.Ptr(squash)}
	if message = c.clean(strings.TrimSpace(message)); message != "" {
		if squash {
			opt.SquashCommitMessage = gl.Ptr(message)
		} else {
			opt.MergeCommitMessage = gl.Ptr(message)
		}
	}
	got, _, err := c.api.MergeRequests.AcceptMergeRequest(project, int64(iid), opt, gl.WithContext(ctx))
	if err == nil {
		if got.State != "merged" && !got.MergeWhenPipelineSucceeds {
			return fmt.Errorf("gitlab: %s: not merged: it is %s", op, got.State)
		}
		return nil
	}
	err = mergeRefused(c.fail(op, err), sha)
	if ctx.Err() != nil || IsHeadMoved(err) {
		return err
	}
	if mr, merr := c.MR(ctx, project, iid); merr == nil && mr.State == "merged" && mr.SHA == sha {
		return nil
	}
	return err
}

// shaRE is a full commit id (SHA-1, or SHA-256 for repositories using it).
var shaRE = regexp.MustCompile(`^(?:[0-9a-f]{40}|[0-9a-f]{64})$`)

// mergeRefused says why GitLab refused a merge, as its statuses mean.
func mergeRefused(err error, sha string) error {
	var e *Error
	if !errors.As(err, &e) {
		return err
	}
	why := ""
	switch e.Status {
	case http.StatusConflict:
		e.moved = true
		why = "the source branch is no longer at " + sha[:min(len(sha), 12)]
	case http.StatusMethodNotAllowed:
		why = "not mergeable: a draft, closed, blocked by its pipeline, approvals or open threads, or merged already"
	case http.StatusNotAcceptable, http.StatusUnprocessableEntity:
		why = "the source branch cannot be merged: it conflicts with the target, needs a rebase, or its pipeline must succeed first"
	case http.StatusUnauthorized, http.StatusForbidden:
		why = "the token may not merge here"
	}
	if why != "" {
		e.Message = strings.TrimSpace(why + ": " + e.Message)
		e.Message = strings.TrimSuffix(e.Message, ":")
	}
	return e
}

// CloseMR closes merge request iid unmerged; closing a closed one changes
// nothing.
func (c *Client) CloseMR(ctx context.Context, project string, iid int) error {
	op := fmt.Sprintf("close merge request !%d of %s", iid, project)
	if err := checkItem(project, iid); err != nil {
		return fmt.Errorf("gitlab: %s: %w", op, err)
	}
	opt := &gl.UpdateMergeRequestOptions{StateEvent: gl.Ptr("close")}
	_, _, err := c.api.MergeRequests.UpdateMergeRequest(project, int64(iid), opt, gl.WithContext(ctx))
	return c.fail(op, err)
}

// Label puts label on merge request iid (on) or takes it off; either is a
// no-op when done already.
func (c *Client) Label(ctx context.Context, project string, iid int, label string, on bool) error {
	op := fmt.Sprintf("label merge request !%d of %s", iid, project)
	if err := checkItem(project, iid); err != nil {
		return fmt.Errorf("gitlab: %s: %w", op, err)
	}
	label = strings.TrimSpace(label)
	if label == "" || strings.Contains(label, ",") {
		return fmt.Errorf("gitlab: %s: label %q must be non-empty, without ','", op, label)
	}
	l := gl.LabelOptions{label}
	opt := &gl.UpdateMergeRequestOptions{AddLabels: &l}
	if !on {
		opt = &gl.UpdateMergeRequestOptions{RemoveLabels: &l}
	}
	_, _, err := c.api.MergeRequests.UpdateMergeRequest(project, int64(iid), opt, gl.WithContext(ctx))
	return c.fail(op, err)
}

// RequestReview asks usernames to review merge request iid, besides the
// reviewers it has.
func (c *Client) RequestReview(ctx context.Context, project string, iid int, usernames []string) error {
	op := fmt.Sprintf("request review of !%d of %s", iid, project)
	if err := checkItem(project, iid); err != nil {
		return fmt.Errorf("gitlab: %s: %w", op, err)
	}
	if len(usernames) == 0 || slices.Contains(usernames, "") {
		return fmt.Errorf("gitlab: %s: no reviewer named", op)
	}
	unlock, err := c.lockItem(ctx, op, fmt.Sprintf("%s!%d", project, iid))
	if err != nil {
		return err
	}
	defer unlock()
	mr, _, err := c.api.MergeRequests.GetMergeRequest(project, int64(iid), nil, gl.WithContext(ctx))
	if err != nil {
		return c.fail(op, err)
	}
	var ids []int64
	for _, r := range mr.Reviewers {
		ids = append(ids, r.ID)
	}
	for _, name := range usernames {
		id, err := c.userID(ctx, op, strings.TrimPrefix(name, "@"))
		if err != nil {
			return err
		}
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	if len(ids) == len(mr.Reviewers) {
		return nil
	}
	opt := &gl.UpdateMergeRequestOptions{ReviewerIDs: &ids}
	_, _, err = c.api.MergeRequests.UpdateMergeRequest(project, int64(iid), opt, gl.WithContext(ctx))
	return c.fail(op, err)
}

// userID finds the id of the user named username.
func (c *Client) userID(ctx context.Context, op, username string) (int64, error) {
	users, _, err := c.api.Users.ListUsers(&gl.ListUsersOptions{Username: gl.Ptr(username)}, gl.WithContext(ctx))
	if err != nil {
		return 0, c.fail(op, err)
	}
	for _, u := range users {
		if strings.EqualFold(u.Username, username) {
			return u.ID, nil
		}
	}
	return 0, fmt.Errorf("gitlab: %s: no user %q", op, username)
}
