package forge

import (
	"strings"
	"testing"
)

func TestParseRef(t *testing.T) {
	tests := []struct {
		in, def string
		want    Ref
		wantErr string
	}{
		{in: "42", def: "o/r", want: Ref{"o", "r", 42}},
		{in: "#42", def: "o/r", want: Ref{"o", "r", 42}},
		{in: " #7 ", def: "octo-org/my.repo_1", want: Ref{"octo-org", "my.repo_1", 7}},
		{in: "owner/repo#42", want: Ref{"owner", "repo", 42}},
		{in: "owner/repo#42", def: "o/r", want: Ref{"owner", "repo", 42}},
		{in: "https://github.com/owner/repo/issues/42", want: Ref{"owner", "repo", 42}},
		{in: "https://github.com/owner/repo/issues/42/", want: Ref{"owner", "repo", 42}},
		{in: "https://github.com/owner/repo/issues/42#issuecomment-1", want: Ref{"owner", "repo", 42}},
		{in: "https://ghe.example.com/team/app/issues/3?x=1", want: Ref{"team", "app", 3}},
		{in: "42", wantErr: "set repository: owner/repo in cadre.yaml"},
		{in: "#42", def: " ", wantErr: "set repository:"},
		{in: "42", def: "not-a-repo", wantErr: "must be owner/repo"},
		{in: "", wantErr: "empty"},
		{in: "#", def: "o/r", wantErr: "use 42, #42"},
		{in: "abc", def: "o/r", wantErr: "use 42, #42"},
		{in: "0", def: "o/r", wantErr: "from 1"},
		{in: "#-3", def: "o/r", wantErr: "use 42, #42"},
		{in: "99999999999999999999", def: "o/r", wantErr: "from 1"},
		{in: "owner/repo#0", wantErr: "from 1"},
		{in: "-owner/repo#1", wantErr: "owner \"-owner\""},
		{in: "owner/re po#1", wantErr: "use 42, #42"},
		{in: "owner/..#1", wantErr: "repository name"},
		{in: "https://github.com/owner/repo/pull/42", wantErr: "an issue URL looks like"},
		{in: "https://github.com/owner/repo/issues/x", wantErr: "from 1"},
		{in: "https://github.com/owner", wantErr: "an issue URL looks like"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseRef(tt.in, tt.def)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseRef(%q, %q) = %v, %v; want error containing %q", tt.in, tt.def, got, err, tt.wantErr)
				}
				if strings.Contains(err.Error(), "\n") {
					t.Errorf("error spans lines: %q", err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ParseRef(%q, %q) = %v, %v; want %v", tt.in, tt.def, got, err, tt.want)
			}
		})
	}
}

func TestRefString(t *testing.T) {
	if got := (Ref{"o", "r", 5}).String(); got != "o/r#5" {
		t.Errorf("String = %q", got)
	}
}

func TestLooksLikeRef(t *testing.T) {
	tests := map[string]bool{
		"42": true, "#42": true, "o/r#42": true, "https://github.com/o/r/issues/1": true,
		"tasks/01-x.md": false, "tasks": false, "#": false, "./42": false, "https://example.com/x": false,
	}
	for in, want := range tests {
		if got := LooksLikeRef(in); got != want {
			t.Errorf("LooksLikeRef(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestParseRepo(t *testing.T) {
	tests := []struct {
		in, owner, repo, wantErr string
	}{
		{in: "o/r", owner: "o", repo: "r"},
		{in: " cadre-dev/cadre ", owner: "cadre-dev", repo: "cadre"},
		{in: "cadre", wantErr: "must be owner/repo"},
		{in: "o/r/x", wantErr: "repository name"},
		{in: "o--x/r", wantErr: "owner"},
		{in: "/r", wantErr: "owner"},
	}
	for _, tt := range tests {
		o, r, err := ParseRepo(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseRepo(%q) = %q, %q, %v; want error with %q", tt.in, o, r, err, tt.wantErr)
			}
			continue
		}
		if err != nil || o != tt.owner || r != tt.repo {
			t.Errorf("ParseRepo(%q) = %q, %q, %v", tt.in, o, r, err)
		}
	}
}

func TestRepoFromRemote(t *testing.T) {
	tests := []struct {
		in          string
		owner, repo string
		ok          bool
	}{
		{"https://github.com/owner/repo.git", "owner", "repo", true},
		{"https://github.com/owner/repo", "owner", "repo", true},
		{"https://github.com/owner/repo/", "owner", "repo", true},
		{"http://github.com/owner/repo.git", "owner", "repo", true},
		{"https://user@github.com/owner/repo.git", "owner", "repo", true},
		{"https://x-access-token:abc@github.com/owner/repo.git", "owner", "repo", true},
		{"ssh://git@github.com/owner/repo.git", "owner", "repo", true},
		{"ssh://git@ssh.github.com:443/owner/repo.git", "owner", "repo", true},
		{"git://github.com/owner/repo.git", "owner", "repo", true},
		{"git@github.com:owner/repo.git", "owner", "repo", true},
		{"git@github.com:owner/repo", "owner", "repo", true},
		{"github.com:owner/my.repo.git", "owner", "my.repo", true},
		{"git@github.example.com:team/app.git", "team", "app", true},
		{"https://gitlab.com/owner/repo.git", "", "", false},
		{"git@gitlab.com:owner/repo.git", "", "", false},
		{"/srv/git/repo.git", "", "", false},
		{"../origin.git", "", "", false},
		{"file:///srv/github/owner/repo.git", "", "", false},
		{"https://github.com/owner", "", "", false},
		{"https://github.com/owner/repo/extra", "", "", false},
		{"", "", "", false},
	}
	for _, tt := range tests {
		o, r, ok := RepoFromRemote(tt.in)
		if o != tt.owner || r != tt.repo || ok != tt.ok {
			t.Errorf("RepoFromRemote(%q) = %q, %q, %v; want %q, %q, %v", tt.in, o, r, ok, tt.owner, tt.repo, tt.ok)
		}
	}
}

func FuzzParseRef(f *testing.F) {
	for _, s := range []string{"42", "#42", "o/r#1", "https://github.com/o/r/issues/9", "", "#", "a/b#c"} {
		f.Add(s, "o/r")
	}
	f.Fuzz(func(t *testing.T, s, def string) {
		ref, err := ParseRef(s, def)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error %q", err)
			}
			return
		}
		if ref.Number <= 0 || checkRepo(ref.Owner, ref.Repo) != nil {
			t.Fatalf("ParseRef(%q, %q) = %+v: invalid ref accepted", s, def, ref)
		}
		RepoFromRemote(s)
	})
}
