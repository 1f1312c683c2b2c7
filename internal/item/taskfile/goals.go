package taskfile

import (
	"regexp"
	"strings"
)

// goalItem is an ordered list entry: "1. text" or "1) text".
var goalItem = regexp.MustCompile(`^\s{0,3}[0-9]{1,9}[.)]\s+(.*)$`)

// Goals are the entries of the body's "## Goals" section when it is an
// ordered list, in order (a continuation line joins its entry); nil when
// the body has no such section. Each is a goal cycle of its own.
func (t *Task) Goals() []string {
	var goals []string
	in := false
	var f fence // a heading or list inside a code block is an example, not the task's
	for _, line := range strings.Split(t.Body, "\n") {
		line = strings.TrimRight(line, "\r")
		if f.skip(line) {
			continue
		}
		if strings.HasPrefix(line, "#") {
			head := strings.TrimSpace(strings.TrimLeft(line, "#"))
			in = strings.HasPrefix(line, "## ") && strings.EqualFold(head, "goals")
			continue
		}
		if !in {
			continue
		}
		if m := goalItem.FindStringSubmatch(line); m != nil {
			goals = append(goals, strings.TrimSpace(m[1]))
		} else if text := strings.TrimSpace(line); text != "" && len(goals) > 0 && strings.HasPrefix(line, " ") {
			goals[len(goals)-1] += " " + text
		}
	}
	return goals
}
