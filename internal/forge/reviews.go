package forge

import (
	"context"
	"fmt"
	"github.com/cadre-dev/cadre/internal/fence"
	"net/http"
	"net/url"
	"slices"
	"time"
)

// Review is a review of a pull request. Its body is untrusted text.
type Review struct {
	ID     int64
	Author string // login
	// Association is the author's relation to the repository: OWNER,
	// MEMBER, COLLABORATOR, CONTRIBUTOR, FIRST_TIME_CONTRIBUTOR, NONE…
	Association string
	// State is APPROVED, CHANGES_REQUESTED, COMMENTED or DISMISSED; or
	// PENDING for the token's own review not yet submitted.
	State       string
	Body        string
	CommitID    string    // the head commit reviewed
	SubmittedAt time.Time // zero while pending
}

// ReviewComment is a comment on a line of a pull request's diff, or a
// reply in its thread. Its body is untrusted text.
type ReviewComment struct {
	ID          int64
	ReviewID    int64  // the review it was filed with
	InReplyTo   int64  // the comment opening its thread; 0 when it opens one
	Author      string // login
	Association string // as Review's
	Path        string
	Line        int // 0 when outdated: its line is gone from the diff
	Body        string
	CommitID    string
	CreatedAt   time.Time
}

type apiReview struct {
	ID          int64      `json:"id"`
	User        apiUser    `json:"user"`
	Association string     `json:"author_association"`
	State       string     `json:"state"`
	Body        string     `json:"body"`
	CommitID    string     `json:"commit_id"`
	SubmittedAt *time.Time `json:"submitted_at"`
}

type apiReviewComment struct {
	ID          int64     `json:"id"`
	ReviewID    int64     `json:"pull_request_review_id"`
	InReplyTo   int64     `json:"in_reply_to_id"`
	User        apiUser   `json:"user"`
	Association string    `json:"author_association"`
	Path        string    `json:"path"`
	Line        *int      `json:"line"`
	Body        string    `json:"body"`
	CommitID    string    `json:"commit_id"`
	CreatedAt   time.Time `json:"created_at"`
}

func (r apiReview) review() Review {
	out := Review{ID: r.ID, Author: r.User.Login, Association: r.Association, State: r.State, Body: r.Body, CommitID: r.CommitID}
	if r.SubmittedAt != nil {
		out.SubmittedAt = *r.SubmittedAt
	}
	return out
}

func (c apiReviewComment) comment() ReviewComment {
	out := ReviewComment{ID: c.ID, ReviewID: c.ReviewID, InReplyTo: c.InReplyTo, Author: c.User.Login, Association: c.Association,
		Path: c.Path, Body: c.Body, CommitID: c.CommitID, CreatedAt: c.CreatedAt}
	if c.Line != nil {
		out.Line = *c.Line
	}
	return out
}

// Reviews lists the reviews of pull request pr, oldest first.
func (c *Client) Reviews(ctx context.Context, owner, repo string, pr int) ([]Review, error) {
	op := fmt.Sprintf("list reviews of %s/%s#%d", owner, repo, pr)
	if err := checkRepo(owner, repo); err != nil {
		return nil, fmt.Errorf("github: %s: %w", op, err)
	}
	var out []Review
	path := fmt.Sprintf("%s/pulls/%d/reviews", repoPath(owner, repo), pr)
	err := pages(ctx, c, op, path, url.Values{"per_page": {"100"}}, func(page []apiReview) bool {
		for _, r := range page {
			out = append(out, r.review())
		}
		return len(page) > 0
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ReviewComments lists the review comments of pull request pr, replies
// included, oldest first.
func (c *Client) ReviewComments(ctx context.Context, owner, repo string, pr int) ([]ReviewComment, error) {
	op := fmt.Sprintf("list review comments of %s/%s#%d", owner, repo, pr)
	if err := checkRepo(owner, repo); err != nil {
		return nil, fmt.Errorf("github: %s: %w", op, err)
	}
	return c.reviewComments(ctx, op, owner, repo, pr)
}

func (c *Client) reviewComments(ctx context.Context, op, owner, repo string, pr int) ([]ReviewComment, error) {
	var out []ReviewComment
	path := fmt.Sprintf("%s/pulls/%d/comments", repoPath(owner, repo), pr)
	err := pages(ctx, c, op, path, url.Values{"per_page": {"100"}}, func(page []apiReviewComment) bool {
		for _, rc := range page {
			out = append(out, rc.comment())
		}
		return len(page) > 0
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ReplyToReviewComment replies with body in the thread of review comment
// commentID of pull request pr, unless a review comment of the pull
// request already carries marker, and reports whether it posted. As with
// EnsureComment, the marker travels in the reply as a hidden HTML
// comment, so a crash between posting and recording, or a lost answer,
// never posts twice.
func (c *Client) ReplyToReviewComment(ctx context.Context, owner, repo string, pr int, commentID int64, marker, body string) (created bool, err error) {
	op := fmt.Sprintf("reply to review comment %d of %s/%s#%d", commentID, owner, repo, pr)
	path := fmt.Sprintf("%s/pulls/%d/comments/%d/replies", repoPath(owner, repo), pr, commentID)
	return c.postOnce(ctx, op, owner, repo, pr, marker, path, body, func(tag string) (bool, error) {
		cs, err := c.reviewComments(ctx, op, owner, repo, pr)
		return slices.ContainsFunc(cs, func(rc ReviewComment) bool { return fence.Carries(rc.Body, tag) }), err
	})
}

// RequestReviewers asks logins to review pull request pr. Asking again
// one who reviewed already asks for a new review; GitHub refuses the pull
// request's author.
func (c *Client) RequestReviewers(ctx context.Context, owner, repo string, pr int, logins []string) error {
	op := fmt.Sprintf("request reviewers of %s/%s#%d", owner, repo, pr)
	if err := checkRepo(owner, repo); err != nil {
		return fmt.Errorf("github: %s: %w", op, err)
	}
	if len(logins) == 0 || slices.Contains(logins, "") {
		return fmt.Errorf("github: %s: no reviewer named", op)
	}
	path := fmt.Sprintf("%s/pulls/%d/requested_reviewers", repoPath(owner, repo), pr)
	_, err := c.do(ctx, call{op: op, method: http.MethodPost, path: path, body: map[string][]string{"reviewers": logins},
		resend: true, key: issueKey(owner, repo, pr)})
	return err
}
