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

// Parse finds the last SIGNAL BLOCK in text and parses it. The last block
// wins because a reply may quote an example block before its own.
//
// It returns an error wrapping ErrNoBlock when text has no SIGNAL BLOCK
// heading, and a *ValueError when a field value is unusable or the block has
// no Result. A field written with an empty value counts as absent.
func Parse(text string) (Signal, error) {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	text = strings.ReplaceAll(text, "\r", "\n")
	lines := strings.Split(text, "\n")

	start := -1
	for i := len(lines) - 1; i >= 0; i-- {
		if isBlockHeading(lines[i]) {
			start = i
			break
		}
	}
	if start < 0 {
		return Signal{}, fmt.Errorf("%w: end the reply with a \"### SIGNAL BLOCK\" heading followed by \"- Result: ...\"", ErrNoBlock)
	}
	fields := readFields(lines, start)
	return build(fields, start+1)
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
