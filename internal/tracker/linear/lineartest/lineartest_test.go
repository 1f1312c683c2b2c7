package lineartest

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

func post(t *testing.T, s *Server, body string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, s.URL, strings.NewReader(body))
	req.Header.Set("Authorization", s.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, out
}

func firstError(out map[string]any) string {
	errs, _ := out["errors"].([]any)
	if len(errs) == 0 {
		return ""
	}
	e, _ := errs[0].(map[string]any)
	msg, _ := e["message"].(string)
	return msg
}

func TestRefusesWhatLinearRefuses(t *testing.T) {
	s := New(t, "lin_api_fake0123456789")
	s.AddTeam("ENG")
	s.AddIssue(Issue{Identifier: "ENG-1", Title: "t"})
	for name, tc := range map[string]struct{ body, want string }{
		"unknown operation": {`{"query":"query Other { viewer { id } }","operationName":"Other"}`, `Unknown operation named "Other"`},
		"no name":           {`{"query":"{ viewer { id } }"}`, "Must provide operation name"},
		"name not declared": {`{"query":"query Else($id: String!) { issue(id: $id) { id } }","operationName":"CadreIssue","variables":{"id":"ENG-1"}}`, "must be a query selecting issue"},
		"wrong root":        {`{"query":"query CadreIssue($id: String!) { team(id: $id) { id } }","operationName":"CadreIssue","variables":{"id":"ENG-1"}}`, "must be a query selecting issue"},
		"unknown input": {`{"query":"mutation CadreIssueUpdate($id: String!, $input: IssueUpdateInput!) { issueUpdate(id: $id, input: $input) { success } }",` +
			`"operationName":"CadreIssueUpdate","variables":{"id":"ENG-1","input":{"stateID":"x"}}}`, `Field "stateID" is not defined by type "IssueUpdateInput"`},
		"unknown filter": {`{"query":"query CadreIssues($filter: IssueFilter!, $first: Int!) { issues(filter: $filter, first: $first) { nodes { id } } }",` +
			`"operationName":"CadreIssues","variables":{"first":5,"filter":{"priority":{"eq":1}}}}`, `Field "priority" is not defined by type "IssueFilter"`},
	} {
		status, out := post(t, s, tc.body)
		if status != http.StatusBadRequest || !strings.Contains(firstError(out), tc.want) {
			t.Errorf("%s: %d %v", name, status, out)
		}
	}
}

func TestIssueShape(t *testing.T) {
	s := New(t, "lin_api_fake0123456789")
	s.AddTeam("ENG")
	s.AddIssue(Issue{Identifier: "ENG-1", Title: "Fix it", Creator: "Ada", Labels: []string{"bug"}})
	status, out := post(t, s, `{"query":"query CadreIssue($id: String!, $after: String) { issue(id: $id) { id } }","operationName":"CadreIssue","variables":{"id":"ENG-1"}}`)
	is, _ := out["data"].(map[string]any)["issue"].(map[string]any)
	if status != http.StatusOK || is["identifier"] != "ENG-1" || is["number"] != 1.0 || is["description"] != nil ||
		is["creator"].(map[string]any)["name"] != "Ada" || is["team"].(map[string]any)["key"] != "ENG" {
		t.Fatalf("%d %v", status, out)
	}
	status, out = post(t, s, `{"query":"query CadreIssue($id: String!) { issue(id: $id) { id } }","operationName":"CadreIssue","variables":{"id":"ENG-9"}}`)
	if status != http.StatusOK || out["data"] != nil || !strings.Contains(firstError(out), "Entity not found: Issue") {
		t.Fatalf("missing issue: %d %v", status, out)
	}
}
