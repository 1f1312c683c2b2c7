package lineartest

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// pageSize is Linear's default and the most the fake's clients ask for.
const pageSize = 50

// maxFirst is the largest page Linear serves.
const maxFirst = 250

// find resolves an issue's id argument: its UUID or its identifier, as
// Linear's issue(id:) and the inputs' issueId take either.
func (s *Server) find(v any) *issue {
	id, _ := v.(string)
	if in := s.issues[strings.ToUpper(id)]; in != nil {
		return in
	}
	for _, in := range s.order {
		if in.id == id {
			return in
		}
	}
	return nil
}

func (in *issue) url() string {
	slug := strings.Trim(strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, strings.ToLower(in.title)), "-")
	return "https://linear.app/acme/issue/" + in.identifier + "/" + slug
}

func user(name string) any {
	if name == "" {
		return nil
	}
	return map[string]any{"name": name}
}

func labelsOf(in *issue) any {
	nodes := []any{}
	for _, l := range in.labels {
		nodes = append(nodes, map[string]any{"name": l})
	}
	return map[string]any{"nodes": nodes}
}

func cursor(i int) string {
	return base64.StdEncoding.EncodeToString([]byte("cursor:" + strconv.Itoa(i)))
}

// window is the part [from, to) of a list of n a page asks for, and the
// page's pageInfo.
func window(n int, first, after any) (from, to int, info map[string]any, bad string) {
	size := pageSize
	if f, ok := first.(float64); ok {
		size = int(f)
	}
	if size < 0 || size > maxFirst {
		return 0, 0, nil, fmt.Sprintf("first must be between 0 and %d", maxFirst)
	}
	if a, ok := after.(string); ok && a != "" {
		raw, err := base64.StdEncoding.DecodeString(a)
		i, aerr := strconv.Atoi(strings.TrimPrefix(string(raw), "cursor:"))
		if err != nil || aerr != nil || !strings.HasPrefix(string(raw), "cursor:") {
			return 0, 0, nil, "Invalid cursor " + a
		}
		from = i + 1
	}
	from = min(from, n)
	to = min(from+size, n)
	info = map[string]any{"hasNextPage": to < n, "endCursor": nil}
	if to > from {
		info["endCursor"] = cursor(to - 1)
	}
	return from, to, info, ""
}

// opIssue answers CadreIssue: the issue and a page of its comments.
func (s *Server) opIssue(vars map[string]any) answer {
	in := s.find(vars["id"])
	if in == nil {
		return notFound("Issue")
	}
	from, to, info, bad := window(len(in.comments), nil, vars["after"])
	if bad != "" {
		return inputError(bad)
	}
	nodes := []any{}
	for _, c := range in.comments[from:to] {
		nodes = append(nodes, map[string]any{"id": c.ID, "body": c.Body,
			"createdAt": c.Created.UTC().Format("2006-01-02T15:04:05.000Z"), "user": user(c.Author), "botActor": bot(c.Author)})
	}
	return answer{status: http.StatusOK, data: map[string]any{"issue": map[string]any{
		"id": in.id, "identifier": in.identifier, "number": in.number, "title": in.title,
		"description": nullable(in.desc), "url": in.url(), "creator": user(in.creator),
		"team": map[string]any{"key": in.team.key}, "labels": labelsOf(in),
		"comments": map[string]any{"nodes": nodes, "pageInfo": info},
	}}}
}

