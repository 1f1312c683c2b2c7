package app_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestIssueRunUsesWorktreePool: with limits.worktree_pool, issues are
// worked in prepared worktrees (a branch switch where a worktree add would
// be), every issue still becomes a pull request (runIssues checks), and
// after the run git lists no prepared worktree and none is left on disk.
func TestIssueRunUsesWorktreePool(t *testing.T) {
	if testing.Short() {
		t.Skip("issues through the cadre workflow")
	}
	r := runIssuesWith(t, 4, 2, "limits: {worktree_pool: 2}\n")
	prepared, handed, plain := 0, 0, 0
	for _, argv := range r.argv {
		switch {
		case strings.Contains(argv, "worktree add --quiet --detach"):
			prepared++
		case strings.Contains(argv, " checkout --quiet --no-track -b cadre/"):
			handed++
		case strings.Contains(argv, "worktree add --quiet --no-track -b cadre/"):
			plain++
		}
	}
	if prepared < 2 || handed < 1 || handed+plain != 4 {
		t.Errorf("%d worktrees prepared, %d handed to items, %d added plainly; want ≥ 2, ≥ 1, and 4 items in all", prepared, handed, plain)
	}
	out, err := exec.Command("git", "-C", r.root, "worktree", "list", "--porcelain").CombinedOutput()
	if err != nil {
		t.Fatalf("git worktree list: %v %s", err, out)
	}
	items := 0
	for _, l := range strings.Split(string(out), "\n") {
		p, ok := strings.CutPrefix(l, "worktree ")
		if !ok {
			continue
		}
		if strings.Contains(p, "/.pool/") {
			t.Errorf("prepared worktree left registered: %s", p)
		}
		if strings.Contains(p, "/.cadre/worktrees/") {
			items++
		}
	}
	if items != 4 {
		t.Errorf("git lists %d item worktrees, want 4:\n%s", items, out)
	}
	if _, err := os.Stat(filepath.Join(r.root, ".cadre", "worktrees", ".pool")); !os.IsNotExist(err) {
		t.Errorf("pool directory left: %v", err)
	}
}
