package gitlabtest

import (
	"fmt"
	"net/http"
	"time"
)

// merge serves PUT /projects/:id/merge_requests/:iid/merge, checking in
// GitLab's order: the right to merge (401), a merge request that cannot be
// merged now (405), conflicts or a source to rebase first (422), then a
// stale sha (409).
func (c *ctx) merge(m *mr) answer {
	if !c.canMerge() {
		return message(http.StatusUnauthorized, "401 Unauthorized")
	}
	detailed, _, _ := c.mergeability(m, true)
	switch detailed {
	case "mergeable":
	case "conflict", "need_rebase":
		return message(http.StatusUnprocessableEntity, "Branch cannot be merged")
	default:
		return message(http.StatusMethodNotAllowed, "405 Method Not Allowed")
	}
	if sha := c.q.str("sha"); sha != "" && sha != m.SHA {
		return message(http.StatusConflict, "SHA does not match HEAD of source branch: "+m.SHA)
	}
	squash := m.Squash
	if c.q.has("squash") {
		squash = c.q.boolean("squash")
	}
	mergeMsg := cmpOr(c.q.str("merge_commit_message"), fmt.Sprintf("Merge branch '%s' into '%s'\n\n%s\n\nSee merge request %s!%d",
		m.Source, m.Target, m.Title, c.p.path, m.IID))
	if err := c.mergeCommits(m, squash, mergeMsg, cmpOr(c.q.str("squash_commit_message"), m.Title)); err != nil {
		return message(http.StatusUnprocessableEntity, "Branch cannot be merged")
	}
	now := time.Now()
	m.State, m.mergedAt, m.updated, m.mergedBy, m.Squash = "merged", now, now, c.s.Username, squash
	c.s.systemNote(m, c.s.Username, "merged")
	if c.q.boolean("should_remove_source_branch") || m.removeSrc {
		if c.p.gitDir != "" {
			_, _ = runGit(c.p.gitDir, nil, "", "update-ref", "-d", "refs/heads/"+m.Source, m.SHA)
		}
	}
	c.p.refs = nil
	return ok(c.mrJSON(m, true))
}

// mergeCommits makes the merge in the git directory: with squash, first a
// commit of the source's tree on the merge base, then a merge commit of
// that into the target, or, on a fast-forward-only project, the target
// moved up to it; the target is moved only if it has not moved meanwhile.
// Without a git directory the commits are made up.
func (c *ctx) mergeCommits(m *mr, squash bool, mergeMsg, squashMsg string) error {
	p := c.p
	target, found := p.rev(m.Target)
	if !found {
		if squash {
			m.squashSHA = fakeSHA("squash", m.SHA)
		}
		if p.mergeMethod != "ff" {
			m.MergeCommitSHA = fakeSHA("merge", m.SHA)
		}
		return nil
	}
	head := m.SHA
	if squash {
		tree, err := runGit(p.gitDir, nil, "", "rev-parse", head+"^{tree}")
		if err != nil {
			return err
		}
		if head, err = p.commitTree(tree, []string{cmpOr(p.mergeBase(target, head), target)}, squashMsg, c.s.Username); err != nil {
			return err
		}
	}
	if p.mergeMethod == "ff" {
		// No merge commit: GitLab leaves merge_commit_sha empty.
		if _, err := runGit(p.gitDir, nil, "", "update-ref", "refs/heads/"+m.Target, head, target); err != nil {
			return err
		}
		if squash {
			m.squashSHA = head
		}
		return nil
	}
	tree, err := p.mergeTree(target, head)
	if err != nil {
		return err
	}
	commit, err := p.commitTree(tree, []string{target, head}, mergeMsg, c.s.Username)
	if err != nil {
		return err
	}
	if _, err := runGit(p.gitDir, nil, "", "update-ref", "refs/heads/"+m.Target, commit, target); err != nil {
		return err
	}
	if squash {
		m.squashSHA = head
	}
	m.MergeCommitSHA = commit
	return nil
}

// rebaseError is what GitLab puts in merge_error when a rebase fails.
const rebaseError = "Rebase failed: Rebase locally, resolve all conflicts, then push the branch."

