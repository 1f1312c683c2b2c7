package jiratest

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// intParam reads a paging parameter, def when absent; ok is false when it
// is not a number (Jira answers 400).
func intParam(v string, def int) (int, bool) {
	if v == "" {
		return def, true
	}
	n, err := strconv.Atoi(v)
	return n, err == nil && n >= 0
}

func (q *req) listComments(is *Issue) answer {
	v := q.r.URL.Query()
	start, ok1 := intParam(v.Get("startAt"), 0)
	limit, ok2 := intParam(v.Get("maxResults"), q.s.pageSize)
	if !ok1 || !ok2 {
		return badRequest("startAt and maxResults must be non-negative numbers.")
	}
	comments := slices.Clone(is.Comments)
	switch v.Get("orderBy") {
	case "", "created", "+created":
	case "-created":
		slices.Reverse(comments)
	default:
		return badRequest("Invalid orderBy value: " + v.Get("orderBy"))
	}
	expand := strings.Contains(v.Get("expand"), "properties")
	return ok(q.page(comments, start, min(limit, q.s.pageSize), expand))
}

// commentPage is the comment field of an issue, or a page of the comment
// list.
func (q *req) commentPage(is *Issue, start, limit int, expand bool) map[string]any {
	return q.page(is.Comments, start, limit, expand)
}

func (q *req) page(comments []Comment, start, limit int, expand bool) map[string]any {
	out := []any{}
	for i := start; i < len(comments) && i < start+limit; i++ {
		out = append(out, q.commentJSON(comments[i], expand))
	}
	return map[string]any{"startAt": start, "maxResults": limit, "total": len(comments), "comments": out}
}

func (q *req) commentJSON(c Comment, expand bool) map[string]any {
	author := q.userJSON(c.Author)
	out := map[string]any{
		"self": q.self("comment/" + c.ID), "id": c.ID, "author": author, "updateAuthor": author,
		"body": q.s.text(c.Body), "created": c.Created.Format(timeFormat), "updated": c.Created.Format(timeFormat),
	}
	if q.s.Flavor == Cloud {
		out["jsdPublic"] = true
	}
	if expand {
		props := []any{}
		keys := make([]string, 0, len(c.Properties))
		for k := range c.Properties {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			props = append(props, map[string]any{"key": k, "value": c.Properties[k]})
		}
		out["properties"] = props
	}
	return out
}

