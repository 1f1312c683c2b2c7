package eval

import "testing"

func TestMatchGlob(t *testing.T) {
	tests := []struct {
		pattern, path string
		want          bool
	}{
		{"internal/config/config.go", "internal/config/config.go", true},
		{"internal/config/config.go", "./internal/config/config.go", true},
		{"internal/config/config.go", "internal/config/config_test.go", false},
		{"internal/config/*.go", "internal/config/config_test.go", true},
		{"internal/config/*.go", "internal/config/sub/x.go", false}, // * stays in one segment
		{"internal/**", "internal/config/sub/x.go", true},
		{"internal/**/x.go", "internal/x.go", true}, // ** may match no segment
		{"internal/**/x.go", "internal/a/b/x.go", true},
		{"internal/**/x.go", "internal/a/b/y.go", false},
		{"internal/config/", "internal/config/a/b.go", true}, // a directory covers what is under it
		{"internal/config/", "internal/configx/a.go", false},
		{"README.md", "docs/README.md", false}, // rooted, unlike .gitignore
		{"**/go.sum", "go.sum", true},
		{"**/go.sum", "tools/go.sum", true},
		{".github/workflows/**", ".github/workflows/ci.yml", true},
		{".github/workflows/**", ".github/dependabot.yml", false},
		{"internal\\x.go", "internal/x.go", true}, // Windows separators
		{"[", "[", false}, // malformed pattern matches nothing
		{"", "x", false},
		{"x", "", false},
		{"./", "any/file", true},
	}
	for _, tt := range tests {
		if got := matchGlob(tt.pattern, tt.path); got != tt.want {
			t.Errorf("matchGlob(%q, %q) = %v, want %v", tt.pattern, tt.path, got, tt.want)
		}
	}
}

func TestOutside(t *testing.T) {
	for p, want := range map[string]bool{
		"a/b":        false,
		"a/../b":     false,
		"../b":       true,
		"a/../../b":  true,
		"/etc/hosts": true,
		"..":         true,
		"..foo/x":    false,
	} {
		if got := outside(cleanPath(p)); got != want {
			t.Errorf("outside(%q) = %v, want %v", p, got, want)
		}
	}
}

func TestDefaultForbiddenPathsAreValid(t *testing.T) {
	for _, p := range DefaultForbiddenPaths {
		if err := checkPattern(p); err != nil {
			t.Error(err)
		}
	}
}
