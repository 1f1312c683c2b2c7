package forge

import (
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"
)

var (
	// GitHub logins: letters, digits and single inner hyphens, 39 at most.
	ownerRE = regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9]|-[A-Za-z0-9]){0,38}$`)
	// Repository names: letters, digits, '.', '-' and '_', 100 at most.
	repoRE = regexp.MustCompile(`^[A-Za-z0-9._-]{1,100}$`)
	// owner/repo#N, the short issue reference GitHub itself links.
	shortRefRE = regexp.MustCompile(`^([^/#\s]+)/([^/#\s]+)#([0-9]+)$`)
)

// ParseRef reads an issue reference: "42", "#42", "owner/repo#42" or an
// issue's URL ("https://github.com/owner/repo/issues/42", any host, so
// GitHub Enterprise works too). A bare number belongs to defaultRepo
// ("owner/repo"), which must then be set.
func ParseRef(s, defaultRepo string) (Ref, error) {
	in := strings.TrimSpace(s)
	switch {
	case in == "":
		return Ref{}, fmt.Errorf("issue reference is empty: use 42, #42, owner/repo#42 or an issue URL")
	case strings.HasPrefix(in, "https://") || strings.HasPrefix(in, "http://"):
		return parseIssueURL(s, in)
	case shortRefRE.MatchString(in):
		m := shortRefRE.FindStringSubmatch(in)
		n, err := issueNumber(s, m[3])
		if err != nil {
			return Ref{}, err
		}
		if err := checkRepo(m[1], m[2]); err != nil {
			return Ref{}, fmt.Errorf("issue reference %q: %w", s, err)
		}
		return Ref{Owner: m[1], Repo: m[2], Number: n}, nil
	}
	num := strings.TrimPrefix(in, "#")
	if num == "" || strings.Trim(num, "0123456789") != "" {
		return Ref{}, fmt.Errorf("issue reference %q: use 42, #42, owner/repo#42 or an issue URL", s)
	}
	n, err := issueNumber(s, num)
	if err != nil {
		return Ref{}, err
	}
	if strings.TrimSpace(defaultRepo) == "" {
		return Ref{}, fmt.Errorf("issue reference %q names no repository: set repository: owner/repo in cadre.yaml (or add an origin remote on GitHub), or write owner/repo%s", s, "#"+num)
	}
	owner, repo, err := ParseRepo(defaultRepo)
	if err != nil {
		return Ref{}, fmt.Errorf("issue reference %q: %w", s, err)
	}
	return Ref{Owner: owner, Repo: repo, Number: n}, nil
}

func parseIssueURL(orig, in string) (Ref, error) {
	u, err := url.Parse(in)
	if err != nil || u.Host == "" {
		return Ref{}, fmt.Errorf("issue reference %q is not a valid URL", orig)
	}
	parts := strings.Split(strings.Trim(u.Path, "/"), "/")
	if len(parts) != 4 || parts[2] != "issues" {
		return Ref{}, fmt.Errorf("issue reference %q: an issue URL looks like https://github.com/owner/repo/issues/42", orig)
	}
	n, err := issueNumber(orig, parts[3])
	if err != nil {
		return Ref{}, err
	}
	if err := checkRepo(parts[0], parts[1]); err != nil {
		return Ref{}, fmt.Errorf("issue reference %q: %w", orig, err)
	}
	return Ref{Owner: parts[0], Repo: parts[1], Number: n}, nil
}

func issueNumber(orig, s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 || n > 1<<31-1 {
		return 0, fmt.Errorf("issue reference %q: issue number must be a whole number from 1", orig)
	}
	return n, nil
}

// ParseRepo reads "owner/repo", as in cadre.yaml's repository key.
func ParseRepo(s string) (owner, repo string, err error) {
	owner, repo, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok {
		return "", "", fmt.Errorf("repository %q must be owner/repo", s)
	}
	if err := checkRepo(owner, repo); err != nil {
		return "", "", err
	}
	return owner, repo, nil
}

func checkRepo(owner, repo string) error {
	if !ownerRE.MatchString(owner) {
		return fmt.Errorf("owner %q is not a GitHub user or organisation name (letters, digits, inner hyphens)", owner)
	}
	if !repoRE.MatchString(repo) || repo == "." || repo == ".." {
		return fmt.Errorf("repository name %q may hold only letters, digits, '.', '-' and '_'", repo)
	}
	return nil
}

// LooksLikeRef reports whether s is spelt as an issue reference rather
// than a path; a caller still prefers a file that exists by that name.
func LooksLikeRef(s string) bool {
	s = strings.TrimSpace(s)
	if shortRefRE.MatchString(s) {
		return true
	}
	if strings.HasPrefix(s, "https://") || strings.HasPrefix(s, "http://") {
		return strings.Contains(s, "/issues/")
	}
	num := strings.TrimPrefix(s, "#")
	return num != "" && strings.Trim(num, "0123456789") == ""
}

// RepoFromRemote reads the owner and repository of a GitHub git remote:
// https://github.com/o/r(.git), ssh://git@github.com/o/r.git,
// git@github.com:o/r.git and the like. The host must be github.com or
// hold "github" (GitHub Enterprise hosts usually do); for any other host
// ok is false and repository: must be set in cadre.yaml.
func RepoFromRemote(remote string) (owner, repo string, ok bool) {
	remote = strings.TrimSpace(remote)
	var host, path string
	if strings.Contains(remote, "://") {
		u, err := url.Parse(remote)
		if err != nil {
			return "", "", false
		}
		switch u.Scheme {
		case "https", "http", "ssh", "git", "git+ssh", "ssh+git":
		default:
			return "", "", false
		}
		host, path = u.Hostname(), u.Path
	} else {
		// scp-like: [user@]host:owner/repo.git
		before, after, found := strings.Cut(remote, ":")
		if !found || strings.Contains(before, "/") {
			return "", "", false
		}
		if i := strings.LastIndex(before, "@"); i >= 0 {
			before = before[i+1:]
		}
		host, path = before, after
	}
	if !githubHost(host) {
		return "", "", false
	}
	path = strings.TrimSuffix(strings.Trim(path, "/"), ".git")
	owner, repo, found := strings.Cut(path, "/")
	if !found || checkRepo(owner, repo) != nil {
		return "", "", false
	}
	return owner, repo, true
}

// githubHost accepts github.com, its subdomains (ssh.github.com) and
// Enterprise hosts named after it.
func githubHost(h string) bool { return strings.Contains(strings.ToLower(h), "github") }
