package jiratest

import (
	"bytes"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// answer is one response before it is written.
type answer struct {
	status int
	header map[string]string
	body   any // sent as JSON when not nil
}

func ok(body any) answer { return answer{status: http.StatusOK, body: body} }

// jiraError is Jira's error shape: messages, and messages by field.
func jiraError(status int, messages []string, fields map[string]string) answer {
	if messages == nil {
		messages = []string{}
	}
	if fields == nil {
		fields = map[string]string{}
	}
	return answer{status: status, body: map[string]any{"errorMessages": messages, "errors": fields}}
}

func notFound() answer {
	return jiraError(http.StatusNotFound, []string{"Issue does not exist or you do not have permission to see it."}, nil)
}

func badRequest(msg string) answer { return jiraError(http.StatusBadRequest, []string{msg}, nil) }

// req is one request being served, the Server's lock held.
type req struct {
	s    *Server
	r    *http.Request
	body []byte
	api  string // "2" or "3"
}

// serve records the request and answers it: a fault, a 401, or the
// endpoint.
func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	s.mu.Lock()
	s.calls = append(s.calls, Call{Method: r.Method, Path: r.URL.EscapedPath(), RawQuery: r.URL.RawQuery,
		Header: r.Header.Clone(), Body: string(body)})
	n := len(s.calls)
	f, faulty := s.faults[n]
	var a answer
	switch {
	case faulty && !f.AfterServe:
		a = fault(f)
	case !s.authorized(r):
		a = jiraError(http.StatusUnauthorized, []string{"You are not authenticated. Authentication required to perform this operation."}, nil)
	default:
		a = (&req{s: s, r: r, body: body}).route()
		if faulty {
			a = fault(f)
		}
	}
	s.calls[n-1].Status = a.status
	s.mu.Unlock()

	var raw []byte
	if a.body != nil {
		var b bytes.Buffer
		_ = json.NewEncoder(&b).Encode(a.body)
		raw = b.Bytes()
		w.Header().Set("Content-Type", "application/json;charset=UTF-8")
	}
	w.Header().Set("X-Arequestid", fmt.Sprintf("fake-%06d", n))
	for k, v := range a.header {
		w.Header().Set(k, v)
	}
	w.WriteHeader(a.status)
	_, _ = w.Write(raw)
}

// fault is the answer f stands for.
func fault(f Fault) answer {
	msg := f.Message
	if msg == "" {
		msg = http.StatusText(f.Status)
		if f.Status == http.StatusTooManyRequests {
			msg = "Rate limit exceeded."
		}
	}
	a := jiraError(f.Status, []string{msg}, nil)
	if f.RetryAfter > 0 {
		a.header = map[string]string{"Retry-After": strconv.Itoa(f.RetryAfter)}
	}
	return a
}

// authorized checks the credential as the flavor takes it: Basic with the
// email:api_token pair on Cloud, Bearer with the token on Data Center.
// serverInfo answers anonymous callers, as both do; a wrong credential is
// refused even there.
func (s *Server) authorized(r *http.Request) bool {
	h := r.Header.Get("Authorization")
	if h == "" {
		return strings.HasSuffix(r.URL.Path, "/serverInfo")
	}
	want := "Bearer " + s.Token
	if s.Flavor == Cloud {
		want = "Basic " + base64.StdEncoding.EncodeToString([]byte(s.Token))
	}
	return subtle.ConstantTimeCompare([]byte(h), []byte(want)) == 1
}

// route serves /rest/api/{2,3}/...: Cloud serves v3 (and serverInfo on
// v2), Data Center v2 alone, as the real ones do.
func (q *req) route() answer {
	rest, found := strings.CutPrefix(q.r.URL.Path, "/rest/api/")
	if !found {
		return jiraError(http.StatusNotFound, []string{"no such resource"}, nil)
	}
	q.api, rest, _ = strings.Cut(rest, "/")
	segs := strings.Split(rest, "/")
	get, post := q.r.Method == http.MethodGet, q.r.Method == http.MethodPost
	if rest == "serverInfo" && get && (q.api == "2" || q.api == "3" && q.s.Flavor == Cloud) {
		return ok(q.serverInfo())
	}
	want := "2"
	if q.s.Flavor == Cloud {
		want = "3"
	}
	if q.api != want {
		return jiraError(http.StatusNotFound, []string{"null for uri: " + q.r.URL.String()}, nil)
	}
	switch {
	case rest == "search" && q.s.Flavor == Cloud:
		return jiraError(http.StatusGone, []string{"The requested API has been removed. Please migrate to the /rest/api/3/search/jql API."}, nil)
	case rest == "search" && get:
		return q.searchDC()
	case rest == "search/jql" && post:
		return q.searchCloud()
	case len(segs) >= 2 && segs[0] == "issue":
		is := q.s.issues[segs[1]]
		if is == nil {
			return notFound()
		}
		return q.routeIssue(is, segs[2:])
	}
	return jiraError(http.StatusNotFound, []string{"null for uri: " + q.r.URL.String()}, nil)
}

func (q *req) routeIssue(is *Issue, segs []string) answer {
	get, post := q.r.Method == http.MethodGet, q.r.Method == http.MethodPost
	switch {
	case len(segs) == 0 && get:
		return ok(q.issueJSON(is, fieldSet(q.r.URL.Query().Get("fields"))))
	case len(segs) == 1 && segs[0] == "comment" && get:
		return q.listComments(is)
	case len(segs) == 1 && segs[0] == "comment" && post:
		return q.addComment(is)
	case len(segs) == 1 && segs[0] == "transitions" && get:
		return ok(map[string]any{"expand": "transitions", "transitions": q.transitionsJSON(is)})
	case len(segs) == 1 && segs[0] == "transitions" && post:
		return q.transition(is)
	case len(segs) == 1 && segs[0] == "remotelink" && get:
		return q.listLinks(is)
	case len(segs) == 1 && segs[0] == "remotelink" && post:
		return q.upsertLink(is)
	}
	return jiraError(http.StatusMethodNotAllowed, []string{"method not allowed"}, nil)
}

