package config

import "testing"

func TestResolveForge(t *testing.T) {
	tests := []struct {
		typ, url, origin, want string
	}{
		{"", "", "git@github.com:o/r.git", ForgeGitHub},
		{"", "", "https://github.example.com/o/r", ForgeGitHub},
		{"", "", "git@gitlab.com:acme/widget.git", ForgeGitLab},
		{"", "", "ssh://git@gitlab.corp.example:2222/acme/platform/widget.git", ForgeGitLab},
		{"", "https://code.corp", "https://code.corp/acme/widget.git", ForgeGitLab},
		{"", "https://code.corp", "git@code.corp:acme/widget.git", ForgeGitLab},
		{"", "https://code.corp", "git@elsewhere.corp:acme/widget.git", ForgeGitHub},
		{"", "", "/srv/git/widget.git", ForgeGitHub},
		{"", "", "", ForgeGitHub},
		{ForgeGitHub, "", "git@gitlab.com:acme/widget.git", ForgeGitHub}, // set: kept
		{ForgeGitLab, "", "git@github.com:o/r.git", ForgeGitLab},
	}
	for _, tt := range tests {
		c := Default()
		c.Forge = Forge{Type: tt.typ, URL: tt.url}
		c.ResolveForge(tt.origin)
		if c.Forge.Type != tt.want {
			t.Errorf("ResolveForge(%q) with %+v = %s, want %s", tt.origin, Forge{tt.typ, tt.url}, c.Forge.Type, tt.want)
		}
		if want := map[string]*ForgeHost{ForgeGitHub: &c.GitHub, ForgeGitLab: &c.GitLab}[tt.want]; c.Host() != want || c.HostKey() != tt.want {
			t.Errorf("%s: Host is not the %s section", tt.origin, tt.want)
		}
	}
}

func TestForgeURLSetsGitLabAPI(t *testing.T) {
	c, err := Parse("cadre.yaml", []byte("forge: {url: 'https://code.corp/'}\n"), nil)
	if err != nil || c.GitLab.APIURL != "https://code.corp/api/v4" {
		t.Errorf("api_url = %q, %v", c.GitLab.APIURL, err)
	}
	c, err = Parse("cadre.yaml", []byte("forge: {url: 'https://code.corp'}\ngitlab: {api_url: 'https://api.code.corp/v4'}\n"), nil)
	if err != nil || c.GitLab.APIURL != "https://api.code.corp/v4" {
		t.Errorf("an api_url set is kept: %q, %v", c.GitLab.APIURL, err)
	}
}

func TestCheckForge(t *testing.T) {
	c, err := Parse("cadre.yaml", []byte("forge: {type: gitlab}\nfollow: {merge: rebase}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.CheckForge(); err == nil || err.Error() != "cadre.yaml:2: follow.merge: rebase is not a merge GitLab's API makes: use merge or squash (the project's merge method decides whether GitLab rebases or fast-forwards)" {
		t.Errorf("rebase on GitLab: %v", err)
	}
	c.Forge.Type = ForgeGitHub
	if err := c.CheckForge(); err != nil {
		t.Errorf("rebase on GitHub refused: %v", err)
	}
}
