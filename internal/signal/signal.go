// Package signal reads and writes the SIGNAL BLOCK an agent ends its reply
// with. The engine decides what happens next from that block alone, so the
// reader is forgiving about layout (headings, bullets, bold, code fences,
// line endings) and strict about the values it acts on (Result, Confidence,
// Rating, Verdict).
package signal

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// Result is the outcome an agent reports for its step.
type Result string

// The results an agent may report.
const (
	Init                Result = "INIT"
	ClarificationNeeded Result = "CLARIFICATION_NEEDED"
	PlanCreated         Result = "PLAN_CREATED"
	Success             Result = "SUCCESS"
	Fail                Result = "FAIL"
	Pass                Result = "PASS"
	Insufficient        Result = "INSUFFICIENT"
)

// Verdict values, as stored in Signal.Verdict.
const (
	VerdictPass       = "pass"
	VerdictNeedsFixes = "needs-fixes"
)

// Signal is one parsed SIGNAL BLOCK.
type Signal struct {
	Agent       string
	Result      Result
	LoopSummary string
	Confidence  *int // nil when absent; 0..10
	Next        string
	Context     string // free text; may hold several lines
	Rating      *int   // nil when absent; 0..10
	Verdict     string // "", VerdictPass or VerdictNeedsFixes
	Signature   string // e.g. "1:2:3" ({goal}:{loop}:{step}), as written
	// Extra holds any other "- Key: value" field, keyed by the label as
	// written (trimmed, without bold); nil when there are none.
	Extra map[string]string
}

// ErrNoBlock reports that a text holds no SIGNAL BLOCK heading.
var ErrNoBlock = errors.New("no SIGNAL BLOCK")

// ValueError reports a SIGNAL BLOCK field whose value cannot be used.
type ValueError struct {
	Field  string // canonical field name, e.g. "Rating"
	Value  string // the value as written; "" when the field is missing
	Reason string // what is wrong, phrased to follow the value
	Line   int    // 1-based line of the field (or of the heading) in the parsed text
}

// Error says which field is wrong and why, on one line.
func (e *ValueError) Error() string {
	if e.Value == "" {
		return fmt.Sprintf("signal field %s %s", e.Field, e.Reason)
	}
	return fmt.Sprintf("signal field %s: %q %s", e.Field, e.Value, e.Reason)
}

// Int returns a pointer to n, for filling Confidence and Rating.
func Int(n int) *int { return &n }

// Parse finds the SIGNAL BLOCK an agent ended its reply with and parses
// it: the last block outside code fences, or, when every block is inside
// one, the last of those. A reply may quote an example block or someone
// else's before its own, and a quotation is most often fenced.
//
// It returns an error wrapping ErrNoBlock when text has no SIGNAL BLOCK
// heading, and a *ValueError when a field value is unusable or the block has
// no Result. A field written with an empty value counts as absent.
func Parse(text string) (Signal, error) {
	return ParseOwn(text)
}

// ErrQuoted reports that every SIGNAL BLOCK of a reply was copied from
// text the agent was given (see ParseOwn).
var ErrQuoted = errors.New("the SIGNAL BLOCK is copied from the text you were given, not your own verdict")

// ParseOwn is Parse for a reply to a prompt that held others' text: a
// block whose text appears in any of quoted (see Quoted) is not the
// agent's own verdict and does not count, whether fenced or not. When no
// other block is left it returns an error wrapping ErrQuoted.
func ParseOwn(text string, quoted ...string) (Signal, error) {
	lines := splitLines(text)
	var own, fenced []int // the headings of the blocks that count
	copied := false
	for _, b := range blocks(lines) {
		if quotedBlock(lines, b.head, quoted) {
			copied = true
			continue
		}
		if b.fenced {
			fenced = append(fenced, b.head)
		} else {
			own = append(own, b.head)
		}
	}
	start := -1
	switch {
	case len(own) > 0:
		start = own[len(own)-1]
	case len(fenced) > 0:
		start = fenced[len(fenced)-1]
	case copied:
		return Signal{}, fmt.Errorf("%w: end the reply with a \"### SIGNAL BLOCK\" of your own", ErrQuoted)
	default:
		return Signal{}, fmt.Errorf("%w: end the reply with a \"### SIGNAL BLOCK\" heading followed by \"- Result: ...\"", ErrNoBlock)
	}
	fields := readFields(lines, start)
	return build(fields, start+1)
}

