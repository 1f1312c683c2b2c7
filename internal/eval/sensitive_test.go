package eval

import (
	"slices"
	"strings"
	"testing"
)

func TestSensitive(t *testing.T) {
	files := []string{"main.go", ".github/workflows/ci.yml", "./.claude/settings.json", "web/package-lock.json", "docs/AGENTS.md", ".mcp.json", "README.md"}
	tests := []struct {
		name    string
		allowed []string
		want    []string
	}{
		{"none allowed", nil, []string{".github/workflows/ci.yml", ".claude/settings.json", "web/package-lock.json", "docs/AGENTS.md", ".mcp.json"}},
		{"lockfiles allowed", []string{"**/package-lock.json"}, []string{".github/workflows/ci.yml", ".claude/settings.json", "docs/AGENTS.md", ".mcp.json"}},
		{"all allowed", []string{"**"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Sensitive(files, tt.allowed); !slices.Equal(got, tt.want) {
				t.Errorf("Sensitive = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestSensitiveWarning: each file stays in its code span on its own line,
// whatever its name holds.
func TestSensitiveWarning(t *testing.T) {
	got := SensitiveWarning([]string{".github/workflows/ci.yml", "a`b\nc.lock"})
	for _, want := range []string{"## ⚠️ Sensitive changes\n", "\n- `.github/workflows/ci.yml`\n", "\n- `a'b c.lock`\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("warning %q lacks %q", got, want)
		}
	}
}

// CIConfig finds the files CI runs on a push, whatever the service, and
// only those; github.allow_sensitive lets them through.
func TestCIConfig(t *testing.T) {
	files := []string{".github/workflows/x.yml", ".gitlab-ci.yml", "ci/Jenkinsfile", ".circleci/config.yml",
		"docs/ci.md", ".github/CODEOWNERS", "src/.gitlab-ci.yml.txt", "./.travis.yml"}
	got := CIConfig(files, nil)
	want := []string{".github/workflows/x.yml", ".gitlab-ci.yml", "ci/Jenkinsfile", ".circleci/config.yml", ".travis.yml"}
	if !slices.Equal(got, want) {
		t.Errorf("CIConfig = %q, want %q", got, want)
	}
	if got := CIConfig(files, []string{"**"}); len(got) != 0 {
		t.Errorf("allowed all, still %q", got)
	}
}