// bot is a comment's botActor: set when no user wrote it (an integration).
func bot(author string) any {
	if author != "" {
		return nil
	}
	return map[string]any{"name": "Integration"}
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// opIssues answers CadreIssues: a page of the issues the filter selects,
// in creation order.
func (s *Server) opIssues(vars map[string]any) answer {
	f, ok := vars["filter"].(map[string]any)
	if !ok {
		return invalid(`Variable "$filter" of required type "IssueFilter!" was not provided.`)
	}
	var hits []*issue
	for _, in := range s.order {
		ok, err := matchIssue(in, f)
		if err != "" {
			return invalid(err)
		}
		if ok {
			hits = append(hits, in)
		}
	}
	from, to, info, bad := window(len(hits), vars["first"], vars["after"])
	if bad != "" {
		return inputError(bad)
	}
	nodes := []any{}
	for _, in := range hits[from:to] {
		nodes = append(nodes, map[string]any{"identifier": in.identifier, "number": in.number, "title": in.title,
			"url": in.url(), "creator": user(in.creator), "labels": labelsOf(in)})
	}
	return answer{status: http.StatusOK, data: map[string]any{"issues": map[string]any{"nodes": nodes, "pageInfo": info}}}
}

// opIssueStates answers CadreIssueStates: the issue's state and its
// team's workflow states.
func (s *Server) opIssueStates(vars map[string]any) answer {
	in := s.find(vars["id"])
	if in == nil {
		return notFound("Issue")
	}
	nodes := []any{}
	for _, st := range in.team.states {
		nodes = append(nodes, map[string]any{"id": st.id, "name": st.name, "type": st.typ, "position": st.position})
	}
	return answer{status: http.StatusOK, data: map[string]any{"issue": map[string]any{
		"id": in.id, "identifier": in.identifier,
		"state": map[string]any{"id": in.state.id, "name": in.state.name},
		"team":  map[string]any{"key": in.team.key, "states": map[string]any{"nodes": nodes}},
	}}}
}

// opAttachments answers CadreAttachments: the issue's attachment of url,
// if any.
func (s *Server) opAttachments(vars map[string]any) answer {
	in := s.find(vars["id"])
	if in == nil {
		return notFound("Issue")
	}
	url, _ := vars["url"].(string)
	nodes := []any{}
	for _, a := range in.attached {
		if a.URL == url {
			nodes = append(nodes, map[string]any{"id": a.ID, "url": a.URL})
		}
	}
	return answer{status: http.StatusOK, data: map[string]any{"issue": map[string]any{
		"id": in.id, "identifier": in.identifier, "team": map[string]any{"key": in.team.key},
		"attachments": map[string]any{"nodes": nodes},
	}}}
}

// input returns the input object of vars, refusing a field its type
// lacks, as Linear's schema validation does.
func input(vars map[string]any, typ string, fields ...string) (map[string]any, string) {
	in, ok := vars["input"].(map[string]any)
	if !ok {
		return nil, `Variable "$input" of required type "` + typ + `!" was not provided.`
	}
	for k := range in {
		if !slices.Contains(fields, k) {
			return nil, fmt.Sprintf(`Variable "$input" got invalid value; Field "%s" is not defined by type "%s".`, k, typ)
		}
	}
	return in, ""
}

// opCommentCreate answers CadreCommentCreate: a comment by the Viewer; an
// id given must be new.
func (s *Server) opCommentCreate(vars map[string]any) answer {
	in, bad := input(vars, "CommentCreateInput", "id", "issueId", "body", "parentId", "doNotSubscribeToIssue")
	if bad != "" {
		return invalid(bad)
	}
	is := s.find(in["issueId"])
	if is == nil {
		return notFound("Issue")
	}
	body, _ := in["body"].(string)
	id, _ := in["id"].(string)
	for _, other := range s.order {
		for _, c := range other.comments {
			if id != "" && c.ID == id {
				return inputError("Comment with id " + id + " already exists")
			}
		}
	}
	c := s.comment(Comment{ID: id, Author: s.Viewer, Body: body})
	is.comments = append(is.comments, c)
	return answer{status: http.StatusOK, data: map[string]any{"commentCreate": map[string]any{
		"success": true, "comment": map[string]any{"id": c.ID}}}}
}

// opIssueUpdate answers CadreIssueUpdate: a new state, of the issue's
// team.
func (s *Server) opIssueUpdate(vars map[string]any) answer {
	in, bad := input(vars, "IssueUpdateInput", "stateId")
	if bad != "" {
		return invalid(bad)
	}
	is := s.find(vars["id"])
	if is == nil {
		return notFound("Issue")
	}
	if id, ok := in["stateId"].(string); ok {
		var to *state
		for _, st := range is.team.states {
			if st.id == id {
				to = st
			}
		}
		if to == nil {
			return inputError("Workflow state " + id + " is not of the issue's team")
		}
		is.state = to
	}
	return answer{status: http.StatusOK, data: map[string]any{"issueUpdate": map[string]any{
		"success": true, "issue": map[string]any{"id": is.id, "state": map[string]any{"id": is.state.id, "name": is.state.name}}}}}
}

// opAttachmentCreate answers CadreAttachmentCreate: an attachment keyed by
// url within its issue; a second of the same url updates the first.
func (s *Server) opAttachmentCreate(vars map[string]any) answer {
	in, bad := input(vars, "AttachmentCreateInput", "id", "issueId", "url", "title", "subtitle", "iconUrl", "metadata")
	if bad != "" {
		return invalid(bad)
	}
	is := s.find(in["issueId"])
	if is == nil {
		return notFound("Issue")
	}
	url, _ := in["url"].(string)
	title, _ := in["title"].(string)
	if url == "" || title == "" {
		return inputError("url and title are required")
	}
	for i, a := range is.attached {
		if a.URL == url {
			is.attached[i].Title = title
			return attachmentPayload(is.attached[i])
		}
	}
	a := Attachment{ID: s.id(), URL: url, Title: title}
	is.attached = append(is.attached, a)
	return attachmentPayload(a)
}

func attachmentPayload(a Attachment) answer {
	return answer{status: http.StatusOK, data: map[string]any{"attachmentCreate": map[string]any{
		"success": true, "attachment": map[string]any{"id": a.ID, "url": a.URL}}}}
}
