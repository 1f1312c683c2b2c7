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
