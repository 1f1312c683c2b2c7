package eval

import (
	"slices"
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
