package engine

import "testing"

func TestNextOutput(t *testing.T) {
	const first = "/s/outputs/audit-auditor-1.md"
	for _, c := range []struct{ last, want string }{
		{"", first},
		{first, "/s/outputs/audit-auditor-1.try2.md"},
		{"/s/outputs/audit-auditor-1.try2.md", "/s/outputs/audit-auditor-1.try3.md"},
		{"/s/outputs/audit-auditor-1.try9.md", "/s/outputs/audit-auditor-1.try10.md"},
		{"/elsewhere/x.md", "/s/outputs/audit-auditor-1.try2.md"},
	} {
		if got := nextOutput(first, c.last); got != c.want {
			t.Errorf("nextOutput(%q) = %q, want %q", c.last, got, c.want)
		}
	}
}
