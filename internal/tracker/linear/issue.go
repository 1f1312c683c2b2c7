package linear

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/cadre-dev/cadre/internal/codehost"
)

// maxPages caps how many pages of one list are read (fifty items each):
// past it a list is more than cadre can act on anyway.
const maxPages = 20

// key reads ref as an issue of the Client's team.
func (c *Client) key(op, ref string) (string, error) {
	key, ok := ParseKey(ref)
	if !ok {
		return "", fmt.Errorf("linear: %s: %q is neither an issue identifier such as %s-42 nor a linear.app issue URL", op, c.scrub(oneLine(ref)), c.team)
	}
	if team, _ := splitKey(key); team != c.team {
		return "", c.otherTeam(op, key, team)
	}
	return key, nil
}

func (c *Client) otherTeam(op, key, team string) error {
	return fmt.Errorf("linear: %s: %s is an issue of team %s, not of team %s (the tracker's team)", op, key, team, c.team)
}

// sameTeam refuses an issue Linear placed in another team than its key
// said: an issue moved between teams answers to its old identifier.
func (c *Client) sameTeam(op, key, team string) error {
	if !strings.EqualFold(team, c.team) {
		return c.otherTeam(op, key, strings.ToUpper(team))
	}
	return nil
}

// Issue fetches the issue ref names (ENG-42, or its URL): its description
// and the comments people wrote, oldest first, as one untrusted Markdown
// text. Comments cadre posted (those carrying its marker) are left out.
func (c *Client) Issue(ctx context.Context, ref string) (codehost.Issue, error) {
	key, err := c.key("get issue", ref)
	if err != nil {
		return codehost.Issue{}, err
	}
	op := "get " + key
	is, comments, err := c.fetchIssue(ctx, op, key)
	if err != nil {
		return codehost.Issue{}, err
	}
	var b strings.Builder
	if is.Description != nil {
		b.WriteString(strings.TrimSpace(*is.Description))
	}
	for _, cm := range comments {
		if ownComment(cm.Body) {
			continue
		}
		fmt.Fprintf(&b, "\n\n---\nComment by %s:\n\n%s", authorOf(cm), strings.TrimSpace(cm.Body))
	}
	out := c.issueOf(is)
	out.Body = c.scrub(b.String())
	return out, nil
}

func (c *Client) issueOf(is issueNode) codehost.Issue {
	out := codehost.Issue{Key: is.Identifier, Number: int(is.Number), Title: c.scrub(is.Title), URL: is.URL}
	if is.Creator != nil {
		out.Author = is.Creator.Name
	}
	for _, l := range is.Labels.Nodes {
		out.Labels = append(out.Labels, l.Name)
	}
	return out
}

func authorOf(cm commentNode) string {
	switch {
	case cm.User != nil && cm.User.Name != "":
		return cm.User.Name
	case cm.BotActor != nil && cm.BotActor.Name != "":
		return cm.BotActor.Name
	}
	return "someone outside Linear"
}

// fetchIssue reads issue key and every page of its comments, oldest first.
func (c *Client) fetchIssue(ctx context.Context, op, key string) (issueNode, []commentNode, error) {
	var (
		first    issueNode
		comments []commentNode
		after    any
	)
	for page := 0; page < maxPages; page++ {
		var data struct {
			Issue *issueNode `json:"issue"`
		}
		if err := c.call(ctx, op, opIssue, map[string]any{"id": key, "after": after}, &data); err != nil {
			return issueNode{}, nil, err
		}
		if data.Issue == nil {
			return issueNode{}, nil, &Error{Op: op, Message: "no such issue (or no access to it)"}
		}
		if page == 0 {
			first = *data.Issue
			if err := c.sameTeam(op, key, first.Team.Key); err != nil {
				return issueNode{}, nil, err
			}
		}
		comments = append(comments, data.Issue.Comments.Nodes...)
		pi := data.Issue.Comments.PageInfo
		if !pi.HasNextPage || pi.EndCursor == "" {
			break
		}
		after = pi.EndCursor
	}
	// Linear orders a connection by creation by default; sorted all the
	// same, since the text must read oldest first whatever the server did.
	sort.SliceStable(comments, func(i, j int) bool { return comments[i].CreatedAt < comments[j].CreatedAt })
	return first, comments, nil
}

// closedTypes are the workflow-state types of an issue no longer open for
// work.
var closedTypes = []string{"completed", "canceled", "duplicate"}

// Search lists the team's issues carrying every label of q, in the state
// named q.State (any open state when empty: one whose type is not
// completed, canceled or duplicate), at most q.Limit (DefaultLimit when
// 0). Their text is not fetched: Issue does that for the one picked.
func (c *Client) Search(ctx context.Context, q codehost.TrackerQuery) ([]codehost.Issue, error) {
	op := "search issues of team " + c.team
	if strings.TrimSpace(q.JQL) != "" {
		return nil, errors.New("linear: tracker.watch.jql is Jira's; on Linear use labels and state")
	}
	limit := q.Limit
	if limit <= 0 {
		limit = DefaultLimit
	}
	filter := c.filter(q)
	var (
		out   []codehost.Issue
		after any
	)
	for page := 0; page < maxPages && len(out) < limit; page++ {
		var data struct {
			Issues struct {
				Nodes    []issueNode `json:"nodes"`
				PageInfo pageInfo    `json:"pageInfo"`
			} `json:"issues"`
		}
		vars := map[string]any{"filter": filter, "first": min(limit-len(out), 50), "after": after}
		if err := c.call(ctx, op, opIssues, vars, &data); err != nil {
			return nil, err
		}
		for _, is := range data.Issues.Nodes {
			if len(out) < limit {
				out = append(out, c.issueOf(is))
			}
		}
		pi := data.Issues.PageInfo
		if !pi.HasNextPage || pi.EndCursor == "" || len(data.Issues.Nodes) == 0 {
			break
		}
		after = pi.EndCursor
	}
	return out, nil
}

// filter spells q as Linear's IssueFilter: the team by key, each label by
// name (any case), the state by name or, by default, by open types.
func (c *Client) filter(q codehost.TrackerQuery) map[string]any {
	f := map[string]any{"team": map[string]any{"key": map[string]any{"eq": c.team}}}
	if s := strings.TrimSpace(q.State); s != "" {
		f["state"] = map[string]any{"name": map[string]any{"eqIgnoreCase": s}}
	} else {
		f["state"] = map[string]any{"type": map[string]any{"nin": closedTypes}}
	}
	var all []any
	for _, l := range q.Labels {
		if l = strings.TrimSpace(l); l != "" {
			all = append(all, map[string]any{"labels": map[string]any{"some": map[string]any{"name": map[string]any{"eqIgnoreCase": l}}}})
		}
	}
	if len(all) > 0 {
		f["and"] = all
	}
	return f
}
