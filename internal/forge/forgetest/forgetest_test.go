package forgetest

import (
	"encoding/json"
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
