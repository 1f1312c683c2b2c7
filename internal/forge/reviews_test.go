package forge_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cadre-dev/cadre/internal/forge"
	"github.com/cadre-dev/cadre/internal/forge/forgetest"
)

func TestReviewsAndComments(t *testing.T) {
	srv, c, _ := setup(t)
	n := srv.AddPR("o", "r", forgetest.PR{Title: "p", Head: "h", Base: "main", HeadSHA: sha})
	when := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	rv := srv.AddReview("o", "r", n, forgetest.Review{Author: "alice", Association: "MEMBER", State: "CHANGES_REQUESTED", Body: "see comments", SubmittedAt: when})
	cm := srv.AddReviewComment("o", "r", n, forgetest.ReviewComment{ReviewID: rv, Author: "alice", Association: "MEMBER", Path: "a.go", Line: 7,
		Body: "nil check", CreatedAt: when})
	old := srv.AddReviewComment("o", "r", n, forgetest.ReviewComment{ReviewID: rv, Author: "alice", Association: "MEMBER", Path: "b.go",
		Body: "outdated", CreatedAt: when})
	srv.AddReview("o", "r", n, forgetest.Review{Author: "bob", State: "APPROVED", SubmittedAt: when.Add(time.Hour)})
	srv.AddReview("o", "r", n, forgetest.Review{Author: "carol", State: "PENDING"}) // not hers to see

	reviews, err := c.Reviews(ctx, "o", "r", n)
	if err != nil {
		t.Fatal(err)
	}
	wantReviews := []forge.Review{
		{ID: rv, Author: "alice", Association: "MEMBER", State: "CHANGES_REQUESTED", Body: "see comments", CommitID: sha, SubmittedAt: when},
		{ID: reviews[1].ID, Author: "bob", Association: "CONTRIBUTOR", State: "APPROVED", CommitID: sha, SubmittedAt: when.Add(time.Hour)},
	}
	if diff := cmp.Diff(wantReviews, reviews); diff != "" {
		t.Errorf("Reviews (-want +got):\n%s", diff)
	}

	comments, err := c.ReviewComments(ctx, "o", "r", n)
	if err != nil {
		t.Fatal(err)
	}
	wantComments := []forge.ReviewComment{
		{ID: cm, ReviewID: rv, Author: "alice", Association: "MEMBER", Path: "a.go", Line: 7, Body: "nil check", CommitID: sha, CreatedAt: when},
		{ID: old, ReviewID: rv, Author: "alice", Association: "MEMBER", Path: "b.go", Body: "outdated", CommitID: sha, CreatedAt: when},
	}
	if diff := cmp.Diff(wantComments, comments); diff != "" {
		t.Errorf("ReviewComments (-want +got):\n%s", diff)
	}

	if _, err := c.Reviews(ctx, "o", "r", 99); err == nil || err.Error() != "github: list reviews of o/r#99: 404 Not Found" {
		t.Errorf("missing PR: %v", err)
	}
	if _, err := c.ReviewComments(ctx, "o", "nope", n); err == nil || !strings.HasPrefix(err.Error(), "github: list review comments of o/nope#") {
		t.Errorf("missing repository: %v", err)
	}
}

func TestReviewsPages(t *testing.T) {
	srv, c, _ := setup(t)
	n := srv.AddPR("o", "r", forgetest.PR{Title: "p", Head: "h", Base: "main"})
	for i := range 130 {
		srv.AddReviewComment("o", "r", n, forgetest.ReviewComment{Author: "alice", Path: "a.go", Line: i + 1, Body: fmt.Sprint(i)})
	}
	comments, err := c.ReviewComments(ctx, "o", "r", n)
	if err != nil || len(comments) != 130 || comments[129].Body != "129" {
		t.Fatalf("ReviewComments over pages: %d, %v", len(comments), err)
	}
	// Each lone comment made its own COMMENTED review, as on GitHub.
	reviews, err := c.Reviews(ctx, "o", "r", n)
	if err != nil || len(reviews) != 130 || reviews[0].State != "COMMENTED" {
		t.Errorf("Reviews over pages: %d, %v", len(reviews), err)
	}
}

