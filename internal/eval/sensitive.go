package eval

import "errors"

// Sensitive returns the files (repository-relative) that match
// DefaultForbiddenPaths and none of allowed: changes a person must look
// at before they run anywhere (CI definitions run with the repository's
// secrets, agent configuration steers the next agent, a lockfile pins
// what gets installed). allowed uses the same patterns; "**" allows all.
func Sensitive(files, allowed []string) []string {
	var out []string
	for _, f := range files {
		if matchAny(DefaultForbiddenPaths, f) != "" && matchAny(allowed, f) == "" {
			out = append(out, cleanPath(f))
		}
	}
	return out
}

// CheckPattern reports a path pattern Sensitive or the requirements
// cannot use, for a config key that takes patterns.
func CheckPattern(pattern string) error {
	if cleanPath(pattern) == "" {
		return errEmptyPattern
	}
	return checkPattern(pattern)
}

var errEmptyPattern = errors.New("empty pattern")
