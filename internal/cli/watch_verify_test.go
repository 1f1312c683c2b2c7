package cli_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cadre-dev/cadre/internal/forge/forgetest"
	"github.com/cadre-dev/cadre/internal/store"
)

// surgeon is a scenario whose executor writes fix.txt and whose
// fix-surgeon runs script and answers result.
func surgeon(script, result string) string {
	return `rules:
  - role: executor
    actions:
      - run: [sh, -c, "echo fixed > fix.txt"]
    say: Fixed it.
    signal: {result: SUCCESS, confidence: 9}
  - role: fix-surgeon
    actions:
      - run: [sh, -c, "` + script + `"]
    say: Did what I could.
    signal: {result: ` + result + `, confidence: 9}
`
}

// setScenario replaces the repository's scenario: what the next agent
// steps do.
func (g *githubRepo) setScenario(t testing.TB, s string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(g.dir, "scenario.yaml"), []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// pushBase pushes a commit to origin's main writing content to path.
func (g *githubRepo) pushBase(t testing.TB, path, content string) {
	t.Helper()
	other := filepath.Join(g.work, "other")
	os.RemoveAll(other)
	if out, err := exec.Command("git", "clone", "-q", "-b", "main", g.bare, other).CombinedOutput(); err != nil {
		t.Fatalf("clone: %v %s", err, out)
	}
	os.WriteFile(filepath.Join(other, path), []byte(content), 0o644)
	for _, args := range [][]string{{"add", "-A"}, {"-c", "user.email=o@example.com", "-c", "user.name=O", "commit", "-qm", "base change"}, {"push", "-q", "origin", "main"}} {
		if out, err := exec.Command("git", append([]string{"-C", other}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
}

// waitsOnGitHub checks the pull request says it waits for a person, once,
// and carries the pause label.
func (g *githubRepo) waitsOnGitHub(t *testing.T, pr int, want bool) {
	t.Helper()
	labelled := slices.Contains(g.fake.Labels("acme", "widgets", pr), "cadre:needs-human")
	if labelled != want {
		t.Errorf("pull request #%d labelled cadre:needs-human: %v, want %v", pr, labelled, want)
	}
}

func (g *githubRepo) prComments(pr int, has string) int {
	n := 0
	for _, c := range g.fake.Comments("acme", "widgets", pr) {
		if strings.Contains(c.Body, has) {
			n++
		}
	}
	return n
}

// A fix-surgeon that answers FAIL to a review has nothing pushed, no
// reply posted and no review asked for; the same review is not tried
// again: the pull request waits for a person, saying so once, labelled.
// Approved with a note, the note reaches fix-surgeon as written, the
// label comes off, and the item resumes once.
func TestWatchFailedFixClaimsNothing(t *testing.T) {
	g := watchRepo(t, "follow: {changes_requested: {rounds: 3}}\n")
	g.setScenario(t, surgeon("echo more >> fix.txt", "FAIL"))
	if code, out, errOut := g.cadre(t, "", "run", "1"); code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", code, errOut, out)
	}
	const branch = "cadre/1-fix-the-frobnicator"
	pr := g.fake.PRs("acme", "widgets")[0].Number
	g.fake.SetCheckRun("acme", "widgets", g.rev(t, branch), forgetest.CheckRun{Name: "test", Conclusion: "success"})
	rv := g.fake.AddReview("acme", "widgets", pr, forgetest.Review{Author: "rita", Association: "MEMBER", State: "CHANGES_REQUESTED", Body: "Say more."})
	g.fake.AddReviewComment("acme", "widgets", pr, forgetest.ReviewComment{ReviewID: rv, Author: "rita", Association: "MEMBER", Path: "fix.txt", Line: 1, Body: "Why?"})
	n := g.commits(t, branch)

	errOut := g.watchOnce(t, 1, "")
	if !strings.Contains(errOut, "fix-surgeon") || !strings.Contains(errOut, "nothing pushed") {
		t.Errorf("no word of the refused fix:\n%s", errOut)
	}
	if g.commits(t, branch) != n {
		t.Fatal("a fix its agent answered FAIL to was pushed")
	}
	for _, c := range g.fake.ReviewComments("acme", "widgets", pr) {
		if c.InReplyTo != 0 {
			t.Errorf("a failed fix was answered on the thread: %q", c.Body)
		}
	}
	if got := g.fake.RequestedReviewers("acme", "widgets", pr); len(got) != 0 {
		t.Errorf("a failed fix asked %v to review again", got)
	}

	// The same input again: a person is asked, not the agent.
	errOut = g.watchOnce(t, 3, "")
	if !strings.Contains(errOut, "last round on this input failed") {
		t.Errorf("no word of why it waits:\n%s", errOut)
	}
	g.watchOnce(t, 3, "")
	if c := g.prComments(pr, "cadre is waiting for a person"); c != 1 {
		t.Errorf("%d comments say the pull request waits, want 1", c)
	}
	g.waitsOnGitHub(t, pr, true)

	const note = "Keep fix.txt's first line; explain in one sentence — \"quoted\" & all."
	g.setScenario(t, surgeon("echo more >> fix.txt", "SUCCESS"))
	run := runOf(t, g)
	if code, _, errOut := g.cadre(t, "", "approve", run, "1", "--note", note); code != 0 {
		t.Fatalf("approve: exit %d\n%s", code, errOut)
	}
	g.watchOnce(t, 0, "")
	if g.commits(t, branch) != n+1 {
		t.Fatalf("approved, the fix was not pushed: %d commits, want %d", g.commits(t, branch), n+1)
	}
	ctx, _ := os.ReadFile(latestContext(t, g.dir, "changes_requested-2-fix-surgeon"))
	if !strings.Contains(string(ctx), `"note":`) || !strings.Contains(string(ctx), "explain in one sentence") {
		t.Errorf("the approval's note did not reach fix-surgeon:\n%s", ctx)
	}
	g.waitsOnGitHub(t, pr, false)
	g.watchOnce(t, 0, "")
	resumed := 0
	for _, e := range journalEvents(t, g.dir) {
		if strings.Contains(string(e.Data), "granted more rounds") {
			resumed++
		}
	}
	if resumed != 1 {
		t.Errorf("the item was journaled resumed %d times, want once", resumed)
	}
}

// A conflict reaction whose fix-surgeon claims SUCCESS but leaves the
// markers pushes nothing: the branch stays as it was, the refused
// commit is kept for a person, and the item waits for one.
func TestWatchConflictMarkersNeverPushed(t *testing.T) {
	g := watchRepo(t, "follow: {conflict: {rounds: 2}}\n")
	g.setScenario(t, surgeon("true", "SUCCESS"))
	if code, out, errOut := g.cadre(t, "", "run", "1"); code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", code, errOut, out)
	}
	const branch = "cadre/1-fix-the-frobnicator"
	pr := g.fake.PRs("acme", "widgets")[0].Number
	before := g.rev(t, branch)
	g.pushBase(t, "fix.txt", "base\n")

	errOut := g.watchOnce(t, 1, "")
	if !strings.Contains(errOut, "conflict markers left") {
		t.Errorf("no word of the markers:\n%s", errOut)
	}
	if got := g.rev(t, branch); got != before {
		body, _ := exec.Command("git", "-C", g.bare, "show", branch+":fix.txt").Output()
		t.Fatalf("the branch moved from %s to %s; fix.txt:\n%s", before, got, body)
	}
	refs, _ := exec.Command("git", "-C", g.dir, "for-each-ref", "refs/cadre/refused/").Output()
	if !strings.Contains(string(refs), "conflict") {
		t.Errorf("the refused merge is not kept for a person: %q", refs)
	}
	// The tree is back where it was: the next reaction starts clean.
	tree := filepath.Join(g.dir, ".cadre", "worktrees", "1")
	if head, _ := exec.Command("git", "-C", tree, "rev-parse", "HEAD").Output(); strings.TrimSpace(string(head)) != before {
		t.Errorf("the item's tree is at %s, want %s", head, before)
	}
	g.watchOnce(t, 3, "")
	g.waitsOnGitHub(t, pr, true)
}

// Nothing is merged that nobody verified: a head without checks, a
// queued check, an approval of an earlier commit or a required check
// not run all keep an approved pull request open, saying why; the merge
// call carries the head's sha.
func TestWatchMergesOnlyVerifiedHeads(t *testing.T) {
	g := watchRepo(t, "follow: {merge: squash, required_checks: [e2e]}\n")
	g.setScenario(t, surgeon("true", "SUCCESS"))
	if code, out, errOut := g.cadre(t, "", "run", "1"); code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", code, errOut, out)
	}
	const branch = "cadre/1-fix-the-frobnicator"
	pr := g.fake.PRs("acme", "widgets")[0].Number
	head := g.rev(t, branch)
	merged := func() bool { return g.fake.PRs("acme", "widgets")[0].Merged }
	g.fake.AddReview("acme", "widgets", pr, forgetest.Review{Author: "rita", Association: "MEMBER", State: "APPROVED", CommitID: strings.Repeat("0", 40)})

	for _, step := range []struct {
		do   func()
		want string
	}{
		{func() {}, "no check has reported on the head"},
		{func() {
			g.fake.SetCheckRun("acme", "widgets", head, forgetest.CheckRun{Name: "test", Status: "queued"})
		}, "still running"},
		{func() {
			g.fake.SetCheckRun("acme", "widgets", head, forgetest.CheckRun{Name: "test", Conclusion: "success"})
		}, "required checks have not succeeded on the head: e2e"},
		{func() {
			g.fake.SetCheckRun("acme", "widgets", head, forgetest.CheckRun{Name: "e2e", Conclusion: "success"})
		}, "approval is of an earlier commit"},
		{func() { g.fake.Protect("acme", "widgets", "main", forgetest.Protection{Rules: []string{"lint"}}) }, "not succeeded on the head: lint"},
	} {
		step.do()
		errOut := g.watchOnce(t, 0, "")
		if merged() {
			t.Fatalf("merged while %q", step.want)
		}
		if step.want != "" && !strings.Contains(errOut, step.want) {
			t.Errorf("watch does not say %q:\n%s", step.want, errOut)
		}
	}
	// Approved at the head itself, but the ruleset's lint never ran.
	g.fake.AddReview("acme", "widgets", pr, forgetest.Review{Author: "rita", Association: "MEMBER", State: "APPROVED"})
	if g.watchOnce(t, 0, ""); merged() {
		t.Fatal("merged without the required lint")
	}
	g.fake.SetCheckRun("acme", "widgets", head, forgetest.CheckRun{Name: "lint", Conclusion: "success"})
	g.watchOnce(t, 0, "")
	if !merged() {
		t.Fatal("a verified, approved head was not merged")
	}
	for _, c := range g.fake.Calls() {
		if strings.HasSuffix(c.Path, "/merge") && !strings.Contains(c.Body, `"sha":"`+head+`"`) {
			t.Errorf("the merge call does not carry the head's sha: %s", c.Body)
		}
	}
}

// follow.verify's commands run, confined, on what a reaction would push:
// failing, nothing is pushed.
func TestWatchVerifyGatesPush(t *testing.T) {
	g := watchRepo(t, "commands: {test: \"test ! -e broken.txt\"}\nfollow: {ci_failed: {rounds: 2}}\n")
	g.setScenario(t, surgeon("echo oops > broken.txt", "SUCCESS"))
	if code, out, errOut := g.cadre(t, "", "run", "1"); code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", code, errOut, out)
	}
	const branch = "cadre/1-fix-the-frobnicator"
	n := g.commits(t, branch)
	g.fake.SetCheckRun("acme", "widgets", g.rev(t, branch), forgetest.CheckRun{Name: "test", Conclusion: "failure"})
	errOut := g.watchOnce(t, 1, "")
	if !strings.Contains(errOut, "follow.verify failed: test exited 1") {
		t.Errorf("no word of the failed verification:\n%s", errOut)
	}
	if g.commits(t, branch) != n {
		t.Fatal("a fix that fails follow.verify was pushed")
	}
	// Fixed properly, the same way it passes and is pushed.
	g.setScenario(t, surgeon("echo good >> fix.txt", "SUCCESS"))
	run := runOf(t, g)
	g.watchOnce(t, 3, "")
	g.cadre(t, "", "approve", run, "1")
	g.watchOnce(t, 0, "")
	if g.commits(t, branch) != n+1 {
		t.Fatalf("a fix that passes follow.verify was not pushed: %d commits, want %d", g.commits(t, branch), n+1)
	}
}

