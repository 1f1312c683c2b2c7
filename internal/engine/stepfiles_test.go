package engine

import (
	"regexp"
	"testing"
)

// TestAttemptOutput: every attempt of a step gets an output file of its
// own, named after the step with a token no earlier process could know,
// and listed after the earlier ones.
func TestAttemptOutput(t *testing.T) {
	const first = "/s/outputs/audit-auditor-1.md"
	name := regexp.MustCompile(`^/s/outputs/audit-auditor-1\.[0-9a-f]{32}\.md$`)
	seen := map[string]bool{}
	last := ""
	for range 50 {
		got := attemptOutput(first, last)
		if !name.MatchString(got) {
			t.Fatalf("attemptOutput = %q, want the step's name with a token", got)
		}
		if seen[got] || got == first {
			t.Fatalf("attemptOutput gave %q again", got)
		}
		if last != "" && got < last {
			t.Errorf("%q lists before the earlier attempt's %q", got, last)
		}
		seen[got], last = true, got
	}
}
