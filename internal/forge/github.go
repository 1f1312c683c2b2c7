package forge

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/google/go-github/v92/github"
)

func login(u *github.User) string { return u.GetLogin() }

func labelNames(ls []*github.Label) []string {
	var out []string
	for _, l := range ls {
		out = append(out, l.GetName())
	}
	return out
}

func toPR(p *github.PullRequest) PR {
	return PR{
		Number: p.GetNumber(), URL: p.GetHTMLURL(), State: p.GetState(), Merged: merged(p),
		Head: p.GetHead().GetRef(), Base: p.GetBase().GetRef(), Title: p.GetTitle(), Body: p.GetBody(), Draft: p.GetDraft(),
	}
}

// merged reads "merged", which only a single pull request carries, or
// "merged_at", which lists carry too.
func merged(p *github.PullRequest) bool { return p.GetMerged() || p.MergedAt != nil }

func toIssue(i *github.Issue) Issue {
	return Issue{
		Number: i.GetNumber(), Title: i.GetTitle(), Body: i.GetBody(), URL: i.GetHTMLURL(),
		Author: login(i.GetUser()), Labels: labelNames(i.Labels), State: i.GetState(),
	}
}

// pages fetches a list and its following pages (GitHub's Link rel="next",
// as go-github reads it: a page number, or an "after" cursor for lists
// that take one, cur) and hands each page to add, which reports whether
// more are wanted. list fetches the page opt and cur name.
func pages[T any](ctx context.Context, c *Client, op string, opt *github.ListOptions, cur *github.ListCursorOptions,
	list func(ctx context.Context) ([]T, *github.Response, error), add func([]T) bool) error {
	opt.PerPage = 100
	for {
		var page []T
		resp, err := c.api(ctx, call{op: op, resend: true}, func(ctx context.Context) (r *github.Response, err error) {
			page, r, err = list(ctx)
			return r, err
		})
		if err != nil {
			return err
		}
		switch {
		case !add(page):
			return nil
		case resp.NextPage != 0:
			opt.Page = resp.NextPage
		case cur != nil && resp.After != "":
			opt.Page, cur.After = 0, resp.After
		default:
			return nil
		}
	}
}

// Issue fetches one issue with its comments. A pull request's number is
// refused: only issues are work items.
func (c *Client) Issue(ctx context.Context, ref Ref) (Issue, error) {
	op := "get issue " + ref.String()
	if err := checkRepo(ref.Owner, ref.Repo); err != nil {
		return Issue{}, fmt.Errorf("github: %s: %w", op, err)
	}
	var ai *github.Issue
	_, err := c.api(ctx, call{op: op, resend: true}, func(ctx context.Context) (r *github.Response, err error) {
		ai, r, err = c.gh.Issues.Get(ctx, ref.Owner, ref.Repo, ref.Number)
		return r, err
	})
	if err != nil {
		return Issue{}, err
	}
	if ai.IsPullRequest() {
		return Issue{}, fmt.Errorf("github: %s: #%d is a pull request, not an issue", op, ref.Number)
	}
	is := toIssue(ai)
	if ai.GetComments() > 0 {
		cs, err := c.comments(ctx, ref.Owner, ref.Repo, ref.Number)
		if err != nil {
			return Issue{}, err
		}
		is.Comments = cs
	}
	return is, nil
}

// Issues lists the issues q selects, newest first, skipping pull requests
// (which GitHub lists among issues), each with its comments.
func (c *Client) Issues(ctx context.Context, owner, repo string, q Query) ([]Issue, error) {
	op := fmt.Sprintf("list issues of %s/%s", owner, repo)
	if err := checkRepo(owner, repo); err != nil {
		return nil, fmt.Errorf("github: %s: %w", op, err)
	}
	state := q.State
	switch state {
	case "":
		state = "open"
	case "open", "closed", "all":
	default:
		return nil, fmt.Errorf("github: %s: state %q must be open, closed or all", op, q.State)
	}
	limit := q.Limit
	if limit <= 0 {
		limit = DefaultLimit
	}
	opt := &github.IssueListByRepoOptions{State: state, Labels: q.Labels, Assignee: q.Assignee}
	if q.Milestone != "" {
		m, err := c.milestone(ctx, owner, repo, q.Milestone)
		if err != nil {
			return nil, err
		}
		opt.Milestone = m
	}
	var found []*github.Issue
	err := pages(ctx, c, op, &opt.ListOptions, &opt.ListCursorOptions, func(ctx context.Context) ([]*github.Issue, *github.Response, error) {
		return c.gh.Issues.ListByRepo(ctx, owner, repo, opt)
	}, func(page []*github.Issue) bool {
		for _, ai := range page {
			if !ai.IsPullRequest() && len(found) < limit {
				found = append(found, ai)
			}
		}
		return len(found) < limit && len(page) > 0
	})
	if err != nil {
		return nil, err
	}
	out := make([]Issue, 0, len(found))
	for _, ai := range found {
		is := toIssue(ai)
		if ai.GetComments() > 0 {
			if is.Comments, err = c.comments(ctx, owner, repo, ai.GetNumber()); err != nil {
				return nil, err
			}
		}
		out = append(out, is)
	}
	return out, nil
}

