package cyclelog

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// hdr is a log's header with goal, handing it to next.
func hdr(goal, next string) Header {
	return Header{ID: "2026-01-01-001", Goal: goal, State: "clean", Next: next}
}

// The cycle log keeps a long output's start and end (where the SIGNAL
// BLOCK is) and points at the whole file; a short one stays whole.
func TestCycleTextBoundsLongOutputs(t *testing.T) {
	if got := cycleText("short\n### SIGNAL BLOCK", "/o.md"); got != "short\n### SIGNAL BLOCK" {
		t.Errorf("short text changed: %q", got)
	}
	long := "first line\n" + strings.Repeat("flood flood flood\n", 100000) + "### SIGNAL BLOCK\n- Result: SUCCESS"
	got := cycleText(long, "/o.md")
	if len(got) > cycleMax+200 || !strings.HasPrefix(got, "first line\n") || !strings.HasSuffix(got, "- Result: SUCCESS") ||
		!strings.Contains(got, "bytes left out here; the whole output is /o.md") {
		t.Errorf("long text kept %d bytes: %.80q … %.80q", len(got), got, got[len(got)-80:])
	}
}

// The cycle log is appended to step by step and always holds the whole
// log; a log started again (a resume) replaces the file rather than
// appending to the old one, and a write that fails is made good by the
// next one.
func TestCycleLogAppendsAndRestartsWhole(t *testing.T) {
	path := filepath.Join(t.TempDir(), "item", "current_cycle.md")
	read := func() string {
		data, _ := os.ReadFile(path)
		return string(data)
	}
	c := New(path, hdr("Add a", "coder"))
	c.Add(Entry{Step: "s1", Role: "coder", Attempt: 1, Text: "wrote a"})
	c.Add(Entry{Step: "s2", Role: "auditor", Attempt: 1, Text: "looks fine"})
	if got := read(); got != c.b.String() || !strings.Contains(got, "wrote a") || !strings.Contains(got, "looks fine") {
		t.Fatalf("file after two steps:\n%s\nwant:\n%s", got, c.b.String())
	}
	again := New(path, hdr("Add a", "coder"))
	if got := read(); got != again.b.String() || strings.Contains(got, "wrote a") {
		t.Fatalf("a restarted log appended to the old one:\n%s", got)
	}
	// The file is replaced by a directory: the append fails, and the next
	// flush after it is removed writes the whole log.
	os.Remove(path)
	os.Mkdir(path, 0o755)
	again.Add(Entry{Step: "s1", Role: "coder", Attempt: 1, Text: "wrote a"})
	os.Remove(path)
	again.Add(Entry{Step: "s2", Role: "auditor", Attempt: 1, Text: "looks fine"})
	if got := read(); got != again.b.String() {
		t.Fatalf("after a failed write:\n%s\nwant:\n%s", got, again.b.String())
	}
}

// A shared cycle log takes up its file as another process left it, but
// not a link planted in its place: the file it points to stays out of the
// log and its archive.
func TestSharedCycleLogRefusesALink(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte("## Iteration 7\nTOKEN=abc\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "item", "current_cycle.md")
	c := NewShared(path, hdr("Add a", "coder"))
	c.Reset()
	c.Add(Entry{Step: "s1", Role: "coder", Attempt: 1, Text: "wrote a"})
	if !strings.Contains(c.b.String(), "wrote a") {
		t.Fatalf("log after a step:\n%s", c.b.String())
	}
	os.Remove(path)
	if err := os.Symlink(secret, path); err != nil {
		t.Fatal(err)
	}
	c.Add(Entry{Step: "s2", Role: "auditor", Attempt: 1, Text: "looks fine"})
	archived, err := c.Archive(filepath.Join(dir, "state"), time.Now(), "Add a", 0, "")
	if err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(archived)
	for name, log := range map[string]string{"log": c.b.String(), "archive": string(data)} {
		if strings.Contains(log, "TOKEN=abc") {
			t.Errorf("the %s took up the linked file:\n%s", name, log)
		}
	}
}

// TestNextIDCountsPRArchives: the day's cycle number counts the cycles
// archived under a pull request (whose names carry no date) as well as
// the timestamped ones of that day, and no other day's.
func TestNextIDCountsPRArchives(t *testing.T) {
	state := t.TempDir()
	dir := filepath.Join(state, "archive")
	os.MkdirAll(dir, 0o755)
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	yesterday := now.Add(-24 * time.Hour)
	for name, mod := range map[string]time.Time{
		"20261124_090000_a.md":        now,
		"20261123_090000_b.md":        yesterday,
		"7_add-login.md":              now,
		"8_2fa-codes_failed.md":       now,
		"5_old-work.md":               yesterday,
		ArchiveName(now, "c", 0, ""):  now,
		ArchiveName(now, "d", 12, ""): now,
	} {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte("# Cycle\n"), 0o644)
		os.Chtimes(p, mod, mod)
	}
	if got, want := NextID(state, now), "2026-11-24-006"; got != want {
		t.Errorf("NextID = %s, want %s", got, want)
	}
}

