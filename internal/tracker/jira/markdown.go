package jira

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
)

// MarkdownToADF turns cadre's Markdown (what it comments: paragraphs,
// headings, fenced code, bullet and ordered lists, quotes, rules, inline
// code, strong, emphasis, links) into an ADF document, which Jira Cloud's
// v3 API requires for a comment's body. Anything else stays literal text.
func MarkdownToADF(md string) json.RawMessage {
	doc := node{Type: "doc", Version: 1, Content: parseBlocks(splitLines(md))}
	if doc.Content == nil {
		doc.Content = []node{}
	}
	b, _ := json.Marshal(doc)
	return b
}

func splitLines(s string) []string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	return strings.Split(strings.TrimRight(s, "\n"), "\n")
}

var (
	headingLine = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`)
	ruleLine    = regexp.MustCompile(`^\s{0,3}(?:(?:\*\s*){3,}|(?:-\s*){3,}|(?:_\s*){3,})$`)
	listLine    = regexp.MustCompile(`^(\s*)([-*+]|\d{1,9}[.)])\s+(.*)$`)
	fenceLine   = regexp.MustCompile("^\\s*(`{3,}|~{3,})\\s*([^`\\s]*)")
)

// parseBlocks reads Markdown lines as ADF blocks.
func parseBlocks(lines []string) []node {
	var out []node
	for i := 0; i < len(lines); {
		line := lines[i]
		switch {
		case strings.TrimSpace(line) == "":
			i++
		case fenceLine.MatchString(line):
			var n node
			n, i = parseFence(lines, i)
			out = append(out, n)
		case ruleLine.MatchString(line):
			out = append(out, node{Type: "rule"})
			i++
		case headingLine.MatchString(line):
			m := headingLine.FindStringSubmatch(line)
			out = append(out, node{Type: "heading", Attrs: map[string]any{"level": len(m[1])}, Content: parseInline(m[2], nil)})
			i++
		case strings.HasPrefix(strings.TrimSpace(line), ">"):
			var quoted []string
			for ; i < len(lines) && strings.HasPrefix(strings.TrimSpace(lines[i]), ">"); i++ {
				q := strings.TrimPrefix(strings.TrimSpace(lines[i]), ">")
				quoted = append(quoted, strings.TrimPrefix(q, " "))
			}
			out = append(out, node{Type: "blockquote", Content: parseBlocks(quoted)})
		case listLine.MatchString(line):
			var n node
			n, i = parseList(lines, i)
			out = append(out, n)
		default:
			var para []string
			for ; i < len(lines) && strings.TrimSpace(lines[i]) != "" && (len(para) == 0 || !startsBlock(lines[i])); i++ {
				para = append(para, strings.TrimSpace(lines[i]))
			}
			out = append(out, paragraph(para))
		}
	}
	return out
}

// startsBlock reports whether line ends the paragraph before it.
func startsBlock(line string) bool {
	return fenceLine.MatchString(line) || headingLine.MatchString(line) || ruleLine.MatchString(line) ||
		listLine.MatchString(line) || strings.HasPrefix(strings.TrimSpace(line), ">")
}

// paragraph joins a paragraph's lines with hard breaks: cadre's comments
// break lines where they mean to.
func paragraph(lines []string) node {
	var content []node
	for i, l := range lines {
		if i > 0 {
			content = append(content, node{Type: "hardBreak"})
		}
		content = append(content, parseInline(l, nil)...)
	}
	return node{Type: "paragraph", Content: content}
}

// parseFence reads the fenced code block opening at lines[i] up to its
// closing fence (or the end), and returns the line after it.
func parseFence(lines []string, i int) (node, int) {
	m := fenceLine.FindStringSubmatch(lines[i])
	open, lang := m[1], m[2]
	indent := len(lines[i]) - len(strings.TrimLeft(lines[i], " "))
	var code []string
	for i++; i < len(lines); i++ {
		t := strings.TrimSpace(lines[i])
		if strings.HasPrefix(t, open) && strings.Trim(t, open[:1]) == "" {
			i++
			break
		}
		code = append(code, strings.TrimPrefix(lines[i], strings.Repeat(" ", indent)))
	}
	n := node{Type: "codeBlock"}
	if lang != "" {
		n.Attrs = map[string]any{"language": lang}
	}
	if text := strings.Join(code, "\n"); text != "" {
		n.Content = []node{{Type: "text", Text: text}}
	}
	return n, i
}

// parseList reads the list starting at lines[i]: items at its indent,
// each holding the lines indented under it (nested lists among them).
func parseList(lines []string, i int) (node, int) {
	first := listLine.FindStringSubmatch(lines[i])
	base, ordered := len(first[1]), !strings.ContainsAny(first[2], "-*+")
	list := node{Type: "bulletList"}
	if ordered {
		list.Type = "orderedList"
		if n, _ := strconv.Atoi(strings.TrimRight(first[2], ".)")); n > 1 {
			list.Attrs = map[string]any{"order": n}
		}
	}
	var item []string
	flush := func() {
		if item != nil {
			list.Content = append(list.Content, node{Type: "listItem", Content: parseBlocks(item)})
		}
		item = nil
	}
	for i < len(lines) {
		line := lines[i]
		indent := len(line) - len(strings.TrimLeft(line, " \t"))
		m := listLine.FindStringSubmatch(line)
		switch {
		case m != nil && indent == base && strings.ContainsAny(m[2], "-*+") != ordered:
			flush()
			item = []string{m[3]}
		case strings.TrimSpace(line) == "":
			if i+1 >= len(lines) || indentOf(lines[i+1]) <= base && !listLine.MatchString(lines[i+1]) {
				flush()
				return list, i + 1
			}
			item = append(item, "")
		case indent > base:
			item = append(item, strings.TrimPrefix(line, strings.Repeat(" ", min(indent, base+2))))
		case m == nil && !startsBlock(line):
			item = append(item, strings.TrimSpace(line)) // a lazy continuation
		default:
			flush()
			return list, i
		}
		i++
	}
	flush()
	return list, i
}

func indentOf(line string) int { return len(line) - len(strings.TrimLeft(line, " \t")) }

// parseInline reads a line's inline Markdown as ADF text nodes, each
// carrying marks (those of the spans it is within, then its own).
func parseInline(s string, marks []mark) []node {
	var out []node
	var plain strings.Builder
	flush := func() {
		if plain.Len() > 0 {
			out = append(out, node{Type: "text", Text: plain.String(), Marks: marks})
			plain.Reset()
		}
	}
	for i := 0; i < len(s); {
		if n, inner, m, ok := span(s, i); ok {
			flush()
			// A code span's text, and a bare or <> link's (which is its
			// own address), are read as written: parsed again, the
			// address would be a link again, without end.
			if m.Type == "code" || m.Type == "link" && inner == m.Attrs["href"] {
				out = append(out, node{Type: "text", Text: inner, Marks: with(marks, m)})
			} else {
				out = append(out, parseInline(inner, with(marks, m))...)
			}
			i += n
			continue
		}
		if s[i] == '\\' && i+1 < len(s) && strings.ContainsRune("\\`*_[]()#+-.!~>|{}", rune(s[i+1])) {
			plain.WriteByte(s[i+1])
			i += 2
			continue
		}
		plain.WriteByte(s[i])
		i++
	}
	flush()
	return out
}

