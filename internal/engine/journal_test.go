package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/store"
)

func TestJournalSinkWritesEveryEventInOrder(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "j.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.CreateRun(ctx, store.Run{ID: "r", Options: []byte("{}")}); err != nil {
		t.Fatal(err)
	}
	j := NewJournalSink(st)
	bus := event.NewBus(nil, j)
	for i := range 1500 {
		bus.Publish(event.Event{Run: "r", Type: event.StepStarted, Step: fmt.Sprint(i)})
	}
	bus.Publish(event.Event{Type: event.Warning}) // no run: not journaled
	j.Close()
	j.Close() // idempotent
	evs, _, err := st.Events(ctx, "r", 0)
	if err != nil || len(evs) != 1500 {
		t.Fatalf("%d events, %v", len(evs), err)
	}
	for i, e := range evs {
		if want := fmt.Sprintf(`"step":"%d"`, i); !strings.Contains(string(e.Data), want) {
			t.Fatalf("event %d = %s, want %s", i, e.Data, want)
		}
	}
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
	c := newCycleLog(path, "2026-01-01-001", "Add a", "clean", nil, "coder")
	c.add(agentSpec{ID: "s1", Role: "coder", Attempt: 1}, agentOut{text: "wrote a"})
	c.add(agentSpec{ID: "s2", Role: "auditor", Attempt: 1}, agentOut{text: "looks fine"})
	if got := read(); got != c.b.String() || !strings.Contains(got, "wrote a") || !strings.Contains(got, "looks fine") {
		t.Fatalf("file after two steps:\n%s\nwant:\n%s", got, c.b.String())
	}
	again := newCycleLog(path, "2026-01-01-001", "Add a", "clean", nil, "coder")
	if got := read(); got != again.b.String() || strings.Contains(got, "wrote a") {
		t.Fatalf("a restarted log appended to the old one:\n%s", got)
	}
	// The file is replaced by a directory: the append fails, and the next
	// flush after it is removed writes the whole log.
	os.Remove(path)
	os.Mkdir(path, 0o755)
	again.add(agentSpec{ID: "s1", Role: "coder", Attempt: 1}, agentOut{text: "wrote a"})
	os.Remove(path)
	again.add(agentSpec{ID: "s2", Role: "auditor", Attempt: 1}, agentOut{text: "looks fine"})
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
	c := sharedCycleLog(path, "2026-01-01-001", "Add a", "clean", nil, "coder")
	c.reset()
	c.add(agentSpec{ID: "s1", Role: "coder", Attempt: 1}, agentOut{text: "wrote a"})
	if !strings.Contains(c.b.String(), "wrote a") {
		t.Fatalf("log after a step:\n%s", c.b.String())
	}
	os.Remove(path)
	if err := os.Symlink(secret, path); err != nil {
		t.Fatal(err)
	}
	c.add(agentSpec{ID: "s2", Role: "auditor", Attempt: 1}, agentOut{text: "looks fine"})
	archived, err := c.archive(filepath.Join(dir, "state"), time.Now(), "Add a", 0, "")
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