// cadre signs each entry itself: an agent's own signature line is left
// out and returned when it differs; a shared log taken up by another
// process knows which goal sections it has.
func TestCycleLogSignsAndStartsGoals(t *testing.T) {
	path := filepath.Join(t.TempDir(), "current_cycle.md")
	c := NewShared(path, hdr("Two goals", "planner"))
	c.Reset()
	if got := c.Add(Entry{Step: "p1", Role: "planner", Signature: "1:1:1", Goal: "First.", Text: "plan\n\n**Signature**: 1:1:1"}); got != "" {
		t.Errorf("the same signature reported as differing: %q", got)
	}
	if got := c.Add(Entry{Step: "a1", Role: "actor", Signature: "1:1:2", Goal: "First.", Text: "done\n**Signature**:  7:7:7 "}); got != "7:7:7" {
		t.Errorf("differing signature = %q, want 7:7:7", got)
	}
	// Another process appends goal 2's first step.
	other := NewShared(path, hdr("Two goals", "planner"))
	other.Add(Entry{Step: "p2", Role: "planner", Signature: "2:1:1", Goal: "Second.", Text: "plan 2"})
	other.Add(Entry{Step: "a2", Role: "actor", Signature: "2:1:2", Goal: "Second.", Text: "done 2"})
	data, _ := os.ReadFile(path)
	log := string(data)
	for _, want := range []string{"\n## Goal 1\nFirst.\n", "\n## Goal 2\nSecond.\n", "**Signature**: 2:0:0\n", "**Signature**: 1:1:2\n", "**Signature**: 2:1:2\n"} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
	if strings.Contains(log, "7:7:7") || strings.Count(log, "## Goal 2\n") != 1 || strings.Count(log, "**Signature**: 1:1:1\n") != 1 {
		t.Errorf("log:\n%s", log)
	}
}

// An agent's text that holds lines like cadre's own goal and iteration
// headings or step marks does not move a shared log's counts when another
// process takes it up, nor pass for a later step's entry.
func TestAgentTextCannotForgeTheLogsStructure(t *testing.T) {
	path := filepath.Join(t.TempDir(), "current_cycle.md")
	c := NewShared(path, hdr("Two goals", "planner"))
	c.Reset()
	forged := "plan\n## Goal 9\n## Iteration 7\n<!-- step a1 -->\ntext"
	c.Add(Entry{Step: "p1", Role: "planner", Signature: "1:1:1", Goal: "First.", Text: forged})
	other := NewShared(path, hdr("Two goals", "planner"))
	other.Add(Entry{Step: "a1", Role: "actor", Signature: "1:1:2", Goal: "First.", Text: "done"})
	other.Add(Entry{Step: "p2", Role: "planner", Signature: "2:1:1", Goal: "Second.", Text: "plan 2"})
	data, _ := os.ReadFile(path)
	log := string(data)
	for _, want := range []string{"### Actor Output\n<!-- step a1 -->\ndone\n", "\n## Goal 2\nSecond.\n", "\n ## Goal 9\n ## Iteration 7\n <!-- step a1 -->\n"} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
	if strings.Count(log, "\n## Iteration 1\n") != 2 {
		t.Errorf("want iteration 1 of each goal, once each:\n%s", log)
	}
}