func with(marks []mark, m mark) []mark {
	out := make([]mark, 0, len(marks)+1)
	return append(append(out, marks...), m)
}

var (
	linkSpan = regexp.MustCompile(`^\[([^\]]+)\]\(([^)\s]+)\)`)
	autoLink = regexp.MustCompile(`^<(https?://[^>\s]+)>`)
	bareURL  = regexp.MustCompile(`^https?://[^\s<>()\[\]]*[^\s<>()\[\].,;:!?'"]`)
)

// span reads the inline span starting at s[i], if one does: its length,
// the text inside and the mark it puts on it.
func span(s string, i int) (int, string, mark, bool) {
	rest := s[i:]
	switch {
	case rest[0] == '`':
		ticks := len(rest) - len(strings.TrimLeft(rest, "`"))
		if end := strings.Index(rest[ticks:], rest[:ticks]); end > 0 {
			return 2*ticks + end, strings.TrimSpace(rest[ticks : ticks+end]), mark{Type: "code"}, true
		}
	case rest[0] == '[':
		if m := linkSpan.FindStringSubmatch(rest); m != nil {
			return len(m[0]), m[1], linkMark(m[2]), true
		}
	case rest[0] == '<':
		if m := autoLink.FindStringSubmatch(rest); m != nil {
			return len(m[0]), m[1], linkMark(m[1]), true
		}
	case rest[0] == 'h' && (i == 0 || !isWord(s[i-1])):
		if m := bareURL.FindString(rest); m != "" {
			return len(m), m, linkMark(m), true
		}
	}
	for _, d := range []struct{ delim, typ string }{{"**", "strong"}, {"__", "strong"}, {"~~", "strike"}, {"*", "em"}, {"_", "em"}} {
		if !strings.HasPrefix(rest, d.delim) || len(rest) <= 2*len(d.delim) || rest[len(d.delim)] == ' ' {
			continue
		}
		if d.delim[0] == '_' && i > 0 && isWord(s[i-1]) {
			continue // snake_case is not emphasis
		}
		body := rest[len(d.delim):]
		end := strings.Index(body, d.delim)
		for end > 0 && d.delim[0] == '_' && end+len(d.delim) < len(body) && isWord(body[end+len(d.delim)]) {
			next := strings.Index(body[end+1:], d.delim)
			if next < 0 {
				end = -1
				break
			}
			end += 1 + next
		}
		if end > 0 && body[end-1] != ' ' {
			return 2*len(d.delim) + end, body[:end], mark{Type: d.typ}, true
		}
	}
	return 0, "", mark{}, false
}

func linkMark(href string) mark { return mark{Type: "link", Attrs: map[string]any{"href": href}} }

func isWord(b byte) bool {
	return b == '_' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
}
