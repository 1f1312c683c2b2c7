package app

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cadre-dev/cadre/internal/codehost"
	"github.com/cadre-dev/cadre/internal/follow"
	"github.com/cadre-dev/cadre/internal/ghtext"
	"github.com/cadre-dev/cadre/internal/gitlab"
)

// developer is the access level from which a project member's notes count
// as a review when follow.reviewers names nobody.
const developer = 30

// View is merge request iid as cadre watch decides by: its state, its
// head's pipeline with the failed jobs, the open threads of counted
// reviewers (cadre's own notes and GitLab's system notes left out), and
// whether a counted approval stands for the head.
func (g *GitLab) View(ctx context.Context, iid int, reviewers []string, known *follow.Head) (follow.View, error) {
	project, err := g.projectOf(ctx)
	if err != nil {
		return follow.View{}, err
	}
	mr, err := g.client.MR(ctx, project, iid)
	if err != nil {
		return follow.View{}, err
	}
	v := follow.View{State: mrState(mr.State), Head: mr.SHA, Base: mr.Target, Title: mr.Title, Mergeable: mergeable(mr),
		BaseNeeded: rebaseFailed(mr)}
	if v.State != "open" {
		return v, nil
	}
	if err := g.pipelineInto(ctx, project, iid, &v); err != nil {
		return follow.View{}, err
	}
	counts, err := g.counter(ctx, project, reviewers)
	if err != nil {
		return follow.View{}, err
	}
	if err := g.threadsInto(ctx, project, iid, counts, &v); err != nil {
		return follow.View{}, err
	}
	if err := g.approvalsInto(ctx, project, iid, counts, &v); err != nil {
		return follow.View{}, err
	}
	return v, nil
}

// mrState is a merge request's state as cadre follows it: open, merged or
// closed (a locked one is on its way to merged or closed: open till then).
func mrState(s string) string {
	switch s {
	case "merged":
		return "merged"
	case "closed":
		return "closed"
	}
	return "open"
}

// mergeable is whether mr merges cleanly with its target: nil while GitLab
// computes it.
func mergeable(mr gitlab.MR) *bool {
	switch mr.MergeStatus {
	case "checking", "unchecked", "preparing", "approvals_syncing":
		return nil
	}
	clean := !mr.HasConflicts && mr.MergeStatus != "conflict"
	return &clean
}

// rebaseFailed says GitLab could not rebase mr, which its project's merge
// method merges only once rebased onto its target: a rebase replays the
// source's commits one by one, and one may conflict where the merge of
// the whole does not. GitLab clears merge_error on a push to the source.
func rebaseFailed(mr gitlab.MR) bool {
	return mr.State == "opened" && mr.MergeStatus == gitlab.NeedRebase && mr.MergeError != "" && !mr.RebaseInProgress
}

// pipelineInto fills v's checks from the head's newest pipeline.
func (g *GitLab) pipelineInto(ctx context.Context, project string, iid int, v *follow.View) error {
	pl, err := g.client.HeadPipeline(ctx, project, iid, v.Head)
	if err != nil {
		return err
	}
	v.Checked = pl.Status != ""
	v.Pending = pl.Pending > 0 || slices.Contains([]string{"created", "waiting_for_resource", "preparing", "pending", "running", "scheduled"}, pl.Status)
	v.Passed = pl.Succeeded
	for _, j := range pl.Failed {
		v.Failed = append(v.Failed, follow.Check{Name: j.Name, Conclusion: j.Status, Summary: "stage " + j.Stage, JobID: j.ID})
	}
	return nil
}

// counter says whose notes and approvals count: follow.reviewers, or the
// project's members with Developer access or more.
func (g *GitLab) counter(ctx context.Context, project string, reviewers []string) (func(string) bool, error) {
	if len(reviewers) > 0 {
		return func(u string) bool { return slices.Contains(reviewers, u) }, nil
	}
	members, err := g.client.Members(ctx, project)
	if err != nil {
		return nil, err
	}
	return func(u string) bool { return members[u] >= developer }, nil
}

