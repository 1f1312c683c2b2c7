package signal

import (
	"strconv"
	"strings"
	"unicode"
)

// field is one field line of a block plus its continuation lines, before
// its value is checked.
type field struct {
	label  string   // label as written, trimmed, without bold
	name   string   // canonical standard name; "" for an extra field
	first  string   // value text on the label line
	cont   []string // continuation lines as written ("" for a kept blank line)
	line   int      // 1-based line number
	last   int      // 1-based line number of its last line
	indent int      // indentation of the label line, in runes
}

// multi reports whether the field holds free text whose line breaks matter.
func (f *field) multi() bool { return f.name == "" || f.name == "Context" }

// readFields collects the fields of the block whose heading is lines[head].
// The block ends at the first line that is neither a field, a continuation
// line, nor a blank line followed by one of those; and at the next
// markdown heading, thematic break or closing code fence.
func readFields(lines []string, head int) []*field {
	var (
		fields []*field
		cur    *field
		blanks int // blank lines since the last content line
	)
	for i := head + 1; i < len(lines); i++ {
		ln := lines[i]
		t := strings.TrimSpace(ln)
		if t == "" {
			blanks++
			continue
		}
		afterBlank := blanks > 0
		n := blanks
		blanks = 0
		ind := indent(ln)

		// Lines indented under a field continue it. Free-text fields take
		// them whole (nested lists, code, paragraphs after a blank line);
		// a single-line field takes only those that are not fields.
		if cur != nil && ind > cur.indent {
			if cur.multi() {
				if cur.first != "" || len(cur.cont) > 0 {
					for ; n > 0; n-- {
						cur.cont = append(cur.cont, "")
					}
				}
				cur.cont, cur.last = append(cur.cont, ln), i+1
				continue
			}
			if _, ok := parseField(t); !ok && !afterBlank && !isFence(t) && !isHeading(t) && !isRule(t) {
				cur.cont, cur.last = append(cur.cont, ln), i+1
				continue
			}
		}
		if isFence(t) {
			// A fence before the first field opens the block's code block;
			// any later one closes it.
			if len(fields) == 0 {
				continue
			}
			break
		}
		if isHeading(t) || isRule(t) {
			break
		}
		inContext := cur != nil && cur.name == "Context" && !afterBlank
		if pf, ok := parseField(t); ok {
			// "Word: text" right under Context is more likely prose than a
			// new field, unless it names a standard field.
			if !(inContext && pf.plain && !pf.bulleted && pf.name == "") {
				cur = &field{label: pf.label, name: pf.name, first: pf.value, line: i + 1, last: i + 1, indent: ind}
				fields = append(fields, cur)
				continue
			}
		}
		if inContext && !isBullet(t) {
			cur.cont, cur.last = append(cur.cont, ln), i+1
			continue
		}
		break
	}
	return fields
}

// build checks the values of fields and assembles the Signal; headLine is
// the 1-based line of the block's heading. Later duplicates win.
func build(fields []*field, headLine int) (Signal, error) {
	var s Signal
	for _, f := range fields {
		v := value(f)
		bad := func(reason string) error {
			return &ValueError{Field: f.name, Value: v, Reason: reason, Line: f.line}
		}
		switch f.name {
		case "Agent":
			s.Agent = unwrap(v)
		case "Result":
			if v == "" {
				s.Result = ""
				continue
			}
			r, ok := parseResult(v)
			if !ok {
				return Signal{}, bad("is not one of " + resultList)
			}
			s.Result = r
		case "Loop Summary":
			s.LoopSummary = v
		case "Confidence", "Rating":
			n, reason := parseScore(v)
			if reason != "" {
				return Signal{}, bad(reason)
			}
			if f.name == "Rating" {
				s.Rating = n
			} else {
				s.Confidence = n
			}
		case "Next":
			s.Next = unwrap(v)
		case "Context":
			s.Context = v
		case "Verdict":
			verdict, ok := parseVerdict(v)
			if !ok {
				return Signal{}, bad("is not " + VerdictPass + " or " + VerdictNeedsFixes)
			}
			s.Verdict = verdict
		case "Signature":
			s.Signature = v
		default:
			if s.Extra == nil {
				s.Extra = map[string]string{}
			}
			s.Extra[f.label] = v
		}
	}
	if s.Result == "" {
		return Signal{}, &ValueError{
			Field:  "Result",
			Reason: "is missing: add \"- Result: <" + strings.ReplaceAll(resultList, ", ", "|") + ">\" to the SIGNAL BLOCK",
			Line:   headLine,
		}
	}
	return s, nil
}

