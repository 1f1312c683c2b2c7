package app_test

import (
	"encoding/base64"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cadre-dev/cadre/internal/app"
	"github.com/cadre-dev/cadre/internal/codehost"
	"github.com/cadre-dev/cadre/internal/config"
	"github.com/cadre-dev/cadre/internal/follow"
)

// TestForgeConformance runs the same scenarios against every code host
// cadre supports, each on a fresh fake: what the engine and cadre watch
// rely on must hold on GitHub and GitLab alike, so a difference between
// the two shows here rather than in a user's run.
func TestForgeConformance(t *testing.T) {
	forges := []struct {
		name string
		new  func(*testing.T) world
	}{{"github", newGitHubWorld}, {"gitlab", newGitLabWorld}}
	scenarios := []struct {
		name string
		run  func(*testing.T, world)
	}{
		{"intake", conformIntake},
		{"pr once across a crash", conformPROnce},
		{"comment once per marker", conformCommentOnce},
		{"reactions", conformReactions},
		{"merge gate", conformMergeGate},
		{"approval before a push", conformStaleApproval},
		{"etags", conformETags},
		{"status", conformStatus},
		{"token only to the forge's host", conformRemoteAuth},
	}
	for _, f := range forges {
		t.Run(f.name, func(t *testing.T) {
			for _, sc := range scenarios {
				t.Run(sc.name, func(t *testing.T) { sc.run(t, f.new(t)) })
			}
		})
	}
}

// conformIntake: an issue is read by number, by project-qualified
// reference and by URL, with people's comments in its body; a label
// selects issues.
func conformIntake(t *testing.T, w world) {
	ctx := t.Context()
	n := w.addIssue("Widget breaks", "It breaks on save.", "cadre")
	w.comment(n, "alice", "Also on Tuesdays.")
	other := w.addIssue("Unrelated", "Not for cadre.")
	h := w.host(t)
	refs := append([]string{strconv.Itoa(n), w.project() + "#" + strconv.Itoa(n)}, w.issueURLs(n)...)
	for _, ref := range refs {
		is, err := h.Issue(ctx, ref)
		if err != nil {
			t.Errorf("Issue(%q): %v", ref, err)
			continue
		}
		if is.Number != n || is.Repo != w.project() || is.Title != "Widget breaks" {
			t.Errorf("Issue(%q) = %s#%d %q, want %s#%d", ref, is.Repo, is.Number, is.Title, w.project(), n)
		}
		for _, want := range []string{"It breaks on save.", "@alice", "Also on Tuesdays."} {
			if !strings.Contains(is.Body, want) {
				t.Errorf("Issue(%q): body lacks %q: %q", ref, want, is.Body)
			}
		}
	}
	list, err := h.Issues(ctx, codehost.IssueQuery{Labels: []string{"cadre"}})
	if err != nil {
		t.Fatal(err)
	}
	var got []int
	for _, is := range list {
		got = append(got, is.Number)
	}
	if !slices.Equal(got, []int{n}) {
		t.Errorf("issues labelled cadre: %v, want [%d] (not %d)", got, n, other)
	}
}

// openPR pushes branch and opens its PR/MR for issue through h.
func openPR(t *testing.T, w world, h app.Host, issue int, branch string, files map[string]string) (int, string) {
	t.Helper()
	head := w.push(branch, files)
	_, n, err := h.EnsurePR(t.Context(), prFor(w, issue, branch))
	if err != nil {
		t.Fatalf("EnsurePR(%s): %v", branch, err)
	}
	return n, head
}

func prFor(w world, issue int, branch string) codehost.PullRequest {
	return codehost.PullRequest{Repo: w.project(), Head: branch, Base: "main", Title: "Fix the widget", Issue: issue,
		Body: "Saves the widget.\n\nCloses #" + strconv.Itoa(issue) + "\n"}
}

// fromBranch are the fake's PRs/MRs of branch.
func fromBranch(w world, branch string) []fakePR {
	return slices.DeleteFunc(w.prs(), func(p fakePR) bool { return p.Head != branch })
}

