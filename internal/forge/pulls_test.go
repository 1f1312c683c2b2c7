package forge_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cadre-dev/cadre/internal/forge"
	"github.com/cadre-dev/cadre/internal/forge/forgetest"
)

// gitSetup serves o/r from a bare repository with a main branch, a branch
// that merges cleanly and one that conflicts with main.
func gitSetup(t *testing.T, opts ...forge.Option) (*forgetest.Server, *forge.Client, *forgetest.GitRepo, int, int) {
	t.Helper()
	srv, c, _ := setup(t, opts...)
	g := forgetest.NewGitRepo(t)
	g.Commit("main", "", "start", map[string]string{"a.txt": "a\n", "b.txt": "b\n"})
	g.Commit("feature", "main", "change a", map[string]string{"a.txt": "A\n"})
	g.Commit("clash", "main", "change b", map[string]string{"b.txt": "B from clash\n"})
	g.Commit("main", "", "main changes b", map[string]string{"b.txt": "B from main\n"})
	srv.SetGitDir("o", "r", g.Dir)
	ok := srv.AddPR("o", "r", forgetest.PR{Title: "Feature", Head: "feature", Base: "main"})
	bad := srv.AddPR("o", "r", forgetest.PR{Title: "Clash", Head: "clash", Base: "main"})
	return srv, c, g, ok, bad
}

func TestPR(t *testing.T) {
	srv, c, g, ok, bad := gitSetup(t)
	st, err := c.PR(ctx, "o", "r", ok)
	if err != nil {
		t.Fatal(err)
	}
	if st.Number != ok || st.State != "open" || st.Merged || st.Head != "feature" || st.Base != "main" ||
		st.HeadSHA != g.Rev("feature") || st.BaseSHA != g.Rev("main") || st.Mergeable == nil || !*st.Mergeable ||
		st.MergeableState != "clean" || st.MergeCommit != "" || st.UpdatedAt.IsZero() {
		t.Errorf("clean PR: %+v", st)
	}
	if st, err := c.PR(ctx, "o", "r", bad); err != nil || st.Mergeable == nil || *st.Mergeable || st.MergeableState != "dirty" {
		t.Errorf("conflicting PR: %+v, %v", st, err)
	}

	srv.SetComputing("o", "r", ok, 1)
	if st, err := c.PR(ctx, "o", "r", ok); err != nil || st.Mergeable != nil || st.MergeableState != "unknown" {
		t.Errorf("while GitHub computes: %+v, %v", st, err)
	}
	srv.SetCheckRun("o", "r", g.Rev("feature"), forgetest.CheckRun{JobID: 3, Name: "test", Conclusion: "failure"})
	if st, err := c.PR(ctx, "o", "r", ok); err != nil || st.MergeableState != "unstable" {
		t.Errorf("failed check: %+v, %v", st, err)
	}
	before := st.UpdatedAt
	srv.AddReview("o", "r", ok, forgetest.Review{Author: "alice", State: "CHANGES_REQUESTED"})
	if st, err := c.PR(ctx, "o", "r", ok); err != nil || st.MergeableState != "blocked" || !st.UpdatedAt.After(before) {
		t.Errorf("changes requested: %+v, %v", st, err)
	}
	// A push moves the head: seen at once, though the answer was kept.
	pushed := g.Commit("feature", "", "more", map[string]string{"c.txt": "c\n"})
	if st, err := c.PR(ctx, "o", "r", ok); err != nil || st.HeadSHA != pushed {
		t.Errorf("after a push: %+v, %v", st, err)
	}
	if _, err := c.PR(ctx, "o", "r", 77); !forge.IsNotFound(err) || err.Error() != "github: get pull request o/r#77: 404 Not Found" {
		t.Errorf("missing PR: %v", err)
	}
}

