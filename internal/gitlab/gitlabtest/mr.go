package gitlabtest

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"
)

// sync brings the open merge requests of p up to date with the git
// directory: a source branch that moved since last seen is a push.
func (s *Server) sync(p *project) {
	if p.gitDir == "" {
		return
	}
	for _, m := range p.mrs {
		if m.State != "opened" && m.State != "locked" {
			continue
		}
		if sha, found := p.rev(m.Source); found && sha != m.SHA {
			s.pushed(p, m, sha)
		}
	}
}

// pushed moves m's head to sha as a push does: a new diff version, a new
// updated_at, its merge_error cleared (GitLab clears it on a push to the
// source branch), and its approvals dropped when the project says so.
func (s *Server) pushed(p *project, m *mr, sha string) {
	now := time.Now()
	m.SHA, m.updated, m.mergeError = sha, now, ""
	s.addVersion(p, m, now)
	if p.resetOnPush {
		m.approvals = nil
	}
}

func (s *Server) addVersion(p *project, m *mr, now time.Time) {
	v := version{id: s.next("version"), head: m.SHA, created: now}
	if start, found := p.rev(m.Target); found {
		v.start, v.base = start, cmpOr(p.mergeBase(start, m.SHA), start)
	} else {
		v.start = fakeSHA("target", p.path, m.Target)
		v.base = v.start
	}
	m.versions = append(m.versions, v)
}

// systemNote records a note GitLab itself writes on an event, as its own
// discussion.
func (s *Server) systemNote(m *mr, author, body string) {
	n := mrNote{Note: Note{Author: author, Body: body, System: true}}
	s.fillNote(&n.Note, time.Now())
	m.discussions = append(m.discussions, &discussion{id: fakeSHA("discussion", itoa(n.ID)), individual: true, notes: []*mrNote{&n}})
}

// conflicts reports whether m's head no longer merges cleanly into its
// target, by git merge-tree.
func (c *ctx) conflicts(m *mr) bool {
	if c.p.gitDir == "" || m.State != "opened" {
		return false
	}
	target, found := c.p.rev(m.Target)
	if !found {
		return false
	}
	_, err := c.p.mergeTree(target, m.SHA)
	return errors.Is(err, errConflict)
}

// needsRebase reports whether the project's merge method merges only a
// source that holds the target's head (fast-forward, semi-linear) and m's
// does not.
func (c *ctx) needsRebase(m *mr) bool {
	if c.p.mergeMethod != "ff" && c.p.mergeMethod != "rebase_merge" || m.State != "opened" {
		return false
	}
	target, found := c.p.rev(m.Target)
	return found && !c.p.isAncestor(target, m.SHA)
}

// headPipeline is the newest pipeline run on m's head.
func (c *ctx) headPipeline(m *mr) *pipeline {
	for i := len(c.p.pipelines) - 1; i >= 0; i-- {
		if c.p.pipelines[i].sha == m.SHA {
			return c.p.pipelines[i]
		}
	}
	return nil
}

// mergeability is what GitLab says of merging m now: its
// detailed_merge_status, its older merge_status, and has_conflicts. A
// fetch (rather than a list) spends one of the "checking" answers set.
// A source that needs a rebase is need_rebase after the checks of its
// state and before its pipeline's, as GitLab orders them; merge_status,
// which speaks only of conflicts, stays can_be_merged.
func (c *ctx) mergeability(m *mr, fetch bool) (detailed, status string, conflicts bool) {
	conflicts = c.conflicts(m)
	status = "can_be_merged"
	if conflicts {
		status = "cannot_be_merged"
	}
	if m.State != "opened" {
		return "not_open", status, conflicts
	}
	if m.checking > 0 {
		if fetch {
			m.checking--
		}
		return "checking", "checking", false
	}
	switch {
	case m.Draft:
		return "draft_status", status, conflicts
	case conflicts:
		return "conflict", status, conflicts
	case len(m.approvals) < c.p.approvalsRequired:
		return "not_approved", status, conflicts
	case c.needsRebase(m):
		return "need_rebase", status, conflicts
	}
	if c.p.pipelineMustPass {
		pl := c.headPipeline(m)
		switch {
		case pl == nil:
			return "ci_must_pass", status, conflicts
		case slices.Contains([]string{"created", "waiting_for_resource", "preparing", "pending", "running", "scheduled"}, pl.status):
			return "ci_still_running", status, conflicts
		case pl.status != "success":
			return "ci_must_pass", status, conflicts
		}
	}
	return "mergeable", status, conflicts
}

