package config

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// Host is the settings of the forge the repository lives on: gitlab:'s
// on GitLab, github:'s otherwise (an unresolved type is GitHub, as cadre
// has always been).
func (c *Config) Host() *ForgeHost {
	if c.Forge.Type == ForgeGitLab {
		return &c.GitLab
	}
	return &c.GitHub
}

// HostKey is the key path of the forge's section: "github" or "gitlab",
// for messages naming a setting.
func (c *Config) HostKey() string {
	if c.Forge.Type == ForgeGitLab {
		return ForgeGitLab
	}
	return ForgeGitHub
}

// ResolveForge settles forge.type when cadre.yaml left it empty, from the
// host of the origin remote: github.com (or a host holding "github", as
// Enterprise hosts do) is GitHub; gitlab.com, a host holding "gitlab" or
// forge.url's host is GitLab. An unknown host, or no remote, stays GitHub.
func (c *Config) ResolveForge(origin string) {
	if c.Forge.Type != "" {
		return
	}
	c.Forge.Type = ForgeGitHub
	host := RemoteHost(origin)
	switch {
	case host == "":
	case strings.Contains(host, "gitlab"), c.Forge.URL != "" && host == RemoteHost(c.Forge.URL):
		c.Forge.Type = ForgeGitLab
	}
}

// CheckForge refuses what the resolved forge cannot do: GitLab's merge
// API makes no rebase merge (the project's merge method decides whether
// GitLab rebases or fast-forwards).
func (c *Config) CheckForge() error {
	if c.Forge.Type == ForgeGitLab && c.Follow.Merge == "rebase" {
		return fmt.Errorf("%s: rebase is not a merge GitLab's API makes: use merge or squash (the project's merge method decides whether GitLab rebases or fast-forwards)", c.Where("follow.merge"))
	}
	return nil
}

// RemoteHost is the lower-case host of a git remote (https://host/...,
// ssh://git@host:22/..., or scp-like git@host:path), "" when it names no
// host (a local path).
func RemoteHost(remote string) string {
	remote = strings.TrimSpace(remote)
	if strings.Contains(remote, "://") {
		u, err := url.Parse(remote)
		if err != nil || u.Scheme == "file" {
			return ""
		}
		return strings.ToLower(u.Hostname())
	}
	before, _, found := strings.Cut(remote, ":")
	if !found || strings.Contains(before, "/") {
		return ""
	}
	if i := strings.LastIndex(before, "@"); i >= 0 {
		before = before[i+1:]
	}
	return strings.ToLower(before)
}

// ForgeTokenVars are the variables holding a code host's or the
// tracker's credential, GitHub's and GitLab's whichever the forge:
// cadre's alone, never an agent's, and masked wherever cadre writes.
func (c *Config) ForgeTokenVars() []string {
	vars := []string{"GITHUB_TOKEN", "GH_TOKEN", "GH_ENTERPRISE_TOKEN", "GITLAB_TOKEN", "JIRA_API_TOKEN", "LINEAR_API_KEY"}
	for _, v := range []string{strings.TrimSpace(c.GitHub.TokenEnv), strings.TrimSpace(c.GitLab.TokenEnv), c.Tracker.TokenVar()} {
		if v != "" && !slices.Contains(vars, v) {
			vars = append(vars, v)
		}
	}
	return vars
}