// conformPROnce: however a run resumes, a branch gets one PR/MR closing
// its issue: asked twice, asked after a create whose answer was lost, and
// asked when another process opened it first.
func conformPROnce(t *testing.T, w world) {
	ctx := t.Context()
	issue := w.addIssue("Widget breaks", "b")
	w.push("cadre/1-a", map[string]string{"a.txt": "a\n"})
	url, n, err := w.host(t).EnsurePR(ctx, prFor(w, issue, "cadre/1-a"))
	if err != nil {
		t.Fatal(err)
	}
	url2, n2, err := w.host(t).EnsurePR(ctx, prFor(w, issue, "cadre/1-a"))
	if err != nil || n2 != n || url2 != url {
		t.Errorf("resumed EnsurePR = %s %d %v, want %s %d", url2, n2, err, url, n)
	}
	if url == "" || !strings.HasSuffix(url, "/"+strconv.Itoa(n)) {
		t.Errorf("URL %q does not name number %d", url, n)
	}
	prs := fromBranch(w, "cadre/1-a")
	if len(prs) != 1 || prs[0].Number != n {
		t.Fatalf("after two EnsurePR: %+v, want one numbered %d", prs, n)
	}
	if want := "Closes #" + strconv.Itoa(issue); !strings.HasSuffix(strings.TrimSpace(prs[0].Body), want) {
		t.Errorf("body %q does not end with %q", prs[0].Body, want)
	}

	w.push("cadre/2-b", map[string]string{"b.txt": "b\n"})
	lost := w.loseNextCreate()
	_, n, err = w.host(t).EnsurePR(ctx, prFor(w, issue, "cadre/2-b"))
	if !lost() {
		t.Error("no create's answer was lost")
	}
	if prs := fromBranch(w, "cadre/2-b"); err != nil || len(prs) != 1 || prs[0].Number != n {
		t.Errorf("EnsurePR after a lost answer = %d, %v; the fake holds %+v", n, err, prs)
	}

	w.push("cadre/3-c", map[string]string{"c.txt": "c\n"})
	theirs := w.addPR("cadre/3-c", "Fix the widget", "Opened elsewhere.")
	_, n, err = w.host(t).EnsurePR(ctx, prFor(w, issue, "cadre/3-c"))
	if prs := fromBranch(w, "cadre/3-c"); err != nil || n != theirs || len(prs) != 1 {
		t.Errorf("EnsurePR beside an open one = %d, %v, want %d adopted; the fake holds %+v", n, err, theirs, prs)
	}
}

// carrying counts cadre's own comments that carry marker's hidden
// comment: those quoting it in a code block are a person's.
func carrying(bodies []string, marker string) int {
	n := 0
	for _, b := range bodies {
		if strings.Contains(b, "<!-- "+marker+" -->") && !strings.Contains(b, "```") {
			n++
		}
	}
	return n
}

// conformCommentOnce: a progress comment is posted once per marker, and a
// marker someone quoted in a code block is not cadre's comment.
func conformCommentOnce(t *testing.T, w world) {
	ctx := t.Context()
	issue := w.addIssue("Widget breaks", "b")
	const started = "cadre:r1:1:started"
	for range 2 {
		if err := w.host(t).EnsureComment(ctx, w.project(), issue, started, "Started."); err != nil {
			t.Fatal(err)
		}
	}
	if mine := carrying(w.issueComments(issue), started); mine != 1 {
		t.Errorf("%d comments carry %s after two EnsureComment, want 1", mine, started)
	}
	const done = "cadre:r1:1:done"
	w.comment(issue, stranger, "cadre wrote this:\n\n```\nDone.\n<!-- "+done+" -->\n```\n")
	if err := w.host(t).EnsureComment(ctx, w.project(), issue, done, "Done."); err != nil {
		t.Fatal(err)
	}
	if mine := carrying(w.issueComments(issue), done); mine != 1 {
		t.Errorf("a marker quoted in a code block counted as cadre's comment: %d comments of cadre's carry %s, want 1", mine, done)
	}
}

// view reads pr through a new host, as a poll of cadre watch does.
func view(t *testing.T, h app.Host, pr int) follow.View {
	t.Helper()
	v, err := h.View(t.Context(), pr, nil, nil)
	if err != nil {
		t.Fatalf("View(%d): %v", pr, err)
	}
	return v
}

