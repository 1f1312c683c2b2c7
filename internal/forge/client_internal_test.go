package forge

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/cadre-dev/cadre/internal/redact"
)

func TestNextLink(t *testing.T) {
	tests := map[string]string{
		`<https://api.github.com/x?page=2>; rel="next", <https://api.github.com/x?page=5>; rel="last"`: "https://api.github.com/x?page=2",
		`<https://api.github.com/x?page=1>; rel="prev", <https://api.github.com/x?page=3>; rel="next"`: "https://api.github.com/x?page=3",
		`<https://api.github.com/x?page=1>; rel="first"`:                                               "",
		``:         "",
		`garbage`:  "",
		`<a>;rel=`: "",
	}
	for in, want := range tests {
		if got := nextLink(in); got != want {
			t.Errorf("nextLink(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestAPIMessage(t *testing.T) {
	tests := []struct{ body, want string }{
		{`{"message":"Not Found","documentation_url":"x"}`, "Not Found"},
		{`{"message":"Validation Failed","errors":[{"resource":"PullRequest","code":"custom","message":"A pull request already exists for o:b."}]}`,
			"Validation Failed: A pull request already exists for o:b."},
		{`{"message":"Validation Failed","errors":[{"resource":"PullRequest","code":"missing_field","field":"head"}]}`,
			"Validation Failed: head missing_field"},
		{"<html>\n<body>Bad gateway</body>\n</html>", "<html> <body>Bad gateway</body> </html>"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := apiMessage([]byte(tt.body), func(s string) string { return s }); got != tt.want {
			t.Errorf("apiMessage(%q) = %q, want %q", tt.body, got, tt.want)
		}
	}
}

// A secret the message's shortening would cut is masked whole first, so
// not even its start is shown.
func TestAPIMessageMasksBeforeShortening(t *testing.T) {
	const tok = "ghp_SecretTokenValue0123456789"
	scrub := redact.New(tok).String
	for _, body := range []string{`{"message":"` + strings.Repeat("x", 290) + " " + tok + `"}`, strings.Repeat("y", 295) + " " + tok} {
		if got := apiMessage([]byte(body), scrub); strings.Contains(got, tok[:8]) || len(got) > 310 {
			t.Errorf("apiMessage(%q) = %q", body, got)
		}
	}
}

func TestRetryAfterHeader(t *testing.T) {
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		v    string
		want time.Duration
		ok   bool
	}{
		{"30", 30 * time.Second, true},
		{"0", 0, true},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second, true},
		{now.Add(-time.Minute).Format(http.TimeFormat), 0, true},
		{"soon", 0, false},
		{"", 0, false},
	}
	for _, tt := range tests {
		h := http.Header{}
		if tt.v != "" {
			h.Set("Retry-After", tt.v)
		}
		got, ok := retryAfter(h, now)
		if got != tt.want || ok != tt.ok {
			t.Errorf("retryAfter(%q) = %v, %v; want %v, %v", tt.v, got, ok, tt.want, tt.ok)
		}
	}
}

// A Link to another host is not followed: the token would go with it.
func TestPagesStayOnAPIHost(t *testing.T) {
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("request sent off the API host, Authorization %q", r.Header.Get("Authorization"))
	}))
	defer elsewhere.Close()
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Link", fmt.Sprintf(`<%s/repos/o/r/issues?page=2>; rel="next"`, elsewhere.URL))
		fmt.Fprint(w, `[{"number":1,"title":"t"}]`)
	}))
	defer api.Close()
	c, err := New(api.URL, "ghp_tokentokentoken")
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Issues(context.Background(), "o", "r", Query{Limit: 10})
	if err == nil || !strings.Contains(err.Error(), "next page link") {
		t.Fatalf("err = %v", err)
	}
}

// A list whose Link names an "after" cursor, as GitHub gives for some
// lists, is followed by that cursor.
func TestPagesByCursor(t *testing.T) {
	var queries []string
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		queries = append(queries, r.URL.RawQuery)
		if r.URL.Query().Get("after") == "Y3Vyc29y" {
			fmt.Fprint(w, `[{"number":2,"title":"t2"}]`)
			return
		}
		w.Header().Set("Link", fmt.Sprintf(`<http://%s/repos/o/r/issues?per_page=100&after=Y3Vyc29y>; rel="next"`, r.Host))
		fmt.Fprint(w, `[{"number":1,"title":"t"}]`)
	}))
	defer api.Close()
	c, err := New(api.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Issues(context.Background(), "o", "r", Query{})
	if err != nil || len(got) != 2 || got[1].Number != 2 {
		t.Fatalf("Issues = %+v, %v", got, err)
	}
	if len(queries) != 2 {
		t.Fatalf("queries %q", queries)
	}
	if q, _ := url.ParseQuery(queries[1]); q.Get("after") != "Y3Vyc29y" || q.Get("page") != "" {
		t.Errorf("second page asked as %q", queries[1])
	}
}

// A redirect to another host, another port included, is not followed.
func TestRedirectOffHostRefused(t *testing.T) {
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("request sent off the API host, Authorization %q", r.Header.Get("Authorization"))
	}))
	defer elsewhere.Close()
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, elsewhere.URL+r.URL.Path, http.StatusFound)
	}))
	defer api.Close()
	c, err := New(api.URL, "ghp_tokentokentoken", WithRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Issue(context.Background(), Ref{Owner: "o", Repo: "r", Number: 1})
	if err == nil || !strings.Contains(err.Error(), "redirected off the API host to 127.0.0.1") || strings.Contains(err.Error(), "ghp_") {
		t.Fatalf("err = %v", err)
	}
}

// An Enterprise base URL keeps its path prefix.
func TestEnterpriseBasePath(t *testing.T) {
	var got string
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.URL.Path
		fmt.Fprint(w, `{"number":3,"state":"open","head":{"ref":"h","label":"o:h"},"base":{"ref":"main"}}`)
	}))
	defer api.Close()
	c, err := New(api.URL+"/api/v3/", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.PRState(context.Background(), "o", "r", 3); err != nil {
		t.Fatal(err)
	}
	if got != "/api/v3/repos/o/r/pulls/3" {
		t.Errorf("path %q", got)
	}
}

func TestLastLines(t *testing.T) {
	// Longer than a line kept and the read buffer, and cut inside a rune.
	long := "a" + strings.Repeat("é", 100<<10)
	tests := []struct {
		in   string
		n    int
		want string
	}{
		{"", 3, ""},
		{"a\nb\nc\n", 2, "b\nc"},
		{"a\nb\nc", 2, "b\nc"},
		{"\ufeffonly\r\n", 5, "only"},
		{"a\n\n\nb\n", 3, "\n\nb"},
		{"x\n" + long + "\ny\n", 2, long[:maxLogLine-1] + " …\ny"},
	}
	for _, tt := range tests {
		got, err := lastLines(strings.NewReader(tt.in), tt.n)
		if err != nil || got != tt.want {
			t.Errorf("lastLines(%.20q…, %d) = %.40q…, %v; want %.40q…", tt.in, tt.n, got, err, tt.want)
		}
	}
}
