package taskfile

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestGoals(t *testing.T) {
	for _, c := range []struct {
		body string
		want []string
	}{
		{"# T\n\n## Goals\n1. Parse the flag.\n2) Use it,\n   in both commands.\n\n## Notes\n1. not a goal\n", []string{"Parse the flag.", "Use it, in both commands."}},
		{"# T\n\n## Goal\nOne goal, prose.\n", nil},
		{"# T\n\n## goals\n- a bullet is no ordered list\n", nil},
		{"# T\n\n### Goals\n1. a level-3 heading is not the section\n", nil},
		{"# T\r\n\r\n## Goals\r\n1. Windows line ends\r\n", []string{"Windows line ends"}},
		// A code block is an example: its headings and lists are not the task's.
		{"# T\n\n```markdown\n## Goals\n1. not mine\n2. nor this\n```\n", nil},
		{"# T\n\n## Goals\n1. a\n```sh\n# a comment\n```\n2. b\n", []string{"a", "b"}},
	} {
		if got := (&Task{Body: c.body}).Goals(); !cmp.Equal(got, c.want) {
			t.Errorf("Goals(%q) = %q, want %q", c.body, got, c.want)
		}
	}
}
