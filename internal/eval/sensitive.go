package eval

import (
	"errors"
	"fmt"
	"strings"
)

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

// SensitiveLabel marks a pull request whose changes need a person's eyes
// before anything runs them.
const SensitiveLabel = "cadre:sensitive"

// SensitiveWarning is the pull request's section listing the sensitive
// files. Names come from the agent's work, so backticks and line breaks
// are neutralised to keep each one inside its code span on its own line.
func SensitiveWarning(files []string) string {
	clean := strings.NewReplacer("`", "'", "\n", " ", "\r", " ")
	var b strings.Builder
	b.WriteString("## ⚠️ Sensitive changes\n\nThis pull request changes files that run in CI, steer coding agents or pin dependencies. " +
		"cadre opened it as a draft: review these files before marking it ready.\n\n")
	for _, f := range files {
		fmt.Fprintf(&b, "- `%s`\n", clean.Replace(f))
	}
	return b.String()
}

// CIConfigPaths are the files a CI service runs on a push alone, before
// anyone reviews a pull request: workflows and pipelines of the common
// services.
var CIConfigPaths = []string{
	".github/workflows/**",
	".github/actions/**",
	".gitlab-ci.yml",
	".gitlab/ci/**",
	".circleci/**",
	".travis.yml",
	".drone.yml",
	".woodpecker.yml",
	".woodpecker/**",
	".buildkite/**",
	"azure-pipelines.yml",
	".azure-pipelines/**",
	"bitbucket-pipelines.yml",
	"Jenkinsfile",
	"**/Jenkinsfile",
	".forgejo/workflows/**",
	".gitea/workflows/**",
}

// CIConfig lists the files among files that configure CI, unless allowed
// (github.allow_sensitive) lets them through.
func CIConfig(files, allowed []string) []string {
	var out []string
	for _, f := range files {
		if matchAny(CIConfigPaths, cleanPath(f)) != "" && matchAny(allowed, f) == "" {
			out = append(out, cleanPath(f))
		}
	}
	return out
}
