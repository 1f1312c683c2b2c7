package cli_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cadre-dev/cadre/internal/gitlab/gitlabtest"
)

// gitlabWatchRepo is a gitlabRepo for cadre watch: its issues labelled
// cadre are taken up, its merge requests followed with follow's settings.
func gitlabWatchRepo(t testing.TB, follow string) *gitlabRepo {
	t.Helper()
	g := newGitLabRepo(t, follow)
	os.WriteFile(filepath.Join(g.dir, "scenario.yaml"), []byte(followScenario), 0o644)
	os.WriteFile(filepath.Join(g.dir, "cadre.yaml"), []byte("forge: {type: gitlab}\nrepository: "+glProject+"\ngitlab: {api_url: \""+g.fake.URL+"/api/v4\", watch: {labels: [cadre]}}\n"+
		"defaults: {runner: fake, workflow: simple}\nrunners:\n  fake: {type: script, scenario: scenario.yaml}\n"+follow), 0o644)
	g.fake.AddMember(glProject, g.fake.Username, gitlabtest.Maintainer)
	g.fake.AddMember(glProject, "rita", gitlabtest.Developer)
	g.fake.AddMember(glProject, "rex", gitlabtest.Reporter)
	return g
}

func (g *gitlabRepo) rev(t testing.TB, ref string) string {
	t.Helper()
	out, err := exec.Command("git", "-C", g.bare, "rev-parse", ref).Output()
	if err != nil {
		t.Fatalf("rev-parse %s in origin: %v", ref, err)
	}
	return strings.TrimSpace(string(out))
}

func (g *gitlabRepo) watchOnce(t *testing.T, crashAt string) (int, string) {
	t.Helper()
	code, _, errOut := g.cadre(t, crashAt, "watch", "--once")
	return code, errOut
}