func TestMergePR(t *testing.T) {
	for _, method := range []string{forge.MethodMerge, forge.MethodSquash, forge.MethodRebase} {
		t.Run(method, func(t *testing.T) {
			srv, c, g, ok, _ := gitSetup(t)
			head, base := g.Rev("feature"), g.Rev("main")
			got, err := c.MergePR(ctx, "o", "r", ok, method, head, "Fix the frobnicator (#1)")
			if err != nil {
				t.Fatal(err)
			}
			// A squash's commit takes the title given; the others keep theirs.
			if subject, _, _ := strings.Cut(g.Message("main"), "\n"); (subject == "Fix the frobnicator (#1)") != (method == forge.MethodSquash) {
				t.Errorf("%s made a commit titled %q", method, subject)
			}
			if got != g.Rev("main") || g.Read("main", "a.txt") != "A" || g.Read("main", "b.txt") != "B from main" {
				t.Errorf("merged as %s; main at %s", got, g.Rev("main"))
			}
			if p := g.Parents("main"); p[0] != base || (method == forge.MethodMerge) != (len(p) == 2) {
				t.Errorf("%s made a commit with parents %v", method, p)
			}
			st, err := c.PR(ctx, "o", "r", ok)
			if err != nil || !st.Merged || st.State != "closed" || st.MergeCommit != got {
				t.Errorf("after the merge: %+v, %v", st, err)
			}
			// Asked again (a crash before the merge was recorded): GitHub
			// refuses, the pull request is found merged at that head.
			again, err := c.MergePR(ctx, "o", "r", ok, method, head, "")
			if err != nil || again != got {
				t.Errorf("merge again = %s, %v; want %s", again, err, got)
			}
			if n := len(srv.PRs("o", "r")); n != 2 {
				t.Errorf("%d pull requests", n)
			}
		})
	}
}

func TestMergePRRefused(t *testing.T) {
	srv, c, g, ok, bad := gitSetup(t)
	_, err := c.MergePR(ctx, "o", "r", bad, forge.MethodSquash, g.Rev("clash"), "")
	want := fmt.Sprintf("github: merge pull request o/r#%d at %s: 405 Pull Request is not mergeable", bad, g.Rev("clash"))
	if !forge.IsNotMergeable(err) || forge.IsHeadMoved(err) || err.Error() != want {
		t.Errorf("conflicting: %v", err)
	}
	old := g.Rev("feature")
	g.Commit("feature", "", "pushed meanwhile", map[string]string{"c.txt": "c\n"})
	_, err = c.MergePR(ctx, "o", "r", ok, forge.MethodMerge, old, "")
	if !forge.IsHeadMoved(err) || forge.IsNotMergeable(err) || !strings.Contains(err.Error(), "409 Head branch was modified") {
		t.Errorf("head moved: %v", err)
	}
	srv.AddReview("o", "r", ok, forgetest.Review{Author: "alice", State: "CHANGES_REQUESTED"})
	if _, err = c.MergePR(ctx, "o", "r", ok, forge.MethodMerge, g.Rev("feature"), ""); !forge.IsNotMergeable(err) {
		t.Errorf("changes requested: %v", err)
	}
	if st, _ := c.PR(ctx, "o", "r", ok); st.Merged {
		t.Error("merged after all")
	}
	for _, tt := range []struct{ method, sha, want string }{
		{"fast-forward", old, `merge method "fast-forward" must be merge, squash or rebase`},
		{forge.MethodMerge, "", "head must be a full commit id"},
		{forge.MethodMerge, old[:7], "head must be a full commit id"},
	} {
		if _, err := c.MergePR(ctx, "o", "r", ok, tt.method, tt.sha, ""); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("MergePR(%q, %q) = %v, want %q", tt.method, tt.sha, err, tt.want)
		}
	}
}

// A merge whose answer is lost is found done.
func TestMergePRLostAnswer(t *testing.T) {
	for _, mode := range []forgetest.Mode{forgetest.Stall, forgetest.ServerErrorAfter} {
		t.Run(fmt.Sprint(mode), func(t *testing.T) {
			srv, c, g, ok, _ := gitSetup(t, forge.WithTimeout(500*time.Millisecond))
			srv.SetNext(forgetest.Merge, mode)
			got, err := c.MergePR(ctx, "o", "r", ok, forge.MethodMerge, g.Rev("feature"), "")
			if err != nil || got == "" || got != g.Rev("main") {
				t.Errorf("MergePR = %q, %v; main at %s", got, err, g.Rev("main"))
			}
			if n := srv.Count("PUT", fmt.Sprintf("/repos/o/r/pulls/%d/merge", ok)); n != 1 {
				t.Errorf("%d merge requests, want 1", n)
			}
		})
	}
}

