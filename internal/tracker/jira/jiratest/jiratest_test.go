package jiratest_test

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"testing"

	"github.com/cadre-dev/cadre/internal/tracker/jira/jiratest"
)

func get(t *testing.T, srv *jiratest.Server, path, auth string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out map[string]any
	_ = json.Unmarshal(b, &out)
	return resp.StatusCode, out
}

func TestAuthAndErrorShape(t *testing.T) {
	cloud := jiratest.New(t, jiratest.Cloud, "bot@acme.dev:secret-token")
	cloud.AddIssue(jiratest.Issue{Key: "PROJ-1", Summary: "s"})
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte("bot@acme.dev:secret-token"))
	if st, body := get(t, cloud, "/rest/api/3/issue/PROJ-1", "Bearer secret-token"); st != 401 || body["errorMessages"] == nil || body["errors"] == nil {
		t.Errorf("Bearer on Cloud = %d %v, want 401 in Jira's error shape", st, body)
	}
	if st, body := get(t, cloud, "/rest/api/2/serverInfo", ""); st != 200 || body["deploymentType"] != "Cloud" {
		t.Errorf("anonymous serverInfo = %d %v", st, body)
	}
	st, body := get(t, cloud, "/rest/api/3/issue/PROJ-1?fields=summary,status", basic)
	fields, _ := body["fields"].(map[string]any)
	if st != 200 || fields["summary"] != "s" || fields["description"] != nil || fields["status"].(map[string]any)["name"] != "To Do" {
		t.Errorf("issue = %d %v", st, body)
	}
	if st, _ := get(t, cloud, "/rest/api/3/search?jql=project%3DPROJ", basic); st != http.StatusGone {
		t.Errorf("Cloud's removed search = %d, want 410", st)
	}

	dc := jiratest.New(t, jiratest.DataCenter, "pat-secret-token")
	dc.AddIssue(jiratest.Issue{Key: "PROJ-1", Summary: "s", Labels: []string{"cadre"}})
	if st, _ := get(t, dc, "/rest/api/3/issue/PROJ-1", "Bearer pat-secret-token"); st != 404 {
		t.Errorf("v3 on Data Center = %d, want 404", st)
	}
	for jql, want := range map[string]int{
		`project = PROJ AND (labels = "cadre") ORDER BY key`: 200,
		`project = PROJ AND summary ~ "x"`:                   400,
		`project = PROJ AND status = "Nope"`:                 400,
		``:                                                   400,
	} {
		st, body := get(t, dc, "/rest/api/2/search?jql="+url.QueryEscape(jql), "Bearer pat-secret-token")
		if st != want {
			t.Errorf("search %q = %d %v, want %d", jql, st, body, want)
		}
		if st == 200 && body["total"] != float64(1) {
			t.Errorf("search %q = %v", jql, body)
		}
		if msgs, _ := body["errorMessages"].([]any); st == 400 && len(msgs) == 0 {
			t.Errorf("search %q: 400 without errorMessages: %v", jql, body)
		}
	}
}
