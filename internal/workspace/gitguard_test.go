package workspace

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// Each way an agent could make git run a program is seen, named, and put
// back as it was.
func TestGitStateSeesAndRestoresChanges(t *testing.T) {
	ctx := context.Background()
	r := newIsolatedRepo(t)
	write(t, filepath.Join(r.Dir, "f"), "x")
	if _, err := r.CommitAll(ctx, "m", Mark{}); err != nil {
		t.Fatal(err)
	}
	if err := r.ExcludeState(ctx); err != nil {
		t.Fatal(err)
	}
	wt, err := NewWorktrees(r).Ensure(ctx, "a", "cadre/a", "main", EnsureOptions{})
	if err != nil {
		t.Fatal(err)
	}
	git := filepath.Join(r.Dir, ".git")
	home, _ := os.UserHomeDir()
	write(t, filepath.Join(git, "hooks", "post-checkout"), "#!/bin/sh\n")
	write(t, filepath.Join(r.Dir, "shared.gitconfig"), "[core]\n")
	if _, err := r.Git(ctx, "config", "include.path", "../shared.gitconfig"); err != nil {
		t.Fatal(err)
	}
	configBefore, _ := os.ReadFile(filepath.Join(git, "config"))
	tests := []struct {
		name   string
		change func()
		want   string
	}{
		{"config", func() { wt.Git(ctx, "config", "core.hooksPath", "/tmp/evil") }, ".git/config"},
		{"new hook", func() { write(t, filepath.Join(git, "hooks", "pre-commit"), "#!/bin/sh\ntouch x\n") }, ".git/hooks/pre-commit"},
		{"edited hook", func() { write(t, filepath.Join(git, "hooks", "post-checkout"), "#!/bin/sh\ntouch x\n") }, ".git/hooks/post-checkout"},
		{"hook made executable", func() { os.Chmod(filepath.Join(git, "hooks", "post-checkout"), 0o755) }, ".git/hooks/post-checkout"},
		{"attributes", func() { write(t, filepath.Join(git, "info", "attributes"), "* filter=x\n") }, ".git/info/attributes"},
		{"worktree config", func() { write(t, filepath.Join(git, "worktrees", "a", "config.worktree"), "[core]\n") }, ".git/worktrees/a/config.worktree"},
		{"included file", func() { write(t, filepath.Join(r.Dir, "shared.gitconfig"), "[filter \"x\"]\nclean = touch x\n") }, "shared.gitconfig"},
		{"user config", func() { write(t, filepath.Join(home, ".gitconfig"), "[filter \"x\"]\nclean = touch x\n") }, "~/.gitconfig"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before, err := wt.Snapshot(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := before.Changed(ctx, wt); len(got) != 0 {
				t.Fatalf("changed with no change: %v", got)
			}
			tc.change()
			got, err := before.Changed(ctx, wt)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, p := range got {
				names = append(names, before.Name(p))
			}
			if !slices.Contains(names, tc.want) {
				t.Fatalf("changed = %v, want %s among them", names, tc.want)
			}
			if err := before.Restore(got); err != nil {
				t.Fatal(err)
			}
			if again, _ := before.Changed(ctx, wt); len(again) != 0 {
				t.Errorf("still changed after Restore: %v", again)
			}
		})
	}
	// An included file that held no setting is put back, not removed.
	if data, err := os.ReadFile(filepath.Join(r.Dir, "shared.gitconfig")); err != nil || string(data) != "[core]\n" {
		t.Errorf("the included file after Restore: %q, %v; want it as it was", data, err)
	}
	if after, _ := os.ReadFile(filepath.Join(git, "config")); string(after) != string(configBefore) {
		t.Errorf(".git/config after restores:\n%s\nwant\n%s", after, configBefore)
	}
}

