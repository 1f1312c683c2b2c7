package forge

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"time"
)

// PRStatus is a pull request as it stands: what following it to its
// merge decides by.
type PRStatus struct {
	PR
	HeadSHA string // the head branch's commit
	BaseSHA string // the base branch's commit when GitHub last looked
	// Mergeable is whether the head merges into the base without
	// conflict; nil while GitHub computes it after a push (ask again in a
	// few seconds) and once the pull request is closed.
	Mergeable *bool
	// MergeableState is GitHub's view of the merge: clean, dirty
	// (conflicts), blocked (a required review or check is missing, or
	// changes were requested), unstable (checks not passing), behind,
	// draft, has_hooks, or unknown.
	MergeableState string
	MergeCommit    string // the commit the merge made, once merged
	UpdatedAt      time.Time
}

func (p apiPR) status() PRStatus {
	return PRStatus{PR: p.pr(), HeadSHA: p.Head.SHA, BaseSHA: p.Base.SHA, Mergeable: p.Mergeable,
		MergeableState: p.MergeableState, MergeCommit: deref(p.MergeCommitSHA), UpdatedAt: p.UpdatedAt}
}

// PR fetches pull request number as it stands: state, mergeability, head
// commit.
func (c *Client) PR(ctx context.Context, owner, repo string, number int) (PRStatus, error) {
	op := fmt.Sprintf("get pull request %s/%s#%d", owner, repo, number)
	if err := checkRepo(owner, repo); err != nil {
		return PRStatus{}, fmt.Errorf("github: %s: %w", op, err)
	}
	var p apiPR
	path := fmt.Sprintf("%s/pulls/%d", repoPath(owner, repo), number)
	if _, err := c.do(ctx, call{op: op, method: http.MethodGet, path: path, out: &p, resend: true}); err != nil {
		return PRStatus{}, err
	}
	return p.status(), nil
}

// The ways MergePR merges, as GitHub's merge button offers them.
const (
	MethodMerge  = "merge"  // a merge commit of base and head
	MethodSquash = "squash" // one commit of the whole change on the base
	MethodRebase = "rebase" // the head's commits replayed on the base
)

// shaRE is a full commit id (SHA-1, or SHA-256 for repositories using it).
var shaRE = regexp.MustCompile(`^(?:[0-9a-f]{40}|[0-9a-f]{64})$`)

// MergePR merges pull request number by method (MethodMerge,
// MethodSquash or MethodRebase) provided its head is still sha, the commit the caller saw pass,
// and returns the commit the merge made. GitHub refuses with 409 when the
// head moved (IsHeadMoved) and 405 when the pull request cannot be merged
// (IsNotMergeable: conflicts, a missing review or check, a draft). When
// the answer is lost, or refused because the pull request is merged
// already (an earlier call whose answer was lost, a crash before it was
// recorded), a pull request found merged at sha counts as merged by this
// call.
func (c *Client) MergePR(ctx context.Context, owner, repo string, number int, method, sha, title string) (string, error) {
	op := fmt.Sprintf("merge pull request %s/%s#%d at %s", owner, repo, number, sha)
	if err := checkRepo(owner, repo); err != nil {
		return "", fmt.Errorf("github: %s: %w", op, err)
	}
	switch {
	case method != MethodMerge && method != MethodSquash && method != MethodRebase:
		return "", fmt.Errorf("github: %s: merge method %q must be merge, squash or rebase", op, method)
	case !shaRE.MatchString(sha):
		return "", fmt.Errorf("github: %s: head must be a full commit id", op)
	}
	key := issueKey(owner, repo, number)
	unlock, err := c.lockItem(ctx, op, key)
	if err != nil {
		return "", err
	}
	defer unlock()
	var res struct {
		SHA     string `json:"sha"`
		Merged  bool   `json:"merged"`
		Message string `json:"message"`
	}
	path := fmt.Sprintf("%s/pulls/%d/merge", repoPath(owner, repo), number)
	body := map[string]string{"merge_method": method, "sha": sha}
	if title != "" && method == MethodSquash {
		body["commit_title"] = title
	}
	_, err = c.do(ctx, call{op: op, method: http.MethodPut, path: path, body: body, out: &res, key: key})
	switch {
	case err == nil && res.Merged:
		return res.SHA, nil
	case err == nil:
		return "", fmt.Errorf("github: %s: not merged: %s", op, oneLine(c.scrub(res.Message)))
	case ctx.Err() != nil || (!ambiguous(err) && !IsNotMergeable(err)):
		return "", err
	}
	if st, perr := c.PR(ctx, owner, repo, number); perr == nil && st.Merged && st.HeadSHA == sha {
		return st.MergeCommit, nil
	}
	return "", err
}

// IsNotMergeable reports whether err is GitHub's 405 to a merge: the pull
// request has conflicts, lacks a required review or check, is a draft, or
// is closed.
func IsNotMergeable(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Status == http.StatusMethodNotAllowed
}

// IsHeadMoved reports whether err is GitHub's 409 to a merge: the head
// branch is no longer at the commit the caller named.
func IsHeadMoved(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Status == http.StatusConflict
}

// ClosePR closes pull request number unmerged; closing one closed already
// changes nothing.
func (c *Client) ClosePR(ctx context.Context, owner, repo string, number int) error {
	op := fmt.Sprintf("close pull request %s/%s#%d", owner, repo, number)
	if err := checkRepo(owner, repo); err != nil {
		return fmt.Errorf("github: %s: %w", op, err)
	}
	path := fmt.Sprintf("%s/pulls/%d", repoPath(owner, repo), number)
	_, err := c.do(ctx, call{op: op, method: http.MethodPatch, path: path, body: map[string]string{"state": "closed"},
		resend: true, key: issueKey(owner, repo, number)})
	return err
}

// OpenPRs lists the repository's open pull requests, a hundred a page,
// each page asked conditionally: an unchanged page costs no rate limit.
// Lists carry no mergeability (Mergeable is nil).
func (c *Client) OpenPRs(ctx context.Context, owner, repo string) ([]PRStatus, error) {
	op := fmt.Sprintf("list open pull requests of %s/%s", owner, repo)
	if err := checkRepo(owner, repo); err != nil {
		return nil, fmt.Errorf("github: %s: %w", op, err)
	}
	var out []PRStatus
	v := url.Values{"state": {"open"}, "per_page": {"100"}}
	err := pages(ctx, c, op, repoPath(owner, repo)+"/pulls", v, func(page []apiPR) bool {
		for _, p := range page {
			out = append(out, p.status())
		}
		return len(page) > 0
	})
	return out, err
}

// UpdatedPRs lists the repository's pull requests, open or not, updated
// at or after since, most recently updated first: one conditional request
// when fewer than a hundred were (a push, a review, a comment, a close or
// a merge moves a pull request's update time; a check finishing does not).
func (c *Client) UpdatedPRs(ctx context.Context, owner, repo string, since time.Time) ([]PRStatus, error) {
	op := fmt.Sprintf("list updated pull requests of %s/%s", owner, repo)
	if err := checkRepo(owner, repo); err != nil {
		return nil, fmt.Errorf("github: %s: %w", op, err)
	}
	var out []PRStatus
	v := url.Values{"state": {"all"}, "sort": {"updated"}, "direction": {"desc"}, "per_page": {"100"}}
	err := pages(ctx, c, op, repoPath(owner, repo)+"/pulls", v, func(page []apiPR) bool {
		for _, p := range page {
			if p.UpdatedAt.Before(since) {
				return false
			}
			out = append(out, p.status())
		}
		return len(page) > 0
	})
	return out, err
}