// A poll of pull requests that did not change costs no rate limit: every
// GET is answered 304 and the client returns what it kept.
func TestPollUnchangedIsFree(t *testing.T) {
	srv, c, _ := setup(t)
	var prs []int
	for i := range 5 {
		n := srv.AddPR("o", "r", forgetest.PR{Title: fmt.Sprint("p", i), Head: fmt.Sprint("h", i), Base: "main", HeadSHA: sha})
		srv.AddReview("o", "r", n, forgetest.Review{Author: "alice", State: "COMMENTED"})
		srv.AddReviewComment("o", "r", n, forgetest.ReviewComment{Author: "alice", Path: "a.go", Line: 1, Body: "hm"})
		prs = append(prs, n)
	}
	srv.SetCheckRun("o", "r", sha, forgetest.CheckRun{JobID: 1, Name: "test", Conclusion: "failure"})
	first := poll(t, c, prs)
	before := srv.Counts()
	if second := poll(t, c, prs); second != first {
		t.Errorf("second poll saw %q, first %q", second, first)
	}
	after := srv.Counts()
	if asked, charged := after.Requests-before.Requests, after.Charged()-before.Charged(); asked == 0 || charged != 0 {
		t.Errorf("second poll: %d requests, %d charged; want none charged", asked, charged)
	}
}

// poll reads what following pull requests to their merge reads, and
// sums it up.
func poll(t testing.TB, c *forge.Client, prs []int) string {
	t.Helper()
	var b strings.Builder
	for _, n := range prs {
		st, err := c.PR(ctx, "o", "r", n)
		if err != nil {
			t.Fatal(err)
		}
		checks, err := c.FailedChecks(ctx, "o", "r", st.HeadSHA)
		if err != nil {
			t.Fatal(err)
		}
		reviews, err := c.Reviews(ctx, "o", "r", n)
		if err != nil {
			t.Fatal(err)
		}
		comments, err := c.ReviewComments(ctx, "o", "r", n)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "#%d %s %s %d failed, %d reviews, %d comments; ", n, st.MergeableState, st.UpdatedAt, len(checks.Failed), len(reviews), len(comments))
	}
	return b.String()
}

func TestOpenPRs(t *testing.T) {
	srv, c, g, ok, bad := gitSetup(t)
	for i := 0; i < 150; i++ {
		srv.AddPR("o", "r", forgetest.PR{Title: fmt.Sprint("more ", i), Head: fmt.Sprint("more-", i), Base: "main"})
	}
	srv.SetPRState("o", "r", bad, "closed", false)
	list, err := c.OpenPRs(ctx, "o", "r")
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 151 {
		t.Fatalf("%d open pull requests, want 151 (over two pages, the closed one left out)", len(list))
	}
	var found bool
	for _, p := range list {
		if p.Number == bad {
			t.Error("the closed pull request is listed")
		}
		if p.Number == ok {
			found = p.HeadSHA == g.Rev("feature") && !p.UpdatedAt.IsZero() && p.Mergeable == nil
		}
	}
	if !found {
		t.Error("the open pull request is not listed with its head and update time")
	}
	before := srv.Counts()
	if _, err := c.OpenPRs(ctx, "o", "r"); err != nil {
		t.Fatal(err)
	}
	if after := srv.Counts(); after.Charged() != before.Charged() {
		t.Errorf("an unchanged list charged %d requests, want none (conditional pages)", after.Charged()-before.Charged())
	}
}

func TestUpdatedPRs(t *testing.T) {
	srv, c, _ := setup(t)
	var prs []int
	for i := 0; i < 250; i++ {
		prs = append(prs, srv.AddPR("o", "r", forgetest.PR{Title: fmt.Sprint("p", i), Head: fmt.Sprint("h", i), Base: "main", HeadSHA: fmt.Sprintf("%040x", i+1)}))
	}
	all, err := c.UpdatedPRs(ctx, "o", "r", time.Time{})
	if err != nil || len(all) != 250 {
		t.Fatalf("since the beginning: %d, %v; want all 250", len(all), err)
	}
	mark := all[0].UpdatedAt
	for _, p := range all {
		mark = later(mark, p.UpdatedAt)
	}
	srv.SetPRHead("o", "r", prs[3], fmt.Sprintf("%040x", 999))
	srv.SetPRState("o", "r", prs[200], "closed", true)
	before := srv.Counts()
	got, err := c.UpdatedPRs(ctx, "o", "r", mark.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Number != prs[200] || !got[0].Merged || got[1].Number != prs[3] || got[1].HeadSHA != fmt.Sprintf("%040x", 999) {
		t.Fatalf("updated since the mark: %+v, want #%d merged then #%d pushed", got, prs[200], prs[3])
	}
	if n := srv.Counts().Requests - before.Requests; n != 1 {
		t.Errorf("%d requests, want one page", n)
	}
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