// conformReactions: what cadre watch reacts to reads the same through
// View: a failed check with its log, a counted reviewer's line comment
// (a stranger's left out), a reply made once per marker, a conflict.
func conformReactions(t *testing.T, w world) {
	ctx := t.Context()
	issue := w.addIssue("Widget breaks", "b")
	pr, head := openPR(t, w, w.host(t), issue, "cadre/1-a", map[string]string{"widget.go": "package widget\n"})
	w.failCheck(head, "test", "ok   widget/a\n--- FAIL: TestSave (0.01s)\nFAIL\n")
	h := w.host(t)
	v := view(t, h, pr)
	if len(v.Failed) != 1 || v.Failed[0].Name != "test" || v.Head != head {
		t.Fatalf("View after a failed check: head %s, failed %+v", v.Head, v.Failed)
	}
	checks, warnings := h.Logs(ctx, v.Failed)
	if len(warnings) > 0 || len(checks) != 1 || !strings.Contains(checks[0].LogTail, "--- FAIL: TestSave") {
		t.Errorf("Logs = %+v, %v: the job's log tail is missing", checks, warnings)
	}
	if a := follow.Decide(v, follow.Past{}, config.Default().Follow, w.baseHead(), 0); a.Do != follow.React || a.Kind != follow.CIFailed {
		t.Errorf("Decide on a failed check = %s %s, want react %s", a.Do, a.Kind, follow.CIFailed)
	}

	id := w.lineComment(pr, reviewer, "widget.go", 1, "Name the package widgets.")
	w.lineComment(pr, stranger, "widget.go", 1, "Buy my course.")
	v = view(t, h, pr)
	want := []follow.Comment{{ID: id, Path: "widget.go", Line: 1, Author: reviewer, Body: "Name the package widgets."}}
	if !slices.Equal(v.Comments, want) {
		t.Errorf("View's comments = %+v, want only the reviewer's %+v", v.Comments, want)
	}
	const marker = "cadre:r1:1:reply"
	if err := h.Reply(ctx, pr, id, marker, "Renamed."); err != nil {
		t.Fatal(err)
	}
	// A resumed run replies from a host that has not seen the thread.
	if err := w.host(t).Reply(ctx, pr, id, marker, "Renamed."); err != nil {
		t.Fatal(err)
	}
	if got := w.replies(pr, id); len(got) != 1 || !strings.Contains(got[0], "Renamed.") {
		t.Errorf("replies in the thread: %q, want one", got)
	}
	if v := view(t, h, pr); len(v.Comments) != 1 {
		t.Errorf("after the reply View has %d comments, want the reviewer's alone", len(v.Comments))
	}

	w.push("main", map[string]string{"widget.go": "package gadget\n"})
	v = view(t, h, pr)
	if v.Mergeable == nil || *v.Mergeable {
		t.Errorf("View.Mergeable = %v with a conflicting base, want false", fmtBool(v.Mergeable))
	}
}

func fmtBool(b *bool) string {
	if b == nil {
		return "nil"
	}
	return strconv.FormatBool(*b)
}

// conformMergeGate: approved after the push and green, Decide merges by
// follow.merge; a merge at a stale head is ErrHeadMoved, at the real head
// it merges and the base moves.
func conformMergeGate(t *testing.T, w world) {
	for i, method := range []string{"squash", "merge"} {
		t.Run(method, func(t *testing.T) {
			ctx := t.Context()
			issue := w.addIssue("Widget breaks", "b")
			branch := "cadre/" + strconv.Itoa(i+1) + "-" + method
			pr, old := openPR(t, w, w.host(t), issue, branch, map[string]string{method + ".txt": "one\n"})
			head := w.push(branch, map[string]string{method + ".txt": "two\n"})
			w.passChecks(head, "test")
			w.approve(pr, reviewer)
			h := w.host(t)
			v := view(t, h, pr)
			if !v.Approved || !v.ApprovedHead || v.Head != head || !slices.Contains(v.Passed, "test") {
				t.Fatalf("View = approved %v, of head %v, head %s (want %s), passed %v", v.Approved, v.ApprovedHead, v.Head, head, v.Passed)
			}
			cfg := config.Default().Follow
			cfg.Merge = method
			if a := follow.Decide(v, follow.Past{}, cfg, w.baseHead(), 0); a.Do != follow.Merge {
				t.Fatalf("Decide = %s (%s), want merge", a.Do, a.Why)
			}
			base := w.baseHead()
			if err := h.Merge(ctx, pr, method, old, v.Title); !errors.Is(err, follow.ErrHeadMoved) {
				t.Errorf("Merge at the stale head %s = %v, want ErrHeadMoved", old[:8], err)
			}
			if err := h.Merge(ctx, pr, method, head, v.Title); err != nil {
				t.Fatalf("Merge at the head: %v", err)
			}
			if prs := fromBranch(w, branch); len(prs) != 1 || prs[0].State != "merged" {
				t.Errorf("after Merge the fake holds %+v, want it merged", prs)
			}
			if w.baseHead() == base {
				t.Errorf("Merge left the base at %s", base[:8])
			}
		})
	}
}

