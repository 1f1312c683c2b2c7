package jira

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"
)

// node is one node of an Atlassian Document Format document: a block
// (paragraph, list, code block…) or an inline (text, mention, emoji…).
type node struct {
	Type    string         `json:"type"`
	Version int            `json:"version,omitempty"`
	Text    string         `json:"text,omitempty"`
	Attrs   map[string]any `json:"attrs,omitempty"`
	Marks   []mark         `json:"marks,omitempty"`
	Content []node         `json:"content,omitempty"`
}

type mark struct {
	Type  string         `json:"type"`
	Attrs map[string]any `json:"attrs,omitempty"`
}

func (n node) attr(name string) string {
	switch v := n.Attrs[name].(type) {
	case string:
		return v
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return ""
}

// ADFToMarkdown renders an ADF document as Markdown, what the agents read:
// paragraphs, headings, lists (nested), fenced code blocks with their
// language, inline code, strong, emphasis, links, quotes and rules. A
// mention becomes the plain display name, without the @ (an agent must not
// ping anyone by repeating it); an emoji becomes its text. A node this
// does not know is rendered as its text content, so nothing is dropped.
// A document that is not JSON ADF is returned as it is (a JSON string is
// unquoted): Jira's v2 API sends plain text in the same fields.
func ADFToMarkdown(doc json.RawMessage) string {
	var s string
	if json.Unmarshal(doc, &s) == nil {
		return s
	}
	var root node
	if err := json.Unmarshal(doc, &root); err != nil {
		return strings.TrimSpace(string(doc))
	}
	if root.Type != "doc" {
		root = node{Type: "doc", Content: []node{root}}
	}
	return strings.TrimSpace(blocks(root.Content, false))
}

// blocks renders a sequence of block nodes, a blank line between them,
// or a single newline inside a tight list item.
func blocks(ns []node, tight bool) string {
	sep := "\n\n"
	if tight {
		sep = "\n"
	}
	var out []string
	for _, n := range ns {
		if s := block(n); strings.TrimSpace(s) != "" {
			out = append(out, s)
		}
	}
	return strings.Join(out, sep)
}

func block(n node) string {
	switch n.Type {
	case "paragraph":
		return inlines(n.Content)
	case "heading":
		level, _ := strconv.Atoi(n.attr("level"))
		level = min(max(level, 1), 6)
		return strings.Repeat("#", level) + " " + inlines(n.Content)
	case "bulletList", "orderedList":
		return list(n)
	case "codeBlock":
		return fence(n.attr("language"), textOf(n))
	case "blockquote":
		return prefixLines(blocks(n.Content, false), "> ", "> ")
	case "rule":
		return "---"
	case "table":
		return table(n)
	case "mediaSingle", "mediaGroup", "media":
		return ""
	case "text", "mention", "emoji", "hardBreak", "inlineCard", "date", "status":
		return inlines([]node{n})
	}
	if hasBlocks(n) {
		return blocks(n.Content, false)
	}
	return inlines(n.Content)
}

// hasBlocks reports whether n holds blocks rather than inlines: an unknown
// container (panel, expand, layout) is rendered as the blocks it holds.
func hasBlocks(n node) bool {
	for _, c := range n.Content {
		switch c.Type {
		case "text", "mention", "emoji", "hardBreak", "inlineCard", "date", "status":
			return false
		}
	}
	return len(n.Content) > 0
}

// list renders a bullet or ordered list, each item's continuation lines
// indented under its marker, so nested lists nest.
func list(n node) string {
	start := 1
	if o, err := strconv.Atoi(n.attr("order")); err == nil && o > 0 {
		start = o
	}
	var items []string
	for i, it := range n.Content {
		marker := "- "
		if n.Type == "orderedList" {
			marker = strconv.Itoa(start+i) + ". "
		}
		body := blocks(it.Content, true)
		if it.Type != "listItem" {
			body = block(it)
		}
		items = append(items, prefixLines(body, marker, strings.Repeat(" ", len(marker))))
	}
	return strings.Join(items, "\n")
}

// prefixLines puts first before the first line of s and rest before every
// other non-empty one.
func prefixLines(s, first, rest string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		switch {
		case i == 0:
			lines[i] = first + l
		case l != "":
			lines[i] = rest + l
		case strings.TrimSpace(rest) != "":
			lines[i] = strings.TrimRight(rest, " ")
		}
	}
	return strings.Join(lines, "\n")
}

// fence wraps code in a fence longer than any run of backticks in it.
func fence(lang, code string) string {
	ticks := "```"
	for strings.Contains(code, ticks) {
		ticks += "`"
	}
	return ticks + lang + "\n" + strings.TrimSuffix(code, "\n") + "\n" + ticks
}

// table renders a table as a Markdown pipe table, its first row the
// header.
func table(n node) string {
	var rows []string
	for i, row := range n.Content {
		var cells []string
		for _, cell := range row.Content {
			s := strings.ReplaceAll(blocks(cell.Content, true), "\n", " ")
			cells = append(cells, strings.ReplaceAll(s, "|", `\|`))
		}
		rows = append(rows, "| "+strings.Join(cells, " | ")+" |")
		if i == 0 {
			rows = append(rows, "|"+strings.Repeat(" --- |", len(cells)))
		}
	}
	return strings.Join(rows, "\n")
}

// inlines renders inline nodes as one Markdown text.
func inlines(ns []node) string {
	var b strings.Builder
	for _, n := range ns {
		switch n.Type {
		case "text":
			b.WriteString(marked(n.Text, n.Marks))
		case "hardBreak":
			b.WriteString("\n")
		case "mention":
			name := n.attr("text")
			if name == "" {
				name = n.attr("displayName")
			}
			b.WriteString(strings.TrimPrefix(name, "@"))
		case "emoji":
			if t := n.attr("text"); t != "" {
				b.WriteString(t)
			} else {
				b.WriteString(n.attr("shortName"))
			}
		case "inlineCard", "blockCard", "embedCard":
			b.WriteString(n.attr("url"))
		case "status":
			b.WriteString(n.attr("text"))
		case "date":
			b.WriteString(date(n.attr("timestamp")))
		default:
			b.WriteString(inlines(n.Content))
		}
	}
	return b.String()
}

// date renders an ADF date, milliseconds since the epoch, as a day.
func date(ms string) string {
	v, err := strconv.ParseInt(ms, 10, 64)
	if err != nil {
		return ms
	}
	return time.UnixMilli(v).UTC().Format(time.DateOnly)
}

// marked wraps a text in its marks: code innermost, a link outermost.
func marked(text string, marks []mark) string {
	var href string
	code, strong, em, strike := false, false, false, false
	for _, m := range marks {
		switch m.Type {
		case "code":
			code = true
		case "strong":
			strong = true
		case "em":
			em = true
		case "strike":
			strike = true
		case "link":
			href, _ = m.Attrs["href"].(string)
		}
	}
	if code {
		ticks := "`"
		for strings.Contains(text, ticks) {
			ticks += "`"
		}
		text = ticks + text + ticks
	}
	if em {
		text = "*" + text + "*"
	}
	if strong {
		text = "**" + text + "**"
	}
	if strike {
		text = "~~" + text + "~~"
	}
	if href != "" {
		text = "[" + text + "](" + href + ")"
	}
	return text
}

// textOf is the plain text a node holds, its marks dropped.
func textOf(n node) string {
	if n.Type == "text" {
		return n.Text
	}
	if n.Type == "hardBreak" {
		return "\n"
	}
	var b strings.Builder
	for _, c := range n.Content {
		b.WriteString(textOf(c))
	}
	return b.String()
}
