package gitlabtest_test

import (
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	gitlab "gitlab.com/gitlab-org/api/client-go/v2"

	"github.com/cadre-dev/cadre/internal/gitlab/gitlabtest"
)

// Every JSON shape the fake sends is checked key by key against the
// client-go type that reads it, so the fake invents no field: a key the
// type has no field for fails the test. client-go's decoders of issues and
// merge requests are custom, so the check walks the types by reflection
// rather than leaning on json.Decoder.DisallowUnknownFields.

// realButUnmodelled are fields GitLab sends that client-go does not read,
// each named in GitLab's API documentation.
var realButUnmodelled = map[string]bool{
	"merge_status": true, // MR: deprecated in 15.6 for detailed_merge_status, still sent
}

// unknownKeys returns the keys of v (decoded JSON) that type t has no
// field for, with their path, recursing into objects and lists.
func unknownKeys(v any, t reflect.Type, at string) []string {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	switch v := v.(type) {
	case []any:
		var out []string
		for _, e := range v {
			out = append(out, unknownKeys(e, t, at+"[]")...)
		}
		return out
	case map[string]any:
		if t.Kind() != reflect.Struct {
			return nil // a map or a custom type: any key goes
		}
		fields := jsonFields(t)
		var out []string
		for k, e := range v {
			ft, ok := fields[k]
			switch {
			case !ok && !realButUnmodelled[k]:
				out = append(out, at+"."+k)
			case ok:
				out = append(out, unknownKeys(e, ft, at+"."+k)...)
			}
		}
		return out
	}
	return nil
}

// jsonFields maps the JSON names of t's fields, embedded ones flattened,
// to their types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous && name == "" {
			for k, ft := range jsonFields(f.Type) {
				out[k] = ft
			}
			continue
		}
		if name != "" && name != "-" {
			out[name] = f.Type
		}
	}
	return out
}

func TestUnknownKeysCatchesAnInventedField(t *testing.T) {
	var v any
	_ = json.Unmarshal([]byte(`{"id":1,"author":{"id":2,"login":"x"},"invented":true}`), &v)
	got := unknownKeys(v, reflect.TypeFor[gitlab.Note](), "note")
	sort.Strings(got)
	if !slices.Equal(got, []string{"note.author.login", "note.invented"}) {
		t.Errorf("unknown keys %v", got)
	}
}

// shapes builds a project with one of everything and returns the fake and
// the paths (under the project) of every shape it serves, with the
// client-go type of each.
func shapes(t *testing.T) (*gitlabtest.Server, map[string]reflect.Type) {
	s, g := withRepo(t)
	s.AddMember(proj, "alice", gitlabtest.Developer)
	s.AddIssue(proj, gitlabtest.Issue{Title: "i", Milestone: "v1", Assignees: []string{"alice"}, Labels: []string{"bug"},
		Notes: []gitlabtest.Note{{Author: "alice", Body: "n"}}})
	g.Commit("feature", "main", "feature", map[string]string{"a.txt": "a\n"})
	iid := s.AddMR(proj, gitlabtest.MR{Title: "m", Source: "feature", Reviewers: []string{"alice"}})
	s.Approve(proj, iid, "alice")
	s.AddDiscussion(proj, iid, "alice", "diff", &gitlabtest.Position{Path: "a.txt", Line: 1})
	s.AddDiscussion(proj, iid, "alice", "general", nil)
	pid := s.SetPipeline(proj, g.Rev("feature"), "failed", gitlabtest.Job{Name: "test", Status: "failed", Trace: "boom"})
	paths := map[string]reflect.Type{
		"":                                  reflect.TypeFor[gitlab.Project](),
		"/approvals":                        reflect.TypeFor[gitlab.ProjectApprovals](),
		"/issues":                           reflect.TypeFor[[]gitlab.Issue](),
		"/issues/1":                         reflect.TypeFor[gitlab.Issue](),
		"/issues/1/notes":                   reflect.TypeFor[[]gitlab.Note](),
		"/merge_requests":                   reflect.TypeFor[[]gitlab.BasicMergeRequest](),
		"/merge_requests/1":                 reflect.TypeFor[gitlab.MergeRequest](),
		"/merge_requests/1/approvals":       reflect.TypeFor[gitlab.MergeRequestApprovals](),
		"/merge_requests/1/approval_state":  reflect.TypeFor[gitlab.MergeRequestApprovalState](),
		"/merge_requests/1/versions":        reflect.TypeFor[[]gitlab.MergeRequestDiffVersion](),
		"/merge_requests/1/notes":           reflect.TypeFor[[]gitlab.Note](),
		"/merge_requests/1/discussions":     reflect.TypeFor[[]gitlab.Discussion](),
		"/merge_requests/1/pipelines":       reflect.TypeFor[[]gitlab.PipelineInfo](),
		"/pipelines":                        reflect.TypeFor[[]gitlab.PipelineInfo](),
		"/pipelines/" + itoa(pid):           reflect.TypeFor[gitlab.Pipeline](),
		"/pipelines/" + itoa(pid) + "/jobs": reflect.TypeFor[[]gitlab.Job](),
		"/members/all":                      reflect.TypeFor[[]gitlab.ProjectMember](),
		"/repository/branches/feature":      reflect.TypeFor[gitlab.Branch](),
	}
	// rebase_in_progress is sent only when asked for.
	paths["/merge_requests/1?include_rebase_in_progress=true"] = reflect.TypeFor[gitlab.MergeRequest]()
	return s, paths
}

func TestEveryShapeIsKnownToClientGo(t *testing.T) {
	s, paths := shapes(t)
	// Users are not under a project: the same check, by hand.
	var users any
	_ = json.Unmarshal(get(t, s.URL+"/api/v4/users?username=alice"), &users)
	if bad := unknownKeys(users, reflect.TypeFor[[]gitlab.User](), "users"); len(bad) > 0 || len(users.([]any)) != 1 {
		t.Errorf("users: %v, unknown keys %v", users, bad)
	}
	for path, typ := range paths {
		raw := get(t, s.URL+"/api/v4/projects/acme%2Fplatform%2Fwidget"+path)
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			t.Errorf("%s: %v: %s", path, err, raw)
			continue
		}
		if list, isList := v.([]any); isList && len(list) == 0 {
			t.Errorf("%s: an empty list proves nothing", path)
		}
		if bad := unknownKeys(v, typ, path); len(bad) > 0 {
			sort.Strings(bad)
			t.Errorf("%s: keys client-go's %v has no field for: %v", path, typ, bad)
		}
		if err := json.Unmarshal(raw, reflect.New(typ).Interface()); err != nil {
			t.Errorf("%s: client-go's %v cannot decode it: %v", path, typ, err)
		}
	}
}

func get(t *testing.T, url string) []byte {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("PRIVATE-TOKEN", tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, raw)
	}
	return raw
}