// value joins a field's text: free-text fields keep their line breaks with
// the continuation lines dedented together; other fields become one line.
func value(f *field) string {
	first := strings.TrimSpace(f.first)
	if !f.multi() {
		parts := []string{first}
		for _, c := range f.cont {
			parts = append(parts, strings.TrimSpace(c))
		}
		return strings.TrimSpace(strings.Join(parts, " "))
	}
	least := minIndent(f.cont)
	var out []string
	if first != "" {
		out = append(out, first)
	}
	for _, c := range f.cont {
		if c != "" {
			c = strings.TrimRightFunc(dropRunes(c, least), unicode.IsSpace)
		}
		out = append(out, c)
	}
	return strings.Join(out, "\n")
}

// parsedField is a field line split into label and value.
type parsedField struct {
	label, name, value string
	bulleted           bool // the line starts with a list bullet
	plain              bool // the label is neither bold nor wrapped in markup
}

// parseField splits a trimmed line such as "- **Rating:** 8", "* Rating: 8",
// "**Rating**: 8", "**Rating: 8/10**" or "Loop_Summary: x" into label and
// value. ok is false when the line is not a field.
func parseField(t string) (parsedField, bool) {
	var pf parsedField
	if isBullet(t) {
		pf.bulleted = true
		t = strings.TrimLeftFunc(t[1:], unicode.IsSpace)
	}
	var label, val string
	if m := boldMarker(t); m != "" {
		inner, after, ok := strings.Cut(t[len(m):], m)
		if !ok {
			return pf, false
		}
		switch {
		case strings.HasSuffix(strings.TrimSpace(inner), ":"): // **Label:** value
			label, val = strings.TrimSuffix(strings.TrimSpace(inner), ":"), after
		case strings.HasPrefix(strings.TrimSpace(after), ":"): // **Label**: value
			label, val = inner, strings.TrimPrefix(strings.TrimSpace(after), ":")
		default: // **Label: value**
			l, v, ok := strings.Cut(inner, ":")
			if !ok {
				return pf, false
			}
			label, val = l, v+after
		}
	} else {
		l, v, ok := strings.Cut(t, ":")
		if !ok {
			return pf, false
		}
		label, val = l, v
		if u := unwrap(label); u != strings.TrimSpace(label) {
			label = u
		} else {
			pf.plain = true
		}
	}
	label = strings.TrimSpace(label)
	if !validLabel(label) {
		return pf, false
	}
	pf.label = label
	pf.name = standardName(normKey(label))
	pf.value = strings.TrimSpace(val)
	return pf, true
}

// boldMarker returns the bold marker t starts with, or "".
func boldMarker(t string) string {
	for _, m := range []string{"**", "__"} {
		if strings.HasPrefix(t, m) {
			return m
		}
	}
	return ""
}

// isBullet reports whether a trimmed line starts with a "-", "*" or "+"
// list bullet.
func isBullet(t string) bool {
	if len(t) < 2 || (t[0] != '-' && t[0] != '*' && t[0] != '+') {
		return false
	}
	return t[1] == ' ' || t[1] == '\t'
}

// validLabel reports whether s can be a field label: a few words of letters,
// digits and light punctuation, starting with a letter. Longer or odder
// text before a colon is prose.
func validLabel(s string) bool {
	if s == "" || len(s) > 60 || len(strings.Fields(s)) > 6 {
		return false
	}
	for i, r := range s {
		switch {
		case unicode.IsLetter(r):
		case i == 0:
			return false
		case unicode.IsDigit(r), strings.ContainsRune(" _-/()&'", r):
		default:
			return false
		}
	}
	return true
}

// normKey folds a label for matching: case, spaces, "_" and "-" do not count.
func normKey(label string) string {
	return strings.Map(func(r rune) rune {
		if r == ' ' || r == '_' || r == '-' {
			return -1
		}
		return unicode.ToLower(r)
	}, label)
}

// standardName maps a folded label to its standard field name, or "".
func standardName(key string) string {
	switch key {
	case "agent":
		return "Agent"
	case "result":
		return "Result"
	case "loopsummary":
		return "Loop Summary"
	case "confidence":
		return "Confidence"
	case "next":
		return "Next"
	case "context":
		return "Context"
	case "rating":
		return "Rating"
	case "verdict":
		return "Verdict"
	case "signature":
		return "Signature"
	}
	return ""
}

// resultList names the valid results for error messages.
const resultList = "INIT, CLARIFICATION_NEEDED, PLAN_CREATED, SUCCESS, FAIL, PASS, INSUFFICIENT"

