package webhook_test

import (
	"fmt"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/cadre-dev/cadre/internal/webhook"
)

const sha = "6dcb09b5b57875f334f61aebed695e2e4193db5e"

// Each event kind cadre acts on is read into an Event, and one it does
// not act on is taken (202) and ignored; the payloads are shaped as the
// forges' documentation shows them, trimmed.
func TestGitHubEvents(t *testing.T) {
	repo := `"repository":{"id":1296269,"name":"widgets","full_name":"acme/widgets","default_branch":"main"},"sender":{"login":"octocat"}`
	pr := `"pull_request":{"url":"https://api.github.com/repos/acme/widgets/pulls/7","number":7,"state":"%s","merged":%s,
	 "title":"Fix the frobnicator","updated_at":"2026-03-01T10:00:00Z",
	 "head":{"ref":"cadre/3-x","sha":"` + sha + `"},"base":{"ref":"main","sha":"aaaa"}}`
	pull := func(state string, merged bool) *webhook.Pull {
		return &webhook.Pull{State: state, Merged: merged, Head: sha, Base: "main", Title: "Fix the frobnicator", Updated: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)}
	}
	for _, tt := range []struct {
		event, body string
		want        *webhook.Event // nil: ignored
	}{
		{"issues", `{"action":"labeled","issue":{"number":3,"title":"Label me","labels":[{"id":1,"name":"bug"},{"id":2,"name":"cadre"}]},"label":{"name":"cadre"},` + repo + `}`,
			&webhook.Event{Kind: "issues", Action: "labeled", Issue: 3, Labels: []string{"bug", "cadre"}}},
		{"issues", `{"action":"opened","issue":{"number":4,"labels":[]},` + repo + `}`, &webhook.Event{Kind: "issues", Action: "opened", Issue: 4}},
		{"issues", `{"action":"assigned","issue":{"number":5,"labels":[]},"assignee":{"login":"cadre-bot"},` + repo + `}`, &webhook.Event{Kind: "issues", Action: "assigned", Issue: 5}},
		{"issues", `{"action":"edited","issue":{"number":3,"labels":[]},` + repo + `}`, nil},
		{"check_run", `{"action":"completed","check_run":{"id":4,"name":"test","head_sha":"` + sha + `","status":"completed","conclusion":"failure",
		  "details_url":"https://ci.example/4","output":{"title":"1 failed","summary":"pkg/a","text":"FAIL a"},"app":{"slug":"ci-app"},"pull_requests":[{"number":7}]},` + repo + `}`,
			&webhook.Event{Kind: "check_run", Action: "completed", State: "failure", PR: 7, Head: sha, Check: &webhook.Check{ID: 4, Name: "test",
				Status: "completed", Conclusion: "failure", Title: "1 failed", Summary: "pkg/a", Text: "FAIL a", App: "ci-app", URL: "https://ci.example/4"}}},
		{"check_run", `{"action":"created","check_run":{"id":5,"name":"test","head_sha":"` + sha + `","status":"queued","conclusion":null,"pull_requests":[{"number":7}]},` + repo + `}`,
			&webhook.Event{Kind: "check_run", Action: "created", PR: 7, Head: sha, Check: &webhook.Check{ID: 5, Name: "test", Status: "queued"}}},
		{"check_run", `{"action":"rerequested","check_run":{"id":5,"name":"test","head_sha":"` + sha + `","status":"completed"},` + repo + `}`, nil},
		{"check_suite", `{"action":"completed","check_suite":{"head_branch":"cadre/3-x","head_sha":"` + sha + `","status":"completed","conclusion":"success","pull_requests":[]},` + repo + `}`,
			&webhook.Event{Kind: "check_suite", Action: "completed", State: "success", Head: sha}},
		{"status", `{"id":6,"sha":"` + sha + `","name":"acme/widgets","context":"ci/jenkins","state":"error","branches":[{"name":"cadre/3-x"}],` + repo + `}`,
			&webhook.Event{Kind: "status", Action: "error", State: "error", Head: sha, Check: &webhook.Check{ID: 6, Name: "ci/jenkins", Status: "error", Conclusion: "error"}}},
		{"status", `{"id":7,"sha":"` + sha + `","context":"ci/jenkins","state":"pending","description":"Build queued","target_url":"https://ci.example/7",` + repo + `}`,
			&webhook.Event{Kind: "status", Action: "pending", State: "pending", Head: sha, Check: &webhook.Check{ID: 7, Name: "ci/jenkins", Status: "pending",
				Conclusion: "pending", Title: "Build queued", URL: "https://ci.example/7"}}},
		{"status", `{"sha":"` + sha + `","state":"pending",` + repo + `}`, nil},
		{"workflow_job", `{"action":"completed","workflow_job":{"id":29679449,"run_id":1,"head_sha":"` + sha + `","status":"completed","conclusion":"failure","name":"test"},` + repo + `}`,
			&webhook.Event{Kind: "workflow_job", Action: "completed", State: "failure", Head: sha, Check: &webhook.Check{ID: 29679449, Name: "test",
				Status: "completed", Conclusion: "failure", App: "github-actions"}}},
		{"workflow_job", `{"action":"in_progress","workflow_job":{"head_sha":"` + sha + `","status":"in_progress"},` + repo + `}`, nil},
		{"pull_request_review", `{"action":"submitted","review":{"id":80,"state":"changes_requested","body":"Two things."},` + fmt.Sprintf(pr, "open", "false") + `,` + repo + `}`,
			&webhook.Event{Kind: "pull_request_review", Action: "submitted", State: "changes_requested", PR: 7, Head: sha}},
		{"pull_request_review_comment", `{"action":"created","comment":{"id":1,"path":"fix.txt","body":"Say more."},` + fmt.Sprintf(pr, "open", "false") + `,` + repo + `}`,
			&webhook.Event{Kind: "pull_request_review_comment", Action: "created", PR: 7, Head: sha}},
		{"pull_request_review_comment", `{"action":"deleted","comment":{"id":1},` + fmt.Sprintf(pr, "open", "false") + `,` + repo + `}`, nil},
		{"pull_request", `{"action":"closed","number":7,` + fmt.Sprintf(pr, "closed", "true") + `,` + repo + `}`,
			&webhook.Event{Kind: "pull_request", Action: "closed", State: "merged", PR: 7, Head: sha, Pull: pull("closed", true)}},
		{"pull_request", `{"action":"closed","number":7,` + fmt.Sprintf(pr, "closed", "false") + `,` + repo + `}`,
			&webhook.Event{Kind: "pull_request", Action: "closed", State: "closed", PR: 7, Head: sha, Pull: pull("closed", false)}},
		{"pull_request", `{"action":"synchronize","number":7,"before":"aaaa","after":"` + sha + `",` + fmt.Sprintf(pr, "open", "false") + `,` + repo + `}`,
			&webhook.Event{Kind: "pull_request", Action: "synchronize", PR: 7, Head: sha, Pull: pull("open", false)}},
		{"pull_request", `{"action":"labeled","number":7,` + fmt.Sprintf(pr, "open", "false") + `,` + repo + `}`, nil},
		{"push", `{"ref":"refs/heads/main","before":"aaaa","after":"` + sha + `","commits":[],` + repo + `}`, &webhook.Event{Kind: "push", Head: sha}},
		{"push", `{"ref":"refs/heads/feature","after":"` + sha + `",` + repo + `}`, nil},
		{"star", `{"action":"created",` + repo + `}`, nil},
	} {
		h, rec := newHandler(t, webhook.Options{Repo: "acme/widgets"})
		w := serve(h, github(tt.event, "d", tt.body))
		checkEvent(t, tt.event+" "+tt.body[:30], w.Code, rec.got(), tt.want, webhook.GitHub, "acme/widgets")
	}
}