// milestone turns a milestone title into the number the issues list
// takes; numbers, "*" and "none" pass as they are.
func (c *Client) milestone(ctx context.Context, owner, repo, m string) (string, error) {
	if m == "*" || m == "none" {
		return m, nil
	}
	if n, err := strconv.Atoi(m); err == nil && n > 0 {
		return m, nil
	}
	op := fmt.Sprintf("find milestone %q in %s/%s", m, owner, repo)
	var num int
	opt := &github.MilestoneListOptions{State: "all"}
	err := pages(ctx, c, op, &opt.ListOptions, nil, func(ctx context.Context) ([]*github.Milestone, *github.Response, error) {
		return c.gh.Issues.ListMilestones(ctx, owner, repo, opt)
	}, func(page []*github.Milestone) bool {
		for _, ms := range page {
			if ms.GetTitle() == m || (num == 0 && strings.EqualFold(ms.GetTitle(), m)) {
				num = ms.GetNumber()
			}
		}
		return len(page) > 0
	})
	if err != nil {
		return "", err
	}
	if num == 0 {
		return "", fmt.Errorf("github: %s: no such milestone: use its number or exact title", op)
	}
	return strconv.Itoa(num), nil
}

func (c *Client) comments(ctx context.Context, owner, repo string, issue int) ([]Comment, error) {
	op := fmt.Sprintf("list comments of %s/%s#%d", owner, repo, issue)
	var out []Comment
	opt := &github.IssueListCommentsOptions{}
	err := pages(ctx, c, op, &opt.ListOptions, nil, func(ctx context.Context) ([]*github.IssueComment, *github.Response, error) {
		return c.gh.Issues.ListComments(ctx, owner, repo, issue, opt)
	}, func(page []*github.IssueComment) bool {
		for _, ac := range page {
			out = append(out, Comment{ID: ac.GetID(), Author: login(ac.GetUser()), Body: ac.GetBody()})
		}
		return len(page) > 0
	})
	return out, err
}

// headLabel spells a head branch as GitHub's owner:branch filter wants
// it; GitHub ignores a filter without the owner and lists every PR.
func headLabel(owner, head string) string {
	if strings.Contains(head, ":") {
		return head
	}
	return owner + ":" + head
}

// FindPR returns the pull request whose head is the branch head (or
// owner:branch), in any state, or nil when there is none. Where several
// exist the open one wins, then the newest.
func (c *Client) FindPR(ctx context.Context, owner, repo, head string) (*PR, error) {
	p, err := c.findPR(ctx, owner, repo, head)
	if p == nil || err != nil {
		return nil, err
	}
	pr := toPR(p)
	return &pr, nil
}

func (c *Client) findPR(ctx context.Context, owner, repo, head string) (*github.PullRequest, error) {
	op := fmt.Sprintf("find pull request for %s in %s/%s", head, owner, repo)
	if err := checkRepo(owner, repo); err != nil {
		return nil, fmt.Errorf("github: %s: %w", op, err)
	}
	if strings.TrimSpace(head) == "" {
		return nil, fmt.Errorf("github: %s: head branch is empty", op)
	}
	label := headLabel(owner, head)
	var best *github.PullRequest
	opt := &github.PullRequestListOptions{Head: label, State: "all"}
	err := pages(ctx, c, op, &opt.ListOptions, nil, func(ctx context.Context) ([]*github.PullRequest, *github.Response, error) {
		return c.gh.PullRequests.List(ctx, owner, repo, opt)
	}, func(page []*github.PullRequest) bool {
		for _, p := range page {
			if p.GetHead().GetLabel() != label {
				continue // a filter GitHub ignored
			}
			if better(p, best) {
				best = p
			}
		}
		return len(page) > 0
	})
	return best, err
}

// better reports whether p is a better match than the one found so far:
// an open pull request, else the newest.
func better(p, than *github.PullRequest) bool {
	if than == nil {
		return true
	}
	if (p.GetState() == "open") != (than.GetState() == "open") {
		return p.GetState() == "open"
	}
	return p.GetNumber() > than.GetNumber()
}

