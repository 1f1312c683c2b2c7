package gitlab_test

import (
	"testing"

	"github.com/cadre-dev/cadre/internal/gitlab"
)

func TestParseRef(t *testing.T) {
	for _, tc := range []struct {
		in, def string
		want    gitlab.Ref
		bad     bool
	}{
		{in: "42", def: "acme/widget", want: gitlab.Ref{Project: "acme/widget", IID: 42}},
		{in: "#7", def: "g/sub/p", want: gitlab.Ref{Project: "g/sub/p", IID: 7}},
		{in: "group/sub/project#42", want: gitlab.Ref{Project: "group/sub/project", IID: 42}},
		{in: "https://gitlab.com/group/sub/project/-/issues/42", want: gitlab.Ref{Project: "group/sub/project", IID: 42}},
		{in: "https://git.corp.example:8443/a/b/-/work_items/9", want: gitlab.Ref{Project: "a/b", IID: 9}},
		{in: " https://git.corp/a.b/c_d-e/-/issues/3 ", want: gitlab.Ref{Project: "a.b/c_d-e", IID: 3}},
		{in: "42"},             // no default project
		{in: "", def: "a/b"},   // empty
		{in: "#0", def: "a/b"}, // not from 1
		{in: "project#4"},      // not a full path
		{in: "a/b c#4"},        // a space
		{in: "https://gitlab.com/a/b/-/merge_requests/4"}, // not an issue
		{in: "https://gitlab.com/a/b/issues/4"},           // no /-/
		{in: "https://gitlab.com/a/../-/issues/4"},        // '..'
		{in: "x42", def: "a/b"},
	} {
		got, err := gitlab.ParseRef(tc.in, tc.def)
		if tc.bad || tc.want == (gitlab.Ref{}) {
			if err == nil {
				t.Errorf("ParseRef(%q, %q) = %v, want an error", tc.in, tc.def, got)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseRef(%q, %q) = %v, %v; want %v", tc.in, tc.def, got, err, tc.want)
		}
	}
}

func TestLooksLikeRef(t *testing.T) {
	for in, want := range map[string]bool{
		"42": true, "#42": true, "g/s/p#1": true, "https://h/g/p/-/issues/1": true,
		"https://h/g/p/-/work_items/1": true, "task.md": false, "./42.md": false, "https://h/g/p": false,
	} {
		if got := gitlab.LooksLikeRef(in); got != want {
			t.Errorf("LooksLikeRef(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestProjectFromRemote(t *testing.T) {
	for _, tc := range []struct {
		remote string
		hosts  []string
		want   string // "" = not a GitLab project
	}{
		{remote: "https://gitlab.com/acme/widget.git", want: "acme/widget"},
		{remote: "https://gitlab.com/acme/sub/deeper/widget", want: "acme/sub/deeper/widget"},
		{remote: "git@gitlab.com:acme/sub/widget.git", want: "acme/sub/widget"},
		{remote: "ssh://git@gitlab.corp.example:2222/team/app.git", want: "team/app"},
		{remote: "git@git.corp:team/app.git", hosts: []string{"https://git.corp/api/v4"}, want: "team/app"},
		{remote: "https://git.corp:8443/team/app", hosts: []string{"git.corp"}, want: "team/app"},
		{remote: "git@git.corp:team/app.git"},             // an unknown host
		{remote: "https://github.com/acme/widget.git"},    // GitHub
		{remote: "https://gitlab.com/widget.git"},         // no group
		{remote: "file:///srv/gitlab/acme/widget.git"},    // not a remote URL
		{remote: "/srv/gitlab/acme/widget"},               // a path
		{remote: "https://gitlab.com/acme/wid get.git"},   // a space
		{remote: "https://gitlab.com/acme/../etc/passwd"}, // '..'
	} {
		got, ok := gitlab.ProjectFromRemote(tc.remote, tc.hosts...)
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("ProjectFromRemote(%q, %q) = %q, %v; want %q", tc.remote, tc.hosts, got, ok, tc.want)
		}
	}
}

func TestIsGitLabHost(t *testing.T) {
	for _, tc := range []struct {
		host  string
		hosts []string
		want  bool
	}{
		{"gitlab.com", nil, true}, {"GitLab.Example.org", nil, true}, {"git.corp:443", []string{"https://git.corp"}, true},
		{"git.corp", []string{"other.corp"}, false}, {"github.com", nil, false}, {"", nil, false},
	} {
		if got := gitlab.IsGitLabHost(tc.host, tc.hosts...); got != tc.want {
			t.Errorf("IsGitLabHost(%q, %q) = %v, want %v", tc.host, tc.hosts, got, tc.want)
		}
	}
}
