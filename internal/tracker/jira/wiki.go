package jira

import (
	"regexp"
	"strconv"
	"strings"
)

// markdownToWiki turns cadre's Markdown into Jira wiki markup, what Data
// Center renders a comment's text as: the same blocks MarkdownToADF reads,
// written in wiki syntax.
func markdownToWiki(md string) string {
	return strings.TrimSpace(wikiBlocks(parseBlocks(splitLines(md)), ""))
}

func wikiBlocks(ns []node, listPrefix string) string {
	var out []string
	for _, n := range ns {
		if s := wikiBlock(n, listPrefix); s != "" {
			out = append(out, s)
		}
	}
	sep := "\n\n"
	if listPrefix != "" {
		sep = "\n"
	}
	return strings.Join(out, sep)
}

func wikiBlock(n node, listPrefix string) string {
	switch n.Type {
	case "paragraph":
		return wikiInline(n.Content)
	case "heading":
		level, _ := strconv.Atoi(n.attr("level"))
		return "h" + strconv.Itoa(min(max(level, 1), 6)) + ". " + wikiInline(n.Content)
	case "codeBlock":
		if lang := n.attr("language"); lang != "" {
			return "{code:" + lang + "}\n" + textOf(n) + "\n{code}"
		}
		return "{noformat}\n" + textOf(n) + "\n{noformat}"
	case "blockquote":
		return "{quote}\n" + wikiBlocks(n.Content, "") + "\n{quote}"
	case "rule":
		return "----"
	case "bulletList", "orderedList":
		marker := "*"
		if n.Type == "orderedList" {
			marker = "#"
		}
		var items []string
		for _, it := range n.Content {
			items = append(items, wikiItem(it, listPrefix+marker))
		}
		return strings.Join(items, "\n")
	}
	return wikiInline(n.Content)
}

// wikiItem writes a list item: its first paragraph after the marker,
// nested lists with the longer marker wiki nests by, other blocks as
// continuation lines.
func wikiItem(it node, prefix string) string {
	var lines []string
	for i, c := range it.Content {
		switch {
		case c.Type == "bulletList" || c.Type == "orderedList":
			lines = append(lines, wikiBlock(c, prefix))
		case i == 0:
			lines = append(lines, prefix+" "+wikiBlock(c, ""))
		default:
			lines = append(lines, wikiBlock(c, ""))
		}
	}
	if len(lines) == 0 {
		return prefix + " "
	}
	return strings.Join(lines, "\n")
}

// wikiEscape keeps text literal where wiki markup would read [ or { as a
// link or a macro.
var wikiEscape = strings.NewReplacer("[", `\[`, "]", `\]`, "{", `\{`, "}", `\}`)

func wikiInline(ns []node) string {
	var b strings.Builder
	for _, n := range ns {
		switch n.Type {
		case "hardBreak":
			b.WriteString("\n")
		case "text":
			b.WriteString(wikiMarked(n.Text, n.Marks))
		default:
			b.WriteString(wikiEscape.Replace(textOf(n)))
		}
	}
	return b.String()
}

func wikiMarked(text string, marks []mark) string {
	var href string
	code := false
	for _, m := range marks {
		if m.Type == "code" {
			code = true
		}
		if m.Type == "link" {
			href, _ = m.Attrs["href"].(string)
		}
	}
	if code {
		text = "{{" + strings.NewReplacer("{", `\{`, "}", `\}`).Replace(text) + "}}"
	} else {
		text = wikiEscape.Replace(text)
	}
	for _, m := range marks {
		switch m.Type {
		case "strong":
			text = "*" + text + "*"
		case "em":
			text = "_" + text + "_"
		case "strike":
			text = "-" + text + "-"
		}
	}
	if href != "" {
		if text == wikiEscape.Replace(href) {
			return "[" + href + "]"
		}
		return "[" + text + "|" + href + "]"
	}
	return text
}

var (
	wikiHeading = regexp.MustCompile(`^\s*h([1-6])\.\s+(.*)$`)
	wikiList    = regexp.MustCompile(`^\s*([*#-]+)\s+(.*)$`)
	wikiCode    = regexp.MustCompile(`^\s*\{(code|noformat)(?::([^}]*))?\}(.*)$`)
	wikiLink    = regexp.MustCompile(`\[([^\]|\n]+)\|([^\]\n]+)\]`)
	wikiURL     = regexp.MustCompile(`\[((?:https?|mailto):[^\]\s]+)\]`)
	wikiUser    = regexp.MustCompile(`\[~([^\]]+)\]`)
	wikiMono    = regexp.MustCompile(`\{\{(.+?)\}\}`)
	wikiBold    = regexp.MustCompile(`(^|[\s(])\*(\S(?:[^*\n]*\S)?)\*([\s).,;:!?]|$)`)
	wikiColor   = regexp.MustCompile(`\{color(?::[^}]*)?\}`)
)

// wikiToMarkdown turns a Data Center description or comment (wiki markup)
// into Markdown for the agents: headings, lists, code and noformat blocks,
// quotes, links, user mentions as plain names, monospace and bold. Wiki
// the agents read well as it is (tables, panels) is left alone.
func wikiToMarkdown(s string) string {
	lines := splitLines(s)
	var out []string
	quoted := false
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if strings.TrimSpace(line) == "{quote}" {
			quoted = !quoted
			continue
		}
		if quoted {
			out = append(out, "> "+wikiLine(line))
			continue
		}
		if m := wikiCode.FindStringSubmatch(line); m != nil {
			var code []string
			closing := "{" + m[1] + "}"
			rest := m[3]
			for ; !strings.Contains(rest, closing) && i+1 < len(lines); i++ {
				code = append(code, rest)
				rest = lines[i+1]
			}
			before, _, _ := strings.Cut(rest, closing)
			code = append(code, before)
			out = append(out, fence(wikiLang(m[2]), strings.Trim(strings.Join(code, "\n"), "\n")))
			continue
		}
		out = append(out, wikiLine(line))
	}
	return strings.TrimSpace(strings.Join(out, "\n"))
}

// wikiLang reads a code macro's language: {code:go} or {code:language=go|title=x}.
func wikiLang(params string) string {
	for p := range strings.SplitSeq(params, "|") {
		if k, v, ok := strings.Cut(p, "="); ok {
			if strings.TrimSpace(k) == "language" {
				return strings.TrimSpace(v)
			}
			continue
		}
		return strings.TrimSpace(p)
	}
	return ""
}

func wikiLine(line string) string {
	switch t := strings.TrimSpace(line); {
	case t == "----":
		return "---"
	case strings.HasPrefix(t, "bq. "):
		return "> " + wikiSpans(t[4:])
	}
	if m := wikiHeading.FindStringSubmatch(line); m != nil {
		n, _ := strconv.Atoi(m[1])
		return strings.Repeat("#", n) + " " + wikiSpans(m[2])
	}
	if m := wikiList.FindStringSubmatch(line); m != nil {
		depth := len(m[1])
		marker := "- "
		if strings.HasSuffix(m[1], "#") {
			marker = "1. "
		}
		return strings.Repeat("  ", depth-1) + marker + wikiSpans(m[2])
	}
	return wikiSpans(line)
}

func wikiSpans(s string) string {
	s = wikiColor.ReplaceAllString(s, "")
	s = wikiUser.ReplaceAllString(s, "$1")
	s = wikiLink.ReplaceAllString(s, "[$1]($2)")
	s = wikiURL.ReplaceAllString(s, "<$1>")
	s = wikiMono.ReplaceAllString(s, "`$1`")
	s = wikiBold.ReplaceAllString(s, "$1**$2**$3")
	return s
}
