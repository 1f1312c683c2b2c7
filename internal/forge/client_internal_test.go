package forge

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
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
		if got := apiMessage([]byte(tt.body)); got != tt.want {
			t.Errorf("apiMessage(%q) = %q, want %q", tt.body, got, tt.want)
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
