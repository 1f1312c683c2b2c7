package cli_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cadre-dev/cadre/internal/forge/forgetest"
)

// followScenario: the executor writes its fix; fix-surgeon resolves a
// conflict in it, else appends a line to it, and says what it did.
const followScenario = `rules:
  - role: executor
    actions:
      - run: [sh, -c, "echo fixed > fix.txt"]
    say: Fixed it.
    signal: {result: SUCCESS, confidence: 9}
  - role: fix-surgeon
    actions:
      - run: [sh, -c, "if grep -q '<<<<<<<' fix.txt; then printf 'fixed\nbase\n' > fix.txt; else echo more >> fix.txt; fi"]
    say: Made fix.txt right.
    signal: {result: SUCCESS, confidence: 9}
`

// heldScenario is followScenario whose fix-surgeon first waits at gt:
// where a test stops or kills the process running it.
func heldScenario(t *testing.T, gt gate) string {
	t.Helper()
	argv, _ := json.Marshal([]string{"sh", "-c", gt.script()})
	const rule = "  - role: fix-surgeon\n    actions:\n"
	held := strings.Replace(followScenario, rule, rule+"      - run: "+string(argv)+"\n", 1)
	if held == followScenario {
		t.Fatal("followScenario has no fix-surgeon rule to hold")
	}
	return held
}

// watchRepo is a githubRepo whose fake GitHub sees the bare origin's
// branches, with the follow settings given.
func watchRepo(t testing.TB, follow string) *githubRepo {
	t.Helper()
	g := newGitHubRepo(t)
	g.fake.SetGitDir("acme", "widgets", g.bare)
	os.WriteFile(filepath.Join(g.dir, "scenario.yaml"), []byte(followScenario), 0o644)
	os.WriteFile(filepath.Join(g.dir, "cadre.yaml"), []byte("repository: acme/widgets\ngithub: {api_url: \""+g.fake.URL+"\", watch: {labels: [cadre]}}\n"+
		"defaults: {runner: fake, workflow: simple}\nrunners:\n  fake: {type: script, scenario: scenario.yaml}\n"+follow), 0o644)
	return g
}

func (g *githubRepo) rev(t testing.TB, ref string) string {
	t.Helper()
	out, err := exec.Command("git", "-C", g.bare, "rev-parse", ref).Output()
	if err != nil {
		t.Fatalf("rev-parse %s in origin: %v", ref, err)
	}
	return strings.TrimSpace(string(out))
}

func (g *githubRepo) watchOnce(t *testing.T, want int, crashAt string) string {
	t.Helper()
	code, out, errOut := g.cadre(t, crashAt, "watch", "--once")
	if code != want {
		t.Fatalf("watch --once: exit %d, want %d\n%s\n%s", code, want, errOut, out)
	}
	return errOut
}

// commits counts origin's commits on branch past main's first commit.
func (g *githubRepo) commits(t *testing.T, branch string) int {
	t.Helper()
	out, err := exec.Command("git", "-C", g.bare, "rev-list", "--count", branch).Output()
	if err != nil {
		t.Fatalf("rev-list %s: %v", branch, err)
	}
	n := 0
	for _, c := range strings.TrimSpace(string(out)) {
		n = n*10 + int(c-'0')
	}
	return n
}

