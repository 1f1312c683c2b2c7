package cyclelog

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The log's Goal is the task's objective (its Goal section, else its
// first paragraph, else the title) and its Current State the task's own
// section when it has one; headings shown in code blocks are no sections.
func TestObjectiveAndStartState(t *testing.T) {
	for _, tc := range []struct{ name, body, goal, state string }{
		{"sections", "# T\n\n## Goal\nLog in.\nWith 2FA.\n\n## Current State\n- no login\n\n## Files\n- a.go\n", "Log in.\nWith 2FA.", "- no login"},
		{"context instead", "# T\n\n## Goal\nG.\n\n## Context\nThe API is v2.\n", "G.", "The API is v2."},
		{"first paragraph", "# T\n\nFix the parser.\nIt panics.\n\nMore.\n", "Fix the parser.\nIt panics.", ""},
		{"fenced", "# T\n\n```\n## Goal\nnot this\n```\n", "T", ""},
		{"title only", "# T\n", "T", ""},
	} {
		if got := Objective("T", tc.body); got != tc.goal {
			t.Errorf("%s: Objective = %q, want %q", tc.name, got, tc.goal)
		}
		if got := StartState(tc.body); got != tc.state {
			t.Errorf("%s: StartState = %q, want %q", tc.name, got, tc.state)
		}
	}
}

// A task that does not say where it starts gets the planner's first
// output, quoted, as its Current State, in a shared log's file too; the
// planner's later outputs and other roles leave it be.
func TestPlannerOutputFillsTheState(t *testing.T) {
	path := filepath.Join(t.TempDir(), "current_cycle.md")
	c := NewShared(path, Header{ID: "2026-01-01-001", Goal: "G.", Next: "planner", Bookkeeping: []string{"stage: plan"}})
	c.Reset()
	c.Add(Entry{Step: "s0", Role: "scout", Attempt: 1, Text: "scouted"})
	c.Add(Entry{Step: "p1", Role: "implementation-planner", Attempt: 1, Text: "## Start\nNo tests.\n\n### SIGNAL BLOCK\n- Result: PLAN_CREATED"})
	other := NewShared(path, Header{ID: "2026-01-01-001", Goal: "G.", Next: "planner"})
	other.Add(Entry{Step: "p2", Role: "planner", Attempt: 2, Text: "again"})
	data, _ := os.ReadFile(path)
	log := string(data)
	want := "\n## Current State\n> ## Start\n> No tests.\n\n## Context Docs\n"
	if !strings.Contains(log, want) || strings.Contains(log, pendingState) || !strings.Contains(log, "\n## Bookkeeping\n- stage: plan\n") {
		t.Errorf("log lacks %q:\n%s", want, log)
	}
	for _, s := range []string{"<!-- step s0 -->", "<!-- step p1 -->", "<!-- step p2 -->"} {
		if strings.Count(log, s) != 1 {
			t.Errorf("%s %d times:\n%s", s, strings.Count(log, s), log)
		}
	}
}

// An image is kept only under seed 002's name.
func TestIsAsset(t *testing.T) {
	for name, want := range map[string]bool{
		"2026-01-02_10-00-00_login-page.png": true, "2026-01-02_10-00-00_a.JPEG": true, "2026-01-02_10-00-00_flow_1.svg": true,
		"screenshot.png": false, "2026-01-02_10-00-00_.png": false, "2026-01-02_10-00-00_a.txt": false,
		"2026-01-02_10-00-00_../x.png": false, "2026-01-02_10-00-00_a b.png": false, "2026-01-02_10-00-00_.hidden.png": false,
	} {
		if IsAsset(name) != want {
			t.Errorf("IsAsset(%q) = %v", name, !want)
		}
	}
}

// A step's images are kept only through no link and within MaxAsset, in
// all; the entry lists those kept.
func TestStepAssetsConfined(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "item", "current_cycle.md")
	tree, elsewhere := filepath.Join(dir, "tree"), filepath.Join(dir, "elsewhere")
	os.MkdirAll(filepath.Join(tree, "context", "assets"), 0o755)
	os.MkdirAll(filepath.Join(elsewhere, "context", "assets"), 0o755)
	os.WriteFile(filepath.Join(elsewhere, "context", "assets", "2026-01-01_00-00-00_secret.png"), []byte("TOKEN"), 0o644)
	os.Symlink(filepath.Join(elsewhere, "context"), filepath.Join(dir, "linked"))
	shots := filepath.Join(tree, "context", "assets")
	os.WriteFile(filepath.Join(shots, "2026-01-01_00-00-01_big.png"), make([]byte, MaxAsset+1), 0o644)
	os.WriteFile(filepath.Join(shots, "2026-01-01_00-00-02_a.png"), make([]byte, MaxAsset-10), 0o644)
	os.WriteFile(filepath.Join(shots, "2026-01-01_00-00-03_b.png"), make([]byte, 20), 0o644)
	os.Symlink(filepath.Join(elsewhere, "context", "assets", "2026-01-01_00-00-00_secret.png"), filepath.Join(shots, "2026-01-01_00-00-04_l.png"))
	c := New(path, Header{ID: "2026-01-01-001", Goal: "G.", Next: "coder", Assets: filepath.Join(dir, "linked", "assets")})
	c.Add(Entry{Step: "s1", Role: "coder", Attempt: 1, Text: "done", WorkDir: tree, Since: time.Unix(1, 0)})
	got := strings.Join(c.kept(), " ")
	if got != "2026-01-01_00-00-02_a.png" {
		t.Errorf("kept %q, want the one image within the bounds", got)
	}
	if log := c.b.String(); !strings.Contains(log, "#### Assets\n- [2026-01-01_00-00-02_a.png](assets/2026-01-01_00-00-02_a.png)\n") || strings.Contains(log, "secret") {
		t.Errorf("log:\n%s", log)
	}
}