// An idle watch run by cron, one --once process a pass, asks GitHub
// on condition as a long watch does: after the first pass nearly every
// request is a 304, and an idle pass journals nothing.
func TestWatchOnceFromCronRevalidates(t *testing.T) {
	g := watchRepo(t, "")
	if code, out, errOut := g.cadre(t, "", "run", "1"); code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", code, errOut, out)
	}
	g.fake.SetCheckRun("acme", "widgets", g.rev(t, "cadre/1-fix-the-frobnicator"), forgetest.CheckRun{Name: "test", Conclusion: "success"})
	g.watchOnce(t, 0, "")
	g.watchOnce(t, 0, "")
	before := len(journalEvents(t, g.dir))
	from := g.fake.Counts()
	g.watchOnce(t, 0, "")
	got := g.fake.Counts()
	requests, charged := got.Requests-from.Requests, got.Charged()-from.Charged()
	if requests == 0 || charged > 0 {
		t.Errorf("an idle --once pass made %d requests, %d of them charged; want every one answered 304", requests, charged)
	}
	if events := journalEvents(t, g.dir); len(events) != before {
		t.Errorf("an idle pass journaled %d events: %+v", len(events)-before, events[before:])
	}
}

// watch takes --plain as run does, and refuses it with --json.
func TestWatchPlain(t *testing.T) {
	g := watchRepo(t, "")
	if code, _, errOut := g.cadre(t, "", "watch", "--once", "--plain"); code != 0 {
		t.Errorf("watch --once --plain: exit %d\n%s", code, errOut)
	}
	if code, _, errOut := g.cadre(t, "", "watch", "--once", "--plain", "--json"); code != 2 || !strings.Contains(errOut, "--json and --plain") {
		t.Errorf("watch --plain --json: exit %d, want 2\n%s", code, errOut)
	}
}