// Quoted reports whether the SIGNAL BLOCK whose heading opens block
// appears in text: its non-blank lines, up to the last line Parse reads,
// are consecutive non-blank lines of text, compared with white space and
// blockquote markers trimmed, runs of white space as one and case folded.
// A block without a heading is never quoted.
func Quoted(block, text string) bool {
	lines := splitLines(block)
	for i, l := range lines {
		if isBlockHeading(l) {
			return quotedBlock(lines, i, []string{text})
		}
	}
	return false
}

// quotedBlock reports whether the block whose heading is lines[head]
// appears in one of texts (see Quoted).
func quotedBlock(lines []string, head int, texts []string) bool {
	if len(texts) == 0 {
		return false
	}
	var want []string
	for _, l := range lines[head:blockEnd(lines, head)] {
		if k := quoteKey(l); k != "" {
			want = append(want, k)
		}
	}
	for _, t := range texts {
		var have []string
		for _, l := range splitLines(t) {
			if k := quoteKey(l); k != "" {
				have = append(have, k)
			}
		}
		for i := 0; i+len(want) <= len(have); i++ {
			if slices.Equal(have[i:i+len(want)], want) {
				return true
			}
		}
	}
	return false
}

// quoteKey is a line as Quoted compares it: without blockquote markers,
// white space trimmed and collapsed, case folded; "" for a blank line.
func quoteKey(l string) string {
	l = strings.TrimLeftFunc(l, func(r rune) bool { return r == '>' || unicode.IsSpace(r) })
	return strings.ToLower(strings.Join(strings.Fields(l), " "))
}

// splitLines splits text into lines, whatever its line endings.
func splitLines(text string) []string {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	text = strings.ReplaceAll(text, "\r", "\n")
	return strings.Split(text, "\n")
}

// blockAt is a SIGNAL BLOCK heading of a text: its line index, and whether
// it is inside a code fence.
type blockAt struct {
	head   int
	fenced bool
}

// blocks lists the SIGNAL BLOCK headings of lines in order. A fence opens
// at a line starting with three or more backticks or tildes (backticks
// followed by no other backtick) and closes at
// a line of the same character, at least as many and nothing else; one
// left open runs to the end of the text. A fence right after a heading
// holds that block's own fields (readFields), so it is passed over whole.
func blocks(lines []string) []blockAt {
	var (
		out   []blockAt
		fence string // the open fence's run of backticks or tildes; "" outside
	)
	for i := 0; i < len(lines); i++ {
		t := strings.TrimSpace(lines[i])
		if fence != "" {
			if strings.HasPrefix(t, fence) && strings.Trim(t, fence[:1]) == "" {
				fence = ""
				continue
			}
			if isBlockHeading(lines[i]) {
				out = append(out, blockAt{head: i, fenced: true})
			}
			continue
		}
		if run := fenceRun(t); run != "" {
			fence = run
			continue
		}
		if !isBlockHeading(lines[i]) {
			continue
		}
		out = append(out, blockAt{head: i})
		// Its fields may sit in a fence of their own just below it.
		if j := nextContent(lines, i+1); j >= 0 {
			if run := fenceRun(strings.TrimSpace(lines[j])); run != "" {
				i = closeOf(lines, j+1, run)
				continue
			}
		}
		// A heading indented under one of its fields is that field's
		// text, not a block.
		for end := blockEnd(lines, i); i+1 < end && (indent(lines[i+1]) > 0 || !isBlockHeading(lines[i+1])); i++ {
		}
	}
	return out
}

// blockEnd is the index after the last line of the block whose heading
// is lines[head].
func blockEnd(lines []string, head int) int {
	end := head + 1
	for _, f := range readFields(lines, head) {
		end = max(end, f.last)
	}
	return end
}