func (q *req) serverInfo() map[string]any {
	info := map[string]any{
		"baseUrl": q.s.URL, "serverTitle": "Jira", "serverTime": time.Now().Format(timeFormat),
		"scmInfo": "0123456789abcdef", "defaultLocale": map[string]string{"locale": "en_US"},
	}
	if q.s.Flavor == Cloud {
		info["version"], info["versionNumbers"], info["deploymentType"], info["buildNumber"] = "1001.0.0-SNAPSHOT", []int{1001, 0, 0}, "Cloud", 100250
	} else {
		info["version"], info["versionNumbers"], info["deploymentType"], info["buildNumber"] = "9.12.2", []int{9, 12, 2}, "Server", 9120002
	}
	return info
}

// timeFormat is how Jira writes times.
const timeFormat = "2006-01-02T15:04:05.000-0700"

// fieldSet reads a fields parameter: nil means all.
func fieldSet(param string) map[string]bool {
	if param == "" || param == "*all" || param == "*navigable" {
		return nil
	}
	out := map[string]bool{}
	for f := range strings.SplitSeq(param, ",") {
		out[strings.TrimSpace(f)] = true
	}
	return out
}

func (q *req) self(path string) string { return q.s.URL + "/rest/api/" + q.api + "/" + path }

func (q *req) issueID(is *Issue) string {
	for i, k := range q.s.order {
		if k == is.Key {
			return strconv.Itoa(10001 + i)
		}
	}
	return "10000"
}

func (q *req) issueJSON(is *Issue, fields map[string]bool) map[string]any {
	all := map[string]any{
		"summary":     is.Summary,
		"description": q.s.text(is.Description),
		"labels":      nonNil(is.Labels),
		"status":      q.statusJSON(is.Status),
		"reporter":    q.userJSON(is.Reporter),
		"comment":     q.commentPage(is, 0, q.s.pageSize, false),
	}
	out := map[string]any{}
	for k, v := range all {
		if fields == nil || fields[k] {
			out[k] = v
		}
	}
	id := q.issueID(is)
	return map[string]any{"expand": "renderedFields,names,schema,operations,editmeta,changelog,versionedRepresentations",
		"id": id, "self": q.self("issue/" + id), "key": is.Key, "fields": out}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func (q *req) userJSON(name string) map[string]any {
	if q.s.Flavor == Cloud {
		return map[string]any{"accountId": "5b10ac8d82e05b22cc7d4ef5-" + strings.ReplaceAll(strings.ToLower(name), " ", ""),
			"displayName": name, "active": true, "accountType": "atlassian"}
	}
	login := strings.ReplaceAll(strings.ToLower(name), " ", ".")
	return map[string]any{"name": login, "key": "JIRAUSER" + strconv.Itoa(len(login)+10000), "displayName": name, "active": true}
}

// category is the status category key a status is in.
func (s *Server) category(status string) string {
	if c, ok := s.categories[strings.ToLower(status)]; ok {
		return c
	}
	return "indeterminate"
}

var categoryNames = map[string][2]string{"new": {"2", "To Do"}, "indeterminate": {"4", "In Progress"}, "done": {"3", "Done"}}

func (q *req) statusJSON(name string) map[string]any {
	cat := q.s.category(name)
	id := strconv.Itoa(10000 + len(name)*7 + int(name[0]))
	return map[string]any{
		"self": q.self("status/" + id), "description": "", "iconUrl": q.s.URL + "/images/icons/statuses/generic.png",
		"name": name, "id": id,
		"statusCategory": map[string]any{"self": q.self("statuscategory/" + categoryNames[cat][0]),
			"id": categoryNames[cat][0], "key": cat, "colorName": "blue-gray", "name": categoryNames[cat][1]},
	}
}

// text serves a description or comment body as the flavor does: an ADF
// document on Cloud, a string on Data Center; "" as null.
func (s *Server) text(body string) any {
	if body == "" {
		return nil
	}
	if s.Flavor != Cloud {
		return body
	}
	if t := strings.TrimSpace(body); strings.HasPrefix(t, "{") && json.Valid([]byte(t)) {
		return json.RawMessage(t)
	}
	return markdownDoc(body)
}

// markdownDoc wraps Markdown as ADF made of its paragraphs, each line a
// text node and a hard break between lines: enough for a test's issue.
func markdownDoc(md string) map[string]any {
	var content []any
	for para := range strings.SplitSeq(strings.ReplaceAll(md, "\r\n", "\n"), "\n\n") {
		if strings.TrimSpace(para) == "" {
			continue
		}
		var inline []any
		for i, line := range strings.Split(strings.Trim(para, "\n"), "\n") {
			if i > 0 {
				inline = append(inline, map[string]any{"type": "hardBreak"})
			}
			if line != "" {
				inline = append(inline, map[string]any{"type": "text", "text": line})
			}
		}
		content = append(content, map[string]any{"type": "paragraph", "content": inline})
	}
	if content == nil {
		content = []any{}
	}
	return map[string]any{"type": "doc", "version": 1, "content": content}
}
