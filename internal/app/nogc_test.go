package app_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestIssueRunMakesNoGitGC: a run of 30 issues (commits, worktrees,
// pushes) starts no git gc or maintenance, every git process it starts
// has automatic gc and maintenance switched off, and the repository's
// packs are left as they were.
func TestIssueRunMakesNoGitGC(t *testing.T) {
	if testing.Short() {
		t.Skip("30 issues through the cadre workflow")
	}
	packs := func(root string) []string {
		names, _ := filepath.Glob(filepath.Join(root, ".git", "objects", "pack", "*"))
		slices.Sort(names)
		return names
	}
	r := runIssues(t, 30, 10)
	if r.gcs != 0 {
		t.Errorf("%d git gc or maintenance runs", r.gcs)
	}
	if len(r.argv) == 0 {
		t.Fatal("no git process logged: the shim is not in use")
	}
	for _, argv := range r.argv {
		if !strings.Contains(argv, "gc.auto=0") || !strings.Contains(argv, "maintenance.auto=false") {
			t.Errorf("git ran with automatic gc or maintenance on: %s", argv)
		}
	}
	if got := packs(r.root); len(got) != 0 {
		t.Errorf("the run packed objects: %v", got)
	}
	if _, err := os.Stat(filepath.Join(r.root, ".git", "gc.log")); err == nil {
		t.Error("a background gc left .git/gc.log")
	}
}
