package gitlabtest_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"

	gitlab "gitlab.com/gitlab-org/api/client-go/v2"

	"github.com/cadre-dev/cadre/internal/gitlab/gitlabtest"
)

// put sends PUT path (under the project) and returns the status and the
// decoded body.
func put(t *testing.T, s *gitlabtest.Server, path string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPut, s.URL+"/api/v4/projects/acme%2Fplatform%2Fwidget"+path, nil)
	req.Header.Set("PRIVATE-TOKEN", tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var body map[string]any
	if err := json.Unmarshal(raw, &body); err != nil {
		t.Fatalf("PUT %s: %d %s: %v", path, resp.StatusCode, raw, err)
	}
	return resp.StatusCode, body
}

// mrFields is merge request iid as sent on the wire, asking for
// rebase_in_progress when include says so.
func mrFields(t *testing.T, s *gitlabtest.Server, iid int, include bool) map[string]any {
	t.Helper()
	path := "/api/v4/projects/acme%2Fplatform%2Fwidget/merge_requests/" + itoa(int64(iid))
	if include {
		path += "?include_rebase_in_progress=true"
	}
	var m map[string]any
	if err := json.Unmarshal(get(t, s.URL+path), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func author(t *testing.T, g *gitlabtest.GitRepo, rev string) string {
	t.Helper()
	out, err := exec.Command("git", "--git-dir="+g.Dir, "log", "-1", "--format=%an", rev).Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

// merges lists the merge commits reachable from rev.
func merges(t *testing.T, g *gitlabtest.GitRepo, rev string) string {
	t.Helper()
	out, err := exec.Command("git", "--git-dir="+g.Dir, "rev-list", "--min-parents=2", rev).Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

// On a fast-forward-only project a merge request whose target moved on
// needs a rebase: need_rebase (merge_status stays can_be_merged), its
// merge refused as GitLab refuses it; the rebase endpoint answers 202 and
// replays its commits on the target, a push that makes a diff version and
// resets approvals; merged, the target is fast-forwarded to the head.
func TestClientGoFastForwardOnlyRebasesThenMerges(t *testing.T) {
	s, g := withRepo(t)
	s.SetMergeMethod(proj, "ff")
	s.SetResetApprovalsOnPush(proj, true)
	s.SetApprovalsRequired(proj, 1)
	g.Commit("cadre/1", "main", "one", map[string]string{"a.txt": "a\n"})
	old := g.Commit("cadre/1", "", "two", map[string]string{"b.txt": "b\n"})
	iid := s.AddMR(proj, gitlabtest.MR{Title: "Add a and b", Source: "cadre/1"})
	s.Approve(proj, iid, "alice")
	c := client(t, s)
	if p, _, err := c.Projects.GetProject(proj, nil); err != nil || p.MergeMethod != gitlab.FastForwardMerge {
		t.Fatalf("project's merge method %q, %v", p.MergeMethod, err)
	}
	if m, _, err := c.MergeRequests.GetMergeRequest(proj, int64(iid), nil); err != nil || m.DetailedMergeStatus != "mergeable" {
		t.Fatalf("a source holding the target: %q, %v", m.DetailedMergeStatus, err)
	}

	main := g.Commit("main", "", "theirs", map[string]string{"c.txt": "c\n"})
	raw := mrFields(t, s, iid, false)
	if raw["detailed_merge_status"] != "need_rebase" || raw["merge_status"] != "can_be_merged" || raw["has_conflicts"] != false || raw["merge_error"] != nil {
		t.Errorf("behind the target: %v %v %v %v", raw["detailed_merge_status"], raw["merge_status"], raw["has_conflicts"], raw["merge_error"])
	}
	if _, asked := raw["rebase_in_progress"]; asked {
		t.Error("rebase_in_progress sent unasked")
	}
	if raw := mrFields(t, s, iid, true); raw["rebase_in_progress"] != false {
		t.Errorf("rebase_in_progress asked for: %v", raw["rebase_in_progress"])
	}
	_, _, err := c.MergeRequests.AcceptMergeRequest(proj, int64(iid), &gitlab.AcceptMergeRequestOptions{SHA: gitlab.Ptr(old)})
	var er *gitlab.ErrorResponse
	if !errors.As(err, &er) || er.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(er.Message, "Branch cannot be merged") {
		t.Fatalf("merge of a merge request needing a rebase: %v", err)
	}
	if g.Rev("main") != main {
		t.Fatal("a refused merge moved the target")
	}

	resp, err := c.MergeRequests.RebaseMergeRequest(proj, int64(iid), nil)
	if err != nil || resp.StatusCode != http.StatusAccepted {
		t.Fatalf("rebase: %v, %v", resp, err)
	}
	head := g.Rev("cadre/1")
	m, _, err := c.MergeRequests.GetMergeRequest(proj, int64(iid), &gitlab.GetMergeRequestsOptions{IncludeRebaseInProgress: gitlab.Ptr(true)})
	if err != nil || head == old || m.SHA != head || m.DiffRefs.HeadSha != head || m.DiffRefs.BaseSha != main || m.RebaseInProgress ||
		m.MergeError != "" || m.DetailedMergeStatus != "not_approved" {
		t.Fatalf("after the rebase: %+v, %v", m, err)
	}
	one := g.Parents(head)[0]
	if p := g.Parents(one); len(p) != 1 || p[0] != main || g.Message(head) != "two" || g.Message(one) != "one" ||
		author(t, g, head) != "Test Author" || g.Read(head, "c.txt") != "c" || g.Read(head, "b.txt") != "b" {
		t.Errorf("the rebased branch: %s on %v, %q by %q", head, p, g.Message(head), author(t, g, head))
	}
	vs, _, err := c.MergeRequests.GetMergeRequestDiffVersions(proj, int64(iid), nil)
	if err != nil || len(vs) != 2 || vs[0].HeadCommitSHA != head || vs[0].StartCommitSHA != main {
		t.Errorf("versions after the rebase: %+v, %v", vs, err)
	}
	if a, _, err := c.MergeRequests.GetMergeRequestApprovals(proj, int64(iid)); err != nil || a.ApprovalsLeft != 1 || len(a.ApprovedBy) != 0 {
		t.Errorf("approvals after the rebase: %+v, %v", a, err)
	}

	s.Approve(proj, iid, "alice")
	m, _, err = c.MergeRequests.AcceptMergeRequest(proj, int64(iid), &gitlab.AcceptMergeRequestOptions{SHA: gitlab.Ptr(head)})
	if err != nil || m.State != "merged" || m.MergeCommitSHA != "" {
		t.Fatalf("merged %+v, %v", m, err)
	}
	if g.Rev("main") != head || merges(t, g, "main") != "" {
		t.Errorf("main at %s, want fast-forwarded to %s with no merge commit (%s)", g.Rev("main"), head, merges(t, g, "main"))
	}
}

// A semi-linear project needs the same rebase, then merges with a merge
// commit whose first parent is the target it was rebased onto.
func TestClientGoSemiLinearRebasesThenMergesWithACommit(t *testing.T) {
	s, g := withRepo(t)
	s.SetMergeMethod(proj, "rebase_merge")
	g.Commit("cadre/1", "main", "one", map[string]string{"a.txt": "a\n"})
	iid := s.AddMR(proj, gitlabtest.MR{Title: "Add a", Source: "cadre/1"})
	main := g.Commit("main", "", "theirs", map[string]string{"c.txt": "c\n"})
	c := client(t, s)
	if m, _, err := c.MergeRequests.GetMergeRequest(proj, int64(iid), nil); err != nil || m.DetailedMergeStatus != "need_rebase" {
		t.Fatalf("behind the target: %q, %v", m.DetailedMergeStatus, err)
	}
	if _, err := c.MergeRequests.RebaseMergeRequest(proj, int64(iid), nil); err != nil {
		t.Fatal(err)
	}
	head := g.Rev("cadre/1")
	m, _, err := c.MergeRequests.AcceptMergeRequest(proj, int64(iid), &gitlab.AcceptMergeRequestOptions{SHA: gitlab.Ptr(head)})
	if err != nil || m.State != "merged" || m.MergeCommitSHA != g.Rev("main") {
		t.Fatalf("merged %+v, %v", m, err)
	}
	if p := g.Parents(m.MergeCommitSHA); len(p) != 2 || p[0] != main || p[1] != head || g.Parents(head)[0] != main {
		t.Errorf("merge commit's parents %v, want %s and the rebased head %s", p, main, head)
	}
}

// A rebase that does not apply commit by commit, though the merge would
// (the source changed a line and changed it back; the target changed it
// too), leaves the branch and says so in merge_error; need_rebase stays,
// without conflicts. A push to the source clears merge_error.
func TestClientGoRebaseConflictSetsMergeError(t *testing.T) {
	s, g := withRepo(t)
	s.SetMergeMethod(proj, "ff")
	g.Commit("cadre/1", "main", "mine", map[string]string{"README.md": "mine\n"})
	head := g.Commit("cadre/1", "", "back", map[string]string{"README.md": "widget\n"})
	iid := s.AddMR(proj, gitlabtest.MR{Title: "t", Source: "cadre/1"})
	g.Commit("main", "", "theirs", map[string]string{"README.md": "theirs\n"})
	c := client(t, s)
	if _, err := c.MergeRequests.RebaseMergeRequest(proj, int64(iid), nil); err != nil {
		t.Fatal(err)
	}
	m, _, err := c.MergeRequests.GetMergeRequest(proj, int64(iid), &gitlab.GetMergeRequestsOptions{IncludeRebaseInProgress: gitlab.Ptr(true)})
	if err != nil || m.SHA != head || g.Rev("cadre/1") != head || m.HasConflicts || m.DetailedMergeStatus != "need_rebase" ||
		m.RebaseInProgress || !strings.HasPrefix(m.MergeError, "Rebase failed") {
		t.Fatalf("after a rebase that does not apply: %+v, %v", m, err)
	}
	pushed := g.Commit("cadre/1", "", "more", map[string]string{"d.txt": "d\n"})
	if m, _, err := c.MergeRequests.GetMergeRequest(proj, int64(iid), nil); err != nil || m.SHA != pushed || m.MergeError != "" {
		t.Errorf("after a push: sha %s, merge_error %q, %v", m.SHA, m.MergeError, err)
	}
}

// A rebase runs in the background as long as the project's delay says:
// rebase_in_progress (when asked for), a second rebase refused with 409;
// then done. Without the right to push to the source, 403.
func TestClientGoRebaseInTheBackground(t *testing.T) {
	s, g := withRepo(t)
	s.SetMergeMethod(proj, "ff")
	s.SetRebaseDelay(proj, 2)
	old := g.Commit("cadre/1", "main", "one", map[string]string{"a.txt": "a\n"})
	iid := s.AddMR(proj, gitlabtest.MR{Title: "t", Source: "cadre/1"})
	g.Commit("main", "", "theirs", map[string]string{"c.txt": "c\n"})
	path := "/merge_requests/" + itoa(int64(iid)) + "/rebase"
	if status, body := put(t, s, path); status != http.StatusAccepted || len(body) != 1 || body["rebase_in_progress"] != true {
		t.Fatalf("rebase answered %d %v", status, body)
	}
	if raw := mrFields(t, s, iid, true); raw["rebase_in_progress"] != true || raw["sha"] != old {
		t.Errorf("while rebasing: %v at %v", raw["rebase_in_progress"], raw["sha"])
	}
	if status, body := put(t, s, path); status != http.StatusConflict || !strings.Contains(body["message"].(string), "Failed to enqueue the rebase") {
		t.Errorf("a second rebase while one runs: %d %v", status, body)
	}
	if raw := mrFields(t, s, iid, true); raw["rebase_in_progress"] != false || raw["sha"] == old || raw["sha"] != g.Rev("cadre/1") {
		t.Errorf("after the delay: %v at %v", raw["rebase_in_progress"], raw["sha"])
	}
	s.AddMember(proj, "cadre-bot", gitlabtest.Reporter)
	if status, body := put(t, s, path); status != http.StatusForbidden {
		t.Errorf("a Reporter's rebase: %d %v", status, body)
	}
}