// conformStaleApproval: an approval given before the latest push stands
// for an earlier commit, and the gate waits, until a reviewer approves
// the head; where the project takes approvals back on a push, the old one
// is simply gone.
func conformStaleApproval(t *testing.T, w world) {
	t.Run("kept", func(t *testing.T) {
		pr, head := approvedThenPushed(t, w, "cadre/1-a")
		v := view(t, w.host(t), pr)
		if !v.Approved || v.ApprovedHead {
			t.Errorf("an approval of the earlier commit: View approved %v, of head %v; want true, false", v.Approved, v.ApprovedHead)
		}
		cfg := config.Default().Follow
		cfg.Merge = "squash"
		if a := follow.Decide(v, follow.Past{}, cfg, w.baseHead(), 0); a.Do != follow.Wait || !strings.Contains(a.Why, "earlier commit") {
			t.Errorf("Decide = %s (%s), want to wait for an approval of the head", a.Do, a.Why)
		}
		w.approve(pr, reviewer2)
		if v := view(t, w.host(t), pr); !v.ApprovedHead || v.Head != head {
			t.Errorf("approved after the push: View of head %v (%s), want true (%s)", v.ApprovedHead, v.Head, head)
		}
	})
	t.Run("reset on push", func(t *testing.T) {
		r, ok := w.(resetter)
		if !ok {
			t.Skip("this forge keeps approvals across a push")
		}
		r.resetApprovalsOnPush()
		pr, _ := approvedThenPushed(t, w, "cadre/2-b")
		if v := view(t, w.host(t), pr); v.Approved {
			t.Errorf("the push took the approval back, yet View says approved")
		}
		w.approve(pr, reviewer)
		if v := view(t, w.host(t), pr); !v.Approved || !v.ApprovedHead {
			t.Errorf("approved after the push: View approved %v, of head %v; want both", v.Approved, v.ApprovedHead)
		}
	})
}

// approvedThenPushed opens a PR/MR on branch, has a reviewer approve it,
// then pushes again, the new head green.
func approvedThenPushed(t *testing.T, w world, branch string) (int, string) {
	t.Helper()
	issue := w.addIssue("Widget breaks", "b")
	pr, _ := openPR(t, w, w.host(t), issue, branch, map[string]string{"w.txt": "one\n"})
	w.approve(pr, reviewer)
	head := w.push(branch, map[string]string{"w.txt": "two\n"})
	w.passChecks(head, "test")
	return pr, head
}

// conformETags: a second look at an unchanged PR/MR is mostly answered
// 304, which costs no quota, and so is a new process's first look when
// the answers were kept in a file.
func conformETags(t *testing.T, w world) {
	issue := w.addIssue("Widget breaks", "b")
	pr, head := openPR(t, w, w.host(t), issue, "cadre/1-a", map[string]string{"w.txt": "one\n"})
	w.passChecks(head, "test")
	w.approve(pr, reviewer)
	file := filepath.Join(t.TempDir(), "answers.json")
	h := w.host(t)
	h.KeepAnswersIn(file)
	c0, m0 := w.tally()
	view(t, h, pr)
	c1, m1 := w.tally()
	view(t, h, pr)
	c2, m2 := w.tally()
	first, second := c1-c0, c2-c1
	if second >= first || m2-m1 == 0 || m1 != m0 {
		t.Errorf("a second View cost %d charged requests (%d answered 304), the first %d (%d)", second, m2-m1, first, m1-m0)
	}
	if err := h.KeepAnswers(); err != nil {
		t.Fatal(err)
	}
	h2 := w.host(t)
	h2.KeepAnswersIn(file)
	view(t, h2, pr)
	c3, m3 := w.tally()
	if c3-c2 >= first || m3-m2 == 0 {
		t.Errorf("a new host with the kept answers: View cost %d charged requests (%d answered 304), a first look %d", c3-c2, m3-m2, first)
	}
}

// wantStatus is a PRStatus as the scenario expects it, mergeable spelt
// out ("nil", "true", "false") so both forges are held to one table.
type wantStatus struct{ state, checks, review, mergeable string }