// A running watch reads cadre.yaml at every pass: a change takes effect
// without a restart; a broken file keeps the last good one, saying where
// it is broken, once.
func TestWatchRereadsConfig(t *testing.T) {
	g := watchRepo(t, "follow: {merge: \"off\"}\n")
	if code, out, errOut := g.cadre(t, "", "run", "1"); code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", code, errOut, out)
	}
	const branch = "cadre/1-fix-the-frobnicator"
	pr := g.fake.PRs("acme", "widgets")[0].Number
	g.fake.SetCheckRun("acme", "widgets", g.rev(t, branch), forgetest.CheckRun{Name: "test", Conclusion: "success"})
	g.fake.AddReview("acme", "widgets", pr, forgetest.Review{Author: "rita", Association: "MEMBER", State: "APPROVED"})
	tr := &temporalRepo{dir: g.dir, work: g.work, path: os.Getenv("PATH")}
	watch := tr.start(t, "watch", "watch", "--interval", "1s")
	log := func() string { out, _ := os.ReadFile(watch.log); return string(out) }
	waitFor(t, 60*time.Second, "the watch saying merging is off", func() bool { return strings.Contains(log(), "follow.merge is off") })
	cfgPath := filepath.Join(g.dir, "cadre.yaml")
	good, _ := os.ReadFile(cfgPath)
	os.WriteFile(cfgPath, append(slices.Clone(good), []byte("follow: {merge: sometimes}\n")...), 0o644)
	waitFor(t, 60*time.Second, "a warning naming the broken line", func() bool {
		return strings.Contains(log(), "cadre.yaml:") && strings.Contains(log(), "follow.merge") && strings.Contains(log(), "going on with")
	})
	if g.fake.PRs("acme", "widgets")[0].Merged {
		t.Fatal("merged though the last good configuration says merge: off")
	}
	os.WriteFile(cfgPath, []byte(strings.Replace(string(good), `merge: "off"`, "merge: squash", 1)), 0o644)
	waitFor(t, 60*time.Second, "the merge the new configuration asks for", func() bool { return g.fake.PRs("acme", "widgets")[0].Merged })
	if code, _, e := g.cadre(t, "", "stop"); code != 0 {
		t.Fatalf("stop: exit %d\n%s", code, e)
	}
	if code := watch.wait(t, 30*time.Second); code != 0 {
		t.Fatalf("watch: exit %d\n%s", code, log())
	}
	if n := strings.Count(log(), "going on with the configuration read before"); n != 1 {
		t.Errorf("the broken file was warned of %d times, want once:\n%s", n, log())
	}
}

