package forge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/cadre-dev/cadre/internal/fence"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Wire shapes of GitHub's REST API, as documented; only the fields used.

type apiUser struct {
	Login string `json:"login"`
}

// apiLabel reads a label given as an object (the usual) or a bare name.
type apiLabel struct{ Name string }

func (l *apiLabel) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		return json.Unmarshal(b, &l.Name)
	}
	var o struct {
		Name string `json:"name"`
	}
	err := json.Unmarshal(b, &o)
	l.Name = o.Name
	return err
}

type apiIssue struct {
	Number      int        `json:"number"`
	Title       string     `json:"title"`
	Body        string     `json:"body"`
	State       string     `json:"state"`
	HTMLURL     string     `json:"html_url"`
	User        apiUser    `json:"user"`
	Labels      []apiLabel `json:"labels"`
	Comments    int        `json:"comments"`
	PullRequest *struct{}  `json:"pull_request"`
}

type apiComment struct {
	ID   int64   `json:"id"`
	Body string  `json:"body"`
	User apiUser `json:"user"`
}

type apiBranch struct {
	Ref   string `json:"ref"`
	Label string `json:"label"` // owner:branch
	SHA   string `json:"sha"`
}

type apiPR struct {
	Number   int        `json:"number"`
	HTMLURL  string     `json:"html_url"`
	State    string     `json:"state"`
	Title    string     `json:"title"`
	Body     string     `json:"body"`
	Draft    bool       `json:"draft"`
	Merged   bool       `json:"merged"`    // only on a single pull request
	MergedAt *string    `json:"merged_at"` // on lists too
	Head     apiBranch  `json:"head"`
	Base     apiBranch  `json:"base"`
	Labels   []apiLabel `json:"labels"`
	// Only on a single pull request:
	Mergeable      *bool     `json:"mergeable"`
	MergeableState string    `json:"mergeable_state"`
	MergeCommitSHA *string   `json:"merge_commit_sha"`
	UpdatedAt      time.Time `json:"updated_at"`
}

type apiMilestone struct {
	Number int    `json:"number"`
	Title  string `json:"title"`
}

func (p apiPR) pr() PR {
	return PR{
		Number: p.Number, URL: p.HTMLURL, State: p.State, Merged: p.Merged || p.MergedAt != nil,
		Head: p.Head.Ref, Base: p.Base.Ref, Title: p.Title, Body: p.Body, Draft: p.Draft,
	}
}

func (i apiIssue) issue() Issue {
	out := Issue{Number: i.Number, Title: i.Title, Body: i.Body, URL: i.HTMLURL, Author: i.User.Login, State: i.State}
	for _, l := range i.Labels {
		out.Labels = append(out.Labels, l.Name)
	}
	return out
}

func repoPath(owner, repo string) string { return "/repos/" + owner + "/" + repo }

