// Package fence reads Markdown outside its fenced code blocks: where a
// hidden marker counts as one. A marker quoted inside a code block (a bug
// report about cadre, a pasted log) is not the comment the marker keys.
package fence

import "strings"

// Lines hands fn each trimmed line of body outside fenced code blocks,
// until fn says stop.
func Lines(body string, fn func(line string) bool) {
	open := ""
	for line := range strings.SplitSeq(body, "\n") {
		t := strings.TrimSpace(line)
		if f := opening(t); f != "" {
			switch {
			case open == "":
				open = f
				continue
			case strings.HasPrefix(t, open) && strings.Trim(t, open[:1]) == "":
				open = ""
				continue
			}
		}
		if open == "" && !fn(t) {
			return
		}
	}
}

// Carries reports whether body holds tag outside fenced code blocks.
func Carries(body, tag string) bool {
	found := false
	Lines(body, func(line string) bool {
		found = strings.Contains(line, tag)
		return !found
	})
	return found
}

// opening is the run of backticks or tildes opening a fenced code block
// on line, "" when none does.
func opening(line string) string {
	for _, ch := range []string{"`", "~"} {
		if n := len(line) - len(strings.TrimLeft(line, ch)); n >= 3 {
			return strings.Repeat(ch, n)
		}
	}
	return ""
}
