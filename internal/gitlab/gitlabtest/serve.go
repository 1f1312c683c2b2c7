package gitlabtest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

const apiPrefix = "/api/v4/"

// answer is one response before it is written.
type answer struct {
	status int
	header map[string]string
	body   any    // sent as JSON when not nil
	text   []byte // sent as plain text instead, when not nil
}

func (a answer) encode() []byte {
	if a.text != nil {
		return a.text
	}
	if a.body == nil {
		return nil
	}
	var b bytes.Buffer
	_ = json.NewEncoder(&b).Encode(a.body)
	return b.Bytes()
}

func ok(body any) answer { return answer{status: http.StatusOK, body: body} }

// message is an error as GitLab sends most: {"message": m}, where m is a
// string or, for a model's validation, a list or map of strings.
func message(status int, m any) answer {
	return answer{status: status, body: map[string]any{"message": m}}
}

func notFound() answer { return message(http.StatusNotFound, "404 Not found") }

// badRequest is a missing or invalid parameter, which GitLab's API layer
// reports under "error" rather than "message".
func badRequest(e string) answer {
	return answer{status: http.StatusBadRequest, body: map[string]any{"error": e}}
}

// serve records the request and answers it: a fault, a 401, or the
// endpoint. A GET answered 200 carries a weak ETag; one whose
// If-None-Match names it is answered 304 without a body.
func (s *Server) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	s.mu.Lock()
	s.calls = append(s.calls, Call{Method: req.Method, Path: req.URL.EscapedPath(), RawQuery: req.URL.RawQuery,
		Header: req.Header.Clone(), Body: string(body)})
	n := len(s.calls)
	a := s.answer(req, body)
	raw := a.encode()
	if req.Method == http.MethodGet && a.status == http.StatusOK {
		sum := sha256.Sum256(raw)
		a.header = with(a.header, "ETag", `W/"`+hex.EncodeToString(sum[:16])+`"`)
		if notModified(req.Header.Get("If-None-Match"), a.header["ETag"]) {
			a.status, raw = http.StatusNotModified, nil
			s.notModified++
		}
	}
	s.calls[n-1].Status = a.status
	if a.status != http.StatusNotModified {
		s.remaining = max(s.remaining-1, 0)
	}
	if time.Now().After(s.reset) {
		s.remaining, s.reset = s.limit, time.Now().Add(time.Minute)
	}
	limit, remaining, reset := s.limit, s.remaining, s.reset
	s.mu.Unlock()

	h := w.Header()
	if raw != nil {
		h.Set("Content-Type", "application/json")
		if a.text != nil {
			h.Set("Content-Type", "text/plain")
		}
	}
	h.Set("X-Request-Id", fmt.Sprintf("01FAKE%08d", n))
	h.Set("RateLimit-Limit", strconv.Itoa(limit))
	h.Set("RateLimit-Observed", strconv.Itoa(limit-remaining))
	h.Set("RateLimit-Remaining", strconv.Itoa(remaining))
	h.Set("RateLimit-Reset", strconv.FormatInt(reset.Unix(), 10))
	h.Set("RateLimit-ResetTime", reset.UTC().Format(http.TimeFormat))
	if a.status == http.StatusTooManyRequests {
		// A throttled request has spent the window, as GitLab's throttle
		// reports it.
		h.Set("RateLimit-Name", "throttle_authenticated_api")
		h.Set("RateLimit-Observed", strconv.Itoa(limit))
		h.Set("RateLimit-Remaining", "0")
	}
	for k, v := range a.header {
		h.Set(k, v)
	}
	w.WriteHeader(a.status)
	_, _ = w.Write(raw)
}

func with(h map[string]string, k, v string) map[string]string {
	out := map[string]string{k: v}
	for hk, hv := range h {
		out[hk] = hv
	}
	return out
}

