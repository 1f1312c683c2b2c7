package eval

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode"
)

// Judgement is a judge's scores for one response.
type Judgement struct {
	// Scores maps each rubric criterion, spelled as in the rubric, to 0..10.
	Scores map[string]float64
	// Overall is 0..10: the judge's own figure, or the mean of Scores when
	// it gave none.
	Overall   float64
	Reasoning string
}

// Quality is Overall on the 0..1 scale the selector works in.
func (j Judgement) Quality() float64 { return j.Overall / 10 }

// ErrNoJudgement is wrapped when a reply holds no JSON object with "scores".
var ErrNoJudgement = errors.New(`no JSON object with "scores"`)

// maxCandidates bounds how many "{" ParseJudgement tries, from the end, so
// a reply full of braces cannot make it quadratic.
const maxCandidates = 512

// ParseJudgement reads a judge's answer
// {"scores":{criterion:0-10},"overall":0-10,"reasoning":"..."}.
//
// It is forgiving about layout, because judges are models: the object may
// sit in a ```json fence or among prose (the last object with "scores"
// wins, as a judge may quote an example first), keys are matched without
// regard to case, spaces, "-" or "_", trailing commas are dropped, and
// numbers may be written as floats or as strings ("8", "7.5", "8/10").
// It is strict about what the scores mean: every value must be 0..10 and
// every rubric criterion scored (criteria outside the rubric are ignored;
// with an empty rubric every score is kept). A missing overall becomes the
// mean of the scores.
//
// Errors are one line, start with "judgement:" and say what to fix, so the
// engine can re-ask once with ReaskPrompt.
func ParseJudgement(text string, rubric Rubric) (Judgement, error) {
	obj, err := findJudgement(text)
	if err != nil {
		return Judgement{}, fmt.Errorf("judgement: %w", err)
	}
	canon := map[string]string{} // folded criterion → rubric spelling
	for _, name := range rubric.Criteria() {
		k := foldKey(name)
		if prev, dup := canon[k]; dup {
			return Judgement{}, fmt.Errorf("judgement: rubric criteria %q and %q are the same criterion", prev, name)
		}
		canon[k] = name
	}

	var raw map[string]json.RawMessage
	if err := json.Unmarshal(field(obj, "scores"), &raw); err != nil || raw == nil {
		return Judgement{}, errors.New(`judgement: "scores" is not an object of criterion: score`)
	}
	j := Judgement{Scores: map[string]float64{}}
	seen := map[string]string{} // folded → key as written
	for _, k := range sortedKeys(raw) {
		name, ok := canon[foldKey(k)]
		if len(rubric) == 0 {
			name, ok = k, true
		}
		if !ok {
			continue
		}
		if prev, dup := seen[foldKey(k)]; dup {
			return Judgement{}, fmt.Errorf("judgement: criterion %q is scored twice (%q and %q)", name, prev, k)
		}
		seen[foldKey(k)] = k
		v, err := score(raw[k])
		if err != nil {
			return Judgement{}, fmt.Errorf("judgement: score for %q %w", name, err)
		}
		j.Scores[name] = v
	}
	var missing []string
	for _, name := range rubric.Criteria() {
		if _, ok := j.Scores[name]; !ok {
			missing = append(missing, strconv.Quote(name))
		}
	}
	if len(missing) > 0 {
		return Judgement{}, fmt.Errorf("judgement: not scored: %s (score every criterion 0-10)", strings.Join(missing, ", "))
	}

	if o := field(obj, "overall"); o != nil && string(o) != "null" {
		v, err := score(o)
		if err != nil {
			return Judgement{}, fmt.Errorf("judgement: overall %w", err)
		}
		j.Overall = v
	} else if len(j.Scores) == 0 {
		return Judgement{}, errors.New(`judgement: no scores and no "overall"`)
	} else {
		sum := 0.0
		for _, v := range j.Scores {
			sum += v
		}
		j.Overall = sum / float64(len(j.Scores))
	}

	if r := field(obj, "reasoning"); r != nil && json.Unmarshal(r, &j.Reasoning) != nil && string(r) != "null" {
		j.Reasoning = string(r) // not a string: keep what the judge wrote
	}
	return j, nil
}

// ReaskPrompt is the corrective message for a judge whose answer
// ParseJudgement refused; "" for a nil error.
func ReaskPrompt(err error) string {
	if err == nil {
		return ""
	}
	return "Your judgement could not be used: " + oneLine(err.Error()) + ". " +
		`Reply again with only one JSON object, {"scores":{"<criterion>":N},"overall":N,"reasoning":"..."}, ` +
		"giving every criterion a score N from 0 to 10."
}