// Issue fetches one issue with its comments. A pull request's number is
// refused: only issues are work items.
func (c *Client) Issue(ctx context.Context, ref Ref) (Issue, error) {
	op := "get issue " + ref.String()
	if err := checkRepo(ref.Owner, ref.Repo); err != nil {
		return Issue{}, fmt.Errorf("github: %s: %w", op, err)
	}
	var ai apiIssue
	path := fmt.Sprintf("%s/issues/%d", repoPath(ref.Owner, ref.Repo), ref.Number)
	if _, err := c.do(ctx, call{op: op, method: http.MethodGet, path: path, out: &ai, resend: true}); err != nil {
		return Issue{}, err
	}
	if ai.PullRequest != nil {
		return Issue{}, fmt.Errorf("github: %s: #%d is a pull request, not an issue", op, ref.Number)
	}
	is := ai.issue()
	if ai.Comments > 0 {
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
	v := url.Values{"state": {state}, "per_page": {"100"}}
	if len(q.Labels) > 0 {
		v.Set("labels", strings.Join(q.Labels, ","))
	}
	if q.Assignee != "" {
		v.Set("assignee", q.Assignee)
	}
	if q.Milestone != "" {
		m, err := c.milestone(ctx, owner, repo, q.Milestone)
		if err != nil {
			return nil, err
		}
		v.Set("milestone", m)
	}
	var found []apiIssue
	err := pages(ctx, c, op, repoPath(owner, repo)+"/issues", v, func(page []apiIssue) bool {
		for _, ai := range page {
			if ai.PullRequest == nil && len(found) < limit {
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
		is := ai.issue()
		if ai.Comments > 0 {
			if is.Comments, err = c.comments(ctx, owner, repo, ai.Number); err != nil {
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
	v := url.Values{"state": {"all"}, "per_page": {"100"}}
	err := pages(ctx, c, op, repoPath(owner, repo)+"/milestones", v, func(page []apiMilestone) bool {
		for _, ms := range page {
			if ms.Title == m || (num == 0 && strings.EqualFold(ms.Title, m)) {
				num = ms.Number
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
	path := fmt.Sprintf("%s/issues/%d/comments", repoPath(owner, repo), issue)
	err := pages(ctx, c, op, path, url.Values{"per_page": {"100"}}, func(page []apiComment) bool {
		for _, ac := range page {
			out = append(out, Comment{ID: ac.ID, Author: ac.User.Login, Body: ac.Body})
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
	pr := p.pr()
	return &pr, nil
}

func (c *Client) findPR(ctx context.Context, owner, repo, head string) (*apiPR, error) {
	op := fmt.Sprintf("find pull request for %s in %s/%s", head, owner, repo)
	if err := checkRepo(owner, repo); err != nil {
		return nil, fmt.Errorf("github: %s: %w", op, err)
	}
	if strings.TrimSpace(head) == "" {
		return nil, fmt.Errorf("github: %s: head branch is empty", op)
	}
	label := headLabel(owner, head)
	var best *apiPR
	v := url.Values{"head": {label}, "state": {"all"}, "per_page": {"100"}}
	err := pages(ctx, c, op, repoPath(owner, repo)+"/pulls", v, func(page []apiPR) bool {
		for _, p := range page {
			if p.Head.Label != label {
				continue // a filter GitHub ignored
			}
			if better(&p, best) {
				best = &p
			}
		}
		return len(page) > 0
	})
	return best, err
}

// better reports whether p is a better match than the one found so far:
// an open pull request, else the newest.
func better(p, than *apiPR) bool {
	if than == nil {
		return true
	}
	if (p.State == "open") != (than.State == "open") {
		return p.State == "open"
	}
	return p.Number > than.Number
}

// PRState fetches pull request number, e.g. to see whether it was merged;
// PR tells more.
func (c *Client) PRState(ctx context.Context, owner, repo string, number int) (PR, error) {
	st, err := c.PR(ctx, owner, repo, number)
	return st.PR, err
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
		pr, err := c.adopt(ctx, owner, repo, *found, p)
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
			pr, aerr := c.adopt(ctx, owner, repo, *found, p)
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

func (c *Client) createPR(ctx context.Context, op, owner, repo string, p NewPR) (apiPR, error) {
	body := struct {
		Title string `json:"title"`
		Body  string `json:"body"`
		Head  string `json:"head"`
		Base  string `json:"base"`
		Draft bool   `json:"draft,omitempty"`
	}{p.Title, p.Body, p.Head, p.Base, p.Draft}
	var made apiPR
	_, err := c.do(ctx, call{op: op, method: http.MethodPost, path: repoPath(owner, repo) + "/pulls", body: body, out: &made,
		key: branchKey(owner, repo, p.Head)})
	return made, err
}

// adopt brings an existing pull request up to p: title, body and base,
// reopened when closed, labels added. A merged one is left alone.
func (c *Client) adopt(ctx context.Context, owner, repo string, have apiPR, p NewPR) (PR, error) {
	if have.Merged || have.MergedAt != nil {
		return have.pr(), nil
	}
	patch := map[string]string{}
	if have.Title != p.Title {
		patch["title"] = p.Title
	}
	if normalise(have.Body) != normalise(p.Body) {
		patch["body"] = p.Body
	}
	if have.Base.Ref != p.Base {
		patch["base"] = p.Base
	}
	if have.State == "closed" {
		patch["state"] = "open"
	}
	if len(patch) > 0 {
		op := fmt.Sprintf("update pull request %s/%s#%d", owner, repo, have.Number)
		path := fmt.Sprintf("%s/pulls/%d", repoPath(owner, repo), have.Number)
		var got apiPR
		if _, err := c.do(ctx, call{op: op, method: http.MethodPatch, path: path, body: patch, out: &got, resend: true,
			key: issueKey(owner, repo, have.Number)}); err != nil {
			return have.pr(), err
		}
		got.Labels = have.Labels
		have = got
	}
	return c.addLabels(ctx, owner, repo, have, p.Labels)
}

// normalise evens out the line endings GitHub may store a body with.
func normalise(s string) string { return strings.TrimSpace(strings.ReplaceAll(s, "\r\n", "\n")) }

// addLabels adds the labels the pull request lacks.
func (c *Client) addLabels(ctx context.Context, owner, repo string, have apiPR, labels []string) (PR, error) {
	var missing []string
	for _, l := range labels {
		if l = strings.TrimSpace(l); l != "" && !slices.ContainsFunc(have.Labels, func(h apiLabel) bool { return h.Name == l }) && !slices.Contains(missing, l) {
			missing = append(missing, l)
		}
	}
	if len(missing) == 0 {
		return have.pr(), nil
	}
	op := fmt.Sprintf("label pull request %s/%s#%d", owner, repo, have.Number)
	path := fmt.Sprintf("%s/issues/%d/labels", repoPath(owner, repo), have.Number)
	body := map[string][]string{"labels": missing}
	if _, err := c.do(ctx, call{op: op, method: http.MethodPost, path: path, body: body, resend: true,
		key: issueKey(owner, repo, have.Number)}); err != nil {
		return have.pr(), err
	}
	return have.pr(), nil
}

// CommentMarker is the key EnsureComment posts a comment under, one per
// run, item and kind of comment ("started", "done", "failed").
func CommentMarker(run, item, kind string) string {
	return "cadre:" + run + ":" + item + ":" + kind
}

// hidden is marker as an HTML comment: invisible on the page, findable in
// the body.
func hidden(marker string) string { return "<!-- " + marker + " -->" }

// checkMarker refuses a marker that would not stay one hidden comment.
func checkMarker(marker string) error {
	if marker == "" || strings.ContainsAny(marker, "<>\r\n") || strings.Contains(marker, "--") {
		return fmt.Errorf("marker %q must be non-empty, one line, without '<', '>' or '--'", marker)
	}
	return nil
}

// EnsureComment posts body on the issue (or pull request) unless a comment
// carrying marker is already there, and reports whether it posted. The
// marker travels in the comment as a hidden HTML comment, so a crash
// between posting and recording, or a lost answer, never posts twice.
func (c *Client) EnsureComment(ctx context.Context, owner, repo string, issue int, marker, body string) (created bool, err error) {
	op := fmt.Sprintf("comment on %s/%s#%d", owner, repo, issue)
	path := fmt.Sprintf("%s/issues/%d/comments", repoPath(owner, repo), issue)
	return c.postOnce(ctx, op, owner, repo, issue, marker, path, body, func(tag string) (bool, error) {
		cs, err := c.comments(ctx, owner, repo, issue)
		return slices.ContainsFunc(cs, func(cm Comment) bool { return fence.Carries(cm.Body, tag) }), err
	})
}

// postOnce posts body, carrying marker as a hidden HTML comment, to path
// (a comment of issue or pull request number), unless has finds a
// comment carrying it already; it reports whether it posted. A lost
// answer is looked for again, so a crash between posting and recording,
// or a retry, never posts twice.
func (c *Client) postOnce(ctx context.Context, op, owner, repo string, number int, marker, path, body string, has func(tag string) (bool, error)) (bool, error) {
	if err := checkRepo(owner, repo); err != nil {
		return false, fmt.Errorf("github: %s: %w", op, err)
	}
	if err := checkMarker(marker); err != nil {
		return false, fmt.Errorf("github: %s: %w", op, err)
	}
	tag := hidden(marker)
	unlock, err := c.lockItem(ctx, op, issueKey(owner, repo, number))
	if err != nil {
		return false, err
	}
	defer unlock()
	if ok, err := has(tag); err != nil || ok {
		return false, err
	}
	send := map[string]string{"body": c.clean(body) + "\n\n" + tag}
	_, err = c.do(ctx, call{op: op, method: http.MethodPost, path: path, body: send, key: issueKey(owner, repo, number)})
	if err == nil {
		return true, nil
	}
	if !ambiguous(err) || ctx.Err() != nil {
		return false, err
	}
	if ok, herr := has(tag); herr == nil && ok {
		return true, nil
	}
	return false, err
}