// fenceRun is the run of backticks or tildes a trimmed line opens a fence
// with, or "" when it opens none.
func fenceRun(t string) string {
	if !isFence(t) {
		return ""
	}
	n := len(t) - len(strings.TrimLeft(t, t[:1]))
	if t[0] == '`' && strings.Contains(t[n:], "`") {
		return "" // inline code, as in markdown
	}
	return t[:n]
}

// nextContent is the index of the first non-blank line from i, or -1.
func nextContent(lines []string, i int) int {
	for ; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) != "" {
			return i
		}
	}
	return -1
}

// closeOf is the index of the line from i that closes a fence opened with
// run, or the last line when none does.
func closeOf(lines []string, i int, run string) int {
	for ; i < len(lines); i++ {
		t := strings.TrimSpace(lines[i])
		if strings.HasPrefix(t, run) && strings.Trim(t, run[:1]) == "" {
			return i
		}
	}
	return len(lines) - 1
}

// Format renders s as a canonical SIGNAL BLOCK. Parse reads it back to s
// whenever s is in the form Parse produces (trimmed values, one line for
// fields other than Context and Extra). Empty fields are left out, and so are
// Extra keys that are not usable labels or that name a standard field.
func Format(s Signal) string {
	var b strings.Builder
	b.WriteString("### SIGNAL BLOCK\n")
	single := func(label, v string) {
		v = strings.TrimSpace(oneLine(v))
		if v != "" {
			b.WriteString(label + " " + v + "\n")
		}
	}
	single("- Agent:", s.Agent)
	single("- Result:", string(s.Result))
	single("- Loop Summary:", s.LoopSummary)
	if s.Confidence != nil {
		single("- Confidence:", strconv.Itoa(*s.Confidence))
	}
	single("- Next:", s.Next)
	if strings.TrimSpace(s.Context) != "" {
		writeMulti(&b, "- Context:", s.Context)
	}
	if s.Rating != nil {
		single("- Rating:", strconv.Itoa(*s.Rating))
	}
	single("- Verdict:", s.Verdict)
	keys := make([]string, 0, len(s.Extra))
	for k := range s.Extra {
		if k == strings.TrimSpace(k) && validLabel(k) && standardName(normKey(k)) == "" {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		writeMulti(&b, "- "+k+":", s.Extra[k])
	}
	single("**Signature**:", s.Signature)
	return b.String()
}

// oneLine joins the lines of v with spaces, as Parse does for single-line fields.
func oneLine(v string) string {
	return strings.NewReplacer("\r\n", " ", "\r", " ", "\n", " ").Replace(v)
}

// writeMulti writes a free-text field: the first line after the label and
// the rest indented beneath it, which Parse reads back as continuation lines.
func writeMulti(b *strings.Builder, label, v string) {
	v = strings.ReplaceAll(v, "\r\n", "\n")
	v = strings.ReplaceAll(v, "\r", "\n")
	lines := strings.Split(v, "\n")
	for len(lines) > 0 && strings.TrimSpace(lines[0]) == "" {
		lines = lines[1:]
	}
	for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
		lines = lines[:len(lines)-1]
	}
	b.WriteString(label)
	// Parse dedents the lines below the label together, apart from the
	// one beside it; so the first line goes beside the label only when
	// that keeps every line's indentation.
	if len(lines) > 0 && indent(lines[0]) == 0 && minIndent(lines[1:]) <= 0 {
		b.WriteString(" " + strings.TrimRightFunc(lines[0], unicode.IsSpace))
		lines = lines[1:]
	}
	b.WriteString("\n")
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			b.WriteString("\n")
			continue
		}
		b.WriteString("  " + strings.TrimRightFunc(l, unicode.IsSpace) + "\n")
	}
}

// minIndent returns the smallest indentation among the non-blank lines, or
// -1 when all are blank.
func minIndent(lines []string) int {
	least := -1
	for _, l := range lines {
		if strings.TrimSpace(l) != "" && (least < 0 || indent(l) < least) {
			least = indent(l)
		}
	}
	return least
}
