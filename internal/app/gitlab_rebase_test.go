package app_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cadre-dev/cadre/internal/app"
	"github.com/cadre-dev/cadre/internal/config"
	"github.com/cadre-dev/cadre/internal/follow"
	"github.com/cadre-dev/cadre/internal/gitlab"
	"github.com/cadre-dev/cadre/internal/gitlab/gitlabtest"
)

// On GitLab, a merge request whose project merges fast-forward only (or
// semi-linear) and whose target moved on is not merged but rebased by
// GitLab, once a head; its new head merges.

// behind makes a project of w merge by method and opens a merge request
// from cadre/1 whose target then moves on; files are the source's.
func behind(t *testing.T, method string, source ...map[string]string) (*gitlabWorld, int, string) {
	t.Helper()
	w := newGitLabWorld(t).(*gitlabWorld)
	w.srv.SetMergeMethod(glProject, method)
	if len(source) == 0 {
		source = []map[string]string{{"a.txt": "a\n"}}
	}
	head := ""
	for i, files := range source {
		head = w.git.Commit("cadre/1", "main", "change "+strconv.Itoa(i), files)
	}
	iid := w.srv.AddMR(glProject, gitlabtest.MR{Title: "Add a", Source: "cadre/1"})
	w.git.Commit("main", "", "theirs", map[string]string{"README.md": "theirs\n"})
	return w, iid, head
}

func rebasesAsked(w *gitlabWorld, iid int) int {
	return w.srv.Count(http.MethodPut, "/api/v4/projects/"+glProject+"/merge_requests/"+strconv.Itoa(iid)+"/rebase")
}

func TestGitLabMergeRebasesWhatTheMergeMethodNeeds(t *testing.T) {
	for _, method := range []string{"ff", "rebase_merge"} {
		t.Run(method, func(t *testing.T) {
			ctx := context.Background()
			w, iid, head := behind(t, method)
			h := w.host(t)
			err := h.Merge(ctx, iid, "merge", head, "Add a")
			if !errors.Is(err, follow.ErrHeadMoved) || !strings.Contains(err.Error(), "GitLab was asked to rebase it") || rebasesAsked(w, iid) != 1 {
				t.Fatalf("merge of a merge request needing a rebase: %v, %d rebases asked", err, rebasesAsked(w, iid))
			}
			rebased := w.git.Rev("cadre/1")
			if rebased == head || w.git.Parents(rebased)[0] != w.git.Rev("main") {
				t.Fatalf("the source is at %s, not rebased onto main %s", rebased, w.git.Rev("main"))
			}
			// The follower's view was of the old head: no merge, no rebase.
			if err := h.Merge(ctx, iid, "merge", head, "Add a"); !errors.Is(err, follow.ErrHeadMoved) || rebasesAsked(w, iid) != 1 {
				t.Fatalf("merge at the old head: %v, %d rebases asked", err, rebasesAsked(w, iid))
			}
			main := w.git.Rev("main")
			if err := h.Merge(ctx, iid, "merge", rebased, "Add a"); err != nil {
				t.Fatalf("merge of the rebased head: %v", err)
			}
			switch got := w.git.Rev("main"); method {
			case "ff":
				if got != rebased {
					t.Errorf("main at %s, want fast-forwarded to %s", got, rebased)
				}
			default:
				if p := w.git.Parents(got); len(p) != 2 || p[0] != main || p[1] != rebased {
					t.Errorf("main's merge commit has parents %v, want %s and %s", p, main, rebased)
				}
			}
		})
	}
}

// A rebase GitLab is still doing is waited for, not asked again.
func TestGitLabMergeWaitsForARebaseUnderWay(t *testing.T) {
	ctx := context.Background()
	w, iid, head := behind(t, "ff")
	w.srv.SetRebaseDelay(glProject, 5)
	h := w.host(t)
	if err := h.Merge(ctx, iid, "merge", head, "Add a"); !errors.Is(err, follow.ErrHeadMoved) {
		t.Fatal(err)
	}
	err := h.Merge(ctx, iid, "merge", head, "Add a")
	if !errors.Is(err, follow.ErrHeadMoved) || !strings.Contains(err.Error(), "GitLab is rebasing") || rebasesAsked(w, iid) != 1 {
		t.Fatalf("merge while GitLab rebases: %v, %d rebases asked", err, rebasesAsked(w, iid))
	}
}

// quietRebases answers every rebase itself, 202, without passing it on:
// GitLab took the rebase but shows nothing of it yet.
type quietRebases struct{ asked atomic.Int32 }

func (q *quietRebases) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodPut || !strings.HasSuffix(req.URL.Path, "/rebase") {
		return http.DefaultTransport.RoundTrip(req)
	}
	q.asked.Add(1)
	return &http.Response{StatusCode: http.StatusAccepted, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(`{"rebase_in_progress":true}`)), Request: req}, nil
}

// A rebase asked for a head is not asked again at the next pass while
// GitLab shows it neither running nor done: its job may not have started.
func TestGitLabMergeAsksARebaseOnceAHead(t *testing.T) {
	ctx := context.Background()
	w, iid, head := behind(t, "ff")
	q := &quietRebases{}
	getenv := func(k string) string {
		if k == "GITLAB_TOKEN" {
			return "tok"
		}
		return ""
	}
	h := app.NewGitLab(app.Workspace{Root: w.root, Config: w.cfg}, getenv, gitlab.WithWriteGap(0), gitlab.WithHTTPClient(&http.Client{Transport: q}))
	for range 3 {
		if err := h.Merge(ctx, iid, "merge", head, "Add a"); !errors.Is(err, follow.ErrHeadMoved) {
			t.Fatal(err)
		}
	}
	if n := q.asked.Load(); n != 1 {
		t.Errorf("%d rebases asked of one head, want 1", n)
	}
}

// A rebase GitLab could not do (a commit of the source conflicts with the
// target though the whole merges cleanly) is not asked again: the view
// says the base is needed, which the conflict reaction answers.
func TestGitLabFailedRebaseGoesToTheConflictReaction(t *testing.T) {
	ctx := context.Background()
	w, iid, head := behind(t, "ff", map[string]string{"README.md": "mine\n"}, map[string]string{"README.md": "widget\n"})
	h := w.host(t)
	if err := h.Merge(ctx, iid, "merge", head, "Add a"); !errors.Is(err, follow.ErrHeadMoved) {
		t.Fatal(err)
	}
	if got := w.git.Rev("cadre/1"); got != head {
		t.Fatalf("a rebase that conflicts moved the source to %s", got)
	}
	v, err := h.View(ctx, iid, nil, nil)
	if err != nil || !v.BaseNeeded || v.Mergeable == nil || !*v.Mergeable || v.Head != head {
		t.Fatalf("view after the failed rebase: %+v, %v; want the base needed, merging cleanly", v, err)
	}
	if act := follow.Decide(v, follow.Past{}, config.Default().Follow, w.git.Rev("main"), 0); act.Do != follow.React || act.Kind != follow.Conflict {
		t.Errorf("decided %+v, want the conflict reaction", act)
	}
	err = h.Merge(ctx, iid, "merge", head, "Add a")
	if !errors.Is(err, follow.ErrHeadMoved) || !strings.Contains(err.Error(), "Rebase failed") || rebasesAsked(w, iid) != 1 {
		t.Fatalf("merge after the failed rebase: %v, %d rebases asked", err, rebasesAsked(w, iid))
	}
}