// addComment posts a comment: its body an ADF document on Cloud (v3
// refuses a string), a string on Data Center; its properties kept.
func (q *req) addComment(is *Issue) answer {
	var in struct {
		Body       json.RawMessage `json:"body"`
		Properties []struct {
			Key   string          `json:"key"`
			Value json.RawMessage `json:"value"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(q.body, &in); err != nil {
		return badRequest("Unexpected character: the request body is not JSON.")
	}
	body, msg := q.s.commentBody(in.Body)
	if msg != "" {
		return jiraError(http.StatusBadRequest, nil, map[string]string{"comment": msg})
	}
	c := Comment{Author: q.s.User, Body: body}
	for _, p := range in.Properties {
		if p.Key == "" || len(p.Key) > 255 {
			return badRequest("The property key must be between 1 and 255 characters long.")
		}
		if c.Properties == nil {
			c.Properties = map[string]json.RawMessage{}
		}
		c.Properties[p.Key] = p.Value
	}
	q.s.fillComment(&c, time.Now())
	is.Comments = append(is.Comments, c)
	return answer{status: http.StatusCreated, body: q.commentJSON(c, false)}
}

// commentBody checks a posted body as the flavor does and returns what
// is kept of it, or the message Jira refuses it with.
func (s *Server) commentBody(raw json.RawMessage) (string, string) {
	if s.Flavor != Cloud {
		var text string
		if json.Unmarshal(raw, &text) != nil {
			return "", "Comment body must be a string."
		}
		if strings.TrimSpace(text) == "" {
			return "", "Comment body can not be empty!"
		}
		return text, ""
	}
	var doc struct {
		Type    string            `json:"type"`
		Version int               `json:"version"`
		Content []json.RawMessage `json:"content"`
	}
	if json.Unmarshal(raw, &doc) != nil || doc.Type != "doc" || doc.Version != 1 {
		return "", "Operation value must be an Atlassian Document (see the Atlassian Document Format)"
	}
	if len(doc.Content) == 0 {
		return "", "Comment body can not be empty!"
	}
	if bad := emptyText(raw); bad {
		return "", "INVALID_INPUT: a text node must not be empty"
	}
	return string(raw), ""
}

// emptyText reports whether an ADF document holds an empty text node,
// which Jira refuses.
func emptyText(raw json.RawMessage) bool {
	var n struct {
		Type    string            `json:"type"`
		Text    *string           `json:"text"`
		Content []json.RawMessage `json:"content"`
	}
	if json.Unmarshal(raw, &n) != nil {
		return true
	}
	if n.Type == "text" && (n.Text == nil || *n.Text == "") {
		return true
	}
	for _, c := range n.Content {
		if emptyText(c) {
			return true
		}
	}
	return false
}

func (q *req) transitionsJSON(is *Issue) []any {
	out := []any{}
	for _, t := range q.s.workflow[is.Status] {
		out = append(out, map[string]any{
			"id": t.ID, "name": t.Name, "to": q.statusJSON(t.To),
			"hasScreen": false, "isGlobal": t.To == "Done", "isInitial": false,
			"isAvailable": true, "isConditional": false, "isLooped": false,
		})
	}
	return out
}

// transition carries out a transition available from the issue's status.
func (q *req) transition(is *Issue) answer {
	var in struct {
		Transition struct {
			ID string `json:"id"`
		} `json:"transition"`
	}
	if err := json.Unmarshal(q.body, &in); err != nil || in.Transition.ID == "" {
		return badRequest("Missing 'transition' identifier")
	}
	for _, t := range q.s.workflow[is.Status] {
		if t.ID == in.Transition.ID {
			is.Status = t.To
			return answer{status: http.StatusNoContent}
		}
	}
	return badRequest("Transition id '" + in.Transition.ID + "' is not valid for this issue.")
}

func (q *req) linkJSON(is *Issue, l RemoteLink) map[string]any {
	object := map[string]any{"url": l.URL, "title": l.Title}
	if l.Icon != "" {
		object["icon"] = map[string]string{"url16x16": l.Icon}
	}
	return map[string]any{
		"id": l.ID, "self": q.self("issue/" + is.Key + "/remotelink/" + strconv.FormatInt(l.ID, 10)),
		"globalId": l.GlobalID, "application": map[string]any{}, "relationship": l.Relationship, "object": object,
	}
}

func (q *req) listLinks(is *Issue) answer {
	gid := q.r.URL.Query().Get("globalId")
	out := []any{}
	for _, l := range is.Links {
		if gid == "" || l.GlobalID == gid {
			out = append(out, q.linkJSON(is, l))
		}
	}
	if gid != "" && len(out) == 0 {
		return jiraError(http.StatusNotFound, []string{"No remote link with the given globalId."}, nil)
	}
	if gid != "" {
		return ok(out[0])
	}
	return ok(out)
}

// upsertLink creates a remote link, or updates the one with the same
// globalId (200 instead of 201).
func (q *req) upsertLink(is *Issue) answer {
	var in struct {
		GlobalID     string `json:"globalId"`
		Relationship string `json:"relationship"`
		Object       struct {
			URL   string `json:"url"`
			Title string `json:"title"`
			Icon  struct {
				URL string `json:"url16x16"`
			} `json:"icon"`
		} `json:"object"`
	}
	if err := json.Unmarshal(q.body, &in); err != nil {
		return badRequest("Unexpected character: the request body is not JSON.")
	}
	missing := map[string]string{}
	if in.Object.URL == "" {
		missing["url"] = "'url' is required."
	}
	if in.Object.Title == "" {
		missing["title"] = "'title' is required."
	}
	if len(missing) > 0 {
		return jiraError(http.StatusBadRequest, nil, missing)
	}
	l := RemoteLink{GlobalID: in.GlobalID, URL: in.Object.URL, Title: in.Object.Title, Relationship: in.Relationship, Icon: in.Object.Icon.URL}
	for i := range is.Links {
		if in.GlobalID != "" && is.Links[i].GlobalID == in.GlobalID {
			l.ID = is.Links[i].ID
			is.Links[i] = l
			return ok(map[string]any{"id": l.ID, "self": q.linkJSON(is, l)["self"]})
		}
	}
	q.s.seq++
	l.ID = 10000 + q.s.seq
	is.Links = append(is.Links, l)
	return answer{status: http.StatusCreated, body: map[string]any{"id": l.ID, "self": q.linkJSON(is, l)["self"]}}
}