// parseResult accepts a result in any case, with spaces or hyphens for
// underscores and wrapped in markup such as "[PASS]" or "**PASS**".
func parseResult(v string) (Result, bool) {
	r := Result(strings.Join(strings.FieldsFunc(strings.ToUpper(unwrap(v)), func(r rune) bool {
		return r == ' ' || r == '-' || r == '_'
	}), "_"))
	switch r {
	case Init, ClarificationNeeded, PlanCreated, Success, Fail, Pass, Insufficient:
		return r, true
	}
	return "", false
}

// parseVerdict accepts "pass" and "needs-fixes" in any case, with spaces or
// underscores for the hyphen. An empty verdict is absent.
func parseVerdict(v string) (string, bool) {
	w := strings.Join(strings.FieldsFunc(strings.ToLower(unwrap(v)), func(r rune) bool {
		return r == ' ' || r == '-' || r == '_'
	}), "-")
	switch w {
	case "", VerdictPass, VerdictNeedsFixes:
		return w, true
	}
	return "", false
}

// parseScore reads a 0-10 score written as "8" or "8/10". It returns nil for
// an empty value, and a reason when the value is unusable.
func parseScore(v string) (*int, string) {
	u := unwrap(v)
	if u == "" {
		return nil, ""
	}
	num := u
	if n, den, ok := strings.Cut(u, "/"); ok {
		num = strings.TrimSpace(n)
		d := strings.TrimSpace(den)
		if !digits(d) || strings.TrimLeft(d, "0") != "10" {
			return nil, "is not a score out of 10"
		}
	}
	neg := strings.HasPrefix(num, "-")
	if !digits(strings.TrimPrefix(num, "-")) {
		return nil, "is not a whole number 0-10"
	}
	if neg {
		return nil, "is out of range 0-10"
	}
	n, err := strconv.Atoi(num)
	if err != nil || n > 10 {
		return nil, "is out of range 0-10"
	}
	return &n, ""
}

// digits reports whether s is a non-empty run of ASCII digits.
func digits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// unwrap strips markup wrapped around a whole value — bold, italics, code,
// brackets, quotes — until none is left, so that it is idempotent.
func unwrap(s string) string {
	pairs := [][2]string{{"**", "**"}, {"__", "__"}, {"*", "*"}, {"_", "_"}, {"`", "`"}, {"[", "]"}, {`"`, `"`}}
	for {
		s = strings.TrimSpace(s)
		stripped := false
		for _, p := range pairs {
			if len(s) > len(p[0])+len(p[1]) && strings.HasPrefix(s, p[0]) && strings.HasSuffix(s, p[1]) {
				s = s[len(p[0]) : len(s)-len(p[1])]
				stripped = true
				break
			}
		}
		if !stripped {
			return s
		}
	}
}

// isBlockHeading reports whether a line opens a SIGNAL BLOCK: "SIGNAL BLOCK"
// alone on the line in any case, after any number of "#", optionally bold
// and optionally followed by a colon.
func isBlockHeading(line string) bool {
	t := strings.TrimSpace(line)
	t = strings.TrimLeft(t, "#")
	t = strings.TrimSuffix(unwrap(t), ":")
	t = strings.TrimSuffix(unwrap(t), ":")
	return strings.EqualFold(strings.Join(strings.Fields(t), " "), "signal block")
}

// isHeading reports whether a trimmed line is a markdown ATX heading.
func isHeading(t string) bool {
	rest := strings.TrimLeft(t, "#")
	return len(rest) < len(t) && (rest == "" || rest[0] == ' ' || rest[0] == '\t')
}

// isRule reports whether a trimmed line is a markdown thematic break.
func isRule(t string) bool {
	s := strings.Map(func(r rune) rune {
		if r == ' ' || r == '\t' {
			return -1
		}
		return r
	}, t)
	if len(s) < 3 {
		return false
	}
	return strings.Trim(s, s[:1]) == "" && strings.ContainsAny(s[:1], "-*_")
}

// isFence reports whether a trimmed line opens or closes a code fence.
func isFence(t string) bool {
	return strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~")
}

// indent counts the leading white-space runes of a line.
func indent(line string) int {
	n := 0
	for _, r := range line {
		if !unicode.IsSpace(r) {
			break
		}
		n++
	}
	return n
}

// dropRunes removes the first n runes of s.
func dropRunes(s string, n int) string {
	for i := range s {
		if n == 0 {
			return s[i:]
		}
		n--
	}
	return ""
}
