package eval

import (
	"fmt"
	"path"
	"strings"
)

// DefaultForbiddenPaths are the paths no agent may change unless the
// requirements say otherwise: CI definitions (they run with the
// repository's secrets), agent configuration and instruction files (an
// agent that rewrites them steers the next agent), and dependency lockfiles
// (a changed pin is a supply-chain change nobody reviewed). Lockfiles are
// let through by Requirements.AllowLockfiles.
var DefaultForbiddenPaths = []string{
	".github/workflows/**",
	".claude/**",
	".codex/**",
	".gemini/**",
	".cursor/**",
	".mcp.json",
	"**/AGENTS.md",
	"**/CLAUDE.md",
	"**/GEMINI.md",
	"**/go.sum",
	"**/package-lock.json",
	"**/yarn.lock",
	"**/pnpm-lock.yaml",
	"**/Cargo.lock",
	"**/poetry.lock",
	"**/uv.lock",
	"**/Gemfile.lock",
	"**/composer.lock",
}

// lockfiles are the base names Requirements.AllowLockfiles lets through.
var lockfiles = map[string]bool{
	"go.sum": true, "package-lock.json": true, "yarn.lock": true, "pnpm-lock.yaml": true,
	"Cargo.lock": true, "poetry.lock": true, "uv.lock": true, "Gemfile.lock": true, "composer.lock": true,
}

// isLockfile reports whether p names a dependency lockfile.
func isLockfile(p string) bool { return lockfiles[path.Base(p)] }

// cleanPath puts a repository-relative path in the form patterns are
// matched against: forward slashes, no "./", no redundant separators.
func cleanPath(p string) string {
	p = strings.ReplaceAll(strings.TrimSpace(p), `\`, "/")
	if p == "" {
		return ""
	}
	return strings.TrimPrefix(path.Clean(p), "./")
}

// outside reports whether a cleaned path leaves the repository: absolute,
// or climbing above its root. The caller computes the diff, so such a path
// means a bug or a symlink trick, and no pattern may allow it.
func outside(p string) bool {
	return strings.HasPrefix(p, "/") || p == ".." || strings.HasPrefix(p, "../")
}

// checkPattern reports a pattern matchGlob cannot use.
func checkPattern(pattern string) error {
	for _, seg := range strings.Split(strings.TrimSuffix(cleanPath(pattern), "/"), "/") {
		if seg == "**" {
			continue
		}
		if _, err := path.Match(seg, ""); err != nil {
			return fmt.Errorf("pattern %q: %w", pattern, err)
		}
	}
	return nil
}

// matchGlob reports whether the repository-relative path p matches pattern.
// Patterns are rooted at the repository (as a task lists its files, not as
// .gitignore does): "*" and "?" stay within one path segment, "**" matches
// any number of segments (none included), and a pattern ending in "/"
// matches everything under that directory. A malformed pattern matches
// nothing; checkPattern reports it.
func matchGlob(pattern, p string) bool {
	dir := strings.HasSuffix(strings.TrimSpace(pattern), "/")
	pattern = cleanPath(pattern)
	p = cleanPath(p)
	if pattern == "" || p == "" {
		return false
	}
	if pattern == "." {
		pattern = "**"
	} else if dir {
		pattern += "/**"
	}
	return matchSegs(strings.Split(pattern, "/"), strings.Split(p, "/"))
}

// matchSegs matches pattern segments against path segments.
func matchSegs(pat, segs []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			// Collapse runs of "**" and try every split point.
			for len(pat) > 0 && pat[0] == "**" {
				pat = pat[1:]
			}
			if len(pat) == 0 {
				return true
			}
			for i := range segs {
				if matchSegs(pat, segs[i:]) {
					return true
				}
			}
			return false
		}
		if len(segs) == 0 {
			return false
		}
		if ok, err := path.Match(pat[0], segs[0]); err != nil || !ok {
			return false
		}
		pat, segs = pat[1:], segs[1:]
	}
	return len(segs) == 0
}

// matchAny returns the first of patterns that p matches, or "".
func matchAny(patterns []string, p string) string {
	for _, pat := range patterns {
		if matchGlob(pat, p) {
			return pat
		}
	}
	return ""
}
