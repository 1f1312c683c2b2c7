// Package cyclelog keeps an item's cycle log, current_cycle.md
// (docs/workflows.md#hand-offs-escalation-cycle-log): the goal, the starting
// state, the context documents, then every agent's output and SIGNAL BLOCK
// by iteration, and the humans' answers; and its archive under
// .cadre/archive when the item ends.
//
// It writes the log's file and its archive only; it knows nothing of runs,
// steps or the journal: the engine hands it plain entries.
package cyclelog

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/cadre-dev/cadre/internal/commitmsg"
	"github.com/cadre-dev/cadre/internal/safefile"
	"github.com/cadre-dev/cadre/internal/signal"
	"github.com/cadre-dev/cadre/internal/workspace"
)

// Log is an item's current_cycle.md. It is rebuilt from the start on
// resume (replayed steps append again), so it always shows the whole item.
// The methods of a nil *Log do nothing.
type Log struct {
	mu      sync.Mutex
	path    string
	b       strings.Builder
	iter    int
	goal    int // the last goal cycle whose section was written (0: none, one goal)
	written int // how much of b the file holds; the log only grows

	// shared: the item's steps run in several processes (Temporal
	// workers sharing the state directory), each with its own Log,
	// so the file, not b, is the log: each entry is appended to what
	// the file holds then, once (a step replayed after a lost worker is
	// already there), and the archive is the file.
	shared bool

	taskAssets string // the task's context/assets directory (Header.Assets)
}

// Entry is one agent's output as the log records it.
type Entry struct {
	Step      string // the step id, which marks the entry in the file
	Role      string // names the entry: "coder" is "### Coder Output"
	Attempt   int    // the iteration, when Signature has no loop number
	Signature string // goal:loop:step, cadre's; its loop number is the iteration
	Text      string // the agent's output
	Output    string // the file holding the whole output
	// Goal is the goal the step works on when the item has several (a
	// task file's ## Goals): the first step of goal N writes the goal's
	// Human INIT entry, N:0:0, handing the goal to its role.
	Goal string
	// WorkDir is the tree the agent worked in, whose context/assets
	// images changed at or after Since (the step's start) are the step's;
	// "" for a step replayed from the journal, whose images were kept
	// when it ran.
	WorkDir string
	Since   time.Time
}

// NewShared is the log of an item whose steps may run in several
// processes: it takes up the file as it is; Reset starts it.
func NewShared(path string, h Header) *Log {
	c := &Log{path: path, shared: true, taskAssets: h.Assets}
	c.header(h)
	return c
}

// Shared says whether the log is shared by several processes.
func (c *Log) Shared() bool { return c.shared }

// Reset starts a shared log from its header (the item's workflow began,
// or began again on resume: its replayed steps append again).
func (c *Log) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.written, c.iter, c.goal = 0, 0, 0
	c.flush()
}

// sync takes up a shared log's file as another process left it, never
// through a link planted in its place: what it reads goes into the
// archive.
func (c *Log) sync() {
	if !c.shared {
		return
	}
	data, err := safefile.ReadFile(filepath.Dir(c.path), c.path)
	if err != nil || len(data) == 0 {
		return // not started here: b keeps the header, written whole
	}
	all := string(data)
	c.b.Reset()
	c.b.WriteString(all)
	c.written = len(all)
	c.iter, c.goal = 0, 0
	if m := iterRE.FindAllStringSubmatch(all, -1); len(m) > 0 {
		fmt.Sscan(m[len(m)-1][1], &c.iter)
	}
	if m := goalRE.FindAllStringSubmatch(all, -1); len(m) > 0 {
		fmt.Sscan(m[len(m)-1][1], &c.goal)
	}
}

var (
	iterRE = regexp.MustCompile(`(?m)^## Iteration ([0-9]+)$`)
	goalRE = regexp.MustCompile(`(?m)^## Goal ([0-9]+)$`)
	// signedRE is a signature line an agent wrote; cadre writes its own.
	signedRE = regexp.MustCompile(`(?m)^\*\*Signature\*\*:[ \t]*(.*?)[ \t]*$\n?`)
)

// has says whether a shared log already holds step's entry.
func (c *Log) has(step string) bool {
	return c.shared && strings.Contains(c.b.String(), "\n<!-- step "+step+" -->\n")
}

// ownLineRE matches the lines a shared log is read back by: cadre's goal
// and iteration headings and its step marks.
var ownLineRE = regexp.MustCompile(`(?m)^(## (Iteration|Goal) [0-9]+|<!-- step .*)$`)

// unmark indents, by one space, the lines of an agent's text that read as
// cadre's own headings or step marks, so that they do not move a shared
// log's goal and iteration counts or pass for another step's entry when
// it is read back. Markdown still shows such a heading as one.
func unmark(text string) string {
	return ownLineRE.ReplaceAllString(text, " $1")
}

