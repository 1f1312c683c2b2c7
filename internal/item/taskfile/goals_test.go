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
	} {
		if got := (&Task{Body: c.body}).Goals(); !cmp.Equal(got, c.want) {
			t.Errorf("Goals(%q) = %q, want %q", c.body, got, c.want)
		}
	}
}