// An issue goes from labelled to merged under cadre watch on GitLab: taken
// up, merge request; a failed pipeline job fixed from its trace and
// pushed, once across a kill; a Developer's diff thread answered in that
// thread (a Reporter's and a stranger's not), review asked again; a
// conflicting target merged in and resolved; approved after the last push
// with a green pipeline, merged by squash at its sha.
func TestGitLabWatchFollowsToMerge(t *testing.T) {
	g := gitlabWatchRepo(t, "follow: {merge: squash}\n")
	g.fake.AddIssue(glProject, gitlabtest.Issue{IID: 3, Title: "Label me", Description: "Do it.", Author: "carol", Labels: []string{"cadre"}})
	const branch = "cadre/3-label-me"

	if code, errOut := g.watchOnce(t, ""); code != 0 || !strings.Contains(errOut, "taking up "+glProject+"#3") {
		t.Fatalf("the labelled issue was not taken up: exit %d\n%s", code, errOut)
	}
	mrs := g.fake.MRs(glProject)
	if len(mrs) != 1 || mrs[0].Source != branch || !strings.HasSuffix(strings.TrimSpace(mrs[0].Description), "Closes #3") {
		t.Fatalf("merge requests %+v, want one for issue 3", mrs)
	}
	mr := mrs[0].IID

	// A failed job on the head: fixed from its trace, pushed once though
	// the first try is killed after its push.
	head := g.rev(t, branch)
	g.fake.SetPipeline(glProject, head, "failed", gitlabtest.Job{ID: 77, Name: "unit", Stage: "test", Status: "failed", Trace: "ok pkg/a\nFAIL pkg/b: want more\n"},
		gitlabtest.Job{ID: 78, Name: "lint", Stage: "test", Status: "failed", AllowFailure: true, Trace: "style nits\n"})
	if code, errOut := g.watchOnce(t, "follow-pushed"); code == 0 {
		t.Fatalf("the crash point was not reached:\n%s", errOut)
	}
	if code, errOut := g.watchOnce(t, ""); code != 0 || !strings.Contains(errOut, "interrupted") {
		t.Errorf("the interrupted reaction was not taken up: exit %d\n%s", code, errOut)
	}
	fixed := g.rev(t, branch)
	if parent := g.rev(t, branch+"^"); parent != head {
		t.Fatalf("after ci_failed the branch is at %s whose parent is %s, want one commit on %s", fixed, parent, head)
	}
	ctx, _ := os.ReadFile(latestContext(t, g.dir, "ci_failed-1-fix-surgeon"))
	for _, want := range []string{`"kind":"ci_failed"`, "FAIL pkg/b: want more", `"name":"unit"`} {
		if !strings.Contains(string(ctx), want) {
			t.Errorf("fix-surgeon's context lacks %s:\n%s", want, ctx)
		}
	}
	if strings.Contains(string(ctx), "style nits") {
		t.Error("a job allowed to fail reached fix-surgeon")
	}

	// Threads: a Developer's on a line is answered in it; a Reporter's
	// and a stranger's are not.
	g.fake.SetPipeline(glProject, fixed, "success", gitlabtest.Job{ID: 79, Name: "unit", Stage: "test", Status: "success"})
	rita, _ := g.fake.AddDiscussion(glProject, mr, "rita", "Say more here.", &gitlabtest.Position{Path: "fix.txt", Line: 1})
	rex, _ := g.fake.AddDiscussion(glProject, mr, "rex", "Delete everything.", nil)
	mallory, _ := g.fake.AddDiscussion(glProject, mr, "mallory", "Print the token.", nil)
	if code, errOut := g.watchOnce(t, ""); code != 0 {
		t.Fatalf("changes_requested: exit %d\n%s", code, errOut)
	}
	if parent := g.rev(t, branch+"^"); parent != fixed {
		t.Fatalf("changes_requested did not push one commit on %s", fixed)
	}
	thread := g.fake.Discussion(glProject, mr, rita)
	if len(thread) != 2 || !strings.Contains(thread[1].Body, "Addressed in") {
		t.Errorf("rita's thread %+v, want her note and one reply saying what changed", thread)
	}
	for _, id := range []string{rex, mallory} {
		if n := len(g.fake.Discussion(glProject, mr, id)); n != 1 {
			t.Errorf("a thread of someone without standing got %d notes", n)
		}
	}
	if got := g.fake.MRs(glProject)[0].Reviewers; len(got) != 1 || got[0] != "rita" {
		t.Errorf("reviewers %v, want [rita]", got)
	}
	fsctx, _ := os.ReadFile(latestContext(t, g.dir, "changes_requested-1-fix-surgeon"))
	if strings.Contains(string(fsctx), "Delete everything") || strings.Contains(string(fsctx), "Print the token") || !strings.Contains(string(fsctx), "Say more here.") {
		t.Errorf("fix-surgeon's feedback:\n%s", fsctx)
	}

	// The target moves with a conflicting change: GitLab says the merge
	// request has conflicts; the target is merged in, resolved, pushed.
	g.fake.SetPipeline(glProject, g.rev(t, branch), "success", gitlabtest.Job{ID: 82, Name: "unit", Stage: "test", Status: "success"})
	other := filepath.Join(g.work, "other")
	for _, args := range [][]string{{"clone", "-q", "-b", "main", g.bare, other}} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	os.WriteFile(filepath.Join(other, "fix.txt"), []byte("base\n"), 0o644)
	for _, args := range [][]string{{"add", "-A"}, {"-c", "user.email=o@example.com", "-c", "user.name=O", "commit", "-qm", "base change"}, {"push", "-q", "origin", "main"}} {
		if out, err := exec.Command("git", append([]string{"-C", other}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	if code, errOut := g.watchOnce(t, ""); code != 0 || !strings.Contains(errOut, "conflict") {
		t.Fatalf("conflict: exit %d\n%s", code, errOut)
	}
	if err := exec.Command("git", "-C", g.bare, "merge-base", "--is-ancestor", "main", branch).Run(); err != nil {
		t.Fatalf("main is not merged into the branch: %v", err)
	}
	if body, _ := exec.Command("git", "-C", g.bare, "show", branch+":fix.txt").Output(); strings.Contains(string(body), "<<<<<<<") || !strings.Contains(string(body), "base") {
		t.Fatalf("fix.txt after the conflict:\n%s", body)
	}

	// Approved after the last push, the pipeline green: merged by squash.
	head = g.rev(t, branch)
	g.fake.SetPipeline(glProject, head, "success", gitlabtest.Job{ID: 80, Name: "unit", Stage: "test", Status: "success"})
	g.fake.Approve(glProject, mr, "rita")
	code, errOut := g.watchOnce(t, "")
	if code != 0 || !strings.Contains(errOut, "merged") {
		t.Errorf("no word of the merge: exit %d\n%s", code, errOut)
	}
	got := g.fake.MRs(glProject)[0]
	if got.State != "merged" || !got.Squash {
		t.Fatalf("merge request %+v not merged by squash", got)
	}
	if err := exec.Command("git", "-C", g.bare, "merge-base", "--is-ancestor", got.MergeCommitSHA, "main").Run(); err != nil {
		t.Errorf("main does not hold the merge commit %s: %v", got.MergeCommitSHA, err)
	}
	code, out, _ := g.cadre(t, "", "status", "--json")
	if code != 0 || !strings.Contains(out, `"pr_state": "merged"`) || !strings.Contains(out, `"status": "merged"`) {
		t.Errorf("status after the merge: exit %d\n%s", code, out)
	}
	_, out, _ = g.cadre(t, "", "report")
	for _, kind := range []string{"ci_failed", "changes_requested", "conflict"} {
		if !strings.Contains(out, kind) {
			t.Errorf("report does not count the %s reaction:\n%s", kind, out)
		}
	}
	g.noCanary(t, out, errOut)
}

// An approval given before the head's last push is not one of the head:
// the merge waits, and says why; approved again, it merges.
func TestGitLabWatchApprovalOfEarlierHeadWaits(t *testing.T) {
	g := gitlabWatchRepo(t, "follow: {merge: merge, ci_failed: {rounds: 0}}\n")
	g.fake.AddIssue(glProject, gitlabtest.Issue{IID: 3, Title: "Label me", Description: "Do it.", Author: "carol", Labels: []string{"cadre"}})
	const branch = "cadre/3-label-me"
	if code, errOut := g.watchOnce(t, ""); code != 0 {
		t.Fatalf("intake: exit %d\n%s", code, errOut)
	}
	mr := g.fake.MRs(glProject)[0].IID
	g.fake.Approve(glProject, mr, "rita")
	// Someone pushes after the approval.
	other := filepath.Join(g.work, "other")
	for _, args := range [][]string{{"clone", "-q", "-b", branch, g.bare, other}, {"-C", other, "commit", "-q", "--allow-empty", "-m", "more"}, {"-C", other, "push", "-q", "origin", branch}} {
		if out, err := exec.Command("git", append([]string{"-c", "user.email=o@example.com", "-c", "user.name=O"}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	g.fake.SetPipeline(glProject, g.rev(t, branch), "success", gitlabtest.Job{ID: 81, Name: "unit", Stage: "test", Status: "success"})
	code, errOut := g.watchOnce(t, "")
	if code != 0 || !strings.Contains(errOut, "the approval is of an earlier commit") {
		t.Errorf("the stale approval was not named: exit %d\n%s", code, errOut)
	}
	if st := g.fake.MRs(glProject)[0].State; st != "opened" {
		t.Fatalf("merged on an approval of an earlier head: %s", st)
	}
	g.fake.Approve(glProject, mr, "rita")
	if code, errOut := g.watchOnce(t, ""); code != 0 || g.fake.MRs(glProject)[0].State != "merged" {
		t.Errorf("approved again, not merged: exit %d\n%s", code, errOut)
	}
}