// New starts the log of an item with its header: the goal, the starting
// state, the context documents, the images kept, cadre's bookkeeping and
// the Human INIT entry (1:0:0) handing the goal to h.Next, the first role.
func New(path string, h Header) *Log {
	c := &Log{path: path, taskAssets: h.Assets}
	c.header(h)
	c.flush()
	return c
}

// init writes goal n's Human INIT entry, n:0:0, handing it to next.
func (c *Log) init(n int, goal, next string) {
	fmt.Fprintf(&c.b, "\n## Iteration 0\n\n### Human Output\n%s\n\n### SIGNAL BLOCK\n- Agent: Human\n- Result: INIT\n"+
		"- Loop Summary: goal set: %s\n- Confidence: 10\n- Next: %s\n- Context: the goal above\n\n**Signature**: %d:0:0\n",
		goal, oneLine(goal), titleCase(next), n)
}

// Human appends a human's answer to an escalation: step is the question's
// step id, asked why it was asked.
func (c *Log) Human(step, asked string, approved bool, note string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sync(); c.has(step) {
		return
	}
	result, verb := signal.Pass, "approved"
	if !approved {
		result, verb = signal.Fail, "rejected"
	}
	note = strings.TrimSpace(note)
	if note == "" {
		note = "(no note)"
	}
	fmt.Fprintf(&c.b, "\n### Human Output\n<!-- step %s -->\nAsked: %s\n\n%s: %s\n\n### SIGNAL BLOCK\n- Agent: Human\n- Result: %s\n"+
		"- Loop Summary: %s\n- Confidence: 10\n- Context: %s\n", step, asked, verb, note, result, verb, oneLine(note))
	c.flush()
}

