package app_test

import (
	"testing"

	"github.com/cadre-dev/cadre/internal/app"
	"github.com/cadre-dev/cadre/internal/config"
	"github.com/cadre-dev/cadre/internal/forge"
	"github.com/cadre-dev/cadre/internal/forge/forgetest"
)

// cadre status calls a pull request approved only for the reviews cadre
// watch counts: a stranger's approval does not, a member's does, and
// with follow.reviewers only theirs.
func TestPRStatusCountsTheFollowedReviewers(t *testing.T) {
	for _, tt := range []struct {
		name      string
		reviewers []string
		reviews   []forgetest.Review
		want      string
	}{
		{"a stranger", nil, []forgetest.Review{{Author: "mallory", Association: "NONE", State: "APPROVED"}}, "none"},
		{"a contributor", nil, []forgetest.Review{{Author: "carl", Association: "CONTRIBUTOR", State: "APPROVED"}}, "none"},
		{"a member", nil, []forgetest.Review{{Author: "rita", Association: "MEMBER", State: "APPROVED"}}, "approved"},
		{"a member, a stranger asking changes", nil, []forgetest.Review{
			{Author: "rita", Association: "MEMBER", State: "APPROVED"}, {Author: "mallory", Association: "NONE", State: "CHANGES_REQUESTED"}}, "approved"},
		{"a member not named", []string{"sam"}, []forgetest.Review{{Author: "rita", Association: "MEMBER", State: "APPROVED"}}, "none"},
		{"the one named", []string{"sam"}, []forgetest.Review{{Author: "sam", Association: "CONTRIBUTOR", State: "APPROVED"}}, "approved"},
	} {
		srv := forgetest.New(t, "tok")
		srv.AddRepo("o", "r")
		pr := srv.AddPR("o", "r", forgetest.PR{Title: "p", Head: "cadre/1", Base: "main", HeadSHA: "0123456789abcdef0123456789abcdef01234567"})
		for _, rv := range tt.reviews {
			srv.AddReview("o", "r", pr, rv)
		}
		cfg := config.Default()
		cfg.Repository, cfg.GitHub.APIURL, cfg.Follow.Reviewers = "o/r", srv.URL, tt.reviewers
		gh := app.NewGitHub(app.Workspace{Root: t.TempDir(), Config: cfg}, func(string) string { return "tok" }, forge.WithWriteGap(0))
		st, err := gh.PRStatus(t.Context(), pr)
		if err != nil {
			t.Fatal(err)
		}
		if st.Review != tt.want {
			t.Errorf("%s: review %q, want %q", tt.name, st.Review, tt.want)
		}
	}
}
