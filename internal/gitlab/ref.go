package gitlab

import (
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"
)

var (
	// One segment of a project path: a group, subgroup or project name.
	segmentRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._-]{0,254}$`)
	// group/sub/project#N, the short issue reference GitLab itself links.
	shortRefRE = regexp.MustCompile(`^([^#\s]+)#([0-9]+)$`)
)

// Ref names one issue of one project.
type Ref struct {
	Project string // full path: group/sub/project
	IID     int
}

// String spells r as group/project#N.
func (r Ref) String() string { return r.Project + "#" + strconv.Itoa(r.IID) }

const refForms = "use 42, #42, group/project#42 or an issue URL"

// ParseRef reads an issue reference: "42", "#42", "group/sub/project#42"
// or an issue's URL ("https://gitlab.com/group/project/-/issues/42", or
// .../-/work_items/42; any host, so a self-managed instance works too). A
// bare number belongs to defaultProject, which must then be set.
func ParseRef(s, defaultProject string) (Ref, error) {
	in := strings.TrimSpace(s)
	switch {
	case in == "":
		return Ref{}, fmt.Errorf("issue reference is empty: %s", refForms)
	case strings.HasPrefix(in, "https://") || strings.HasPrefix(in, "http://"):
		return parseIssueURL(s, in)
	case shortRefRE.MatchString(in):
		m := shortRefRE.FindStringSubmatch(in)
		n, err := issueIID(s, m[2])
		if err != nil {
			return Ref{}, err
		}
		if err := CheckProject(m[1]); err != nil {
			return Ref{}, fmt.Errorf("issue reference %q: %w", s, err)
		}
		return Ref{Project: m[1], IID: n}, nil
	}
	num := strings.TrimPrefix(in, "#")
	if num == "" || strings.Trim(num, "0123456789") != "" {
		return Ref{}, fmt.Errorf("issue reference %q: %s", s, refForms)
	}
	n, err := issueIID(s, num)
	if err != nil {
		return Ref{}, err
	}
	project := strings.Trim(strings.TrimSpace(defaultProject), "/")
	if project == "" {
		return Ref{}, fmt.Errorf("issue reference %q names no project: set the project in cadre.yaml (or add an origin remote on GitLab), or write group/project#%s", s, num)
	}
	if err := CheckProject(project); err != nil {
		return Ref{}, fmt.Errorf("issue reference %q: %w", s, err)
	}
	return Ref{Project: project, IID: n}, nil
}

// parseIssueURL reads https://HOST/group/sub/project/-/issues/N (or
// work_items). Everything before "/-/" is the project's path, so an
// instance served under a relative root needs the short form instead.
func parseIssueURL(orig, in string) (Ref, error) {
	u, err := url.Parse(in)
	if err != nil || u.Host == "" {
		return Ref{}, fmt.Errorf("issue reference %q is not a valid URL", orig)
	}
	project, rest, ok := strings.Cut(strings.Trim(u.Path, "/"), "/-/")
	parts := strings.Split(rest, "/")
	if !ok || len(parts) != 2 || (parts[0] != "issues" && parts[0] != "work_items") {
		return Ref{}, fmt.Errorf("issue reference %q: an issue URL looks like https://gitlab.com/group/project/-/issues/42", orig)
	}
	n, err := issueIID(orig, parts[1])
	if err != nil {
		return Ref{}, err
	}
	if err := CheckProject(project); err != nil {
		return Ref{}, fmt.Errorf("issue reference %q: %w", orig, err)
	}
	return Ref{Project: project, IID: n}, nil
}

func issueIID(orig, s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 || n > 1<<31-1 {
		return 0, fmt.Errorf("issue reference %q: issue number must be a whole number from 1", orig)
	}
	return n, nil
}

// CheckProject refuses a project path GitLab could not have made: it is
// group/project or group/sub/.../project, each name of letters, digits,
// '.', '-' and '_', none "." or ".." nor ending in ".git".
func CheckProject(path string) error {
	segs := strings.Split(path, "/")
	if len(segs) < 2 {
		return fmt.Errorf("project %q must be a full path such as group/project", path)
	}
	for _, s := range segs {
		if !segmentRE.MatchString(s) || strings.HasSuffix(s, ".git") || strings.HasSuffix(s, ".atom") {
			return fmt.Errorf("project %q: name %q may hold only letters, digits, '.', '-' and '_'", path, s)
		}
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
		return strings.Contains(s, "/-/issues/") || strings.Contains(s, "/-/work_items/")
	}
	num := strings.TrimPrefix(s, "#")
	return num != "" && strings.Trim(num, "0123456789") == ""
}

// ProjectFromRemote reads the project path of a GitLab git remote:
// https://gitlab.com/g/sub/p(.git), ssh://git@gitlab.com:2222/g/p.git,
// git@gitlab.com:g/p.git and the like. The host must be gitlab.com, hold
// "gitlab", or be one of hosts (a self-managed instance's, from its URL);
// for any other host ok is false.
func ProjectFromRemote(remote string, hosts ...string) (project string, ok bool) {
	host, path, ok := splitRemote(strings.TrimSpace(remote))
	if !ok || !IsGitLabHost(host, hosts...) {
		return "", false
	}
	path = strings.TrimSuffix(strings.Trim(path, "/"), ".git")
	path = strings.TrimSuffix(path, "/")
	if CheckProject(path) != nil {
		return "", false
	}
	return path, true
}

// splitRemote reads a remote's host and path, URL or scp-like.
func splitRemote(remote string) (host, path string, ok bool) {
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
		return u.Hostname(), u.Path, u.Hostname() != ""
	}
	// scp-like: [user@]host:group/project.git
	before, after, found := strings.Cut(remote, ":")
	if !found || before == "" || strings.Contains(before, "/") {
		return "", "", false
	}
	if i := strings.LastIndex(before, "@"); i >= 0 {
		before = before[i+1:]
	}
	return before, after, before != ""
}

// IsGitLabHost reports whether host (a name, with or without a port) is
// gitlab.com, one named after GitLab (gitlab.corp.example), or one of
// hosts: names or URLs of self-managed instances, as forge.url gives them.
func IsGitLabHost(host string, hosts ...string) bool {
	h := hostName(host)
	if h == "" {
		return false
	}
	if h == "gitlab.com" || strings.HasSuffix(h, ".gitlab.com") || strings.Contains(h, "gitlab") {
		return true
	}
	for _, o := range hosts {
		if hostName(o) == h {
			return true
		}
	}
	return false
}

// hostName lower-cases a host, dropping a scheme, port, user or path.
func hostName(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	if strings.Contains(s, "://") {
		if u, err := url.Parse(s); err == nil {
			return u.Hostname()
		}
		return ""
	}
	if i := strings.LastIndex(s, "@"); i >= 0 {
		s = s[i+1:]
	}
	s, _, _ = strings.Cut(s, "/")
	if u, err := url.Parse("//" + s); err == nil {
		return u.Hostname()
	}
	return ""
}
