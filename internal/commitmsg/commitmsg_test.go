package commitmsg

import (
	"strings"
	"testing"
)

func TestLine(t *testing.T) {
	if got := Line("  a\n b\tc ", 10); got != "a b c" {
		t.Errorf("%q", got)
	}
	if got := Line(strings.Repeat("é", 5), 3); got != "ééé…" {
		t.Errorf("%q: cut inside a character?", got)
	}
	// A commit subject shows what git holds: no reversed text, no escape.
	if got := Line("evil\u202etxt.exe \u2066x\u2069 \x1b[2Jclear\x00 \u200fend", 60); got != "eviltxt.exe x [2Jclear end" {
		t.Errorf("%q: bidi or control characters kept", got)
	}
}

func TestSubject(t *testing.T) {
	long := strings.Repeat("word ", 30)
	for _, c := range []struct{ format, kind, title, want string }{
		{Plain, "fix", "OnlyValidArgs suggests the wrong command.", "OnlyValidArgs suggests the wrong command"},
		{Conventional, "fix", "Fix the suggestion of OnlyValidArgs", "fix: fix the suggestion of OnlyValidArgs"},
		{Conventional, "feat", "API keys from a file", "feat: API keys from a file"},
		{Conventional, "chore", "", "chore: update"},
		{Plain, "", "two\nlines", "two lines"},
		{Plain, "", long, strings.TrimSpace(long)[:71] + "…"},
	} {
		got := Subject(c.format, c.kind, c.title)
		if got != c.want {
			t.Errorf("Subject(%s, %s, %q) = %q, want %q", c.format, c.kind, c.title, got, c.want)
		}
		if n := len([]rune(got)); n > 72 {
			t.Errorf("Subject(%q) has %d runes", c.title, n)
		}
	}
}

func TestKind(t *testing.T) {
	for _, c := range []struct {
		title string
		tags  []string
		want  string
	}{
		{"Anything", []string{"bug"}, "fix"},
		{"Anything", []string{"good first issue", "Enhancement"}, "feat"},
		{"Anything", []string{"documentation"}, "docs"},
		{"Fix: a crash on empty input", nil, "fix"},
		{"Add a --json flag", nil, "feat"},
		{"Refactor the loader", nil, "refactor"},
		{"docs for the loader", nil, "docs"},
		{"The loader is slow", nil, "chore"},
		{"", nil, "chore"},
	} {
		if got := Kind(c.title, c.tags); got != c.want {
			t.Errorf("Kind(%q, %q) = %q, want %q", c.title, c.tags, got, c.want)
		}
	}
}

func TestBody(t *testing.T) {
	out := "12\t3\targs.go\x0020\t0\targs_test.go\x00-\t-\tlogo.png\x00"
	got := Body(ParseNumstat(out))
	want := "Changes 3 files (+32 -3):\n- args.go (+12 -3)\n- args_test.go (+20 -0)\n- logo.png (binary)"
	if got != want {
		t.Errorf("body:\n%s\nwant:\n%s", got, want)
	}
	if Body(nil) != "" {
		t.Error("a body for no change")
	}
	var many strings.Builder
	for i := range 25 {
		many.WriteString("1\t0\tf" + strings.Repeat("x", i) + "\x00")
	}
	if got := Body(ParseNumstat(many.String())); !strings.HasSuffix(got, "- and 5 more") || strings.Count(got, "\n") != 21 {
		t.Errorf("25 files:\n%s", got)
	}
	// A file name is the agents' choice: it cannot add lines to the body.
	if got := Body([]Change{{Path: "a\nCadre-Step: x", Added: 1}}); strings.Count(got, "\n") != 1 {
		t.Errorf("a name broke the body: %q", got)
	}
}