func TestGitLabEvents(t *testing.T) {
	project := `"project":{"id":15,"name":"widgets","path_with_namespace":"acme/widgets","default_branch":"main"}`
	mr := `"merge_request":{"id":99,"iid":7,"source_branch":"cadre/3-x","target_branch":"main","state":"opened","last_commit":{"id":"` + sha + `"}}`
	for _, tt := range []struct {
		event, body string
		want        *webhook.Event
	}{
		{"Issue Hook", `{"object_kind":"issue","event_type":"issue","object_attributes":{"id":301,"iid":3,"action":"update","state":"opened"},
		  "labels":[{"id":206,"title":"cadre"}],"changes":{"labels":{"previous":[],"current":[{"title":"cadre"}]}},` + project + `}`,
			&webhook.Event{Kind: "issue", Action: "update", Issue: 3, Labels: []string{"cadre"}}},
		{"Issue Hook", `{"object_kind":"issue","object_attributes":{"iid":3,"action":"close"},` + project + `}`, nil},
		{"Pipeline Hook", `{"object_kind":"pipeline","object_attributes":{"id":31,"ref":"cadre/3-x","sha":"` + sha + `","source":"merge_request_event","status":"failed","detailed_status":"failed"},` + mr + `,` + project + `}`,
			&webhook.Event{Kind: "pipeline", Action: "failed", State: "failed", PR: 7, Head: sha}},
		{"Pipeline Hook", `{"object_kind":"pipeline","object_attributes":{"id":31,"sha":"` + sha + `","status":"running"},"merge_request":null,` + project + `}`, nil},
		{"Job Hook", `{"object_kind":"build","ref":"cadre/3-x","tag":false,"before_sha":"aaaa","sha":"` + sha + `","build_id":1977,"build_name":"test","build_status":"failed",` + project + `}`,
			&webhook.Event{Kind: "job", Action: "failed", State: "failed", Head: sha}},
		{"Job Hook", `{"object_kind":"build","sha":"` + sha + `","build_status":"created",` + project + `}`, nil},
		{"Note Hook", `{"object_kind":"note","object_attributes":{"id":1244,"note":"Say more.","noteable_type":"MergeRequest"},` + mr + `,` + project + `}`,
			&webhook.Event{Kind: "note", PR: 7, Head: sha}},
		{"Note Hook", `{"object_kind":"note","object_attributes":{"id":1241,"noteable_type":"Commit"},` + project + `}`, nil},
		{"Merge Request Hook", `{"object_kind":"merge_request","object_attributes":{"iid":7,"action":"approved","state":"opened","last_commit":{"id":"` + sha + `"}},` + project + `}`,
			&webhook.Event{Kind: "merge_request", Action: "approved", State: "opened", PR: 7, Head: sha}},
		{"Merge Request Hook", `{"object_kind":"merge_request","object_attributes":{"iid":7,"action":"merge","state":"merged","last_commit":{"id":"` + sha + `"}},` + project + `}`,
			&webhook.Event{Kind: "merge_request", Action: "merge", State: "merged", PR: 7, Head: sha}},
		{"Merge Request Hook", `{"object_kind":"merge_request","object_attributes":{"iid":7,"action":"close","state":"closed","last_commit":{"id":"` + sha + `"}},` + project + `}`,
			&webhook.Event{Kind: "merge_request", Action: "close", State: "closed", PR: 7, Head: sha}},
		{"Merge Request Hook", `{"object_kind":"merge_request","object_attributes":{"iid":7,"action":"update","state":"opened","last_commit":{"id":"` + sha + `"}},` + project + `}`,
			&webhook.Event{Kind: "merge_request", Action: "update", State: "opened", PR: 7, Head: sha}},
		{"Merge Request Hook", `{"object_kind":"merge_request","object_attributes":{"iid":7,"action":"open","state":"opened"},` + project + `}`, nil},
		{"Push Hook", `{"object_kind":"push","event_name":"push","before":"aaaa","after":"` + sha + `","ref":"refs/heads/main","checkout_sha":"` + sha + `",` + project + `}`,
			&webhook.Event{Kind: "push", Head: sha}},
		{"Push Hook", `{"object_kind":"push","after":"` + sha + `","ref":"refs/heads/cadre/3-x",` + project + `}`, nil},
		{"Wiki Page Hook", `{"object_kind":"wiki_page",` + project + `}`, nil},
	} {
		h, rec := newHandler(t, webhook.Options{Forge: webhook.GitLab, Repo: "acme/widgets"})
		w := serve(h, gitlab(tt.event, "u", tt.body))
		checkEvent(t, tt.event+" "+tt.body[:40], w.Code, rec.got(), tt.want, webhook.GitLab, "acme/widgets")
	}
}

func checkEvent(t *testing.T, name string, code int, got []webhook.Event, want *webhook.Event, forge, repo string) {
	t.Helper()
	if code != http.StatusAccepted {
		t.Errorf("%s: %d, want 202", name, code)
		return
	}
	if want == nil {
		if len(got) != 0 {
			t.Errorf("%s: acted on %+v, want it ignored", name, got)
		}
		return
	}
	w := *want
	w.Forge, w.Repo, w.Delivery = forge, repo, map[string]string{webhook.GitHub: "d", webhook.GitLab: "u"}[forge]
	if len(got) != 1 || !reflect.DeepEqual(got[0], w) {
		t.Errorf("%s:\n got %+v\nwant %+v", name, got, w)
	}
}
