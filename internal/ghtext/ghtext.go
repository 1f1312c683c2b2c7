// Package ghtext makes text from agents or CI safe to post on GitHub: a
// pull request's title and body, a comment, a reply to a review.
//
// Such text is written by a model that read a stranger's issue, so it is
// treated as the stranger's. What GitHub would act on is taken out: remote
// images (fetched by every reader's browser, a URL able to carry data
// away) and raw HTML are dropped, @mentions no longer notify anyone,
// closing keywords close only the item's own issue, and lengths are
// capped. The text stays readable; nothing is escaped that GitHub shows
// as written.
//
// Mentions are neutralised as "@ name": a space after the at sign. It
// works wherever the mention stands (prose, a code span, a link's text),
// whereas wrapping it in backticks inside a code span would split the
// span and bring the mention back to life, and a zero-width character
// would be an invisible character of the kind titles must not hold.
package ghtext

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode"
)

// MaxBody is the most characters a body keeps; MaxTitle, a title.
const (
	MaxBody  = 20000
	MaxTitle = 256
)

// Issue is the issue a text belongs to: its closing keywords may name it.
// The zero Issue lets no keyword close anything.
type Issue struct {
	Repo   string // owner/name
	Number int
}

// Title is s as a pull request's title: one line without control, bidi or
// zero-width characters (Unicode's Cc and Cf categories, line and
// paragraph separators), at most MaxTitle characters.
func Title(s string) string {
	s = strings.Map(func(r rune) rune {
		switch {
		case unicode.Is(unicode.Zl, r) || unicode.Is(unicode.Zp, r):
			return ' '
		case unicode.IsSpace(r):
			return r
		case unicode.Is(unicode.Cc, r) || unicode.Is(unicode.Cf, r) || r == unicode.ReplacementChar:
			return -1
		}
		return r
	}, s)
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > MaxTitle {
		s = string(r[:MaxTitle-1]) + "…"
	}
	return s
}

// cutNote ends a body cut to MaxBody.
const cutNote = "\n\n… (cut by cadre: the text was longer than 20,000 characters)"

// Body is s as a body or a comment posted for the item of issue own:
// outside fenced code blocks, images and HTML tags and comments dropped
// and any other "<" that could open HTML escaped; everywhere, mentions
// neutralised ("@ name") and closing keywords that name another issue
// than own turned into "Refs"; at most MaxBody characters, with a fenced
// block left open closed again.
func Body(s string, own Issue) string {
	var b strings.Builder
	var prose []string
	flush := func() {
		if len(prose) > 0 {
			b.WriteString(safeProse(strings.Join(prose, "")))
			prose = prose[:0]
		}
	}
	fence := "" // the open fence's marker, "" outside one
	for _, line := range strings.SplitAfter(s, "\n") {
		switch {
		case fence != "":
			b.WriteString(line)
			if closes(line, fence) {
				fence = ""
			}
		case opens(line) != "":
			flush()
			fence = opens(line)
			b.WriteString(line)
		default:
			prose = append(prose, line)
		}
	}
	flush()
	out := keywords(mentions(b.String()), own)
	if r := []rune(out); len(r) > MaxBody {
		out = string(r[:MaxBody-len([]rune(cutNote))])
		fence = openAtEnd(out)
		if fence != "" {
			out += "\n" + fence
		}
		out += cutNote
	} else if fence != "" {
		out += "\n" + fence + "\n"
	}
	return out
}

// opens is the marker of the fenced code block line opens (its run of
// three or more backticks or tildes), or "". Only a fence at the start of
// its line counts: one indented by a list item or a quote may end with
// its container, where GitHub would read what follows as Markdown again,
// so what follows it is treated as prose (at worst, code is sanitised).
func opens(line string) string {
	if len(line) < 3 || (line[0] != '`' && line[0] != '~') {
		return ""
	}
	n := len(line) - len(strings.TrimLeft(line, line[:1]))
	if n < 3 || line[0] == '`' && strings.Contains(line[n:], "`") {
		return "" // a backtick fence's info string holds no backtick
	}
	return line[:n]
}

