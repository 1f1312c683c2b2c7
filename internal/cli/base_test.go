package cli_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// gitOut runs git in dir and returns its trimmed output.
func gitOut(t *testing.T, dir string, args ...string) string {
	t.Helper()
	c := exec.Command("git", append([]string{"-c", "user.email=t@example.com", "-c", "user.name=T"}, args...)...)
	c.Dir = dir
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v in %s: %v %s", args, dir, err, out)
	}
	return strings.TrimSpace(string(out))
}

// A new item branches from the base as fetched from origin when it
// starts, not from the checkout's main, which cadre never fetches: a
// change merged on origin since is in the item's branch from its start
// (and not in its pull request's commits), and the checkout's main is
// left where it was.
// With limits.worktree_pool, the prepared worktree the item takes is
// switched to that base.
func TestNewItemBranchesFromFetchedBase(t *testing.T) {
	t.Run("a new worktree", func(t *testing.T) { testFetchedBase(t, false) })
	t.Run("a prepared worktree", func(t *testing.T) { testFetchedBase(t, true) })
}

func testFetchedBase(t *testing.T, pool bool) {
	g := newGitHubRepo(t)
	if pool {
		cfg, _ := os.ReadFile(filepath.Join(g.dir, "cadre.yaml"))
		os.WriteFile(filepath.Join(g.dir, "cadre.yaml"), append(cfg, "limits: {worktree_pool: 1}\n"...), 0o644)
		gitOut(t, g.dir, "commit", "-qam", "a pool of worktrees")
	}
	local := gitOut(t, g.dir, "rev-parse", "main")
	elsewhere := filepath.Join(g.work, "elsewhere")
	gitOut(t, g.work, "clone", "-q", "-b", "main", g.bare, elsewhere)
	os.WriteFile(filepath.Join(elsewhere, "merged.txt"), []byte("merged on origin\n"), 0o644)
	gitOut(t, elsewhere, "add", "merged.txt")
	gitOut(t, elsewhere, "commit", "-qm", "a change merged on origin")
	gitOut(t, elsewhere, "push", "-q", "origin", "main")
	merged := gitOut(t, elsewhere, "rev-parse", "HEAD")

	if code, out, errOut := g.cadre(t, "", "run", "--plain", "1"); code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", code, errOut, out)
	}
	const branch = "cadre/1-fix-the-frobnicator"
	if err := exec.Command("git", "-C", g.dir, "merge-base", "--is-ancestor", merged, branch).Run(); err != nil {
		t.Errorf("the item's branch does not hold origin's main (%s): %v\n%s", merged, err, gitOut(t, g.dir, "log", "--oneline", branch))
	}
	if got := gitOut(t, g.dir, "show", branch+":merged.txt"); got != "merged on origin" {
		t.Errorf("the item's tree has merged.txt %q", got)
	}
	// Its pull request is measured against that base: its commits are
	// the item's own.
	for _, pr := range g.fake.PRs("acme", "widgets") {
		if strings.Contains(pr.Body, "a change merged on origin") {
			t.Errorf("the pull request lists origin's commit as its own:\n%s", pr.Body)
		}
	}
	if now := gitOut(t, g.dir, "rev-parse", "main"); now != local {
		t.Errorf("the checkout's main moved from %s to %s", local, now)
	}
}

// A fetch of the base that fails starts the item from the local branch,
// with a warning naming the remote and the error; a repository without
// an origin starts it from the local branch without a word.
func TestNewItemBaseWithoutOrigin(t *testing.T) {
	for _, tt := range []struct {
		name, origin, warn string
	}{
		{"an origin that cannot be reached", "set-url", "could not fetch main from origin: "},
		{"no origin", "remove", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := newGitHubRepo(t)
			os.WriteFile(filepath.Join(g.dir, "tasks", "a.md"), []byte("---\nstage: code\n---\n# Task a\n"), 0o644)
			gitOut(t, g.dir, "add", "tasks/a.md")
			gitOut(t, g.dir, "commit", "-qm", "task a")
			local := gitOut(t, g.dir, "rev-parse", "main")
			if tt.origin == "set-url" {
				gitOut(t, g.dir, "remote", "set-url", "origin", filepath.Join(g.work, "gone.git"))
			} else {
				gitOut(t, g.dir, "remote", "remove", "origin")
			}
			code, out, errOut := g.cadre(t, "", "run", "--plain", "--workflow", "simple", "tasks/a.md")
			if code != 0 {
				t.Fatalf("run: exit %d\n%s\n%s", code, errOut, out)
			}
			warned := strings.Contains(errOut, "could not fetch")
			if tt.warn != "" && (!strings.Contains(errOut, tt.warn) || !strings.Contains(errOut, "the item starts from the local branch main")) || tt.warn == "" && warned {
				t.Errorf("warning %q wanted, got:\n%s", tt.warn, errOut)
			}
			if err := exec.Command("git", "-C", g.dir, "merge-base", "--is-ancestor", local, "cadre/a-task-a").Run(); err != nil {
				t.Errorf("the item's branch does not start from the local main: %v", err)
			}
		})
	}
}