// notModified reports whether an If-None-Match header names etag, compared
// weakly (RFC 9110 §13.1.2): a W/ prefix on either side is ignored.
func notModified(ifNoneMatch, etag string) bool {
	if ifNoneMatch == "" || etag == "" {
		return false
	}
	want := strings.TrimPrefix(etag, "W/")
	for tag := range strings.SplitSeq(ifNoneMatch, ",") {
		tag = strings.TrimSpace(tag)
		if tag == "*" || strings.TrimPrefix(tag, "W/") == want {
			return true
		}
	}
	return false
}

// fault is the answer f stands for: GitLab's throttle answers 429 in
// plain text, everything else in JSON.
func fault(f Fault) answer {
	var a answer
	switch {
	case f.Status == http.StatusTooManyRequests && f.Message == "":
		a = answer{status: f.Status, text: []byte("Retry later\n")}
	case f.Message == "":
		a = message(f.Status, fmt.Sprintf("%d %s", f.Status, http.StatusText(f.Status)))
	default:
		a = message(f.Status, f.Message)
	}
	if f.RetryAfter > 0 {
		// GitLab's throttle says when the window resets both ways, and
		// client-go waits on RateLimit-Reset rather than Retry-After.
		reset := time.Now().Add(time.Duration(f.RetryAfter) * time.Second)
		a.header = map[string]string{"Retry-After": strconv.Itoa(f.RetryAfter),
			"RateLimit-Reset": strconv.FormatInt(reset.Unix(), 10), "RateLimit-ResetTime": reset.UTC().Format(http.TimeFormat)}
	}
	return a
}

// authorized reports whether req carries the token, as a private token or
// as an OAuth bearer.
func (s *Server) authorized(req *http.Request) bool {
	if s.Token == "" {
		return true
	}
	return req.Header.Get("PRIVATE-TOKEN") == s.Token || req.Header.Get("Authorization") == "Bearer "+s.Token
}

// answer serves one request; the caller holds s.mu.
func (s *Server) answer(req *http.Request, body []byte) answer {
	if f, ok := s.faults[len(s.calls)]; ok {
		delete(s.faults, len(s.calls))
		return fault(f)
	}
	if !s.authorized(req) {
		return message(http.StatusUnauthorized, "401 Unauthorized")
	}
	path, ok := strings.CutPrefix(req.URL.EscapedPath(), apiPrefix)
	if !ok {
		return notFound()
	}
	segs := strings.Split(strings.Trim(path, "/"), "/")
	for i, seg := range segs {
		segs[i] = decode(seg)
	}
	q, err := readParams(req, body)
	if err != nil {
		return badRequest(err.Error())
	}
	c := &ctx{s: s, req: req, q: q}
	if segs[0] == "users" && len(segs) == 1 && req.Method == http.MethodGet {
		return c.users()
	}
	if segs[0] != "projects" || len(segs) < 2 {
		return notFound()
	}
	if c.p = s.lookup(segs[1]); c.p == nil {
		return message(http.StatusNotFound, "404 Project Not Found")
	}
	c.p.refs = nil
	defer func() { c.p.refs = nil }()
	s.sync(c.p)
	return c.route(segs[2:])
}

// lookup finds a project by numeric id or by path.
func (s *Server) lookup(id string) *project {
	if p := s.projects[id]; p != nil {
		return p
	}
	if n, err := strconv.ParseInt(id, 10, 64); err == nil {
		for _, p := range s.projects {
			if p.id == n {
				return p
			}
		}
	}
	return nil
}

func decode(seg string) string {
	if d, err := url.PathUnescape(seg); err == nil {
		return d
	}
	return seg
}

// ctx is one request being served on one project.
type ctx struct {
	s   *Server
	req *http.Request
	p   *project
	q   params
}

// params are a request's parameters, from its query and its body (JSON or
// a form) alike, as GitLab reads them: a list's "key[]" is filed as key,
// and a JSON object's fields as "key[field]".
type params map[string][]string

