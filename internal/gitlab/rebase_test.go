package gitlab_test

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/cadre-dev/cadre/internal/gitlab"
	"github.com/cadre-dev/cadre/internal/gitlab/gitlabtest"
)

// ffFake is a fake whose project merges fast-forward only, with a merge
// request from cadre/3 whose target moved on after it was opened.
func ffFake(t *testing.T, method string) (*gitlabtest.Server, *gitlabtest.GitRepo, int) {
	t.Helper()
	s := newFake(t)
	g := gitlabtest.NewGitRepo(t)
	s.SetGitDir(project, g.Dir)
	s.SetMergeMethod(project, method)
	g.Commit("cadre/3", "main", "one", map[string]string{"a.txt": "a\n"})
	iid := s.AddMR(project, gitlabtest.MR{Title: "t", Source: "cadre/3"})
	g.Commit("main", "", "theirs", map[string]string{"c.txt": "c\n"})
	return s, g, iid
}

func rebases(s *gitlabtest.Server, iid int) int {
	return s.Count(http.MethodPut, "/api/v4/projects/"+project+"/merge_requests/"+strconv.Itoa(iid)+"/rebase")
}

// A merge request behind its target on a fast-forward-only project reads
// as needing a rebase; its merge is refused saying so (not as a moved
// head); Rebase moves its head onto the target, and it merges there.
func TestRebaseThenMergeOnFastForwardOnly(t *testing.T) {
	ctx := context.Background()
	s, g, iid := ffFake(t, "ff")
	c := newClient(t, s)
	mr, err := c.MR(ctx, project, iid)
	if err != nil || mr.MergeStatus != gitlab.NeedRebase || mr.RebaseInProgress || mr.MergeError != "" || mr.HasConflicts {
		t.Fatalf("MR = %+v, %v; want need_rebase", mr, err)
	}
	err = c.Merge(ctx, project, iid, mr.SHA, false, "t")
	var e *gitlab.Error
	if !errors.As(err, &e) || e.Status != http.StatusUnprocessableEntity || !strings.Contains(e.Message, "needs a rebase") || gitlab.IsHeadMoved(err) {
		t.Fatalf("merge needing a rebase: %v", err)
	}
	if err := c.Rebase(ctx, project, iid); err != nil {
		t.Fatal(err)
	}
	after, err := c.MR(ctx, project, iid)
	if err != nil || after.SHA == mr.SHA || after.SHA != g.Rev("cadre/3") || after.MergeStatus != "mergeable" || rebases(s, iid) != 1 {
		t.Fatalf("after Rebase: %+v, %v, %d rebases asked", after, err, rebases(s, iid))
	}
	if err := c.Merge(ctx, project, iid, after.SHA, false, "t"); err != nil {
		t.Fatal(err)
	}
	if g.Rev("main") != after.SHA {
		t.Errorf("main at %s, want fast-forwarded to %s", g.Rev("main"), after.SHA)
	}
}

// A rebase under way shows as RebaseInProgress, and asking again while it
// runs is no error (GitLab's 409); one that cannot be done shows as
// MergeError with the head where it was; one the token may not do is an
// error.
func TestRebaseUnderWayFailedOrRefused(t *testing.T) {
	ctx := context.Background()
	s, g, iid := ffFake(t, "rebase_merge")
	s.SetRebaseDelay(project, 2)
	c := newClient(t, s)
	before := g.Rev("cadre/3")
	if err := c.Rebase(ctx, project, iid); err != nil {
		t.Fatal(err)
	}
	if mr, err := c.MR(ctx, project, iid); err != nil || !mr.RebaseInProgress || mr.SHA != before {
		t.Fatalf("while rebasing: %+v, %v", mr, err)
	}
	if err := c.Rebase(ctx, project, iid); err != nil || rebases(s, iid) != 2 {
		t.Fatalf("asked again while rebasing: %v (%d asked)", err, rebases(s, iid))
	}
	if mr, err := c.MR(ctx, project, iid); err != nil || mr.RebaseInProgress || mr.SHA == before {
		t.Fatalf("after the rebase: %+v, %v", mr, err)
	}

	s.SetRebaseDelay(project, 0)
	g.Commit("cadre/4", "main", "mine", map[string]string{"README.md": "mine\n"})
	head := g.Commit("cadre/4", "", "back", map[string]string{"README.md": "widget\n"})
	other := s.AddMR(project, gitlabtest.MR{Title: "u", Source: "cadre/4"})
	g.Commit("main", "", "theirs too", map[string]string{"README.md": "theirs\n"})
	if err := c.Rebase(ctx, project, other); err != nil {
		t.Fatal(err)
	}
	if mr, err := c.MR(ctx, project, other); err != nil || mr.SHA != head || mr.MergeStatus != gitlab.NeedRebase || !strings.HasPrefix(mr.MergeError, "Rebase failed") {
		t.Fatalf("after a rebase that does not apply: %+v, %v", mr, err)
	}

	s.AddMember(project, s.Username, gitlabtest.Reporter)
	err := c.Rebase(ctx, project, other)
	var e *gitlab.Error
	if !errors.As(err, &e) || e.Status != http.StatusForbidden || !strings.Contains(err.Error(), "rebase merge request !") {
		t.Errorf("a Reporter's rebase: %v", err)
	}
}