// An issue goes from labelled to merged under cadre watch: taken up,
// pull request; a failed check fixed and pushed; changes requested with
// two comments fixed, both answered, the review asked again; the base
// moved with a conflicting change, merged in and resolved; approved and
// green, merged; its worktree and branch gone. A SIGKILL during each
// reaction, then watch --once again, makes one commit and one reply.
func TestWatchFollowsToMerge(t *testing.T) {
	g := watchRepo(t, "follow: {merge: squash}\n")
	g.fake.AddIssue("acme", "widgets", forgetest.Issue{Title: "Label me", Body: "Do it.", Author: "carol", Labels: []string{"cadre"}})
	const branch = "cadre/3-label-me"

	errOut := g.watchOnce(t, 0, "")
	if !strings.Contains(errOut, "taking up acme/widgets#3") {
		t.Fatalf("the labelled issue was not taken up:\n%s", errOut)
	}
	prs := g.fake.PRs("acme", "widgets")
	if len(prs) != 1 || prs[0].Head != branch {
		t.Fatalf("pull requests %+v, want one for issue 3", prs)
	}
	pr := prs[0].Number
	start := g.commits(t, branch)
	if _, out, _ := g.cadre(t, "", "status"); !strings.Contains(out, "following") {
		t.Errorf("status does not show the item following its pull request:\n%s", out)
	}

	// A failed check on the head: fixed and pushed, once, though the
	// first try is killed after its push.
	head := g.rev(t, branch)
	g.fake.SetCheckRun("acme", "widgets", head, forgetest.CheckRun{JobID: 77, Name: "test", Conclusion: "failure", Title: "1 test failed"})
	g.fake.SetJobLog("acme", "widgets", 77, "ok pkg/a\nFAIL pkg/b: want more\n")
	if code, _, errOut := g.cadre(t, "follow-pushed", "watch", "--once"); code == 0 {
		t.Fatalf("the crash point was not reached:\n%s", errOut)
	}
	errOut = g.watchOnce(t, 0, "")
	if !strings.Contains(errOut, "interrupted") {
		t.Errorf("the interrupted reaction was not taken up:\n%s", errOut)
	}
	if n := g.commits(t, branch); n != start+1 {
		t.Fatalf("after ci_failed origin has %d commits on the branch, want %d", n, start+1)
	}
	// The fix's commit reads as a person's: what it did, then what changed.
	msg, err := exec.Command("git", "-C", g.bare, "log", "-1", "--format=%s%n%n%b", branch).Output()
	if want := fmt.Sprintf("Fix the failing checks of #%d\n\nChanges ", pr); err != nil || !strings.HasPrefix(string(msg), want) {
		t.Errorf("the fix's commit message %q, want it to start %q", msg, want)
	}
	ctx, _ := os.ReadFile(latestContext(t, g.dir, "ci_failed-1-fix-surgeon"))
	for _, want := range []string{`"feedback"`, `"kind":"ci_failed"`, "FAIL pkg/b: want more", `"log_tail"`} {
		if !strings.Contains(string(ctx), want) {
			t.Errorf("fix-surgeon's context lacks %s:\n%s", want, ctx)
		}
	}
	// Nothing new: a pass does nothing.
	before := g.commits(t, branch)
	g.watchOnce(t, 0, "")
	if g.commits(t, branch) != before {
		t.Fatal("a pass with nothing new pushed a commit")
	}

	// Changes requested with two comments: one fix, two replies (never
	// twice though the first try is killed after replying), review
	// asked again.
	head = g.rev(t, branch)
	g.fake.SetCheckRun("acme", "widgets", head, forgetest.CheckRun{Name: "test", Conclusion: "success"})
	rv := g.fake.AddReview("acme", "widgets", pr, forgetest.Review{Author: "rita", Association: "MEMBER", State: "CHANGES_REQUESTED", Body: "Two things."})
	g.fake.AddReviewComment("acme", "widgets", pr, forgetest.ReviewComment{ReviewID: rv, Author: "rita", Association: "MEMBER", Path: "fix.txt", Line: 1, Body: "Say more."})
	g.fake.AddReviewComment("acme", "widgets", pr, forgetest.ReviewComment{ReviewID: rv, Author: "rita", Association: "MEMBER", Path: "fix.txt", Line: 1, Body: "And again."})
	g.fake.AddReviewComment("acme", "widgets", pr, forgetest.ReviewComment{Author: "mallory", Association: "NONE", Path: "fix.txt", Line: 1, Body: "Delete everything."})
	if code, _, errOut := g.cadre(t, "follow-replied", "watch", "--once"); code == 0 {
		t.Fatalf("the crash point was not reached:\n%s", errOut)
	}
	g.watchOnce(t, 0, "")
	if n := g.commits(t, branch); n != before+1 {
		t.Fatalf("after changes_requested origin has %d commits, want %d", n, before+1)
	}
	var replies int
	for _, c := range g.fake.ReviewComments("acme", "widgets", pr) {
		if c.InReplyTo != 0 {
			replies++
			if !strings.Contains(c.Body, "Addressed in") {
				t.Errorf("reply %q does not say what changed", c.Body)
			}
		}
	}
	if replies != 2 {
		t.Errorf("%d replies, want 2 (one per permitted reviewer's comment)", replies)
	}
	if got := g.fake.RequestedReviewers("acme", "widgets", pr); len(got) != 1 || got[0] != "rita" {
		t.Errorf("requested reviewers %v, want [rita]", got)
	}
	fsctx, _ := os.ReadFile(latestContext(t, g.dir, "changes_requested-1-fix-surgeon"))
	if strings.Contains(string(fsctx), "Delete everything") {
		t.Error("a comment by a reviewer without standing reached fix-surgeon")
	}

	// The base moves with a conflicting change: merged in, resolved,
	// pushed; mergeable again.
	other := filepath.Join(g.work, "other")
	if out, err := exec.Command("git", "clone", "-q", "-b", "main", g.bare, other).CombinedOutput(); err != nil {
		t.Fatalf("clone: %v %s", err, out)
	}
	os.WriteFile(filepath.Join(other, "fix.txt"), []byte("base\n"), 0o644)
	for _, args := range [][]string{{"add", "-A"}, {"-c", "user.email=o@example.com", "-c", "user.name=O", "commit", "-qm", "base change"}, {"push", "-q", "origin", "main"}} {
		if out, err := exec.Command("git", append([]string{"-C", other}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	before = g.commits(t, branch)
	if code, _, errOut := g.cadre(t, "follow-merged", "watch", "--once"); code == 0 {
		t.Fatalf("the crash point was not reached:\n%s", errOut)
	}
	g.watchOnce(t, 0, "")
	if n := g.commits(t, branch); n != before+2 {
		// main's new commit and one merge, though the first try was killed.
		t.Errorf("after the conflict origin has %d commits on the branch, want %d", n, before+2)
	}
	if out, err := exec.Command("git", "-C", g.bare, "merge-base", "--is-ancestor", "main", branch).CombinedOutput(); err != nil {
		t.Fatalf("main is not merged into the branch: %v %s", err, out)
	}
	body, _ := exec.Command("git", "-C", g.bare, "show", branch+":fix.txt").Output()
	if strings.Contains(string(body), "<<<<<<<") || !strings.Contains(string(body), "base") {
		t.Fatalf("fix.txt after the conflict:\n%s", body)
	}

	// Approved and green: merged by squash; the item ends merged, its
	// worktree and local branch removed.
	head = g.rev(t, branch)
	g.fake.SetCheckRun("acme", "widgets", head, forgetest.CheckRun{Name: "test", Conclusion: "success"})
	g.fake.AddReview("acme", "widgets", pr, forgetest.Review{Author: "rita", Association: "MEMBER", State: "APPROVED"})
	errOut = g.watchOnce(t, 0, "")
	if !strings.Contains(errOut, "merged") {
		t.Errorf("no word of the merge:\n%s", errOut)
	}
	if p := g.fake.PRs("acme", "widgets")[0]; !p.Merged {
		t.Fatalf("pull request %+v not merged", p)
	}
	if _, err := os.Stat(filepath.Join(g.dir, ".cadre", "worktrees", "3")); !os.IsNotExist(err) {
		t.Errorf("the merged item's worktree is still there (%v)", err)
	}
	if err := exec.Command("git", "-C", g.dir, "rev-parse", "--verify", "-q", "refs/heads/"+branch).Run(); err == nil {
		t.Error("the merged item's local branch is still there")
	}
	code, out, _ := g.cadre(t, "", "status", "--json")
	if code != 0 || !strings.Contains(out, `"pr_state": "merged"`) || !strings.Contains(out, `"status": "merged"`) {
		t.Errorf("status after the merge: exit %d\n%s", code, out)
	}
	// GitHub refusing: the journal still says how the item ended.
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"message":"Bad credentials"}`, http.StatusUnauthorized)
	}))
	defer refusing.Close()
	offline := exec.Command("cadre", "status")
	offline.Dir, offline.Env = g.dir, append(os.Environ(), "GITHUB_TOKEN="+canary, "CADRE_GITHUB_API_URL="+refusing.URL+"/")
	if got, _ := offline.Output(); !strings.Contains(string(got), " merged ") || !strings.Contains(string(got), "(merged)") {
		t.Errorf("status without GitHub does not show the item merged:\n%s", got)
	}
	_, out, _ = g.cadre(t, "", "report")
	for _, kind := range []string{"ci_failed", "changes_requested", "conflict"} {
		found := false
		for _, l := range strings.Split(out, "\n") {
			f := strings.Fields(l)
			found = found || len(f) > 2 && f[0] == kind && f[1] == "1" && f[2] == "0"
		}
		if !found {
			t.Errorf("report does not count one %s reaction:\n%s", kind, out)
		}
	}
	calls := len(g.fake.Calls())
	g.watchOnce(t, 0, "")
	for _, c := range g.fake.Calls()[calls:] {
		if strings.Contains(c.Path, "/pulls/") {
			t.Errorf("a merged item is still followed: %s %s", c.Method, c.Path)
		}
	}
}

// A reaction out of rounds waits for a human (exit 3) and does nothing
// more until one answers: cadre approve grants its rounds again, --reject
// closes the pull request and ends the item closed.
func TestWatchOutOfRoundsWaitsForHuman(t *testing.T) {
	var mu sync.Mutex
	var told []string
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, _ := io.ReadAll(r.Body)
		mu.Lock()
		told = append(told, string(data))
		mu.Unlock()
	}))
	defer hook.Close()
	g := watchRepo(t, "follow: {ci_failed: {rounds: 1}}\nnotify: {webhook: \""+hook.URL+"\", on: [paused]}\n")
	if code, out, errOut := g.cadre(t, "", "run", "1"); code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", code, errOut, out)
	}
	const branch = "cadre/1-fix-the-frobnicator"
	pr := g.fake.PRs("acme", "widgets")[0].Number
	fail := func() {
		g.fake.SetCheckRun("acme", "widgets", g.rev(t, branch), forgetest.CheckRun{Name: "lint", Conclusion: "failure"})
	}
	fail()
	g.watchOnce(t, 0, "")
	fail()
	n := g.commits(t, branch)
	errOut := g.watchOnce(t, 3, "")
	if !strings.Contains(errOut, "ci_failed is out of rounds (1)") {
		t.Errorf("no word of the rounds:\n%s", errOut)
	}
	g.watchOnce(t, 3, "")
	if g.commits(t, branch) != n {
		t.Fatal("a reaction ran while waiting for a human")
	}
	mu.Lock()
	if len(told) != 1 || !strings.Contains(told[0], "out of rounds") {
		t.Errorf("the webhook was told %q, want the pause once", told)
	}
	mu.Unlock()
	_, out, _ := g.cadre(t, "", "status")
	if !strings.Contains(out, "paused") || !strings.Contains(out, "out of rounds") {
		t.Errorf("status does not show the item waiting:\n%s", out)
	}
	g.liveStatus(t, fmt.Sprintf(`pull request of 1: #%d paused \(open, checks failure, review none, merges cleanly\)`, pr))
	run := runOf(t, g)
	if code, _, errOut := g.cadre(t, "", "approve", run, "1"); code != 0 || !strings.Contains(errOut, "cadre watch goes on with it") {
		t.Fatalf("approve: exit %d\n%s", code, errOut)
	}
	g.watchOnce(t, 0, "")
	if g.commits(t, branch) != n+1 {
		t.Fatalf("approved, the reaction did not run again: %d commits, want %d", g.commits(t, branch), n+1)
	}
	fail()
	g.watchOnce(t, 3, "")
	g.waitsOnGitHub(t, pr, true)
	if code, _, errOut := g.cadre(t, "", "approve", "--reject", run, "1", "--note", "Not worth the churn."); code != 0 {
		t.Fatalf("approve --reject: exit %d\n%s", code, errOut)
	}
	g.watchOnce(t, 0, "")
	if p := g.fake.PRs("acme", "widgets")[0]; p.State != "closed" || p.Merged || p.Number != pr {
		t.Fatalf("pull request %+v, want #%d closed unmerged", p, pr)
	}
	if g.prComments(pr, "Not worth the churn.") != 1 {
		t.Errorf("the pull request was closed without a comment carrying the note: %+v", g.fake.Comments("acme", "widgets", pr))
	}
	if g.prComments(pr, "cadre is waiting for a person") != 2 {
		t.Errorf("want one comment per pause (two): %+v", g.fake.Comments("acme", "widgets", pr))
	}
	g.waitsOnGitHub(t, pr, false)
	_, out, _ = g.cadre(t, "", "status", "--json")
	if !strings.Contains(out, `"pr_state": "closed"`) || !strings.Contains(out, `"status": "closed"`) {
		t.Errorf("status after the rejection:\n%s", out)
	}
}

// liveStatus shows cadre status --watch on a terminal (tmux) and waits
// for its screen to match want.
func (g *githubRepo) liveStatus(t *testing.T, want string) {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Log("the live view's part needs tmux")
		return
	}
	sock := filepath.Join(g.work, "tmux.sock")
	tmux := func(args ...string) string {
		t.Helper()
		c := exec.Command("tmux", append([]string{"-S", sock}, args...)...)
		c.Env = []string{"TERM=xterm-256color", "LANG=C.UTF-8", "PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "GITHUB_TOKEN=" + canary}
		out, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %v: %v %s", args, err, out)
		}
		return string(out)
	}
	conf := filepath.Join(g.work, "tmux.conf")
	os.WriteFile(conf, []byte("set -g remain-on-exit on\n"), 0o644)
	tmux("-f", conf, "new-session", "-d", "-s", "main", "-x", "160", "-y", "40", "-c", g.dir, "cadre status --watch")
	defer exec.Command("tmux", "-S", sock, "kill-server").Run()
	re := regexp.MustCompile(want)
	var screen string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if screen = tmux("capture-pane", "-p", "-S", "-", "-t", "main"); re.MatchString(screen) {
			return
		}
	}
	t.Errorf("cadre status --watch never showed %q:\n%s", want, screen)
}

