package forgetest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

func get(t *testing.T, s *Server, method, path, token, body string) (int, http.Header, any) {
	t.Helper()
	req, err := http.NewRequest(method, strings.TrimSuffix(s.URL, "/")+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var doc any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("%s %s: answer is not JSON: %q", method, path, raw)
	}
	return resp.StatusCode, resp.Header, doc
}

// The fake answers in GitHub's documented shapes.
func TestWireFormat(t *testing.T) {
	s := New(t, "tok")
	n := s.AddIssue("o", "r", Issue{Title: "t", Labels: []string{"bug"}})
	pr := s.AddPR("o", "r", PR{Title: "p", Head: "feature", Base: "main"})

	status, _, doc := get(t, s, "GET", "/repos/o/r/issues", "", "")
	if status != 401 || doc.(map[string]any)["message"] != "Bad credentials" {
		t.Errorf("no token: %d %v", status, doc)
	}

	status, h, doc := get(t, s, "GET", "/repos/o/r/issues?per_page=1", "tok", "")
	list := doc.([]any)
	if status != 200 || len(list) != 1 || h.Get("X-RateLimit-Remaining") == "" {
		t.Fatalf("list: %d %v %v", status, h, doc)
	}
	if first := list[0].(map[string]any); first["number"] != float64(pr) || first["pull_request"] == nil {
		t.Errorf("newest first with pull_request key: %v", first)
	}
	if !strings.Contains(h.Get("Link"), `rel="next"`) || !strings.Contains(h.Get("Link"), "page=2") {
		t.Errorf("Link %q", h.Get("Link"))
	}

	_, _, doc = get(t, s, "GET", "/repos/o/r/issues/1", "tok", "")
	is := doc.(map[string]any)
	if is["number"] != float64(n) || is["body"] != nil || is["user"].(map[string]any)["login"] != "octocat" ||
		is["labels"].([]any)[0].(map[string]any)["name"] != "bug" || is["pull_request"] != nil {
		t.Errorf("issue %v", is)
	}

	status, _, doc = get(t, s, "POST", "/repos/o/r/pulls", "tok", `{"title":"again","head":"feature","base":"main"}`)
	e := doc.(map[string]any)
	if status != 422 || e["message"] != "Validation Failed" ||
		!strings.Contains(e["errors"].([]any)[0].(map[string]any)["message"].(string), "A pull request already exists for o:feature") {
		t.Errorf("duplicate create: %d %v", status, doc)
	}

	// A head filter without the owner is ignored, as on GitHub.
	_, _, doc = get(t, s, "GET", "/repos/o/r/pulls?head=nothing&state=all", "tok", "")
	if len(doc.([]any)) != 1 {
		t.Errorf("head without owner filtered: %v", doc)
	}
	_, _, doc = get(t, s, "GET", "/repos/o/r/pulls?head=o:nothing&state=all", "tok", "")
	if len(doc.([]any)) != 0 {
		t.Errorf("head filter ignored: %v", doc)
	}
	_, _, doc = get(t, s, "GET", "/repos/o/r/pulls/2", "tok", "")
	p := doc.(map[string]any)
	if p["merged"] != false || p["head"].(map[string]any)["label"] != "o:feature" || p["base"].(map[string]any)["ref"] != "main" {
		t.Errorf("pull request %v", p)
	}

	status, _, _ = get(t, s, "GET", "/repos/o/missing/issues", "tok", "")
	if status != 404 {
		t.Errorf("missing repository: %d", status)
	}
	if got := len(s.Calls()); got != 8 {
		t.Errorf("%d calls recorded, want 8", got)
	}
}

func TestFaultOnNthCall(t *testing.T) {
	s := New(t, "")
	s.AddRepo("o", "r")
	s.Fail(2, RetryAfter(429, 9))
	if status, _, _ := get(t, s, "GET", "/repos/o/r/issues", "", ""); status != 200 {
		t.Errorf("call 1: %d", status)
	}
	status, h, _ := get(t, s, "GET", "/repos/o/r/issues", "", "")
	if status != 429 || h.Get("Retry-After") != "9" {
		t.Errorf("call 2: %d %v", status, h)
	}
	if status, _, _ := get(t, s, "GET", "/repos/o/r/issues", "", ""); status != 200 {
		t.Errorf("call 3: %d", status)
	}
}

// Writes are counted per resource the way a client must serialise them.
func TestResource(t *testing.T) {
	tests := []struct{ path, body, want string }{
		{"/repos/o/r/issues/7/comments", `{"body":"x"}`, "o/r#7"},
		{"/repos/o/r/issues/7/labels", `{"labels":["a"]}`, "o/r#7"},
		{"/repos/o/r/pulls/7", `{"title":"x"}`, "o/r#7"},
		{"/repos/o/r/pulls", `{"head":"o:cadre/1"}`, "o/r@o:cadre/1"},
		{"/elsewhere", ``, "/elsewhere"},
	}
	for _, tt := range tests {
		if got := resource(tt.path, []byte(tt.body)); got != tt.want {
			t.Errorf("resource(%q) = %q, want %q", tt.path, got, tt.want)
		}
	}
}

