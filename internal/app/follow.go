package app

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cadre-dev/cadre/internal/codehost"
	"github.com/cadre-dev/cadre/internal/follow"
	"github.com/cadre-dev/cadre/internal/forge"
	"github.com/cadre-dev/cadre/internal/ghtext"
)

// logTail is how many of a failed Actions job's last log lines
// fix-surgeon gets.
const logTail = 60

// permitted are the author associations whose reviews count when
// follow.reviewers names nobody.
var permitted = []string{"OWNER", "MEMBER", "COLLABORATOR"}

// View is pull request pr as cadre watch decides by (follow.Host): its
// state and mergeability, its head's failed checks with their log tails,
// and the reviews and review comments of permitted reviewers, cadre's own
// replies left out. The checks are not asked for when known.Fed: the
// follower has them from webhooks.
func (g *GitHub) View(ctx context.Context, pr int, reviewers []string, known *follow.Head) (follow.View, error) {
	owner, name, err := g.repoParts(ctx)
	if err != nil {
		return follow.View{}, err
	}
	var v follow.View
	if known != nil {
		v = follow.View{State: follow.StateOf(known.State, known.Merged), Head: known.Head, Base: known.Base, Title: known.Title}
	} else {
		st, err := g.client.PR(ctx, owner, name, pr)
		if err != nil {
			return follow.View{}, err
		}
		v = follow.View{State: follow.StateOf(st.State, st.Merged), Head: st.HeadSHA, Base: st.Base, Title: st.Title, Mergeable: st.Mergeable}
	}
	if v.State != "open" {
		return v, nil
	}
	if known == nil || !known.Fed {
		checks, err := g.client.FailedChecks(ctx, owner, name, v.Head)
		if err != nil {
			return follow.View{}, err
		}
		v.Pending, v.Running = len(checks.Pending) > 0, checks.Pending
		v.Checked = v.Pending || len(checks.Failed) > 0 || checks.Passed > 0
		v.Passed = checks.Succeeded
		for _, c := range checks.Failed {
			v.Failed = append(v.Failed, follow.Check{Name: c.Name, Conclusion: c.Conclusion, Summary: c.Summary, Text: c.Text, JobID: c.JobID})
		}
	}
	counts := counted(reviewers)
	reviews, err := g.client.Reviews(ctx, owner, name, pr)
	if err != nil {
		return follow.View{}, err
	}
	verdicts := latestVerdicts(slices.DeleteFunc(reviews, func(r forge.Review) bool { return !counts(r.Author, r.Association) }))
	states := map[string]string{}
	for author, r := range verdicts {
		states[author] = r.State
		switch r.State {
		case "CHANGES_REQUESTED":
			v.Changes = append(v.Changes, follow.Review{ID: r.ID, Author: r.Author, Body: r.Body})
		case "APPROVED":
			v.ApprovedHead = v.ApprovedHead || r.CommitID == v.Head
		}
	}
	slices.SortFunc(v.Changes, func(a, b follow.Review) int { return cmp.Compare(a.ID, b.ID) })
	v.Approved = codehost.ReviewDecision(states) == "approved"
	if v.Approved {
		// Only what may merge needs the base's rules.
		req, readable, err := g.client.RequiredChecks(ctx, owner, name, v.Base)
		if err != nil {
			return follow.View{}, err
		}
		if !readable {
			g.warnOnce("the protection of " + v.Base + " cannot be read with this token: only its rulesets' and follow.required_checks' required checks are known")
		}
		v.Required = req
	}
	comments, err := g.client.ReviewComments(ctx, owner, name, pr)
	if err != nil {
		return follow.View{}, err
	}
	for _, c := range comments {
		if !counts(c.Author, c.Association) || strings.Contains(c.Body, "<!-- cadre:") {
			continue
		}
		v.Comments = append(v.Comments, follow.Comment{ID: c.ID, Path: c.Path, Line: c.Line, Author: c.Author, Body: c.Body})
	}
	return v, nil
}

// counted says whose reviews and comments count: those follow.reviewers
// names, else the repository's owners, members and collaborators'.
func counted(reviewers []string) func(login, assoc string) bool {
	return func(login, assoc string) bool {
		if len(reviewers) > 0 {
			return slices.Contains(reviewers, login)
		}
		return slices.Contains(permitted, assoc)
	}
}

// Logs fills in the log tail of each failed GitHub Actions job; a log
// that cannot be read leaves the check's own texts, and is named.
func (g *GitHub) Logs(ctx context.Context, checks []follow.Check) ([]follow.Check, []string) {
	owner, name, err := g.repoParts(ctx)
	if err != nil {
		return checks, []string{"read the failed checks' logs: " + err.Error()}
	}
	var warnings []string
	out := slices.Clone(checks)
	for i, c := range out {
		if c.JobID == 0 {
			continue
		}
		tail, err := g.client.JobLogTail(ctx, owner, name, c.JobID, logTail)
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("the log of check %q (job %d) could not be read: %v", c.Name, c.JobID, err))
			continue
		}
		out[i].LogTail = tail
	}
	return out, warnings
}