// threadsInto takes each unresolved discussion a counted reviewer opened
// as a comment to answer in its thread.
func (g *GitLab) threadsInto(ctx context.Context, project string, iid int, counts func(string) bool, v *follow.View) error {
	threads, err := g.client.Threads(ctx, project, iid)
	if err != nil {
		return err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, t := range threads {
		g.threads[t.NoteID] = t.Discussion
		if t.Resolved || !counts(t.Author) || strings.Contains(t.Body, "<!-- cadre:") {
			continue
		}
		v.Comments = append(v.Comments, follow.Comment{ID: t.NoteID, Path: t.Path, Line: t.Line, Author: t.Author, Body: t.Body})
	}
	return nil
}

// approvalsInto says whether counted approvals leave none still needed,
// and whether one of them stands for the head: given after the head was
// pushed, or any when the project takes approvals back on a push.
func (g *GitLab) approvalsInto(ctx context.Context, project string, iid int, counts func(string) bool, v *follow.View) error {
	approvals, left, err := g.client.Approvals(ctx, project, iid)
	if err != nil {
		return err
	}
	var counted []gitlab.Approval
	for _, a := range approvals {
		if counts(a.Author) {
			counted = append(counted, a)
		}
	}
	v.Approved = len(counted) > 0 && left == 0
	if !v.Approved {
		return nil
	}
	resets, err := g.client.ResetsApprovals(ctx, project)
	if err != nil {
		return err
	}
	if resets {
		v.ApprovedHead = true
		return nil
	}
	pushed, err := g.client.HeadPushed(ctx, project, iid, v.Head)
	if err != nil {
		return err
	}
	v.ApprovedHead = !pushed.IsZero() && slices.ContainsFunc(counted, func(a gitlab.Approval) bool { return !a.At.Before(pushed) })
	return nil
}

// Logs fills in the trace tail of each failed job; one that cannot be read
// leaves the job's own texts, and is named.
func (g *GitLab) Logs(ctx context.Context, checks []follow.Check) ([]follow.Check, []string) {
	project, err := g.projectOf(ctx)
	if err != nil {
		return checks, []string{"read the failed jobs' logs: " + err.Error()}
	}
	var warnings []string
	out := slices.Clone(checks)
	for i, c := range out {
		if c.JobID == 0 {
			continue
		}
		tail, err := g.client.JobTraceTail(ctx, project, c.JobID, logTail)
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("the log of job %q (%d) could not be read: %v", c.Name, c.JobID, err))
			continue
		}
		out[i].LogTail = tail
	}
	return out, warnings
}

// OpenPRs lists the project's open merge requests' heads.
func (g *GitLab) OpenPRs(ctx context.Context) ([]follow.Head, error) {
	project, err := g.projectOf(ctx)
	if err != nil {
		return nil, err
	}
	list, err := g.client.OpenMRs(ctx, project)
	return mrHeads(list), err
}

// UpdatedPRs lists the merge requests updated at or after since.
func (g *GitLab) UpdatedPRs(ctx context.Context, since time.Time) ([]follow.Head, error) {
	project, err := g.projectOf(ctx)
	if err != nil {
		return nil, err
	}
	list, err := g.client.UpdatedMRs(ctx, project, since)
	return mrHeads(list), err
}

func mrHeads(list []gitlab.MR) []follow.Head {
	out := make([]follow.Head, 0, len(list))
	for _, m := range list {
		st := mrState(m.State)
		state := "open" // a Head is open, or closed with Merged telling how
		if st != "open" {
			state = "closed"
		}
		out = append(out, follow.Head{Number: m.IID, State: state, Merged: st == "merged", Head: m.SHA, Base: m.Target, Title: m.Title, Updated: m.Updated})
	}
	return out
}