// closes says whether line closes a block opened by fence: up to three
// spaces, a run of its character at least as long, nothing but spaces.
func closes(line, fence string) bool {
	t := strings.TrimLeft(line, " ")
	if len(line)-len(t) > 3 {
		return false
	}
	run := strings.TrimLeft(t, fence[:1])
	return len(t)-len(run) >= len(fence) && strings.TrimSpace(run) == ""
}

// openAtEnd is the marker of a fenced block s leaves open, or "".
func openAtEnd(s string) string {
	fence := ""
	for _, line := range strings.SplitAfter(s, "\n") {
		switch {
		case fence != "":
			if closes(line, fence) {
				fence = ""
			}
		case opens(line) != "":
			fence = opens(line)
		}
	}
	return fence
}

var (
	// image is an inline image, ![alt](destination).
	image = regexp.MustCompile(`!\[[^\]\n]*\]\([^)]*\)`)
	// html is a tag (with its attributes, over lines), a comment, a
	// processing instruction, a declaration or a CDATA section.
	html = regexp.MustCompile(`(?s)<!--.*?(?:-->|\z)|<\?.*?(?:\?>|\z)|<![A-Za-z\[].*?(?:>|\z)|</?[A-Za-z][A-Za-z0-9-]*(?:[\s/][^<>]*)?>`)
	// opener is a "<" that could still start HTML: before a tag's name
	// (one followed by a space, "/", ">" or the end: not an autolink's
	// scheme), "!" or "?".
	opener = regexp.MustCompile(`<(?:[!?]|/?[A-Za-z][A-Za-z0-9-]*(?:[\s/>]|\z))`)
)

// safeProse drops images and HTML from text outside fenced code blocks.
func safeProse(s string) string {
	// Tags first: taking one out could join an image's parts.
	s = html.ReplaceAllString(s, "")
	s = image.ReplaceAllString(s, "(image removed)")
	// Any other image syntax (a reference, a destination with nested
	// parentheses) is left as text: "![" no longer starts an image.
	s = strings.ReplaceAll(s, "![", `!\[`)
	return opener.ReplaceAllStringFunc(s, func(m string) string { return "&lt;" + m[1:] })
}

// mention is an @mention GitHub would notify: a user or an org/team, not
// after a word character (an email address is not one).
var mention = regexp.MustCompile(`(^|[^A-Za-z0-9_])@([A-Za-z0-9][A-Za-z0-9-]*(?:/[A-Za-z0-9][A-Za-z0-9_.-]*)?)`)

// mentions neutralises every mention in s.
func mentions(s string) string { return mention.ReplaceAllString(s, "$1@ $2") }

// keyword is a closing keyword and the issue it names: #N, GH-N,
// owner/repo#N or an issue's or pull request's URL.
var keyword = regexp.MustCompile(`(?i)\b(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?)(\s*:?\s+)` +
	`(#([0-9]+)|gh-([0-9]+)|([A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)#([0-9]+)|https?://[^/\s]+/([A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)/(?:issues|pull)/([0-9]+))`)

// keywords turns the closing keywords of s that name another issue than
// own into "Refs", so merging closes nothing else.
func keywords(s string, own Issue) string {
	return keyword.ReplaceAllStringFunc(s, func(m string) string {
		sub := keyword.FindStringSubmatch(m)
		repo, num := own.Repo, ""
		switch {
		case sub[3] != "":
			num = sub[3]
		case sub[4] != "":
			num = sub[4]
		case sub[5] != "":
			repo, num = sub[5], sub[6]
		default:
			repo, num = sub[7], sub[8]
		}
		if n, err := strconv.Atoi(num); err == nil && own.Number > 0 && n == own.Number && strings.EqualFold(repo, own.Repo) {
			return m
		}
		return "Refs" + sub[1] + sub[2]
	})
}

// String is the issue as owner/name#N, for messages.
func (i Issue) String() string { return fmt.Sprintf("%s#%d", i.Repo, i.Number) }
