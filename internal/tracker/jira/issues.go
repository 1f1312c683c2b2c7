package jira

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/cadre-dev/cadre/internal/codehost"
)

// propertyKey is the comment property cadre's comments carry their
// marker in: people do not see it, and it survives edits of the text.
const propertyKey = "cadre"

// issueFields are the fields cadre reads of an issue.
const issueFields = "summary,description,labels,status,reporter"

type user struct {
	DisplayName string `json:"displayName"`
	Name        string `json:"name"` // Data Center's username
}

func (u *user) String() string {
	switch {
	case u == nil:
		return ""
	case u.DisplayName != "":
		return u.DisplayName
	}
	return u.Name
}

type status struct {
	Name           string `json:"name"`
	StatusCategory struct {
		Key string `json:"key"`
	} `json:"statusCategory"`
}

type issueJSON struct {
	Key    string `json:"key"`
	Fields struct {
		Summary     string          `json:"summary"`
		Description json.RawMessage `json:"description"`
		Labels      []string        `json:"labels"`
		Status      *status         `json:"status"`
		Reporter    *user           `json:"reporter"`
	} `json:"fields"`
}

type property struct {
	Key   string          `json:"key"`
	Value json.RawMessage `json:"value"`
}

type commentJSON struct {
	ID         string          `json:"id"`
	Author     *user           `json:"author"`
	Body       json.RawMessage `json:"body"`
	Properties []property      `json:"properties"`
}

// marker is the marker cadre kept on a comment, "" when it is not one of
// cadre's.
func (c commentJSON) marker() (string, bool) {
	for _, p := range c.Properties {
		if p.Key != propertyKey {
			continue
		}
		var v struct {
			Marker string `json:"marker"`
		}
		_ = json.Unmarshal(p.Value, &v)
		return v.Marker, true
	}
	return "", false
}

// text renders a description or comment body as Markdown: ADF on Cloud,
// wiki markup on Data Center.
func text(flavor string, raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	if flavor == Cloud {
		return ADFToMarkdown(raw)
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return wikiToMarkdown(s)
	}
	return ADFToMarkdown(raw)
}

// Issue fetches one issue of the project by key or URL: its description
// and the comments people wrote, oldest first, as one Markdown text.
// cadre's own comments are left out: they are its output, not the task.
func (c *Client) Issue(ctx context.Context, ref string) (codehost.Issue, error) {
	key, err := c.key(ref)
	if err != nil {
		return codehost.Issue{}, err
	}
	flavor, api, err := c.api(ctx)
	if err != nil {
		return codehost.Issue{}, err
	}
	var is issueJSON
	err = c.call(ctx, request{op: "issue " + key, method: http.MethodGet, path: api + "/issue/" + key,
		query: url.Values{"fields": {issueFields}}, out: &is})
	if err != nil {
		return codehost.Issue{}, err
	}
	out := c.issue(flavor, is)
	var b strings.Builder
	b.WriteString(out.Body)
	err = c.comments(ctx, "issue "+key, api, key, func(cm commentJSON) bool {
		if _, ours := cm.marker(); !ours {
			b.WriteString("\n\n---\nComment by " + cm.Author.String() + ":\n\n" + text(flavor, cm.Body))
		}
		return true
	})
	if err != nil {
		return codehost.Issue{}, err
	}
	out.Body = strings.TrimLeft(b.String(), "\n")
	return out, nil
}

func (c *Client) issue(flavor string, is issueJSON) codehost.Issue {
	return codehost.Issue{
		Key:    is.Key,
		Number: keyNumber(is.Key),
		Title:  is.Fields.Summary,
		Body:   text(flavor, is.Fields.Description),
		URL:    c.browse(is.Key),
		Author: is.Fields.Reporter.String(),
		Labels: is.Fields.Labels,
	}
}

// comments hands the issue's comments, oldest first and with their
// properties, to each until it says stop, page by page.
func (c *Client) comments(ctx context.Context, op, api, key string, each func(commentJSON) bool) error {
	start := 0
	for range maxPages {
		var page struct {
			StartAt  int           `json:"startAt"`
			Total    int           `json:"total"`
			Comments []commentJSON `json:"comments"`
		}
		q := url.Values{"startAt": {strconv.Itoa(start)}, "maxResults": {"100"}, "orderBy": {"created"}, "expand": {"properties"}}
		if err := c.call(ctx, request{op: op, method: http.MethodGet, path: api + "/issue/" + key + "/comment", query: q, out: &page}); err != nil {
			return err
		}
		for _, cm := range page.Comments {
			if !each(cm) {
				return nil
			}
		}
		start += len(page.Comments)
		if len(page.Comments) == 0 || start >= page.Total {
			return nil
		}
	}
	return nil
}