// A reply goes once into the comment's thread, whoever asks again.
func TestReplyToReviewComment(t *testing.T) {
	srv, c, clk := setup(t)
	n := srv.AddPR("o", "r", forgetest.PR{Title: "p", Head: "h", Base: "main"})
	cm := srv.AddReviewComment("o", "r", n, forgetest.ReviewComment{Author: "alice", Path: "a.go", Line: 3, Body: "rename this"})
	marker := forge.CommentMarker("run1", "42", fmt.Sprint("reply-", cm))
	posted, err := c.ReplyToReviewComment(ctx, "o", "r", n, cm, marker, "Renamed in abc123.")
	if err != nil || !posted {
		t.Fatalf("first reply: %v, %v", posted, err)
	}
	other := newClient(t, srv, clk) // a resumed process after a crash
	if posted, err := other.ReplyToReviewComment(ctx, "o", "r", n, cm, marker, "Renamed in abc123."); err != nil || posted {
		t.Fatalf("repeat reply: %v, %v", posted, err)
	}
	got := srv.ReviewComments("o", "r", n)
	if len(got) != 2 {
		t.Fatalf("%d review comments, want 2: %+v", len(got), got)
	}
	if r := got[1]; r.InReplyTo != cm || r.Author != srv.Login || r.Path != "a.go" ||
		r.Body != "Renamed in abc123.\n\n<!-- cadre:run1:42:reply-"+fmt.Sprint(cm)+" -->" {
		t.Errorf("reply %+v", r)
	}

	if _, err := c.ReplyToReviewComment(ctx, "o", "r", n, 999, "cadre:x", "hi"); err == nil ||
		err.Error() != fmt.Sprintf("github: reply to review comment 999 of o/r#%d: 404 Not Found", n) {
		t.Errorf("missing comment: %v", err)
	}
	if _, err := c.ReplyToReviewComment(ctx, "o", "r", n, cm, "a -- b", "hi"); err == nil || !strings.Contains(err.Error(), "marker") {
		t.Errorf("bad marker: %v", err)
	}
}

func TestReplyToReviewCommentLostAnswer(t *testing.T) {
	for _, mode := range []forgetest.Mode{forgetest.Stall, forgetest.ServerErrorAfter} {
		t.Run(fmt.Sprint(mode), func(t *testing.T) {
			srv, c, _ := setup(t, forge.WithTimeout(200*time.Millisecond))
			n := srv.AddPR("o", "r", forgetest.PR{Title: "p", Head: "h", Base: "main"})
			cm := srv.AddReviewComment("o", "r", n, forgetest.ReviewComment{Author: "alice", Path: "a.go", Line: 3, Body: "why?"})
			srv.SetNext(forgetest.CreateReply, mode)
			posted, err := c.ReplyToReviewComment(ctx, "o", "r", n, cm, "cadre:r:1:reply", "because")
			if err != nil || !posted {
				t.Fatalf("ReplyToReviewComment = %v, %v", posted, err)
			}
			if got := srv.ReviewComments("o", "r", n); len(got) != 2 {
				t.Errorf("%d review comments, want 2", len(got))
			}
		})
	}
}

func TestRequestReviewers(t *testing.T) {
	srv, c, _ := setup(t)
	n := srv.AddPR("o", "r", forgetest.PR{Title: "p", Head: "h", Base: "main"})
	if err := c.RequestReviewers(ctx, "o", "r", n, []string{"alice", "bob"}); err != nil {
		t.Fatal(err)
	}
	if err := c.RequestReviewers(ctx, "o", "r", n, []string{"alice"}); err != nil {
		t.Fatal(err)
	}
	if got := srv.RequestedReviewers("o", "r", n); !cmp.Equal(got, []string{"alice", "bob"}) {
		t.Errorf("requested %v", got)
	}
	err := c.RequestReviewers(ctx, "o", "r", n, []string{srv.Login})
	want := fmt.Sprintf("github: request reviewers of o/r#%d: 422 Validation Failed: Review cannot be requested from pull request author.", n)
	if err == nil || err.Error() != want {
		t.Errorf("the author: %v", err)
	}
	if err := c.RequestReviewers(ctx, "o", "r", n, nil); err == nil || !strings.Contains(err.Error(), "no reviewer") {
		t.Errorf("nobody: %v", err)
	}
}
