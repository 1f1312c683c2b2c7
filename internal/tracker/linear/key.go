package linear

import (
	"net/url"
	"regexp"
	"strconv"
	"strings"
)

// identifier is an issue's key: its team's key, a dash, its number.
var identifier = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9_]*)-([1-9][0-9]{0,9})$`)

// ParseKey reads an issue's identifier from s: "ENG-42" (any case), or the
// issue's URL, https://linear.app/WORKSPACE/issue/ENG-42/optional-slug. The
// key comes back in upper case, as Linear writes it.
func ParseKey(s string) (key string, ok bool) {
	s = strings.TrimSpace(s)
	if strings.Contains(s, "://") {
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || !linearHost(u.Hostname()) {
			return "", false
		}
		parts := strings.Split(strings.Trim(u.Path, "/"), "/")
		if len(parts) < 3 || len(parts) > 4 || parts[1] != "issue" || parts[0] == "" {
			return "", false
		}
		s = parts[2]
	}
	if !identifier.MatchString(s) {
		return "", false
	}
	return strings.ToUpper(s), true
}

func linearHost(h string) bool { return h == "linear.app" || h == "www.linear.app" }

// splitKey returns key's team and number; key must have passed ParseKey.
func splitKey(key string) (team string, number int) {
	m := identifier.FindStringSubmatch(key)
	if m == nil {
		return "", 0
	}
	n, _ := strconv.Atoi(m[2])
	return strings.ToUpper(m[1]), n
}