// Reply answers the discussion whose first note is comment, once per
// marker.
func (g *GitLab) Reply(ctx context.Context, iid int, comment int64, marker, body string) error {
	project, err := g.projectOf(ctx)
	if err != nil {
		return err
	}
	discussion, err := g.discussionOf(ctx, project, iid, comment)
	if err != nil {
		return err
	}
	return g.client.Reply(ctx, project, iid, discussion, tag(marker), ghtext.Body(body, ghtext.Issue{}))
}

// discussionOf is the discussion note comment opened, as View saw it or,
// in a new process, as GitLab lists it.
func (g *GitLab) discussionOf(ctx context.Context, project string, iid int, comment int64) (string, error) {
	g.mu.Lock()
	d, ok := g.threads[comment]
	g.mu.Unlock()
	if ok {
		return d, nil
	}
	threads, err := g.client.Threads(ctx, project, iid)
	if err != nil {
		return "", err
	}
	for _, t := range threads {
		if t.NoteID == comment {
			return t.Discussion, nil
		}
	}
	return "", fmt.Errorf("gitlab: merge request !%d of %s: no discussion opened by note %d", iid, project, comment)
}

// RequestReview asks usernames to review merge request iid again.
func (g *GitLab) RequestReview(ctx context.Context, iid int, usernames []string) error {
	project, err := g.projectOf(ctx)
	if err != nil {
		return err
	}
	return g.client.RequestReview(ctx, project, iid, usernames)
}

// Merge merges merge request iid provided its head is still head (GitLab's
// sha), squashed for follow.merge squash with title as the commit's. The
// project's merge method (merge commit, semi-linear, fast-forward) is
// GitLab's to apply; rebase is refused before a watch starts. One the
// method merges only once rebased onto its target is rebased by GitLab
// instead (see rebase): its new head merges when it passes the gate.
func (g *GitLab) Merge(ctx context.Context, iid int, method, head, title string) error {
	project, err := g.projectOf(ctx)
	if err != nil {
		return err
	}
	// The merge API refuses a merge request that needs a rebase in the
	// words it has for conflicts and unfinished pipelines: what GitLab
	// says of it just before the merge is what tells.
	mr, err := g.client.MR(ctx, project, iid)
	if err != nil {
		return err
	}
	if mr.State == "opened" && mr.SHA != head {
		return fmt.Errorf("%w: merge request !%d is at %s now", follow.ErrHeadMoved, iid, follow.Short(mr.SHA))
	}
	if mr.State == "opened" && (mr.MergeStatus == gitlab.NeedRebase || mr.RebaseInProgress) {
		return g.rebase(ctx, project, mr)
	}
	msg := ""
	if title != "" {
		msg = fmt.Sprintf("%s (!%d)", ghtext.Title(title), iid)
	}
	err = g.client.Merge(ctx, project, iid, head, method == "squash", msg)
	if gitlab.IsHeadMoved(err) {
		return fmt.Errorf("%w: %v", follow.ErrHeadMoved, err)
	}
	return err
}

// rebaseAsk is a rebase Merge asked GitLab for.
type rebaseAsk struct {
	head string
	at   time.Time
}

// rebaseWait is how long a rebase asked for a head is not asked again in
// this process while GitLab shows it neither running nor failed: GitLab
// may not have taken it up yet. Across processes, GitLab's own word
// (rebase_in_progress, merge_error, the head moved) is what keeps it from
// being asked twice.
const rebaseWait = 10 * time.Minute