// findJudgement returns the last JSON object in text that has a "scores"
// key. Trying every "{" from the end (not just top-level objects) finds the
// object even when prose before it holds an unmatched brace.
func findJudgement(text string) (map[string]json.RawMessage, error) {
	var (
		failed      error // why the last object mentioning scores did not decode
		failedStart = -1
	)
	end := len(text)
	for tries := 0; tries < maxCandidates; tries++ {
		i := strings.LastIndexByte(text[:end], '{')
		if i < 0 {
			break
		}
		end = i
		span, closed := balanced(text[i:])
		mentions := strings.Contains(strings.ToLower(span), `"scores"`)
		var obj map[string]json.RawMessage
		err := errors.New("the JSON object is not closed")
		if closed {
			err = json.Unmarshal([]byte(dropTrailingCommas(span)), &obj)
		}
		if err == nil && field(obj, "scores") != nil {
			return obj, nil
		}
		// Keep the error of the outermost object around the last one that
		// mentions scores: that is the judgement the judge meant to write.
		if err != nil && mentions && (failedStart < 0 || i+len(span) > failedStart) {
			failed, failedStart = err, i
		}
	}
	if failed != nil {
		return nil, fmt.Errorf("invalid JSON: %w", failed)
	}
	return nil, ErrNoJudgement
}

// balanced returns the JSON object s starts with, up to its closing brace,
// skipping braces inside strings. closed is false when s ends first; the
// span is then all of s.
func balanced(s string) (span string, closed bool) {
	depth, inStr, esc := 0, false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case inStr && esc:
			esc = false
		case inStr && c == '\\':
			esc = true
		case c == '"':
			inStr = !inStr
		case inStr:
		case c == '{':
			depth++
		case c == '}':
			depth--
			if depth == 0 {
				return s[:i+1], true
			}
		}
	}
	return s, false
}

// dropTrailingCommas removes a comma that only white space separates from
// a closing brace or bracket, outside strings; models write them often.
func dropTrailingCommas(s string) string {
	var b strings.Builder
	inStr, esc := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if inStr {
			esc = !esc && c == '\\'
			inStr = esc || c != '"'
		} else if c == '"' {
			inStr = true
		} else if c == ',' {
			rest := strings.TrimLeftFunc(s[i+1:], unicode.IsSpace)
			if rest != "" && (rest[0] == '}' || rest[0] == ']') {
				continue
			}
		}
		b.WriteByte(c)
	}
	return b.String()
}

// field returns obj's value for key, matched like a criterion name; nil
// when absent. Keys are tried in sorted order so that the result does not
// depend on map iteration when a judge writes both "Scores" and "scores".
func field(obj map[string]json.RawMessage, key string) json.RawMessage {
	if v, ok := obj[key]; ok {
		return v
	}
	for _, k := range sortedKeys(obj) {
		if foldKey(k) == key {
			return obj[k]
		}
	}
	return nil
}

// score reads one 0..10 score: a JSON number, or a string holding one,
// optionally written "N/10". The error follows the value's name.
func score(raw json.RawMessage) (float64, error) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return 0, fmt.Errorf("is not a number: %s", clip(string(raw)))
	}
	var f float64
	switch x := v.(type) {
	case float64:
		f = x
	case string:
		s := strings.TrimSpace(x)
		if n, den, ok := strings.Cut(s, "/"); ok && strings.TrimSpace(den) == "10" {
			s = strings.TrimSpace(n)
		}
		p, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(p) || math.IsInf(p, 0) {
			return 0, fmt.Errorf("is not a number: %q", clip(x))
		}
		f = p
	default:
		return 0, fmt.Errorf("is not a number: %s", clip(string(raw)))
	}
	if f < 0 || f > 10 {
		return 0, fmt.Errorf("is %s, outside 0-10", strconv.FormatFloat(f, 'g', 4, 64))
	}
	return f, nil
}

// foldKey folds a key for matching: case, spaces, "_" and "-" do not count.
func foldKey(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) || r == '_' || r == '-' {
			return -1
		}
		return unicode.ToLower(r)
	}, s)
}

// clip shortens a value quoted in an error message, keeping it one line.
func clip(s string) string {
	s = oneLine(s)
	if r := []rune(s); len(r) > 40 {
		return string(r[:40]) + "…"
	}
	return s
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
