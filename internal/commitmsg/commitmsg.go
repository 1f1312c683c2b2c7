// Package commitmsg writes what cadre's commits say: a subject a person
// would write (the item's or the plan task's title), and a body saying what
// the commit changed. cadre's trailers follow them (package workspace).
package commitmsg

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Formats of a commit's subject, the values of commit.format.
const (
	Plain        = "plain"        // the title as it is
	Conventional = "conventional" // "fix: the title", as conventionalcommits.org asks
)

// Formats lists every format, in the order documentation gives them.
var Formats = []string{Plain, Conventional}

// subjectMax is the most runes a subject has: what git's one-line views
// and code hosts show in full.
const subjectMax = 72

// Subject is title as a commit's first line in format: on one line,
// without a closing period, at most 72 runes; in the conventional format
// prefixed with kind ("fix: …"), its first letter lowered unless it begins
// an acronym.
func Subject(format, kind, title string) string {
	s := strings.TrimRight(Line(title, 1<<16), ". ")
	if s == "" {
		s = "Update"
	}
	if format == Conventional {
		s = kind + ": " + lowerFirst(s)
	}
	return Line(s, subjectMax-1)
}

func lowerFirst(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	next, _ := utf8.DecodeRuneInString(s[n:])
	if unicode.IsUpper(next) || unicode.IsDigit(next) {
		return s // "API …", "V2 …"
	}
	return string(unicode.ToLower(r)) + s[n:]
}

// kinds maps a tag or label, lower-cased, to a conventional type.
var kinds = map[string]string{
	"bug": "fix", "fix": "fix", "bugfix": "fix", "regression": "fix", "type: bug": "fix", "kind/bug": "fix",
	"feature": "feat", "feat": "feat", "enhancement": "feat", "type: feature": "feat", "kind/feature": "feat",
	"docs": "docs", "documentation": "docs", "doc": "docs",
	"test": "test", "tests": "test", "testing": "test",
	"refactor": "refactor", "refactoring": "refactor", "cleanup": "refactor",
	"performance": "perf", "perf": "perf",
	"ci": "ci", "build": "build", "dependencies": "build", "chore": "chore",
}

// Kind is the conventional type of a change titled title and labelled
// tags (a task's tags, an issue's labels): the first tag that names one,
// else the title's leading verb ("Fix …", "Add …"), else chore.
func Kind(title string, tags []string) string {
	for _, t := range tags {
		if k, ok := kinds[strings.ToLower(strings.TrimSpace(t))]; ok {
			return k
		}
	}
	word := strings.ToLower(strings.TrimFunc(first(title), func(r rune) bool { return !unicode.IsLetter(r) }))
	switch word {
	case "fix", "fixes", "fixed", "repair", "correct", "handle", "prevent", "resolve":
		return "fix"
	case "add", "adds", "support", "implement", "introduce", "allow", "enable", "new":
		return "feat"
	case "document", "docs", "doc", "explain":
		return "docs"
	case "test", "tests", "cover":
		return "test"
	case "refactor", "simplify", "rename", "extract", "move", "split":
		return "refactor"
	case "speed", "optimise", "optimize":
		return "perf"
	}
	if k, ok := kinds[word]; ok {
		return k
	}
	return "chore"
}

func first(s string) string {
	if f := strings.Fields(s); len(f) > 0 {
		return f[0]
	}
	return ""
}

// Change is one file a commit changes, as git diff --numstat counts it.
type Change struct {
	Path           string
	Added, Deleted int
	Binary         bool
}

// ParseNumstat reads git diff --numstat -z --no-renames output.
func ParseNumstat(out string) []Change {
	var cs []Change
	for _, rec := range strings.Split(out, "\x00") {
		f := strings.SplitN(rec, "\t", 3)
		if len(f) != 3 {
			continue
		}
		c := Change{Path: f[2], Binary: f[0] == "-"}
		c.Added, _ = strconv.Atoi(f[0])
		c.Deleted, _ = strconv.Atoi(f[1])
		cs = append(cs, c)
	}
	return cs
}

// bodyFiles is how many files a body lists by name.
const bodyFiles = 20

// Body says what changes change: how many files and lines, then each
// file (the first 20) with its counts. "" for no change.
func Body(changes []Change) string {
	if len(changes) == 0 {
		return ""
	}
	added, deleted := 0, 0
	for _, c := range changes {
		added, deleted = added+c.Added, deleted+c.Deleted
	}
	var b strings.Builder
	files := "files"
	if len(changes) == 1 {
		files = "file"
	}
	fmt.Fprintf(&b, "Changes %d %s (%s):\n", len(changes), files, counts(added, deleted))
	for i, c := range changes {
		if i == bodyFiles {
			fmt.Fprintf(&b, "- and %d more\n", len(changes)-bodyFiles)
			break
		}
		n := counts(c.Added, c.Deleted)
		if c.Binary {
			n = "binary"
		}
		// A path is the agents' choice: on one line, without controls.
		fmt.Fprintf(&b, "- %s (%s)\n", Line(c.Path, 200), n)
	}
	return strings.TrimRight(b.String(), "\n")
}

func counts(added, deleted int) string {
	return fmt.Sprintf("+%d -%d", added, deleted)
}

// Line puts untrusted or long text on one line: its first n runes, and an
// ellipsis when it had more.
// Control characters and bidirectional overrides are dropped: in a commit
// they would make a log or a terminal show other text than git holds (a
// reversed file name, a cleared line).
func Line(s string, n int) string {
	s = strings.Join(strings.Fields(strings.Map(visible, s)), " ")
	if r := []rune(s); len(r) > n {
		s = string(r[:n]) + "…"
	}
	return s
}

// visible is r, or -1 (dropped) for a control character other than white
// space (which strings.Fields turns into separators) and for a
// bidirectional control (U+202A–U+202E, U+2066–U+2069, U+200E, U+200F,
// U+061C).
func visible(r rune) rune {
	if unicode.IsControl(r) && !unicode.IsSpace(r) || unicode.Is(unicode.Bidi_Control, r) {
		return -1
	}
	return r
}