// A failed check whose log cannot be read is still fixed by its own
// texts (output.text included), with a warning event naming the check.
func TestWatchUnreadableLogIsWarned(t *testing.T) {
	g := watchRepo(t, "")
	g.setScenario(t, surgeon("echo more >> fix.txt", "SUCCESS"))
	if code, out, errOut := g.cadre(t, "", "run", "1"); code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", code, errOut, out)
	}
	const branch = "cadre/1-fix-the-frobnicator"
	g.fake.SetCheckRun("acme", "widgets", g.rev(t, branch), forgetest.CheckRun{JobID: 88, Name: "unit", Conclusion: "failure",
		Title: "2 failed", Text: "TestParse: want 3, got 4"}) // its log was never kept
	g.watchOnce(t, 0, "")
	ctx, _ := os.ReadFile(latestContext(t, g.dir, "ci_failed-1-fix-surgeon"))
	if !strings.Contains(string(ctx), "TestParse: want 3, got 4") {
		t.Errorf("the check's output.text did not reach fix-surgeon:\n%s", ctx)
	}
	warned := 0
	for _, e := range journalEvents(t, g.dir) {
		if e.Type == "warning" && strings.Contains(string(e.Data), `the log of check \"unit\"`) {
			warned++
		}
	}
	if warned != 1 {
		t.Errorf("%d warning events name the check whose log could not be read, want 1", warned)
	}
}

