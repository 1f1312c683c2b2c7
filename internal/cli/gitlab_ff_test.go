package cli_test

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cadre-dev/cadre/internal/gitlab/gitlabtest"
)

// pushFiles commits files on branch of origin as someone else would, from
// a clone of their own, and returns the commit.
func (g *gitlabRepo) pushFiles(t *testing.T, branch, msg string, files map[string]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "clone")
	git := func(args ...string) {
		t.Helper()
		c := exec.Command("git", append([]string{"-c", "user.email=o@example.com", "-c", "user.name=O"}, args...)...)
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	git("clone", "-q", "-b", branch, g.bare, dir)
	for path, body := range files {
		if err := os.WriteFile(filepath.Join(dir, path), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git("-C", dir, "add", "-A")
	git("-C", dir, "commit", "-qm", msg)
	git("-C", dir, "push", "-q", "origin", branch)
	return g.rev(t, branch)
}

// rebasesAsked counts the rebases of merge request iid cadre asked of
// GitLab.
func (g *gitlabRepo) rebasesAsked(iid int) int {
	return g.fake.Count(http.MethodPut, "/api/v4/projects/"+glProject+"/merge_requests/"+strconv.Itoa(iid)+"/rebase")
}

// mergeCommits lists the merge commits reachable from ref in origin.
func (g *gitlabRepo) mergeCommits(t *testing.T, ref string) string {
	t.Helper()
	out, err := exec.Command("git", "-C", g.bare, "rev-list", "--min-parents=2", ref).Output()
	if err != nil {
		t.Fatalf("rev-list %s in origin: %v", ref, err)
	}
	return strings.TrimSpace(string(out))
}

// On a fast-forward-only project an approved, green merge request whose
// target moved on is rebased by GitLab, not merged: the watch asks for the
// rebase and says so; the new head waits for its pipeline and a new
// approval (the project resets approvals on push), then merges by
// fast-forward, main's history linear.
func TestGitLabWatchRebasesForAFastForwardMerge(t *testing.T) {
	g := gitlabWatchRepo(t, "follow: {merge: merge}\n")
	g.fake.SetMergeMethod(glProject, "ff")
	g.fake.SetResetApprovalsOnPush(glProject, true)
	g.fake.AddIssue(glProject, gitlabtest.Issue{IID: 3, Title: "Label me", Description: "Do it.", Author: "carol", Labels: []string{"cadre"}})
	const branch = "cadre/3-label-me"
	if code, errOut := g.watchOnce(t, ""); code != 0 || len(g.fake.MRs(glProject)) != 1 {
		t.Fatalf("intake: exit %d\n%s", code, errOut)
	}
	mr := g.fake.MRs(glProject)[0].IID
	head := g.rev(t, branch)
	g.fake.SetPipeline(glProject, head, "success", gitlabtest.Job{ID: 90, Name: "unit", Stage: "test", Status: "success"})
	g.fake.Approve(glProject, mr, "rita")
	main := g.pushFiles(t, "main", "elsewhere", map[string]string{"other.txt": "other\n"})

	code, errOut := g.watchOnce(t, "")
	if code != 0 || !strings.Contains(errOut, "GitLab was asked to rebase it") || g.rebasesAsked(mr) != 1 {
		t.Fatalf("the rebase was not asked once: exit %d, %d asked\n%s", code, g.rebasesAsked(mr), errOut)
	}
	rebased := g.rev(t, branch)
	if rebased == head || g.rev(t, branch+"^") != main || g.fake.MRs(glProject)[0].State != "opened" {
		t.Fatalf("after the rebase the branch is at %s (was %s), its parent %s, want one commit on main %s", rebased, head, g.rev(t, branch+"^"), main)
	}
	if a := g.fake.Approvals(glProject, mr); len(a) != 0 {
		t.Fatalf("approvals %v stood through the rebase's push", a)
	}

	// Approved again, the new head's pipeline still running: no merge.
	g.fake.Approve(glProject, mr, "rita")
	g.fake.SetPipeline(glProject, rebased, "running", gitlabtest.Job{ID: 91, Name: "unit", Stage: "test", Status: "running"})
	code, errOut = g.watchOnce(t, "")
	if code != 0 || !strings.Contains(errOut, "checks of the head are still running") || g.fake.MRs(glProject)[0].State != "opened" {
		t.Fatalf("the rebased head was not held for its pipeline: exit %d\n%s", code, errOut)
	}

	g.fake.SetPipeline(glProject, rebased, "success", gitlabtest.Job{ID: 92, Name: "unit", Stage: "test", Status: "success"})
	code, errOut = g.watchOnce(t, "")
	if got := g.fake.MRs(glProject)[0]; code != 0 || got.State != "merged" || !strings.Contains(errOut, "merged") {
		t.Fatalf("the green, approved rebased head was not merged: %s, exit %d\n%s", got.State, code, errOut)
	}
	if got := g.rev(t, "main"); got != rebased {
		t.Errorf("main at %s, want fast-forwarded to %s", got, rebased)
	}
	if m := g.mergeCommits(t, "main"); m != "" || g.rebasesAsked(mr) != 1 {
		t.Errorf("main holds merge commits %q, or the rebase was asked %d times", m, g.rebasesAsked(mr))
	}
	g.noCanary(t, errOut)
}

// A rebase GitLab cannot do is asked once. The branch resolved a conflict
// with main in a merge commit; main moves on without conflict, so the
// branch needs a rebase, but a rebase replays the branch's own commits
// without the merge and conflicts again. The next pass merges main into
// the branch as for a conflict instead, and that head, green and
// approved, merges by fast-forward.
func TestGitLabWatchFailedRebaseIsNotAskedAgain(t *testing.T) {
	g := gitlabWatchRepo(t, "follow: {merge: merge, conflict: {rounds: 2}}\n")
	g.fake.SetMergeMethod(glProject, "ff")
	g.fake.AddIssue(glProject, gitlabtest.Issue{IID: 3, Title: "Label me", Description: "Do it.", Author: "carol", Labels: []string{"cadre"}})
	const branch = "cadre/3-label-me"
	if code, errOut := g.watchOnce(t, ""); code != 0 || len(g.fake.MRs(glProject)) != 1 {
		t.Fatalf("intake: exit %d\n%s", code, errOut)
	}
	mr := g.fake.MRs(glProject)[0].IID
	g.pushFiles(t, "main", "base change", map[string]string{"fix.txt": "base\n"})
	if code, errOut := g.watchOnce(t, ""); code != 0 || !strings.Contains(errOut, "conflict on pull request #") || g.rebasesAsked(mr) != 0 {
		t.Fatalf("the first conflict: exit %d, %d rebases asked\n%s", code, g.rebasesAsked(mr), errOut)
	}
	resolved := g.rev(t, branch)
	if m := g.mergeCommits(t, branch); m == "" {
		t.Fatal("the branch holds no merge of main")
	}

	g.pushFiles(t, "main", "elsewhere", map[string]string{"other.txt": "other\n"})
	g.fake.SetPipeline(glProject, resolved, "success", gitlabtest.Job{ID: 90, Name: "unit", Stage: "test", Status: "success"})
	g.fake.Approve(glProject, mr, "rita")
	code, errOut := g.watchOnce(t, "")
	if code != 0 || !strings.Contains(errOut, "GitLab was asked to rebase it") || g.rebasesAsked(mr) != 1 || g.rev(t, branch) != resolved {
		t.Fatalf("the rebase: exit %d, %d asked, branch at %s (was %s)\n%s", code, g.rebasesAsked(mr), g.rev(t, branch), resolved, errOut)
	}
	code, errOut = g.watchOnce(t, "")
	if code != 0 || !strings.Contains(errOut, "conflict on pull request #") || g.rebasesAsked(mr) != 1 {
		t.Fatalf("after the failed rebase: exit %d, %d rebases asked\n%s", code, g.rebasesAsked(mr), errOut)
	}
	if err := exec.Command("git", "-C", g.bare, "merge-base", "--is-ancestor", "main", branch).Run(); err != nil {
		t.Fatalf("main is not merged into the branch: %v", err)
	}
	merged := g.rev(t, branch)
	if code, errOut := g.watchOnce(t, ""); code != 0 || g.rebasesAsked(mr) != 1 {
		t.Fatalf("a pass waiting for the merged head's pipeline: exit %d, %d rebases asked\n%s", code, g.rebasesAsked(mr), errOut)
	}

	time.Sleep(5 * time.Millisecond)
	g.fake.SetPipeline(glProject, merged, "success", gitlabtest.Job{ID: 91, Name: "unit", Stage: "test", Status: "success"})
	g.fake.Approve(glProject, mr, "rita")
	code, errOut = g.watchOnce(t, "")
	if got := g.fake.MRs(glProject)[0]; code != 0 || got.State != "merged" || g.rev(t, "main") != merged || g.rebasesAsked(mr) != 1 {
		t.Fatalf("not merged by fast-forward to %s: %s, main at %s, %d rebases asked, exit %d\n%s",
			merged, got.State, g.rev(t, "main"), g.rebasesAsked(mr), code, errOut)
	}
}