// mrJSON is m as GitLab lists it, or as it answers for one merge request
// (full), with its diff refs, pipeline and the token user's rights.
func (c *ctx) mrJSON(m *mr, full bool) map[string]any {
	detailed, status, conflicts := c.mergeability(m, full)
	ref := "!" + itoa(int64(m.IID))
	var mergedBy, closedBy any
	if m.mergedBy != "" {
		mergedBy = c.s.userJSON(m.mergedBy)
	}
	if !m.closedAt.IsZero() && m.State == "closed" {
		closedBy = c.s.userJSON(c.s.Username)
	}
	out := map[string]any{
		"id": m.id, "iid": m.IID, "project_id": c.p.id, "title": m.Title, "description": m.Description,
		"state": m.State, "created_at": ts(m.created), "updated_at": ts(m.updated),
		"merged_by": mergedBy, "merge_user": mergedBy, "merged_at": ts(m.mergedAt), "closed_by": closedBy,
		"closed_at": ts(m.closedAt), "target_branch": m.Target, "source_branch": m.Source,
		"user_notes_count": userNotes(m), "upvotes": 0, "downvotes": 0, "author": c.s.userJSON(m.Author),
		"assignees": []any{}, "assignee": nil, "reviewers": c.s.usersJSON(m.Reviewers),
		"source_project_id": sourceProject(c.p.id, m.FromFork), "target_project_id": c.p.id, "labels": nonNil(m.Labels),
		"draft": m.Draft, "milestone": nil, "merge_when_pipeline_succeeds": false,
		"merge_status": status, "detailed_merge_status": detailed, "has_conflicts": conflicts,
		"sha": m.SHA, "merge_commit_sha": nilIfEmpty(m.MergeCommitSHA), "squash_commit_sha": nilIfEmpty(m.squashSHA),
		"discussion_locked": nil, "should_remove_source_branch": nil, "force_remove_source_branch": m.removeSrc,
		"prepared_at": ts(m.created), "web_url": c.webURL("/-/merge_requests/" + itoa(int64(m.IID))),
		"references":                    map[string]any{"short": ref, "relative": ref, "full": c.p.path + ref},
		"time_stats":                    map[string]any{"time_estimate": 0, "total_time_spent": 0, "human_time_estimate": nil, "human_total_time_spent": nil},
		"squash":                        m.Squash,
		"squash_on_merge":               m.Squash,
		"task_completion_status":        map[string]any{"count": 0, "completed_count": 0},
		"blocking_discussions_resolved": true, "imported": false, "imported_from": "none",
	}
	if !full {
		return out
	}
	v := m.versions[len(m.versions)-1]
	out["work_in_progress"] = m.Draft
	out["subscribed"] = false
	out["changes_count"] = "1"
	out["user"] = map[string]any{"can_merge": c.canMerge()}
	out["merge_error"] = nilIfEmpty(m.mergeError)
	if c.q.boolean("include_rebase_in_progress") {
		// GitLab says it only when asked: finding out costs it a look
		// at its background jobs.
		out["rebase_in_progress"] = m.rebasing > 0
	}
	out["diverged_commits_count"] = 0
	out["first_contribution"] = false
	out["latest_build_started_at"], out["latest_build_finished_at"] = nil, nil
	out["first_deployed_to_production_at"] = nil
	out["diff_refs"] = map[string]any{"base_sha": v.base, "head_sha": v.head, "start_sha": v.start}
	out["pipeline"], out["head_pipeline"] = nil, nil
	if pl := c.headPipeline(m); pl != nil {
		out["pipeline"] = c.pipelineInfoJSON(pl)
		out["head_pipeline"] = c.pipelineJSON(pl)
	}
	return out
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func userNotes(m *mr) int {
	n := 0
	for _, d := range m.discussions {
		for _, note := range d.notes {
			if !note.System {
				n++
			}
		}
	}
	return n
}

// canMerge reports whether the token's user may merge: anyone but a
// member set below Developer.
func (c *ctx) canMerge() bool {
	access, member := c.p.members[c.s.Username]
	return !member || access >= Developer
}

// listMRs serves GET /projects/:id/merge_requests with GitLab's filters,
// newest created first unless asked otherwise.
func (c *ctx) listMRs() answer {
	state := cmpOr(c.q.str("state"), "all")
	labels, after, before := c.q.list("labels"), c.q.time("updated_after"), c.q.time("updated_before")
	iids := c.q["iids"]
	var list []*mr
	for _, m := range c.p.mrs {
		switch {
		case state != "all" && m.State != state,
			c.q.has("source_branch") && m.Source != c.q.str("source_branch"),
			c.q.has("target_branch") && m.Target != c.q.str("target_branch"),
			c.q.has("author_username") && m.Author != c.q.str("author_username"),
			c.q.has("reviewer_username") && !slices.Contains(m.Reviewers, c.q.str("reviewer_username")),
			c.q.has("draft") && m.Draft != c.q.boolean("draft"),
			len(iids) > 0 && !slices.Contains(iids, itoa(int64(m.IID))),
			!hasLabels(m.Labels, labels),
			!after.IsZero() && m.updated.Before(after),
			!before.IsZero() && m.updated.After(before):
			continue
		}
		list = append(list, m)
	}
	byUpdate, asc := c.q.str("order_by") == "updated_at", c.q.str("sort") == "asc"
	sort.Slice(list, func(i, j int) bool {
		a, b := list[i].created, list[j].created
		if byUpdate {
			a, b = list[i].updated, list[j].updated
		}
		if !a.Equal(b) {
			return a.Before(b) == asc
		}
		return (list[i].IID < list[j].IID) == asc
	})
	out := make([]any, len(list))
	for i, m := range list {
		out[i] = c.mrJSON(m, false)
	}
	return c.page(out)
}

// createMR serves POST /projects/:id/merge_requests. A second open merge
// request from the same source to the same target is refused with 409, as
// GitLab's model validation does.
func (c *ctx) createMR() answer {
	var missing []string
	for _, k := range []string{"source_branch", "target_branch", "title"} {
		if c.q.str(k) == "" {
			missing = append(missing, k+" is missing")
		}
	}
	if len(missing) > 0 {
		return badRequest(strings.Join(missing, ", "))
	}
	src, dst := c.q.str("source_branch"), c.q.str("target_branch")
	for _, other := range c.p.mrs {
		if other.State == "opened" && !other.FromFork && other.Source == src && other.Target == dst {
			return message(http.StatusConflict, []string{fmt.Sprintf("Another open merge request already exists for this source branch: !%d", other.IID)})
		}
	}
	reviewers, err := c.userNames("reviewer_ids")
	if err != nil {
		return badRequest(err.Error())
	}
	m := c.s.addMR(c.p, MR{Title: c.q.str("title"), Description: c.q.str("description"), Source: src, Target: dst,
		Labels: c.q.list("labels"), Squash: c.q.boolean("squash"), Reviewers: reviewers})
	m.removeSrc = c.q.boolean("remove_source_branch")
	return answer{status: http.StatusCreated, body: c.mrJSON(m, true)}
}

// userNames maps the user ids of parameter k to their usernames.
func (c *ctx) userNames(k string) ([]string, error) {
	var out []string
	for _, id := range c.q.list(k) {
		found := false
		for name, u := range c.s.users {
			if itoa(u.id) == id {
				out, found = append(out, name), true
			}
		}
		if !found && id != "0" {
			return nil, fmt.Errorf("%s is invalid: no user %s", k, id)
		}
	}
	return out, nil
}

// updateMR serves PUT /projects/:id/merge_requests/:iid.
func (c *ctx) updateMR(m *mr) answer {
	q := c.q
	if q.has("title") {
		m.Title = q.str("title")
		m.Draft = isDraft(m.Title)
	}
	if q.has("description") {
		m.Description = q.str("description")
	}
	if q.has("target_branch") {
		m.Target = q.str("target_branch")
	}
	if q.has("labels") {
		m.Labels = q.list("labels")
	}
	for _, l := range q.list("add_labels") {
		if !slices.Contains(m.Labels, l) {
			m.Labels = append(m.Labels, l)
		}
	}
	m.Labels = slices.DeleteFunc(m.Labels, func(l string) bool { return slices.Contains(q.list("remove_labels"), l) })
	if q.has("squash") {
		m.Squash = q.boolean("squash")
	}
	if q.has("remove_source_branch") {
		m.removeSrc = q.boolean("remove_source_branch")
	}
	if q.has("reviewer_ids") {
		names, err := c.userNames("reviewer_ids")
		if err != nil {
			return badRequest(err.Error())
		}
		c.requestReviews(m, names)
	}
	switch q.str("state_event") {
	case "close":
		if m.State == "opened" {
			m.State, m.closedAt = "closed", time.Now()
			c.s.systemNote(m, c.s.Username, "closed")
		}
	case "reopen":
		if m.State == "closed" {
			m.State, m.closedAt = "opened", time.Time{}
			c.s.systemNote(m, c.s.Username, "reopened")
		}
	}
	m.updated = time.Now()
	return ok(c.mrJSON(m, true))
}

// requestReviews sets m's reviewers to names, with the system note GitLab
// writes for those newly asked.
func (c *ctx) requestReviews(m *mr, names []string) {
	var added []string
	for _, n := range names {
		if !slices.Contains(m.Reviewers, n) {
			added = append(added, "@"+n)
		}
	}
	m.Reviewers = names
	if len(added) > 0 {
		c.s.systemNote(m, c.s.Username, "requested review from "+strings.Join(added, " and "))
	}
}

// sourceProject is the id of the project a merge request's source branch
// is in: a fork's is another one's.
func sourceProject(id int64, fork bool) int64 {
	if fork {
		return id + 1000
	}
	return id
}