// journalEvents reads every event of the repository's journal.
func journalEvents(t testing.TB, dir string) []store.Event {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(dir, ".cadre", "cadre.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	events, _, err := st.Events(context.Background(), "", 0)
	if err != nil {
		t.Fatal(err)
	}
	return events
}

// A head no check reports on within follow.checks_timeout waits for a
// person, saying so on the pull request; approved, it waits for checks
// again.
func TestWatchNoChecksTimesOut(t *testing.T) {
	g := watchRepo(t, "follow: {checks_timeout: 1s}\n")
	if code, out, errOut := g.cadre(t, "", "run", "1"); code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", code, errOut, out)
	}
	pr := g.fake.PRs("acme", "widgets")[0].Number
	g.watchOnce(t, 0, "")
	time.Sleep(1100 * time.Millisecond) // past the timeout the first pass started
	errOut := g.watchOnce(t, 3, "")
	if !strings.Contains(errOut, "no check reported on the head") {
		t.Errorf("no word of the missing checks:\n%s", errOut)
	}
	g.waitsOnGitHub(t, pr, true)
	if code, _, e := g.cadre(t, "", "approve", runOf(t, g), "1"); code != 0 {
		t.Fatalf("approve: exit %d\n%s", code, e)
	}
	g.fake.SetCheckRun("acme", "widgets", g.rev(t, "cadre/1-fix-the-frobnicator"), forgetest.CheckRun{Name: "test", Conclusion: "success"})
	g.watchOnce(t, 0, "")
	g.waitsOnGitHub(t, pr, false)
}

// A round starts from the item's pushed head, whatever an earlier round
// that was killed left in its tree: a conflict is merged and resolved
// though fix.txt was left half-edited and a stray file lies beside it.
func TestWatchRoundStartsClean(t *testing.T) {
	g := watchRepo(t, "")
	if code, out, errOut := g.cadre(t, "", "run", "1"); code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", code, errOut, out)
	}
	const branch = "cadre/1-fix-the-frobnicator"
	tree := filepath.Join(g.dir, ".cadre", "worktrees", "1")
	os.WriteFile(filepath.Join(tree, "fix.txt"), []byte("half an edit\n"), 0o644)
	os.WriteFile(filepath.Join(tree, "stray.txt"), []byte("left behind\n"), 0o644)
	g.pushBase(t, "fix.txt", "base\n")
	if errOut := g.watchOnce(t, 0, ""); !strings.Contains(errOut, "conflict answered: pushed") {
		t.Fatalf("the conflict was not answered:\n%s", errOut)
	}
	if out, err := exec.Command("git", "-C", g.bare, "merge-base", "--is-ancestor", "main", branch).CombinedOutput(); err != nil {
		t.Fatalf("main is not merged into the branch: %v %s", err, out)
	}
	files, _ := exec.Command("git", "-C", g.bare, "ls-tree", "--name-only", branch).Output()
	if strings.Contains(string(files), "stray.txt") {
		t.Error("a file an earlier round left behind was pushed")
	}
}