// PRState fetches pull request number, e.g. to see whether it was merged.
func (c *Client) PRState(ctx context.Context, owner, repo string, number int) (PR, error) {
	op := fmt.Sprintf("get pull request %s/%s#%d", owner, repo, number)
	if err := checkRepo(owner, repo); err != nil {
		return PR{}, fmt.Errorf("github: %s: %w", op, err)
	}
	var p *github.PullRequest
	_, err := c.api(ctx, call{op: op, resend: true}, func(ctx context.Context) (r *github.Response, err error) {
		p, r, err = c.gh.PullRequests.Get(ctx, owner, repo, number)
		return r, err
	})
	if err != nil {
		return PR{}, err
	}
	return toPR(p), nil
}

// EnsurePR makes sure exactly one pull request exists for p.Head and that
// it carries p's title, body, base and labels. It looks the head branch up
// first and adopts what it finds; otherwise it creates the pull request.
// When GitHub answers "already exists", or gives no answer or a 5xx after
// the request was sent, it looks the branch up again and adopts the pull
// request it finds, so a retry after a crash or a lost answer never opens
// a second one. created reports whether this call opened the pull request
// (one found by its head branch after a lost answer counts as opened here).
// A merged pull request is returned as it is; a closed one is reopened.
// Draft applies only when the pull request is created.
func (c *Client) EnsurePR(ctx context.Context, owner, repo string, p NewPR) (pr PR, created bool, err error) {
	op := fmt.Sprintf("create pull request for %s in %s/%s", p.Head, owner, repo)
	switch {
	case strings.TrimSpace(p.Title) == "":
		return PR{}, false, fmt.Errorf("github: %s: title is empty", op)
	case strings.TrimSpace(p.Head) == "":
		return PR{}, false, fmt.Errorf("github: %s: head branch is empty", op)
	case strings.TrimSpace(p.Base) == "":
		return PR{}, false, fmt.Errorf("github: %s: base branch is empty", op)
	}
	p.Title, p.Body = c.clean(p.Title), c.clean(p.Body)
	unlock, err := c.lockItem(ctx, op, branchKey(owner, repo, p.Head))
	if err != nil {
		return PR{}, false, err
	}
	defer unlock()

	found, err := c.findPR(ctx, owner, repo, p.Head)
	if err != nil {
		return PR{}, false, err
	}
	if found != nil {
		pr, err := c.adopt(ctx, owner, repo, found, p)
		return pr, false, err
	}
	for attempt := 0; ; attempt++ {
		made, err := c.createPR(ctx, op, owner, repo, p)
		if err == nil {
			pr, err := c.addLabels(ctx, owner, repo, made, p.Labels)
			return pr, true, err
		}
		exists := alreadyExists(err)
		if !exists && (!ambiguous(err) || ctx.Err() != nil) {
			return PR{}, false, err
		}
		found, ferr := c.findPR(ctx, owner, repo, p.Head)
		if ferr != nil {
			return PR{}, false, fmt.Errorf("%w (then %w)", err, ferr)
		}
		if found != nil {
			pr, aerr := c.adopt(ctx, owner, repo, found, p)
			// "Already exists" means someone else made it; a lost answer
			// means this call most likely did.
			return pr, !exists, aerr
		}
		if exists || attempt > 0 {
			return PR{}, false, err
		}
	}
}

func alreadyExists(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Status == http.StatusUnprocessableEntity &&
		strings.Contains(strings.ToLower(e.Message), "already exists")
}

func (c *Client) createPR(ctx context.Context, op, owner, repo string, p NewPR) (*github.PullRequest, error) {
	req := github.CreatePullRequest{Title: &p.Title, Body: &p.Body, Head: p.Head, Base: p.Base}
	if p.Draft {
		req.Draft = github.Ptr(true)
	}
	var made *github.PullRequest
	_, err := c.api(ctx, call{op: op, key: branchKey(owner, repo, p.Head)}, func(ctx context.Context) (r *github.Response, err error) {
		made, r, err = c.gh.PullRequests.Create(ctx, owner, repo, req)
		return r, err
	})
	return made, err
}

