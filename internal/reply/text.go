package reply

import "strings"

// Review is a reviewer's output as its task file's review: without its
// SIGNAL BLOCK, and its headings below the review's own "## Review".
func Review(output string) string {
	return demoteHeadings(WithoutSignal(output), 3)
}

// PullRequest is a pr-composer's output as a pull request's title and
// body, its SIGNAL BLOCK removed: a first line "# title" or "Title: title"
// is the title (the latter is the composer's label, not the body's), the
// rest the body; else the whole text is the body under title.
func PullRequest(output, title string) (string, string) {
	text := WithoutSignal(output)
	lines := strings.SplitN(strings.TrimSpace(text), "\n", 2)
	first := strings.TrimSpace(lines[0])
	t, ok := strings.CutPrefix(first, "# ")
	if !ok {
		t, ok = cutLabel(first, "title:")
	}
	if !ok {
		return title, strings.TrimSpace(text)
	}
	if t = strings.TrimSpace(t); t != "" {
		title = t
	}
	if len(lines) < 2 {
		return title, ""
	}
	return title, strings.TrimSpace(lines[1])
}

// cutLabel cuts label (lower case) off the start of s whatever its case:
// "Title:", "TITLE:", "**Title:**" alike.
func cutLabel(s, label string) (string, bool) {
	s = strings.TrimLeft(s, "*_ ")
	if len(s) < len(label) || !strings.EqualFold(s[:len(label)], label) {
		return "", false
	}
	return strings.TrimLeft(s[len(label):], "*_ "), true
}

// WithoutSignal is an agent's output without its SIGNAL BLOCK (and the
// fence around it, if any).
func WithoutSignal(output string) string {
	lines := strings.Split(output, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.Contains(strings.ToUpper(lines[i]), "SIGNAL BLOCK") {
			lines = lines[:i]
			break
		}
	}
	text := strings.TrimSpace(strings.Join(lines, "\n"))
	return strings.TrimSpace(strings.TrimSuffix(text, "```"))
}

// demoteHeadings shifts Markdown headings so the highest is at level min:
// the review lives under "## Review" and must not open sections of its own
// at that level (the next review would not replace them).
func demoteHeadings(text string, min int) string {
	lines := strings.Split(text, "\n")
	top := 7
	fence := false
	for _, l := range lines {
		if strings.HasPrefix(l, "```") {
			fence = !fence
		}
		if n := headingLevel(l); !fence && n > 0 && n < top {
			top = n
		}
	}
	if top >= min {
		return text
	}
	shift := strings.Repeat("#", min-top)
	fence = false
	for i, l := range lines {
		if strings.HasPrefix(l, "```") {
			fence = !fence
		}
		if !fence && headingLevel(l) > 0 {
			lines[i] = shift + l
		}
	}
	return strings.Join(lines, "\n")
}

func headingLevel(line string) int {
	n := 0
	for n < len(line) && line[n] == '#' {
		n++
	}
	if n == 0 || n > 6 || n >= len(line) || line[n] != ' ' {
		return 0
	}
	return n
}