// Once the repository's configuration has settled (read from cache, not
// git), a filter driver or hook path added in place is still seen: by the
// snapshot check and by the options that switch filters off.
func TestSettledConfigChangesAreStillSeen(t *testing.T) {
	ctx := context.Background()
	r := newIsolatedRepo(t)
	u := r.Untrusted()
	for i, key := range []string{"filter.x.clean", "filter.y.smudge"} {
		time.Sleep(2 * racyWindow) // the configuration is no longer racy: cached
		before, err := u.Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if opts := strings.Join(u.withFilters(ctx, nil), " "); i == 0 && strings.Contains(opts, "filter.") {
			t.Fatalf("filters switched off before any is defined: %s", opts)
		}
		// Same size as a rewrite of the value would be: only the stat's
		// times and the content differ.
		if _, err := r.Git(ctx, "config", key, "touch ran"); err != nil {
			t.Fatal(err)
		}
		changed, err := before.Changed(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		if len(changed) != 1 || before.Name(changed[0]) != filepath.Join(".git", "config") {
			t.Errorf("%s: changed %v, want .git/config", key, changed)
		}
		driver := strings.Split(key, ".")[1]
		if opts := strings.Join(u.withFilters(ctx, nil), " "); !strings.Contains(opts, "filter."+driver+".clean=") {
			t.Errorf("%s: filter %s not switched off: %s", key, driver, opts)
		}
	}
}

// A watched file read from the snapshot cache (settled, so only its stat
// is looked at) is still seen changed when an agent rewrites it with the
// same size and puts its modification time back: the change time moved.
func TestCachedHookRewrittenInPlaceIsSeen(t *testing.T) {
	ctx := context.Background()
	r := newIsolatedRepo(t)
	hook := filepath.Join(r.Dir, ".git", "hooks", "post-checkout")
	write(t, hook, "#!/bin/sh\ntrue\n")
	old := time.Now().Add(-time.Hour)
	os.Chtimes(hook, old, old)
	time.Sleep(2 * racyWindow)
	for range 2 { // the second snapshot reads the hook from the cache
		before, err := r.Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := before.Changed(ctx, r); len(got) != 0 {
			t.Fatalf("changed with no change: %v", got)
		}
	}
	if r.gitCache().states.files[hook].key == (statKey{}) {
		t.Fatal("the settled hook was not cached")
	}
	before, _ := r.Snapshot(ctx)
	f, err := os.OpenFile(hook, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte("#!/bin/sh\nevil\n"), 0)
	f.Close()
	os.Chtimes(hook, old, old)
	got, err := before.Changed(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0] != hook {
		t.Fatalf("changed = %v, want the hook", got)
	}
	if err := before.Restore(got); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(hook); string(data) != "#!/bin/sh\ntrue\n" {
		t.Errorf("hook after restore: %q", data)
	}
}

// A hooks directory replaced by a link to another directory is made again,
// and restoring its hooks writes nothing through the link.
func TestGitStateRestoresReplacedHooksDir(t *testing.T) {
	ctx := context.Background()
	r := newIsolatedRepo(t)
	hooks := filepath.Join(r.Dir, ".git", "hooks")
	write(t, filepath.Join(hooks, "post-checkout"), "#!/bin/sh\n")
	before, err := r.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	elsewhere := t.TempDir()
	write(t, filepath.Join(elsewhere, "post-checkout"), "#!/bin/sh\ntouch x\n")
	if err := os.RemoveAll(hooks); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, hooks); err != nil {
		t.Fatal(err)
	}
	changed, err := before.Changed(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	if err := before.Restore(changed); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(hooks); err != nil || !fi.IsDir() {
		t.Fatalf("hooks after restore: %v, %v", fi, err)
	}
	if data, _ := os.ReadFile(filepath.Join(hooks, "post-checkout")); string(data) != "#!/bin/sh\n" {
		t.Errorf("restored hook holds %q", data)
	}
	if data, _ := os.ReadFile(filepath.Join(elsewhere, "post-checkout")); string(data) != "#!/bin/sh\ntouch x\n" {
		t.Errorf("the file the link led to became %q", data)
	}
	if got, _ := before.Changed(ctx, r); len(got) != 0 {
		t.Errorf("still changed after restore: %v", got)
	}
}

// Once the list of watched paths is kept (settled configuration and hooks
// directory), a hook added to the directory is still seen; with a
// directory inside the hooks directory, the list is not kept, and a file
// added there is seen too.
func TestKeptWatchListSeesNewHooks(t *testing.T) {
	ctx := context.Background()
	r := newIsolatedRepo(t)
	hooks := filepath.Join(r.Dir, ".git", "hooks")
	sub := filepath.Join(hooks, "lib")
	old := time.Now().Add(-time.Hour)
	for _, tc := range []struct {
		name, path string
		kept       bool
	}{
		{"new hook", filepath.Join(hooks, "pre-commit"), true},
		{"new file in a directory of hooks", filepath.Join(sub, "evil.sh"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !tc.kept {
				write(t, filepath.Join(sub, "common.sh"), "#!/bin/sh\n")
				os.Chtimes(sub, old, old)
			}
			os.Chtimes(hooks, old, old)
			time.Sleep(2 * racyWindow)
			var first *GitState
			for range 2 { // the second snapshot may take the kept list
				before, err := r.Snapshot(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if got, _ := before.Changed(ctx, r); len(got) != 0 {
					t.Fatalf("changed with no change: %v", got)
				}
				if first == nil {
					first = before
				}
			}
			before, _ := r.Snapshot(ctx)
			if kept := &first.paths[0] == &before.paths[0]; kept != tc.kept {
				t.Fatalf("watch list kept: %t, want %t", kept, tc.kept)
			}
			write(t, tc.path, "#!/bin/sh\ntouch x\n")
			got, err := before.Changed(ctx, r)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(got, tc.path) {
				t.Fatalf("changed = %v, want %s among them", got, tc.path)
			}
			if err := before.Restore(got); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Lstat(tc.path); !os.IsNotExist(err) {
				t.Errorf("%s still there after restore: %v", tc.path, err)
			}
		})
	}
}

// newIsolatedRepo is newRepo with no user or XDG git configuration: what
// the test changes in the repository's own is all git reads.
func newIsolatedRepo(t *testing.T) *Repo {
	t.Helper()
	t.Setenv("HOME", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", "")
	return newRepo(t)
}

// git init's samples are not watched, since git never runs them: one
// rewritten is no change; one renamed to a hook's name is, and the hook is
// taken away.
func TestSampleHooks(t *testing.T) {
	ctx := context.Background()
	r := newIsolatedRepo(t)
	hooks := filepath.Join(r.Dir, ".git", "hooks")
	sample := filepath.Join(hooks, "pre-commit.sample")
	write(t, sample, "#!/bin/sh\nexit 0\n")
	before, err := r.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(before.paths, sample) {
		t.Error("a sample hook is watched")
	}
	write(t, sample, "#!/bin/sh\ntouch x\n")
	if got, _ := before.Changed(ctx, r); len(got) != 0 {
		t.Errorf("a rewritten sample counts as a change: %v", got)
	}
	hook := filepath.Join(hooks, "pre-commit")
	if err := os.Rename(sample, hook); err != nil {
		t.Fatal(err)
	}
	got, err := before.Changed(ctx, r)
	if err != nil || !slices.Contains(got, hook) {
		t.Fatalf("changed = %v, %v; want %s among them", got, err, hook)
	}
	if err := before.Restore(got); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(hook); !os.IsNotExist(err) {
		t.Errorf("the hook made from a sample is still there: %v", err)
	}
}