func readParams(req *http.Request, body []byte) (params, error) {
	q := params{}
	add := func(vals url.Values) {
		for k, vs := range vals {
			k = strings.TrimSuffix(k, "[]")
			q[k] = append(q[k], vs...)
		}
	}
	add(req.URL.Query())
	if len(bytes.TrimSpace(body)) == 0 {
		return q, nil
	}
	if !strings.HasPrefix(req.Header.Get("Content-Type"), "application/json") {
		vals, err := url.ParseQuery(string(body))
		if err != nil {
			return nil, fmt.Errorf("body is not a form: %v", err)
		}
		add(vals)
		return q, nil
	}
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("body is not JSON: %v", err)
	}
	for k, v := range m {
		flatten(q, k, v)
	}
	return q, nil
}

func flatten(q params, key string, v any) {
	switch v := v.(type) {
	case nil:
	case []any:
		q[key] = append(q[key], []string{}...)
		for _, e := range v {
			flatten(q, key, e)
		}
	case map[string]any:
		for k, e := range v {
			flatten(q, key+"["+k+"]", e)
		}
	default:
		q[key] = append(q[key], fmt.Sprint(v))
	}
}

func (q params) str(k string) string {
	if vs := q[k]; len(vs) > 0 {
		return vs[0]
	}
	return ""
}

func (q params) has(k string) bool { _, ok := q[k]; return ok }

func (q params) boolean(k string) bool {
	b, _ := strconv.ParseBool(q.str(k))
	return b
}

func (q params) num(k string) int {
	n, _ := strconv.Atoi(q.str(k))
	return n
}

// list splits comma-separated values, as labels are sent.
func (q params) list(k string) []string {
	out := []string{}
	for _, v := range q[k] {
		for e := range strings.SplitSeq(v, ",") {
			if e = strings.TrimSpace(e); e != "" {
				out = append(out, e)
			}
		}
	}
	return out
}

// time reads a time filter; zero when absent or unreadable.
func (q params) time(k string) time.Time {
	t, _ := time.Parse(time.RFC3339, q.str(k))
	return t
}

// page cuts items to the page the request asks for (per_page defaults to
// 20, at most 100) and sets GitLab's offset pagination headers.
func (c *ctx) page(items []any) answer {
	per := c.q.num("per_page")
	if per <= 0 {
		per = 20
	}
	per = min(per, 100)
	pageNo := max(c.q.num("page"), 1)
	total := len(items)
	pages := max((total+per-1)/per, 1)
	from, to := min((pageNo-1)*per, total), min(pageNo*per, total)
	h := map[string]string{
		"X-Page": strconv.Itoa(pageNo), "X-Per-Page": strconv.Itoa(per), "X-Total": strconv.Itoa(total),
		"X-Total-Pages": strconv.Itoa(pages), "X-Next-Page": "", "X-Prev-Page": "",
	}
	link := func(n int, rel string) string {
		u := *c.req.URL
		u.Scheme, u.Host = "http", c.req.Host
		v := u.Query()
		v.Set("page", strconv.Itoa(n))
		v.Set("per_page", strconv.Itoa(per))
		u.RawQuery = v.Encode()
		return fmt.Sprintf(`<%s>; rel="%s"`, u.String(), rel)
	}
	var links []string
	if pageNo > 1 {
		h["X-Prev-Page"] = strconv.Itoa(pageNo - 1)
		links = append(links, link(pageNo-1, "prev"))
	}
	if pageNo < pages {
		h["X-Next-Page"] = strconv.Itoa(pageNo + 1)
		links = append(links, link(pageNo+1, "next"))
	}
	links = append(links, link(1, "first"), link(pages, "last"))
	h["Link"] = strings.Join(links, ", ")
	return answer{status: http.StatusOK, header: h, body: append([]any{}, items[from:to]...)}
}

// ts is a time as GitLab writes it: ISO 8601 in UTC with milliseconds;
// null when zero.
func ts(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}
