package engine

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cadre-dev/cadre/internal/runner"
	"github.com/cadre-dev/cadre/internal/store"
)

// section is the text of the cycle log's "## name" section, up to the
// next heading of its level or the header's end.
func section(log, name string) string {
	_, rest, ok := strings.Cut(log, "\n## "+name+"\n")
	if !ok {
		return ""
	}
	for _, end := range []string{"\n## ", "\n---\n"} {
		if i := strings.Index(rest, end); i >= 0 {
			rest = rest[:i]
		}
	}
	return strings.TrimSpace(rest)
}

// The cycle log's header holds the task's objective under Goal and where
// the work starts under Current State (the task's own section, else the
// planner's first output), and keeps cadre's bookkeeping apart.
func TestCycleLogHeaderFromTheTask(t *testing.T) {
	e := newEnv(t, func(inv runner.Invocation) runner.Result {
		if inv.Role == "planner" {
			return runner.Result{Output: "The parser has no tests yet.\n\n" + signalText("planner", "PLAN_CREATED", -1)}
		}
		return passAll(inv)
	}, [2]string{"a", "plan"}, [2]string{"b", "plan"})
	b := "---\nstage: plan\nattempts: 0\n---\n# Task b\n\n## Goal\nDo b.\n\n## Current State\n- the build is red\n"
	if err := os.WriteFile(filepath.Join(e.root, "tasks", "b.md"), []byte(b), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, e.root, "commit", "-qam", "b starts red")
	sum, err := e.eng.Start(context.Background(), Options{InPlace: true})
	if err != nil || sum.Status != store.RunCompleted {
		t.Fatalf("run %+v, %v", sum, err)
	}
	for id, state := range map[string]string{"a": "The parser has no tests yet.", "b": "- the build is red"} {
		data, err := os.ReadFile(filepath.Join(e.eng.StateDir(), "runs", sum.Run, "items", id, "current_cycle.md"))
		if err != nil {
			t.Fatal(err)
		}
		log := string(data)
		if got, want := section(log, "Goal"), "Do "+id+"."; got != want {
			t.Errorf("%s: Goal = %q, want %q:\n%s", id, got, want, log)
		}
		if got := section(log, "Current State"); !strings.Contains(got, state) || strings.Contains(got, "stage:") {
			t.Errorf("%s: Current State = %q, want %q without cadre's bookkeeping:\n%s", id, got, state, log)
		}
		if got := section(log, "Bookkeeping"); !strings.Contains(got, "stage: plan") || !strings.Contains(got, filepath.Join("tasks", id+".md")) {
			t.Errorf("%s: Bookkeeping = %q:\n%s", id, got, log)
		}
	}
}

// The images an agent writes into its tree's context/assets, and those a
// person left beside the task file, are kept with the item and listed in
// its cycle log; an image the tree had before the step, a name not of the
// seed's form and a link are not.
func TestCycleLogKeepsAssets(t *testing.T) {
	const shot, old, dropped = "2026-01-02_10-00-00_login-page.png", "2025-01-01_00-00-00_old.png", "2026-01-01_09-00-00_mockup.svg"
	e := newEnv(t, func(inv runner.Invocation) runner.Result {
		if inv.Role == "coder" {
			dir := filepath.Join(inv.Dir, "context", "assets")
			os.MkdirAll(dir, 0o755)
			os.WriteFile(filepath.Join(dir, shot), []byte("\x89PNG shot"), 0o644)
			os.WriteFile(filepath.Join(dir, "screenshot.png"), []byte("\x89PNG unnamed"), 0o644)
			os.WriteFile(filepath.Join(inv.Dir, "notes.txt"), []byte("TOKEN=abc"), 0o644)
			os.Symlink("../../notes.txt", filepath.Join(dir, "2026-01-02_10-00-01_link.png"))
		}
		return passAll(inv)
	}, [2]string{"a", "code"})
	for path, data := range map[string]string{"context/assets/" + old: "\x89PNG old", "tasks/context/assets/" + dropped: "<svg/>"} {
		os.MkdirAll(filepath.Dir(filepath.Join(e.root, path)), 0o755)
		os.WriteFile(filepath.Join(e.root, path), []byte(data), 0o644)
	}
	git(t, e.root, "add", "-A")
	git(t, e.root, "commit", "-qm", "images")
	sum, err := e.eng.Start(context.Background(), Options{})
	if err != nil || sum.Status != store.RunCompleted {
		t.Fatalf("run %+v, %v", sum, err)
	}
	item := filepath.Join(e.eng.StateDir(), "runs", sum.Run, "items", "a")
	entries, _ := os.ReadDir(filepath.Join(item, "assets"))
	var kept []string
	for _, en := range entries {
		kept = append(kept, en.Name())
	}
	if strings.Join(kept, " ") != dropped+" "+shot {
		t.Errorf("kept %q, want %s and %s", kept, dropped, shot)
	}
	data, _ := os.ReadFile(filepath.Join(item, "current_cycle.md"))
	log := string(data)
	if got := section(log, "Assets"); got != "- ["+dropped+"](assets/"+dropped+")" {
		t.Errorf("Assets = %q:\n%s", got, log)
	}
	if !strings.Contains(log, "#### Assets\n- ["+shot+"](assets/"+shot+")\n") || strings.Contains(log, "TOKEN") {
		t.Errorf("the coder's image is not listed under its output:\n%s", log)
	}
	arch, _ := filepath.Glob(filepath.Join(e.eng.StateDir(), "archive", "*.md"))
	if len(arch) != 1 {
		t.Fatalf("archives %q", arch)
	}
	data, _ = os.ReadFile(arch[0])
	if link := "](../runs/" + sum.Run + "/items/a/assets/" + shot + ")"; !strings.Contains(string(data), link) {
		t.Errorf("the archive does not link %s:\n%s", link, data)
	}
}