// rebase has GitLab rebase mr onto its target, once a head, and says the
// head is to move (an error wrapping follow.ErrHeadMoved) so the follower
// looks again at the next pass, counting no failure. A rebase under way
// is waited for. One GitLab could not do (merge_error) is not asked
// again: View says BaseNeeded, and the conflict reaction merges the
// target in.
func (g *GitLab) rebase(ctx context.Context, project string, mr gitlab.MR) error {
	g.mu.Lock()
	asked, ok := g.rebased[mr.IID]
	g.mu.Unlock()
	switch {
	case mr.RebaseInProgress:
		return moving(fmt.Sprintf("GitLab is rebasing merge request !%d onto %s", mr.IID, mr.Target))
	case mr.MergeError != "":
		return moving(fmt.Sprintf("GitLab's last rebase or merge of merge request !%d failed (%s): %s is to be merged into it",
			mr.IID, mr.MergeError, mr.Target))
	case ok && asked.head == mr.SHA && time.Since(asked.at) < rebaseWait:
		return moving(fmt.Sprintf("GitLab was asked to rebase merge request !%d onto %s at %s and has not started yet",
			mr.IID, mr.Target, follow.Short(mr.SHA)))
	}
	if err := g.client.Rebase(ctx, project, mr.IID); err != nil {
		return fmt.Errorf("merge request !%d needs a rebase onto %s: %w", mr.IID, mr.Target, err)
	}
	g.mu.Lock()
	g.rebased[mr.IID] = rebaseAsk{head: mr.SHA, at: time.Now()}
	g.mu.Unlock()
	return moving(fmt.Sprintf("merge request !%d is behind %s, and the project's merge method merges it only rebased: GitLab was asked to rebase it",
		mr.IID, mr.Target))
}

// moving is a merge not made because GitLab is to move the head first:
// follow.ErrHeadMoved to the follower, which says it in these words
// rather than as a head that moved.
type moving string

func (e moving) Error() string { return string(e) }
func (e moving) Unwrap() error { return follow.ErrHeadMoved }

// Close closes merge request iid unmerged.
func (g *GitLab) Close(ctx context.Context, iid int) error {
	project, err := g.projectOf(ctx)
	if err != nil {
		return err
	}
	return g.client.CloseMR(ctx, project, iid)
}

// Comment posts body on merge request iid once per marker.
func (g *GitLab) Comment(ctx context.Context, iid int, marker, body string) error {
	project, err := g.projectOf(ctx)
	if err != nil {
		return err
	}
	return g.client.EnsureMRNote(ctx, project, iid, tag(marker), ghtext.Body(body, ghtext.Issue{}))
}

// Label puts label on merge request iid, or takes it off.
func (g *GitLab) Label(ctx context.Context, iid int, label string, on bool) error {
	project, err := g.projectOf(ctx)
	if err != nil {
		return err
	}
	return g.client.Label(ctx, project, iid, label, on)
}

// PRStatus reports where merge request iid stands: its state, its head's
// pipeline, the approvals and whether it merges cleanly.
func (g *GitLab) PRStatus(ctx context.Context, iid int) (codehost.PRStatus, error) {
	project, err := g.projectOf(ctx)
	if err != nil {
		return codehost.PRStatus{}, err
	}
	mr, err := g.client.MR(ctx, project, iid)
	if err != nil {
		return codehost.PRStatus{}, err
	}
	out := codehost.PRStatus{State: mrState(mr.State), Review: "none"}
	if out.State == "open" {
		out.Mergeable = mergeable(mr)
	}
	pl, err := g.client.HeadPipeline(ctx, project, iid, mr.SHA)
	if err != nil {
		return codehost.PRStatus{}, err
	}
	switch {
	case len(pl.Failed) > 0:
		out.Checks = "failure"
	case pl.Status == "":
		out.Checks = "none"
	case pl.Pending > 0:
		out.Checks = "pending"
	default:
		out.Checks = "success"
	}
	// Only the approvals cadre watch counts, as on GitHub.
	counts, err := g.counter(ctx, project, g.cfg.Follow.Reviewers)
	if err != nil {
		return codehost.PRStatus{}, err
	}
	approvals, left, err := g.client.Approvals(ctx, project, iid)
	if err != nil {
		return codehost.PRStatus{}, err
	}
	if left == 0 && slices.ContainsFunc(approvals, func(a gitlab.Approval) bool { return counts(a.Author) }) {
		out.Review = "approved"
	}
	return out, nil
}