// Comment posts body on pull request pr once per marker.
func (g *GitHub) Comment(ctx context.Context, pr int, marker, body string) error {
	owner, name, err := g.repoParts(ctx)
	if err != nil {
		return err
	}
	// Comments and replies quote agents and CI: made safe before they go
	// out, closing nothing (a pull request's comment closes no issue).
	_, err = g.client.EnsureComment(ctx, owner, name, pr, marker, ghtext.Body(body, ghtext.Issue{}))
	return err
}

// Label puts label on pull request pr, or takes it off.
func (g *GitHub) Label(ctx context.Context, pr int, label string, on bool) error {
	owner, name, err := g.repoParts(ctx)
	if err != nil {
		return err
	}
	if on {
		return g.client.AddLabels(ctx, owner, name, pr, []string{label})
	}
	return g.client.RemoveLabel(ctx, owner, name, pr, label)
}

// OpenPRs lists the repository's open pull requests' heads.
func (g *GitHub) OpenPRs(ctx context.Context) ([]follow.Head, error) {
	owner, name, err := g.repoParts(ctx)
	if err != nil {
		return nil, err
	}
	list, err := g.client.OpenPRs(ctx, owner, name)
	return heads(list), err
}

// UpdatedPRs lists the pull requests updated at or after since.
func (g *GitHub) UpdatedPRs(ctx context.Context, since time.Time) ([]follow.Head, error) {
	owner, name, err := g.repoParts(ctx)
	if err != nil {
		return nil, err
	}
	list, err := g.client.UpdatedPRs(ctx, owner, name, since)
	return heads(list), err
}

func heads(list []forge.PRStatus) []follow.Head {
	out := make([]follow.Head, 0, len(list))
	for _, p := range list {
		out = append(out, follow.Head{Number: p.Number, State: p.State, Merged: p.Merged, Head: p.HeadSHA, Base: p.Base, Title: p.Title, Updated: p.UpdatedAt})
	}
	return out
}

// latestVerdicts is each reviewer's standing verdict: their latest
// approval or change request, unless dismissed since.
func latestVerdicts(reviews []forge.Review) map[string]forge.Review {
	latest := map[string]forge.Review{}
	for _, r := range reviews {
		switch r.State {
		case "APPROVED", "CHANGES_REQUESTED":
			latest[r.Author] = r
		case "DISMISSED":
			delete(latest, r.Author)
		}
	}
	return latest
}

// Reply answers review comment comment of pull request pr, once per marker.
func (g *GitHub) Reply(ctx context.Context, pr int, comment int64, marker, body string) error {
	owner, name, err := g.repoParts(ctx)
	if err != nil {
		return err
	}
	_, err = g.client.ReplyToReviewComment(ctx, owner, name, pr, comment, marker, ghtext.Body(body, ghtext.Issue{}))
	return err
}

// RequestReview asks logins to review pull request pr again.
func (g *GitHub) RequestReview(ctx context.Context, pr int, logins []string) error {
	owner, name, err := g.repoParts(ctx)
	if err != nil {
		return err
	}
	return g.client.RequestReviewers(ctx, owner, name, pr, logins)
}

// Merge merges pull request pr by method, provided its head is still head.
// A squash's commit is titled title (the pull request's, the composer's
// when cadre opened it) and its number, whatever the repository's default.
func (g *GitHub) Merge(ctx context.Context, pr int, method, head, title string) error {
	owner, name, err := g.repoParts(ctx)
	if err != nil {
		return err
	}
	if title != "" {
		title = fmt.Sprintf("%s (#%d)", ghtext.Title(title), pr)
	}
	_, err = g.client.MergePR(ctx, owner, name, pr, method, head, title)
	if forge.IsHeadMoved(err) {
		return fmt.Errorf("%w: %v", follow.ErrHeadMoved, err)
	}
	return err
}

// Close closes pull request pr unmerged.
func (g *GitHub) Close(ctx context.Context, pr int) error {
	owner, name, err := g.repoParts(ctx)
	if err != nil {
		return err
	}
	return g.client.ClosePR(ctx, owner, name, pr)
}

// repoParts resolves the token and the repository.
func (g *GitHub) repoParts(ctx context.Context) (owner, name string, err error) {
	if err := g.init(ctx); err != nil {
		return "", "", err
	}
	owner, name, err = forge.ParseRepo(g.repo)
	if err != nil {
		return "", "", fmt.Errorf("repository: %w", err)
	}
	return owner, name, nil
}

var _ follow.Host = (*GitHub)(nil)