func statusOf(t *testing.T, h app.Host, pr int) wantStatus {
	t.Helper()
	st, err := h.PRStatus(t.Context(), pr)
	if err != nil {
		t.Fatalf("PRStatus(%d): %v", pr, err)
	}
	return wantStatus{st.State, st.Checks, st.Review, fmtBool(st.Mergeable)}
}

// conformStatus: cadre status reads the same values for the same
// situation on every forge: no checks, pending, failed, green, a
// stranger's approval (not counted), approved, merged, and a conflicting
// one.
func conformStatus(t *testing.T, w world) {
	issue := w.addIssue("Widget breaks", "b")
	pr, head := openPR(t, w, w.host(t), issue, "cadre/1-a", map[string]string{"widget.go": "package widget\n"})
	// Another branch adds widget.go too: once the first merges, it conflicts.
	w.push("cadre/2-b", map[string]string{"widget.go": "package gadget\n"})
	steps := []struct {
		name string
		do   func()
		want wantStatus
	}{
		{"opened", func() {}, wantStatus{"open", "none", "none", "true"}},
		{"pending", func() { w.pendCheck(head, "test") }, wantStatus{"open", "pending", "none", "true"}},
		{"failed", func() { w.failCheck(head, "test", "FAIL\n") }, wantStatus{"open", "failure", "none", "true"}},
		{"green", func() { w.passChecks(head, "test") }, wantStatus{"open", "success", "none", "true"}},
		// Only the approvals cadre watch counts: a stranger's is none.
		{"a stranger's approval", func() { w.approve(pr, stranger) }, wantStatus{"open", "success", "none", "true"}},
		{"approved", func() { w.approve(pr, reviewer) }, wantStatus{"open", "success", "approved", "true"}},
		{"merged", func() {
			if err := w.host(t).Merge(t.Context(), pr, "merge", head, ""); err != nil {
				t.Fatalf("Merge: %v", err)
			}
		}, wantStatus{"merged", "success", "approved", "nil"}},
	}
	for _, s := range steps {
		s.do()
		if got := statusOf(t, w.host(t), pr); got != s.want {
			t.Errorf("%s: PRStatus = %+v, want %+v", s.name, got, s.want)
		}
	}
	_, other, err := w.host(t).EnsurePR(t.Context(), prFor(w, issue, "cadre/2-b"))
	if err != nil {
		t.Fatal(err)
	}
	want := wantStatus{"open", "none", "none", "false"}
	if got := statusOf(t, w.host(t), other); got != want {
		t.Errorf("conflicting: PRStatus = %+v, want %+v", got, want)
	}
}

// conformRemoteAuth: git reaches an https remote on the forge's own host
// with the forge's token as a Basic password; one on another host (a
// pushurl an agent wrote, say) is refused naming both hosts, the token
// sent nowhere; one not over https gets no token.
func conformRemoteAuth(t *testing.T, w world) {
	ctx := t.Context()
	dir := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q", "-b", "main")
	git("remote", "add", "origin", "https://127.0.0.1:1/"+w.project()+".git")
	git("remote", "add", "elsewhere", "https://forge.example.com/"+w.project()+".git")
	git("remote", "add", "local", filepath.Join(dir, "bare.git"))
	h := w.host(t)
	target, header, err := h.RemoteAuth(ctx, dir, "origin")
	if err != nil {
		t.Fatalf("RemoteAuth(origin): %v", err)
	}
	basic, _ := strings.CutPrefix(header, "Authorization: Basic ")
	pair, _ := base64.StdEncoding.DecodeString(basic)
	if target != "https://127.0.0.1:1/"+w.project()+".git" || !strings.HasSuffix(string(pair), ":tok") {
		t.Errorf("RemoteAuth(origin) = %q, %q (%q); want the push URL and the token as the password", target, header, pair)
	}
	_, header, err = h.RemoteAuth(ctx, dir, "elsewhere")
	if err == nil || header != "" || !strings.Contains(err.Error(), "is on forge.example.com, not on 127.0.0.1") || strings.Contains(err.Error(), basic) {
		t.Errorf("RemoteAuth(elsewhere) = %q, %v; want it refused naming both hosts, no token", header, err)
	}
	if target, header, err := h.RemoteAuth(ctx, dir, "local"); err != nil || header != "" || target != "local" {
		t.Errorf("RemoteAuth(local) = %q, %q, %v; want the remote by its name and no token", target, header, err)
	}
}