// The quota set is reported, and spent by each request.
func TestSetRateLimit(t *testing.T) {
	s := New(t, "")
	s.AddIssue("o", "r", Issue{Title: "t"})
	s.SetRateLimit(40, 1000)
	_, h, _ := get(t, s, "GET", "/repos/o/r/issues/1", "", "")
	if h.Get("X-RateLimit-Remaining") != "39" || h.Get("X-RateLimit-Limit") != "1000" {
		t.Errorf("remaining %q of %q, want 39 of 1000", h.Get("X-RateLimit-Remaining"), h.Get("X-RateLimit-Limit"))
	}
}

// A GET answered 200 carries an ETag; asked again with it, unchanged, it
// is answered 304 without a body, counted apart and free of quota.
func TestConditionalGET(t *testing.T) {
	s := New(t, "")
	for range 3 {
		s.AddIssue("o", "r", Issue{Title: "t"})
	}
	send := func(path, etag string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest("GET", strings.TrimSuffix(s.URL, "/")+path, nil)
		if etag != "" {
			req.Header.Set("If-None-Match", etag)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	first := send("/repos/o/r/issues?per_page=2", "")
	etag := first.Header.Get("ETag")
	if first.StatusCode != 200 || !strings.HasPrefix(etag, `W/"`) || first.Header.Get("Link") == "" {
		t.Fatalf("first: %d, ETag %q", first.StatusCode, etag)
	}
	again := send("/repos/o/r/issues?per_page=2", etag)
	if again.StatusCode != 304 || again.ContentLength > 0 || again.Header.Get("ETag") != etag ||
		again.Header.Get("X-RateLimit-Remaining") != first.Header.Get("X-RateLimit-Remaining") {
		t.Errorf("unchanged: %d, %v", again.StatusCode, again.Header)
	}
	if other := send("/repos/o/r/issues/1", etag); other.StatusCode != 200 {
		t.Errorf("another resource with the same ETag: %d", other.StatusCode)
	}
	s.AddComment("o", "r", 3, "bob", "news")
	if changed := send("/repos/o/r/issues?per_page=2", etag); changed.StatusCode != 200 || changed.Header.Get("ETag") == etag {
		t.Errorf("changed: %d, ETag %q", changed.StatusCode, changed.Header.Get("ETag"))
	}
	if bad := send("/repos/o/missing/issues", `"x"`); bad.StatusCode != 404 || bad.Header.Get("ETag") != "" {
		t.Errorf("an error: %d, ETag %q", bad.StatusCode, bad.Header.Get("ETag"))
	}
	if got, want := s.Counts(), (Tally{Requests: 5, NotModified: 1}); got != want || got.Charged() != 4 {
		t.Errorf("Counts() = %+v, want %+v", got, want)
	}
	if st := s.Calls()[1].Status; st != 304 {
		t.Errorf("recorded status %d", st)
	}
}

func TestNotModified(t *testing.T) {
	tests := []struct {
		header, etag string
		want         bool
	}{
		{`W/"abc"`, `W/"abc"`, true},
		{`"abc"`, `W/"abc"`, true},
		{`"x", W/"abc"`, `W/"abc"`, true},
		{`*`, `W/"abc"`, true},
		{`"abd"`, `W/"abc"`, false},
		{``, `W/"abc"`, false},
	}
	for _, tt := range tests {
		if got := notModified(tt.header, tt.etag); got != tt.want {
			t.Errorf("notModified(%q, %q) = %v", tt.header, tt.etag, got)
		}
	}
}

// A job's log is a 302 to a signed link served without credentials.
func TestJobLogRedirect(t *testing.T) {
	s := New(t, "tok")
	s.AddRepo("o", "r")
	s.SetJobLog("o", "r", 77, "\ufeffstep 1\nboom\n")
	req, _ := http.NewRequest("GET", strings.TrimSuffix(s.URL, "/")+"/repos/o/r/actions/jobs/77/logs", nil)
	req.Header.Set("Authorization", "Bearer tok")
	resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc := resp.Header.Get("Location")
	if resp.StatusCode != 302 || !strings.Contains(loc, "sig=") {
		t.Fatalf("logs: %d, Location %q", resp.StatusCode, loc)
	}
	dl, err := http.Get(loc)
	if err != nil {
		t.Fatal(err)
	}
	text, _ := io.ReadAll(dl.Body)
	dl.Body.Close()
	if dl.StatusCode != 200 || string(text) != "\ufeffstep 1\nboom\n" {
		t.Errorf("download: %d %q", dl.StatusCode, text)
	}
	if c := s.Counts(); c.Downloads != 1 || c.Charged() != 1 {
		t.Errorf("Counts() = %+v", c)
	}
	if status, _, _ := get(t, s, "GET", "/repos/o/r/actions/jobs/78/logs", "tok", ""); status != 404 {
		t.Errorf("no log: %d", status)
	}
}

// Squash and rebase make one commit on the base; a pull request without a
// git directory merges in the fake alone.
func TestMergeMethods(t *testing.T) {
	g := NewGitRepo(t)
	g.Commit("main", "", "start", map[string]string{"a.txt": "a\n"})
	g.Commit("sq", "main", "squash me", map[string]string{"b.txt": "b\n"})
	g.Commit("rb", "main", "rebase me\n\nwith a body", map[string]string{"c.txt": "c\n"})
	s := New(t, "")
	s.AddRepo("o", "r")
	s.SetGitDir("o", "r", g.Dir)
	sq := s.AddPR("o", "r", PR{Title: "Squash", Body: "why", Head: "sq", Base: "main"})
	rb := s.AddPR("o", "r", PR{Title: "Rebase", Head: "rb", Base: "main"})
	bare := s.AddPR("o", "q", PR{Title: "No git", Head: "x", Base: "main", HeadSHA: "feedface"})

	before := g.Rev("main")
	status, _, doc := get(t, s, "PUT", fmt.Sprintf("/repos/o/r/pulls/%d/merge", sq), "", `{"merge_method":"squash"}`)
	if status != 200 || doc.(map[string]any)["sha"] != g.Rev("main") {
		t.Fatalf("squash: %d %v", status, doc)
	}
	if p := g.Parents("main"); len(p) != 1 || p[0] != before || g.Message("main") != "Squash (#1)\n\nwhy" || g.Read("main", "b.txt") != "b" {
		t.Errorf("squash commit: parents %v, message %q", p, g.Message("main"))
	}
	status, _, doc = get(t, s, "PUT", fmt.Sprintf("/repos/o/r/pulls/%d/merge", rb), "", `{"merge_method":"rebase","sha":"`+g.Rev("rb")+`"}`)
	if status != 200 || g.Message("main") != "rebase me\n\nwith a body" || g.Read("main", "b.txt") != "b" || g.Read("main", "c.txt") != "c" {
		t.Errorf("rebase: %d %v, message %q", status, doc, g.Message("main"))
	}
	if status, _, _ := get(t, s, "PUT", fmt.Sprintf("/repos/o/r/pulls/%d/merge", rb), "", `{}`); status != 405 {
		t.Errorf("merged again: %d", status)
	}
	if status, _, _ := get(t, s, "PUT", fmt.Sprintf("/repos/o/q/pulls/%d/merge", bare), "", `{"merge_method":"fast"}`); status != 422 {
		t.Errorf("unknown method: %d", status)
	}
	status, _, doc = get(t, s, "PUT", fmt.Sprintf("/repos/o/q/pulls/%d/merge", bare), "", `{"sha":"feedface"}`)
	if p := s.PRs("o", "q")[0]; status != 200 || !p.Merged || p.State != "closed" || p.MergeCommit != doc.(map[string]any)["sha"] {
		t.Errorf("merge without git: %d %v, %+v", status, doc, p)
	}
}

// A reviewer's latest verdict asking for changes blocks the merge; a
// later approval by the same reviewer lifts it.
func TestChangesRequestedBlock(t *testing.T) {
	s := New(t, "")
	n := s.AddPR("o", "r", PR{Title: "t", Head: "h", Base: "main", HeadSHA: "cafe"})
	state := func() string {
		_, _, doc := get(t, s, "GET", fmt.Sprintf("/repos/o/r/pulls/%d", n), "", "")
		return doc.(map[string]any)["mergeable_state"].(string)
	}
	s.AddReview("o", "r", n, Review{Author: "alice", State: "CHANGES_REQUESTED"})
	s.AddReview("o", "r", n, Review{Author: "alice", State: "COMMENTED"})
	if got := state(); got != "blocked" {
		t.Errorf("after a change request: %q", got)
	}
	if status, _, _ := get(t, s, "PUT", fmt.Sprintf("/repos/o/r/pulls/%d/merge", n), "", `{}`); status != 405 {
		t.Errorf("blocked merge: %d", status)
	}
	s.AddReview("o", "r", n, Review{Author: "alice", State: "APPROVED"})
	s.SetCheckRun("o", "r", "cafe", CheckRun{Name: "ci", Status: "in_progress"})
	if got := state(); got != "unstable" {
		t.Errorf("approved, check running: %q", got)
	}
}