// Add appends an agent's output under its iteration, signed with cadre's
// signature, and starts a new goal's section at its first step. It
// returns the signature the agent wrote when it differs from cadre's
// ("" when the same or none): cadre's is the one recorded.
func (c *Log) Add(e Entry) (differs string) {
	if c == nil {
		return ""
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sync(); c.has(e.Step) {
		return ""
	}
	if n := goalOf(e.Signature); n > c.goal && e.Goal != "" {
		// Goal 1's INIT entry is the header's; a later goal gets its own.
		if c.iter != 0 {
			c.b.WriteString("\n---\n")
		}
		fmt.Fprintf(&c.b, "\n## Goal %d\n%s\n", n, strings.TrimSpace(e.Goal))
		if n > 1 {
			c.b.WriteString("\n---\n")
			c.init(n, e.Goal, e.Role)
		}
		c.goal, c.iter = n, 0
	}
	iter := max(e.Attempt, 1)
	if r := roundOf(e.Signature); r > 0 {
		iter = r
	}
	if iter != c.iter {
		if c.iter != 0 {
			c.b.WriteString("\n---\n")
		}
		fmt.Fprintf(&c.b, "\n## Iteration %d\n", iter)
		c.iter = iter
	}
	text := e.Text
	if e.Signature != "" {
		for _, m := range signedRE.FindAllStringSubmatch(text, -1) {
			if m[1] != e.Signature {
				differs = m[1]
			}
		}
		text = signedRE.ReplaceAllString(text, "")
	}
	if text = strings.TrimSpace(text); text == "" {
		text = "(no output)"
	}
	c.fillState(e.Role, text)
	fmt.Fprintf(&c.b, "\n### %s Output\n<!-- step %s -->\n%s\n", titleCase(e.Role), e.Step, cycleText(unmark(text), e.Output))
	if names := c.stepAssets(e); len(names) > 0 {
		c.b.WriteString("\n#### Assets\n" + assetList(names, ""))
	}
	if e.Signature != "" {
		fmt.Fprintf(&c.b, "\n**Signature**: %s\n", e.Signature)
	}
	c.flush()
	return differs
}

// cycleMax bounds one agent's text in the cycle log: the log is for
// reading, and a flood of output would be copied into it (and into its
// archive) at every step; the whole output stays in its own file.
const cycleMax = 64 << 10

// cycleText is text as the cycle log keeps it: whole when short, else its
// start and its end (where the SIGNAL BLOCK is) around a note.
func cycleText(text, file string) string {
	if len(text) <= cycleMax {
		return text
	}
	head, tail := text[:cycleMax/2], text[len(text)-cycleMax/2:]
	// Cut at line starts, so neither half begins or ends mid-line.
	if i := strings.LastIndexByte(head, '\n'); i > 0 {
		head = head[:i]
	}
	if i := strings.IndexByte(tail, '\n'); i >= 0 {
		tail = tail[i+1:]
	}
	return fmt.Sprintf("%s\n\n[… %d bytes left out here; the whole output is %s …]\n\n%s", head, len(text)-len(head)-len(tail), file, tail)
}

// goalOf reads the goal number of a goal:loop:step signature.
func goalOf(sig string) int {
	n := 0
	if goal, _, ok := strings.Cut(sig, ":"); ok {
		fmt.Sscan(goal, &n)
	}
	return n
}

// roundOf reads the loop number of a goal:loop:step signature.
func roundOf(sig string) int {
	parts := strings.Split(sig, ":")
	if len(parts) != 3 {
		return 0
	}
	n := 0
	fmt.Sscan(parts[1], &n)
	return n
}

func titleCase(role string) string {
	words := strings.Split(role, "-")
	for i, w := range words {
		if w != "" {
			words[i] = strings.ToUpper(w[:1]) + w[1:]
		}
	}
	return strings.Join(words, " ")
}

// oneLine puts s on one line of at most 200 characters, for a summary
// field of a SIGNAL BLOCK.
func oneLine(s string) string { return commitmsg.Line(s, 200) }

// flush brings the file up to date: written whole the first time (a
// resume rebuilds the log from the start), then by appending what was
// added, so a step costs one small append rather than truncating and
// rewriting a log that grows with the item. A failed write is a lost
// record, not lost work; the next flush writes the file whole again.
func (c *Log) flush() {
	root, all := filepath.Dir(c.path), c.b.String()
	if c.written == 0 {
		if writeFile(root, c.path, []byte(all)) == nil {
			c.written = len(all)
		}
		return
	}
	f, err := safefile.OpenAppend(root, c.path, 0o644)
	if err == nil {
		_, err = f.WriteString(all[c.written:])
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	c.written = len(all)
	if err != nil {
		c.written = 0
	}
}

// writeFile writes the log whole under root, the item's step directory,
// never through a link an agent planted there. No temp file, rename or
// fsync: the log is a record for reading, rewritten whole on resume.
func writeFile(root, path string, data []byte) error {
	return safefile.WriteMaking(root, path, data)
}

// Archive copies the log to stateDir/archive under a timestamp-based
// name (or PR-based when pr > 0), with suffix "" | "_incomplete" | "_failed",
// and returns the archive's path.
func (c *Log) Archive(stateDir string, now time.Time, title string, pr int, suffix string) (string, error) {
	if c == nil {
		return "", nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sync()
	name := ArchiveName(now, title, pr, suffix)
	dir := filepath.Join(stateDir, "archive")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(dir, name)
	// Two items ending in the same second with the same title must not
	// overwrite each other.
	for i := 2; ; i++ {
		if _, err := os.Stat(path); err != nil {
			break
		}
		path = filepath.Join(dir, strings.TrimSuffix(name, ".md")+fmt.Sprintf("-%d.md", i))
	}
	return path, safefile.Replace(path, []byte(c.relinkAssets(c.b.String(), dir)))
}

// ArchiveName is a cycle log's archive file name: YYYYMMDD_HHMMSS_<slug>.md, or
// <pr>_<slug>.md once the work has a pull request, with an optional suffix.
func ArchiveName(now time.Time, title string, pr int, suffix string) string {
	slug := workspace.Slug(title)
	if slug == "" {
		slug = "item"
	}
	if pr > 0 {
		return fmt.Sprintf("%d_%s%s.md", pr, slug, suffix)
	}
	return fmt.Sprintf("%s_%s%s.md", now.UTC().Format("20060102_150405"), slug, suffix)
}

// NextID numbers cycles per day: YYYY-MM-DD-NNN, NNN one more than the
// cycles already archived that day under stateDir. A PR-based archive name
// carries no date, so its file's time says which day it was archived.
func NextID(stateDir string, now time.Time) string {
	day := now.UTC().Format("20060102")
	entries, _ := os.ReadDir(filepath.Join(stateDir, "archive"))
	n := 0
	for _, e := range entries {
		switch name := e.Name(); {
		case timeArchiveRE.MatchString(name):
			if strings.HasPrefix(name, day+"_") {
				n++
			}
		case prArchiveRE.MatchString(name):
			if info, err := e.Info(); err == nil && info.ModTime().UTC().Format("20060102") == day {
				n++
			}
		}
	}
	return fmt.Sprintf("%s-%03d", now.UTC().Format("2006-01-02"), n+1)
}

// The two forms of archive names: timestamp-based and PR-based.
var (
	timeArchiveRE = regexp.MustCompile(`^[0-9]{8}_[0-9]{6}_`)
	prArchiveRE   = regexp.MustCompile(`^[0-9]+_`)
)