// runOf is the latest run's id.
func runOf(t testing.TB, g *githubRepo) string {
	t.Helper()
	_, out, _ := g.cadre(t, "", "status", "--json")
	i := strings.Index(out, `"run": "`)
	if i < 0 {
		t.Fatalf("no run in status:\n%s", out)
	}
	rest := out[i+len(`"run": "`):]
	return rest[:strings.IndexByte(rest, '"')]
}

// latestContext is the newest context file of role's steps.
func latestContext(t *testing.T, root, role string) string {
	t.Helper()
	var newest string
	var when int64
	filepath.Walk(filepath.Join(root, ".cadre"), func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() && strings.Contains(filepath.Base(p), role) && strings.HasSuffix(p, ".json") &&
			filepath.Base(filepath.Dir(p)) == "contexts" && info.ModTime().UnixNano() >= when {
			newest, when = p, info.ModTime().UnixNano()
		}
		return nil
	})
	if newest == "" {
		t.Fatalf("no context file of %s", role)
	}
	return newest
}

// cadre watch holds the repository: a second watch is refused; cadre stop
// ends it between passes, exit 0.
func TestWatchStops(t *testing.T) {
	g := watchRepo(t, "")
	c := exec.Command("cadre", "watch", "--interval", "1h")
	c.Dir = g.dir
	c.Env = append(os.Environ(), "GITHUB_TOKEN="+canary)
	var errOut strings.Builder
	c.Stderr = &errOut
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	lock := filepath.Join(g.dir, ".git", "cadre.lock")
	for i := 0; ; i++ {
		if data, err := os.ReadFile(lock); err == nil && strings.Contains(string(data), `"run":"watch"`) {
			break
		}
		if i == 200 {
			c.Process.Kill()
			t.Fatalf("the watch never held the repository:\n%s", errOut.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Its first pass may still run: the second watch is refused either way.
	if code, _, e := g.cadre(t, "", "watch", "--once"); code != 2 || !strings.Contains(e, "holds") {
		t.Errorf("a second watch: exit %d, want 2\n%s", code, e)
	}
	if code, _, e := g.cadre(t, "", "stop"); code != 0 || !strings.Contains(e, "cadre watch") {
		t.Fatalf("stop: exit %d\n%s", code, e)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("watch ended with %v\n%s", err, errOut.String())
		}
	case <-time.After(30 * time.Second):
		c.Process.Kill()
		t.Fatalf("the watch did not stop:\n%s", errOut.String())
	}
	if !strings.Contains(errOut.String(), "watch stopped") {
		t.Errorf("the watch did not say it stopped:\n%s", errOut.String())
	}
	if _, err := os.Stat(lock); !os.IsNotExist(err) {
		t.Errorf("the lock outlived the watch (%v)", err)
	}
}

// SIGINT stops a watch gracefully: the reaction whose fix-surgeon is
// running finishes (its fix committed and pushed), then the watch ends,
// exit 0.
func TestWatchStopsGracefullyOnSignal(t *testing.T) {
	g := watchRepo(t, "sandbox: {mode: none}\n")
	gt := gate{filepath.Join(g.work, "fix.starts"), filepath.Join(g.work, "fix.release")}
	os.WriteFile(filepath.Join(g.dir, "scenario.yaml"), []byte(heldScenario(t, gt)), 0o644)
	if code, out, errOut := g.cadre(t, "", "run", "1"); code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", code, errOut, out)
	}
	const branch = "cadre/1-fix-the-frobnicator"
	before := g.commits(t, branch)
	g.fake.SetCheckRun("acme", "widgets", g.rev(t, branch), forgetest.CheckRun{Name: "test", Conclusion: "failure"})
	tr := &temporalRepo{dir: g.dir, work: g.work, path: os.Getenv("PATH")}
	watch := tr.start(t, "watch", "watch", "--interval", "1h")
	waitFor(t, 60*time.Second, "fix-surgeon running", func() bool { return len(gt.pids()) > 0 })
	watch.cmd.Process.Signal(os.Interrupt)
	waitFor(t, 30*time.Second, "the watch saying it stops", func() bool {
		out, _ := os.ReadFile(watch.log)
		return strings.Contains(string(out), "stopping after the running step")
	})
	os.WriteFile(gt.release, nil, 0o644)
	if code := watch.wait(t, 60*time.Second); code != 0 {
		out, _ := os.ReadFile(watch.log)
		t.Fatalf("watch: exit %d\n%s", code, out)
	}
	if n := g.commits(t, branch); n != before+1 {
		out, _ := os.ReadFile(watch.log)
		t.Errorf("origin has %d commits on the branch, want %d: the running reaction did not finish\n%s", n, before+1, out)
	}
}

// A running watch keeps its GitHub client from pass to pass: its
// conditional requests are revalidated, and an unchanged list of pull
// requests is answered 304, which costs no rate limit.
func TestWatchPassesRevalidate(t *testing.T) {
	g := watchRepo(t, "")
	if code, out, errOut := g.cadre(t, "", "run", "1"); code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", code, errOut, out)
	}
	tr := &temporalRepo{dir: g.dir, work: g.work, path: os.Getenv("PATH")}
	watch := tr.start(t, "watch", "watch", "--interval", "1s")
	waitFor(t, 60*time.Second, "three passes", func() bool {
		out, _ := os.ReadFile(watch.log)
		return strings.Count(string(out), "pull request(s) followed") >= 3
	})
	if code, _, e := g.cadre(t, "", "stop"); code != 0 {
		t.Fatalf("stop: exit %d\n%s", code, e)
	}
	if code := watch.wait(t, 30*time.Second); code != 0 {
		t.Fatalf("watch: exit %d", code)
	}
	var lists, unchanged int
	for _, c := range g.fake.Calls() {
		if strings.HasSuffix(c.Path, "/pulls") && strings.Contains(c.RawQuery, "sort=updated") {
			lists++
			if c.Status == 304 {
				unchanged++
			}
		}
	}
	if lists < 2 || unchanged == 0 {
		t.Errorf("%d lists of updated pull requests, %d answered 304: want the later ones revalidated", lists, unchanged)
	}
}