// adopt brings an existing pull request up to p: title, body and base,
// reopened when closed, labels added. A merged one is left alone.
func (c *Client) adopt(ctx context.Context, owner, repo string, have *github.PullRequest, p NewPR) (PR, error) {
	if merged(have) {
		return toPR(have), nil
	}
	var patch github.PullRequest
	changed := false
	if have.GetTitle() != p.Title {
		patch.Title, changed = &p.Title, true
	}
	if normalise(have.GetBody()) != normalise(p.Body) {
		patch.Body, changed = &p.Body, true
	}
	if have.GetBase().GetRef() != p.Base {
		patch.Base, changed = &github.PullRequestBranch{Ref: &p.Base}, true
	}
	if have.GetState() == "closed" {
		patch.State, changed = github.Ptr("open"), true
	}
	if changed {
		op := fmt.Sprintf("update pull request %s/%s#%d", owner, repo, have.GetNumber())
		var got *github.PullRequest
		_, err := c.api(ctx, call{op: op, resend: true, key: issueKey(owner, repo, have.GetNumber())}, func(ctx context.Context) (r *github.Response, err error) {
			got, r, err = c.gh.PullRequests.Edit(ctx, owner, repo, have.GetNumber(), &patch)
			return r, err
		})
		if err != nil {
			return toPR(have), err
		}
		got.Labels = have.Labels
		have = got
	}
	return c.addLabels(ctx, owner, repo, have, p.Labels)
}

// normalise evens out the line endings GitHub may store a body with.
func normalise(s string) string { return strings.TrimSpace(strings.ReplaceAll(s, "\r\n", "\n")) }

// addLabels adds the labels the pull request lacks.
func (c *Client) addLabels(ctx context.Context, owner, repo string, have *github.PullRequest, labels []string) (PR, error) {
	var missing []string
	haveNames := labelNames(have.Labels)
	for _, l := range labels {
		if l = strings.TrimSpace(l); l != "" && !slices.Contains(haveNames, l) && !slices.Contains(missing, l) {
			missing = append(missing, l)
		}
	}
	if len(missing) == 0 {
		return toPR(have), nil
	}
	op := fmt.Sprintf("label pull request %s/%s#%d", owner, repo, have.GetNumber())
	_, err := c.api(ctx, call{op: op, resend: true, key: issueKey(owner, repo, have.GetNumber())}, func(ctx context.Context) (r *github.Response, err error) {
		_, r, err = c.gh.Issues.AddLabelsToIssue(ctx, owner, repo, have.GetNumber(), missing)
		return r, err
	})
	return toPR(have), err
}

// CommentMarker is the key EnsureComment posts a comment under, one per
// run, item and kind of comment ("started", "done", "failed").
func CommentMarker(run, item, kind string) string {
	return "cadre:" + run + ":" + item + ":" + kind
}

// hidden is marker as an HTML comment: invisible on the page, findable in
// the body.
func hidden(marker string) string { return "<!-- " + marker + " -->" }

// EnsureComment posts body on the issue (or pull request) unless a comment
// carrying marker is already there, and reports whether it posted. The
// marker travels in the comment as a hidden HTML comment, so a crash
// between posting and recording, or a lost answer, never posts twice.
func (c *Client) EnsureComment(ctx context.Context, owner, repo string, issue int, marker, body string) (created bool, err error) {
	op := fmt.Sprintf("comment on %s/%s#%d", owner, repo, issue)
	if err := checkRepo(owner, repo); err != nil {
		return false, fmt.Errorf("github: %s: %w", op, err)
	}
	if marker == "" || strings.ContainsAny(marker, "<>\r\n") || strings.Contains(marker, "--") {
		return false, fmt.Errorf("github: %s: marker %q must be non-empty, one line, without '<', '>' or '--'", op, marker)
	}
	tag := hidden(marker)
	unlock, err := c.lockItem(ctx, op, issueKey(owner, repo, issue))
	if err != nil {
		return false, err
	}
	defer unlock()
	has := func() (bool, error) {
		cs, err := c.comments(ctx, owner, repo, issue)
		if err != nil {
			return false, err
		}
		return slices.ContainsFunc(cs, func(cm Comment) bool { return strings.Contains(cm.Body, tag) }), nil
	}
	if ok, err := has(); err != nil || ok {
		return false, err
	}
	send := github.IssueCommentRequest{Body: c.clean(body) + "\n\n" + tag}
	_, err = c.api(ctx, call{op: op, key: issueKey(owner, repo, issue)}, func(ctx context.Context) (r *github.Response, err error) {
		_, r, err = c.gh.Issues.CreateComment(ctx, owner, repo, issue, send)
		return r, err
	})
	if err == nil {
		return true, nil
	}
	if !ambiguous(err) || ctx.Err() != nil {
		return false, err
	}
	if ok, herr := has(); herr == nil && ok {
		return true, nil
	}
	return false, err
}