// rebaseMR serves PUT /projects/:id/merge_requests/:iid/rebase as GitLab
// does: 403 without the right to push to the source, 409 when the merge
// request is not open or a rebase of it is under way, else 202 with
// {"rebase_in_progress": true}, the rebase done in the background (at
// once, or after the project's rebase delay).
func (c *ctx) rebaseMR(m *mr) answer {
	if !c.canMerge() {
		return message(http.StatusForbidden, "403 Forbidden - Cannot push to source branch")
	}
	if m.State != "opened" || m.rebasing > 0 {
		return message(http.StatusConflict, "Failed to enqueue the rebase operation, possibly due to a long-lived transaction. Try again later.")
	}
	if c.p.rebaseDelay == 0 {
		c.rebaseNow(m)
	} else {
		// Each request about m counts down before it is served: the
		// rebase is done at the one after the delay's last.
		m.rebasing = c.p.rebaseDelay + 1
	}
	return answer{status: http.StatusAccepted, body: map[string]any{"rebase_in_progress": true}}
}

// rebasingOn counts a request about m against a rebase under way, doing
// the rebase when it was the last one it waited for.
func (c *ctx) rebasingOn(m *mr) {
	if m.rebasing == 0 {
		return
	}
	if m.rebasing--; m.rebasing == 0 {
		c.rebaseNow(m)
	}
}

// rebaseNow rebases m's source onto its target in the git directory and
// takes the new head in as a push; a rebase that does not apply leaves
// the branch and says why in merge_error. A source holding the target
// already, or without a git directory, nothing changes.
func (c *ctx) rebaseNow(m *mr) {
	p := c.p
	target, found := p.rev(m.Target)
	if !found || m.State != "opened" || p.isAncestor(target, m.SHA) {
		return
	}
	head, err := p.rebase(target, m.SHA, c.s.Username)
	if err == nil && head != m.SHA {
		_, err = runGit(p.gitDir, nil, "", "update-ref", "refs/heads/"+m.Source, head, m.SHA)
	}
	p.refs = nil
	if err != nil {
		m.mergeError, m.updated = rebaseError, time.Now()
		return
	}
	if head != m.SHA {
		c.s.pushed(p, m, head)
	}
}

// approvalsJSON is GET …/merge_requests/:iid/approvals.
func (c *ctx) approvalsJSON(m *mr) map[string]any {
	by := []any{}
	mine := false
	for _, a := range m.approvals {
		by = append(by, map[string]any{"user": c.s.userJSON(a.user), "approved_at": ts(a.at)})
		mine = mine || a.user == c.s.Username
	}
	_, status, _ := c.mergeability(m, false)
	left := max(c.p.approvalsRequired-len(m.approvals), 0)
	return map[string]any{
		"id": m.id, "iid": m.IID, "project_id": c.p.id, "title": m.Title, "description": m.Description,
		"state": m.State, "created_at": ts(m.created), "updated_at": ts(m.updated), "merge_status": status,
		"approved": left == 0, "approvals_required": c.p.approvalsRequired, "approvals_left": left,
		"require_password_to_approve": false, "approved_by": by, "suggested_approvers": []any{},
		"approvers": []any{}, "approver_groups": []any{}, "user_has_approved": mine, "user_can_approve": !mine,
		"approval_rules_left": []any{}, "has_approval_rules": c.p.approvalsRequired > 0,
		"merge_request_approvers_available": true, "multiple_approval_rules_available": true,
	}
}

// approvalStateJSON is GET …/approval_state: the project's one rule, any
// member's approval counting toward it.
func (c *ctx) approvalStateJSON(m *mr) map[string]any {
	var by []string
	for _, a := range m.approvals {
		by = append(by, a.user)
	}
	rule := map[string]any{
		"id": c.p.id, "name": "All Members", "rule_type": "any_approver", "report_type": nil,
		"eligible_approvers": []any{}, "approvals_required": c.p.approvalsRequired, "source_rule": nil,
		"users": []any{}, "groups": []any{}, "contains_hidden_groups": false, "section": nil,
		"approved_by": c.s.usersJSON(by), "approved": len(by) >= c.p.approvalsRequired,
	}
	return map[string]any{"approval_rules_overwritten": false, "rules": []any{rule}}
}

// listVersions serves …/versions, newest first as GitLab lists them.
func (c *ctx) listVersions(m *mr) answer {
	var out []any
	for i := len(m.versions) - 1; i >= 0; i-- {
		v := m.versions[i]
		out = append(out, map[string]any{
			"id": v.id, "head_commit_sha": v.head, "base_commit_sha": v.base, "start_commit_sha": v.start,
			"created_at": ts(v.created), "merge_request_id": m.id, "state": "collected", "real_size": "1",
		})
	}
	return c.page(out)
}
