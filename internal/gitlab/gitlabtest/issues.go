package gitlabtest

import (
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

func (c *ctx) webURL(rest string) string { return c.s.URL + "/" + c.p.path + rest }

// displayName is the name GitLab would show for username.
func displayName(username string) string {
	r, n := utf8.DecodeRuneInString(username)
	return string(unicode.ToUpper(r)) + username[n:]
}

// userJSON is a user as GitLab embeds one (author, assignee, reviewer):
// the fields every embedding type of the API shares.
func (s *Server) userJSON(name string) map[string]any {
	if name == "" {
		return nil
	}
	u := s.user(name)
	return map[string]any{
		"id": u.id, "username": name, "name": displayName(name), "state": "active",
		"avatar_url": "https://www.gravatar.com/avatar/" + fakeSHA(name)[:32] + "?s=80&d=identicon",
		"web_url":    s.URL + "/" + name,
	}
}

func (s *Server) usersJSON(names []string) []any {
	out := []any{}
	for _, n := range names {
		out = append(out, s.userJSON(n))
	}
	return out
}

func (c *ctx) projectJSON() map[string]any {
	p := c.p
	name := p.path[strings.LastIndex(p.path, "/")+1:]
	ns := strings.TrimSuffix(p.path, "/"+name)
	return map[string]any{
		"id": p.id, "name": name, "path": name, "description": "",
		"name_with_namespace": strings.ReplaceAll(p.path, "/", " / "), "path_with_namespace": p.path,
		"created_at": ts(p.created), "last_activity_at": ts(p.created), "default_branch": p.defaultBranch,
		"web_url": c.webURL(""), "http_url_to_repo": c.webURL(".git"),
		"ssh_url_to_repo": "git@" + c.req.Host + ":" + p.path + ".git", "visibility": "private",
		"namespace": map[string]any{
			"id": p.id + 1000, "name": ns[strings.LastIndex(ns, "/")+1:], "path": ns[strings.LastIndex(ns, "/")+1:],
			"kind": "group", "full_path": ns, "web_url": c.s.URL + "/groups/" + ns,
		},
		"archived": false, "merge_requests_enabled": true, "issues_enabled": true, "jobs_enabled": true,
		"merge_method": p.mergeMethod, "squash_option": "default_off",
		"only_allow_merge_if_pipeline_succeeds":            p.pipelineMustPass,
		"only_allow_merge_if_all_discussions_are_resolved": false,
		"remove_source_branch_after_merge":                 true,
		"approvals_before_merge":                           p.approvalsRequired,
	}
}

// projectApprovalsJSON is GET /projects/:id/approvals, where GitLab keeps a
// project's approval settings.
func (c *ctx) projectApprovalsJSON() map[string]any {
	return map[string]any{
		"approvers": []any{}, "approver_groups": []any{}, "approvals_before_merge": c.p.approvalsRequired,
		"reset_approvals_on_push": c.p.resetOnPush, "disable_overriding_approvers_per_merge_request": false,
		"merge_requests_author_approval": false, "merge_requests_disable_committers_approval": false,
		"require_password_to_approve": false,
	}
}

func (c *ctx) milestoneJSON(title string) any {
	id := c.p.milestones[title]
	if title == "" || id == 0 {
		return nil
	}
	return map[string]any{
		"id": id, "iid": id, "project_id": c.p.id, "title": title, "description": "", "state": "active",
		"created_at": ts(c.p.created), "updated_at": ts(c.p.created), "due_date": nil, "start_date": nil,
		"expired": false, "web_url": c.webURL("/-/milestones/" + itoa(id)),
	}
}

func (c *ctx) issueJSON(it *issue) map[string]any {
	userNotes := 0
	for _, n := range it.Notes {
		if !n.System {
			userNotes++
		}
	}
	assignees := c.s.usersJSON(it.Assignees)
	var assignee any
	if len(assignees) > 0 {
		assignee = assignees[0]
	}
	ref := "#" + itoa(int64(it.IID))
	return map[string]any{
		"id": it.id, "iid": it.IID, "project_id": c.p.id, "title": it.Title, "description": it.Description,
		"state": it.State, "created_at": ts(it.created), "updated_at": ts(it.update), "closed_at": ts(it.closed),
		"closed_by": nil, "labels": nonNil(it.Labels), "milestone": c.milestoneJSON(it.Milestone),
		"assignees": assignees, "assignee": assignee, "author": c.s.userJSON(it.Author),
		"issue_type": "issue", "user_notes_count": userNotes, "merge_requests_count": 0,
		"upvotes": 0, "downvotes": 0, "due_date": nil, "confidential": false, "discussion_locked": nil,
		"web_url":    c.webURL("/-/issues/" + itoa(int64(it.IID))),
		"references": map[string]any{"short": ref, "relative": ref, "full": c.p.path + ref},
		"time_stats": map[string]any{
			"time_estimate": 0, "total_time_spent": 0, "human_time_estimate": nil, "human_total_time_spent": nil,
		},
		"task_completion_status": map[string]any{"count": 0, "completed_count": 0},
	}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// hasLabels is GitLab's labels filter: every label named, "None" for
// none, "Any" for at least one.
func hasLabels(have, want []string) bool {
	for _, w := range want {
		switch {
		case strings.EqualFold(w, "None") && len(want) == 1:
			return len(have) == 0
		case strings.EqualFold(w, "Any") && len(want) == 1:
			return len(have) > 0
		case !slices.Contains(have, w):
			return false
		}
	}
	return true
}

// listIssues serves GET /projects/:id/issues with GitLab's filters, newest
// created first unless asked otherwise.
func (c *ctx) listIssues() answer {
	state := cmpOr(c.q.str("state"), "all")
	labels, after := c.q.list("labels"), c.q.time("updated_after")
	var list []*issue
	for _, it := range c.p.issues {
		switch {
		case state != "all" && it.State != state,
			!hasLabels(it.Labels, labels),
			c.q.has("milestone") && !milestoneIs(it.Milestone, c.q.str("milestone")),
			c.q.has("assignee_username") && !slices.Contains(it.Assignees, c.q.str("assignee_username")),
			c.q.has("author_username") && it.Author != c.q.str("author_username"),
			!after.IsZero() && it.update.Before(after):
			continue
		}
		list = append(list, it)
	}
	byUpdate := c.q.str("order_by") == "updated_at"
	asc := c.q.str("sort") == "asc"
	sort.Slice(list, func(i, j int) bool {
		a, b := list[i].created, list[j].created
		if byUpdate {
			a, b = list[i].update, list[j].update
		}
		if !a.Equal(b) {
			return a.Before(b) == asc
		}
		return (list[i].IID < list[j].IID) == asc
	})
	out := make([]any, len(list))
	for i, it := range list {
		out[i] = c.issueJSON(it)
	}
	return c.page(out)
}

func milestoneIs(have, want string) bool {
	switch want {
	case "None":
		return have == ""
	case "Any":
		return have != ""
	}
	return have == want
}

func (c *ctx) noteJSON(n Note, typ, noteableType string, noteableID int64, noteableIID int) map[string]any {
	var t any
	if typ != "" {
		t = typ
	}
	return map[string]any{
		"id": n.ID, "type": t, "body": n.Body, "attachment": nil, "author": c.s.userJSON(n.Author),
		"created_at": ts(n.Created), "updated_at": ts(n.Created), "system": n.System,
		"noteable_id": noteableID, "noteable_type": noteableType, "noteable_iid": noteableIID,
		"project_id": c.p.id, "resolvable": false, "confidential": false, "internal": false,
	}
}

// sortNotes orders notes as GitLab's notes lists do: by created_at (or
// updated_at, the same here), newest first unless sort=asc.
func (c *ctx) sortNotes(notes []Note) []Note {
	notes = slices.Clone(notes)
	asc := c.q.str("sort") == "asc"
	sort.SliceStable(notes, func(i, j int) bool {
		if !notes[i].Created.Equal(notes[j].Created) {
			return notes[i].Created.Before(notes[j].Created) == asc
		}
		return (notes[i].ID < notes[j].ID) == asc
	})
	return notes
}

func (c *ctx) listIssueNotes(it *issue) answer {
	var out []any
	for _, n := range c.sortNotes(it.Notes) {
		out = append(out, c.noteJSON(n, "", "Issue", it.id, it.IID))
	}
	return c.page(out)
}

func (c *ctx) createIssueNote(it *issue) answer {
	body := c.q.str("body")
	if body == "" {
		return badRequest("body is missing")
	}
	n := Note{Body: body}
	c.s.fillNote(&n, time.Now())
	it.Notes = append(it.Notes, n)
	it.update = n.Created
	return answer{status: http.StatusCreated, body: c.noteJSON(n, "", "Issue", it.id, it.IID)}
}

// users serves GET /users?username=x: the user, or an empty list.
func (c *ctx) users() answer {
	name := c.q.str("username")
	u := c.s.users[name]
	if u == nil {
		return c.page([]any{})
	}
	m := c.s.userJSON(name)
	m["locked"] = false
	m["created_at"] = ts(u.created)
	return c.page([]any{m})
}

// members serves a project's members, direct and inherited alike.
func (c *ctx) members() answer {
	names := make([]string, 0, len(c.p.members))
	for n := range c.p.members {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return c.s.users[names[i]].id < c.s.users[names[j]].id })
	out := []any{}
	for _, n := range names {
		if q := c.q.str("query"); q != "" && !strings.Contains(n, q) {
			continue
		}
		m := c.s.userJSON(n)
		m["access_level"] = c.p.members[n]
		m["created_at"] = ts(c.s.users[n].created)
		m["expires_at"] = nil
		out = append(out, m)
	}
	return c.page(out)
}

// branch serves GET /projects/:id/repository/branches/:branch from the git
// directory.
func (c *ctx) branch(name string) answer {
	sha, found := c.p.rev(name)
	if !found {
		return message(http.StatusNotFound, "404 Branch Not Found")
	}
	return ok(map[string]any{
		"name": name, "merged": false, "protected": name == c.p.defaultBranch, "default": name == c.p.defaultBranch,
		"developers_can_push": false, "developers_can_merge": false, "can_push": true,
		"web_url": c.webURL("/-/tree/" + name), "commit": c.commitJSON(sha),
	})
}

// commitJSON is the short form of a commit GitLab embeds in a branch or a
// job.
func (c *ctx) commitJSON(sha string) map[string]any {
	title := ""
	if c.p.gitDir != "" {
		title, _ = runGit(c.p.gitDir, nil, "", "log", "-1", "--format=%s", sha)
	}
	return map[string]any{
		"id": sha, "short_id": sha[:min(8, len(sha))], "title": title, "message": title,
		"web_url": c.webURL("/-/commit/" + sha),
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
