package jiratest

import (
	"encoding/base64"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
)

// search runs jql and returns the issues it selects, in order, or the
// answer refusing it.
func (q *req) search(jql string) ([]*Issue, *answer) {
	parsed, err := q.s.parseJQL(jql)
	if err != nil {
		a := badRequest(err.Error())
		return nil, &a
	}
	var out []*Issue
	for _, k := range q.s.order {
		if is := q.s.issues[k]; parsed.match(is) {
			out = append(out, is)
		}
	}
	if parsed.less != nil {
		slices.SortStableFunc(out, func(a, b *Issue) int {
			switch {
			case parsed.less(a, b):
				return -1
			case parsed.less(b, a):
				return 1
			}
			return 0
		})
	}
	return out, nil
}

// searchCloud serves POST /rest/api/3/search/jql: a page of at most
// maxResults issues and, unless it is the last, a token for the next.
func (q *req) searchCloud() answer {
	var in struct {
		JQL           string   `json:"jql"`
		Fields        []string `json:"fields"`
		MaxResults    *int     `json:"maxResults"`
		NextPageToken string   `json:"nextPageToken"`
	}
	if err := json.Unmarshal(q.body, &in); err != nil {
		return badRequest("Unexpected character: the request body is not JSON.")
	}
	limit := q.s.pageSize
	if in.MaxResults != nil {
		limit = min(max(*in.MaxResults, 1), q.s.pageSize)
	}
	start := 0
	if in.NextPageToken != "" {
		raw, err := base64.RawURLEncoding.DecodeString(in.NextPageToken)
		n, err2 := strconv.Atoi(strings.TrimPrefix(string(raw), "offset:"))
		if err != nil || err2 != nil {
			return badRequest("The provided next page token is invalid or expired.")
		}
		start = n
	}
	found, refused := q.search(in.JQL)
	if refused != nil {
		return *refused
	}
	fields := map[string]bool{}
	for _, f := range in.Fields {
		fields[f] = true
	}
	if len(in.Fields) == 0 {
		fields["id"] = true // the enhanced search returns ids alone unless asked
	}
	issues := []any{}
	end := min(start+limit, len(found))
	for _, is := range found[min(start, end):end] {
		issues = append(issues, q.issueJSON(is, fields))
	}
	out := map[string]any{"issues": issues, "isLast": end >= len(found)}
	if end < len(found) {
		out["nextPageToken"] = base64.RawURLEncoding.EncodeToString([]byte("offset:" + strconv.Itoa(end)))
	}
	return ok(out)
}

// searchDC serves GET /rest/api/2/search: startAt, maxResults and the
// total matched.
func (q *req) searchDC() answer {
	v := q.r.URL.Query()
	start, ok1 := intParam(v.Get("startAt"), 0)
	limit, ok2 := intParam(v.Get("maxResults"), q.s.pageSize)
	if !ok1 || !ok2 {
		return badRequest("startAt and maxResults must be non-negative numbers.")
	}
	limit = min(limit, q.s.pageSize)
	found, refused := q.search(v.Get("jql"))
	if refused != nil {
		return *refused
	}
	fields := fieldSet(v.Get("fields"))
	issues := []any{}
	end := min(start+limit, len(found))
	for _, is := range found[min(start, end):end] {
		issues = append(issues, q.issueJSON(is, fields))
	}
	return ok(map[string]any{"expand": "schema,names", "startAt": start, "maxResults": limit, "total": len(found), "issues": issues})
}
