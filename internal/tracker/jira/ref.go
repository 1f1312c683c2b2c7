package jira

import (
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"
)

// issueKey is a Jira issue key: the project key (a letter, then letters,
// digits or underscores) and the issue's number.
var issueKey = regexp.MustCompile(`^([A-Z][A-Z0-9_]*)-([1-9][0-9]*)$`)

// ParseKey reads s as an issue key ("PROJ-123") or the URL of an issue on
// any Jira site: /browse/PROJ-123, a board or search with
// ?selectedIssue=PROJ-123, or .../issues/PROJ-123. A bare number is not a
// key: which project it belongs to is not said.
func ParseKey(s string) (string, bool) {
	s = strings.TrimSpace(s)
	if issueKey.MatchString(s) {
		return s, true
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return "", false
	}
	if k := u.Query().Get("selectedIssue"); issueKey.MatchString(k) {
		return k, true
	}
	segs := strings.Split(strings.Trim(u.Path, "/"), "/")
	for i := 0; i+1 < len(segs); i++ {
		if (segs[i] == "browse" || segs[i] == "issues") && issueKey.MatchString(segs[i+1]) {
			return segs[i+1], true
		}
	}
	return "", false
}

// keyNumber is the number in a key: 123 of PROJ-123.
func keyNumber(key string) int {
	m := issueKey.FindStringSubmatch(key)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[2])
	return n
}

// key reads ref as an issue of the Client's project on its site, saying
// what is wrong otherwise: a bare number, another project, another site.
func (c *Client) key(ref string) (string, error) {
	ref = strings.TrimSpace(ref)
	ref = strings.TrimPrefix(ref, "#")
	if _, err := strconv.Atoi(ref); err == nil {
		return "", fmt.Errorf("jira: issue %q: give the issue's key, such as %s-%s, not a bare number", ref, c.project, ref)
	}
	k, ok := ParseKey(ref)
	if !ok {
		if up := strings.ToUpper(ref); up != ref && issueKey.MatchString(up) {
			return "", fmt.Errorf("jira: issue %q: keys are upper case: %s", ref, up)
		}
		return "", fmt.Errorf("jira: %q is not a Jira issue key (PROJ-123) or issue URL", ref)
	}
	if u, err := url.Parse(ref); err == nil && u.Host != "" && !strings.EqualFold(u.Host, c.site.Host) {
		return "", fmt.Errorf("jira: issue %s is on %s, not on tracker.url's site %s", k, u.Host, c.site.Host)
	}
	if p := issueKey.FindStringSubmatch(k)[1]; p != c.project {
		return "", fmt.Errorf("jira: issue %s belongs to project %s, not to tracker.project %s", k, p, c.project)
	}
	return k, nil
}