// Search lists the project's issues q selects, at most q.Limit
// (DefaultLimit when 0): by q.JQL when given, within the project; else
// those with all of q.Labels in status q.State (any status not done when
// empty). An issue's Body is its description alone: Issue reads the
// comments when the issue is taken up.
func (c *Client) Search(ctx context.Context, q codehost.TrackerQuery) ([]codehost.Issue, error) {
	flavor, _, err := c.api(ctx)
	if err != nil {
		return nil, err
	}
	limit := q.Limit
	if limit <= 0 {
		limit = DefaultLimit
	}
	jql := c.jql(q)
	if flavor == Cloud {
		return c.searchCloud(ctx, jql, limit)
	}
	return c.searchDC(ctx, jql, limit)
}

var orderBy = regexp.MustCompile(`(?i)\s+order\s+by\s+[^"']*$`)

// jql bounds the query to the project; an ORDER BY clause of the caller's
// stays outside the parentheses, where JQL allows it.
func (c *Client) jql(q codehost.TrackerQuery) string {
	project := "project = " + quote(c.project)
	if j := strings.TrimSpace(q.JQL); j != "" {
		order := ""
		if loc := orderBy.FindStringIndex(" " + j); loc != nil {
			order = strings.TrimSpace((" " + j)[loc[0]:])
			j = strings.TrimSpace((" " + j)[:loc[0]])
		}
		if j == "" {
			return strings.TrimSpace(project + " " + order)
		}
		return strings.TrimSpace(project + " AND (" + j + ") " + order)
	}
	clauses := []string{project}
	for _, l := range q.Labels {
		clauses = append(clauses, "labels = "+quote(l))
	}
	if q.State != "" {
		clauses = append(clauses, "status = "+quote(q.State))
	} else {
		clauses = append(clauses, "statusCategory != Done")
	}
	return strings.Join(clauses, " AND ")
}

// quote makes s one JQL string literal.
func quote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

var searchFields = strings.Split(issueFields, ",")

// searchCloud pages through Cloud's enhanced search by nextPageToken (the
// offset search is gone from Cloud).
func (c *Client) searchCloud(ctx context.Context, jql string, limit int) ([]codehost.Issue, error) {
	var out []codehost.Issue
	token := ""
	for range maxPages {
		body := map[string]any{"jql": jql, "fields": searchFields, "maxResults": min(limit-len(out), 100)}
		if token != "" {
			body["nextPageToken"] = token
		}
		var page struct {
			Issues        []issueJSON `json:"issues"`
			NextPageToken string      `json:"nextPageToken"`
			IsLast        bool        `json:"isLast"`
		}
		// A search is a read sent as a POST: asking again is harmless.
		err := c.call(ctx, request{op: "search", method: http.MethodPost, path: "/rest/api/3/search/jql", body: body, out: &page})
		if err != nil {
			return nil, err
		}
		for _, is := range page.Issues {
			out = append(out, c.issue(Cloud, is))
		}
		if len(out) >= limit || page.NextPageToken == "" || page.IsLast || len(page.Issues) == 0 {
			break
		}
		token = page.NextPageToken
	}
	return out[:min(len(out), limit)], nil
}

// searchDC pages through Data Center's search by startAt.
func (c *Client) searchDC(ctx context.Context, jql string, limit int) ([]codehost.Issue, error) {
	var out []codehost.Issue
	for range maxPages {
		q := url.Values{"jql": {jql}, "startAt": {strconv.Itoa(len(out))},
			"maxResults": {strconv.Itoa(min(limit-len(out), 100))}, "fields": {issueFields}}
		var page struct {
			Total  int         `json:"total"`
			Issues []issueJSON `json:"issues"`
		}
		if err := c.call(ctx, request{op: "search", method: http.MethodGet, path: "/rest/api/2/search", query: q, out: &page}); err != nil {
			return nil, err
		}
		for _, is := range page.Issues {
			out = append(out, c.issue(DataCenter, is))
		}
		if len(out) >= limit || len(out) >= page.Total || len(page.Issues) == 0 {
			break
		}
	}
	return out[:min(len(out), limit)], nil
}
