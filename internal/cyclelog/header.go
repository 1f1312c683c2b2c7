package cyclelog

import (
	"fmt"
	"regexp"
	"strings"
	"time"
)

// Header is what a cycle log opens with (seed 002's current_cycle.md
// schema): the item's objective and starting point for its readers,
// then cadre's own bookkeeping, apart.
type Header struct {
	ID    string   // the cycle id, YYYY-MM-DD-NNN
	Goal  string   // the objective: Objective of the task
	State string   // where the work starts: StartState of the task; "" for the planner's first output
	Docs  []string // the context documents
	Next  string   // the first role, handed the goal by the Human INIT entry
	// Bookkeeping are cadre's lines about the item (the stage and
	// attempts it started from, its task file), kept out of the
	// objective and the state, which are for the agents and readers.
	Bookkeeping []string
	// Assets is the task's assets directory (context/assets beside the
	// task file), whose images go with the item; "" for none.
	Assets string
}

// pendingState stands in the Current State of a task that does not say
// where it starts, until the planner's first output does.
const pendingState = "(the task does not say; a planner's first output, when the workflow has one, says it)"

// stateMax bounds the planner's output quoted as the starting state: the
// whole output follows in its own entry.
const stateMax = 4 << 10

// Objective is the item's 1-3 sentence objective for the log's Goal: the
// task body's "## Goal" section, else its first paragraph, else title.
func Objective(title, body string) string {
	if s := bodySection(body, "goal"); s != "" {
		return s
	}
	if p := firstParagraph(body); p != "" {
		return p
	}
	return title
}

// StartState is where the task says its work starts: its "## Current
// State" section, else its "## Context" section; "" when it has neither.
func StartState(body string) string {
	if s := bodySection(body, "current state"); s != "" {
		return s
	}
	return bodySection(body, "context")
}

// bodySection is the text of the body's "## name" section (the name
// matched without case), up to the next heading of level one or two,
// headings shown inside code blocks left aside.
func bodySection(body, name string) string {
	var out []string
	in := false
	var f fence
	for _, line := range strings.Split(body, "\n") {
		line = strings.TrimRight(line, "\r")
		if !f.skip(line) && (strings.HasPrefix(line, "# ") || strings.HasPrefix(line, "## ")) {
			if in {
				break
			}
			in = strings.HasPrefix(line, "## ") && strings.EqualFold(strings.TrimSpace(line[3:]), name)
			continue
		}
		if in {
			out = append(out, line)
		}
	}
	return strings.TrimSpace(strings.Join(out, "\n"))
}

// firstParagraph is the body's first run of text lines that are no
// heading and lie outside code blocks.
func firstParagraph(body string) string {
	var out []string
	var f fence
	for _, line := range strings.Split(body, "\n") {
		line = strings.TrimRight(line, "\r")
		text := strings.TrimSpace(line)
		switch {
		case f.skip(line), strings.HasPrefix(text, "#"), text == "":
			if len(out) > 0 {
				return strings.Join(out, "\n")
			}
		default:
			out = append(out, text)
		}
	}
	return strings.Join(out, "\n")
}

// fence tracks Markdown code fences, so that a heading shown inside a
// code block is not taken for one of the task's.
type fence struct{ marker string }

// skip reports whether line is a fence line or inside a fenced block.
func (f *fence) skip(line string) bool {
	l := strings.TrimLeft(line, " ")
	for _, c := range []string{"```", "~~~"} {
		if !strings.HasPrefix(l, c) {
			continue
		}
		run := l[:len(l)-len(strings.TrimLeft(l, c[:1]))]
		switch {
		case f.marker == "":
			f.marker = run
			return true
		case strings.HasPrefix(run, f.marker) && strings.TrimSpace(l[len(run):]) == "":
			f.marker = ""
			return true
		}
	}
	return f.marker != ""
}

// header writes h: the seed's Goal, Current State and Context Docs, then
// the item's images and cadre's bookkeeping, then goal 1's INIT entry.
func (c *Log) header(h Header) {
	state := strings.TrimSpace(h.State)
	if state == "" {
		state = pendingState
	}
	goal := unmark(strings.TrimSpace(h.Goal))
	fmt.Fprintf(&c.b, "# Cycle: %s\n\n## Goal\n%s\n\n## Current State\n%s\n\n## Context Docs\n", h.ID, goal, unmark(state))
	if len(h.Docs) == 0 {
		c.b.WriteString("- (none)\n")
	}
	for _, d := range h.Docs {
		fmt.Fprintf(&c.b, "- %s\n", d)
	}
	// The images kept before (a resumed item's) and the task's own.
	left := MaxAsset
	c.keep(h.Assets, time.Time{}, &left)
	c.b.WriteString("\n## Assets\n" + assetList(c.kept(), "- (none)\n"))
	if len(h.Bookkeeping) > 0 {
		c.b.WriteString("\n## Bookkeeping\n")
		for _, l := range h.Bookkeeping {
			fmt.Fprintf(&c.b, "- %s\n", l)
		}
	}
	c.b.WriteString("\n---\n")
	c.init(1, goal, h.Next)
}

// signalRE finds where an agent's SIGNAL BLOCK starts.
var signalRE = regexp.MustCompile(`(?m)^[#* ]*SIGNAL BLOCK`)

// fillState puts the planner's first output, text, in the Current State
// of a log whose task did not say where it starts, and has the file
// written whole again. It says whether it did.
func (c *Log) fillState(role, text string) bool {
	if role != "planner" && !strings.HasSuffix(role, "-planner") {
		return false
	}
	all := c.b.String()
	head, _, _ := strings.Cut(all, "\n## Iteration 0\n")
	pending := "\n## Current State\n" + pendingState + "\n"
	if !strings.Contains(head, pending) {
		return false
	}
	if i := signalRE.FindStringIndex(text); i != nil {
		text = text[:i[0]]
	}
	if text = strings.TrimSpace(text); text == "" {
		return false
	}
	if len(text) > stateMax {
		text = text[:strings.LastIndexByte(text[:stateMax], '\n')+1] + "…"
	}
	// Quoted, the plan's own headings cannot read as the log's.
	quoted := "> " + strings.ReplaceAll(text, "\n", "\n> ")
	c.b.Reset()
	c.b.WriteString(strings.Replace(all, pending, "\n## Current State\n"+quoted+"\n", 1))
	c.written = 0
	return true
}
