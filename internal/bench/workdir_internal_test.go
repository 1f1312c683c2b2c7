package bench

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
)

// A job's work dir is a real repository with the fixture committed: clean
// at first, the agent's changes (renames on both sides) visible, and new
// commits possible though its objects are borrowed from the template.
func TestWorkDirIsAFreshRepository(t *testing.T) {
	ctx := context.Background()
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	t.Setenv("HOME", t.TempDir())
	parent := t.TempDir()
	c := Case{Role: "executor", Name: "x", fixture: fstest.MapFS{
		"a.txt":       {Data: []byte("a\n")},
		"run.sh":      {Data: []byte("echo hi\n"), Mode: 0o755},
		"sub/b.txt":   {Data: []byte("b\n")},
		"sub/c/d.txt": {Data: []byte("d\n")},
	}}
	tpl := newTemplates(parent)
	dirs := make([]string, 2)
	for i := range dirs {
		dir, err := tpl.workDir(ctx, c, parent)
		if err != nil {
			t.Fatal(err)
		}
		dirs[i] = dir
	}
	dir := dirs[0]
	if files, err := changed(ctx, dir); err != nil || len(files) != 0 {
		t.Fatalf("fresh work dir: changed %v, %v; want none", files, err)
	}
	if info, err := os.Stat(filepath.Join(dir, "run.sh")); err != nil || info.Mode()&0o100 == 0 {
		t.Errorf("run.sh: %v, %v; want an executable copy", info, err)
	}
	git := func(args ...string) string {
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t"}, args...)...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	if log := git("log", "--format=%s"); !strings.Contains(log, "fixture of benchmark case executor/x") {
		t.Errorf("git log = %q, want the fixture commit", log)
	}
	git("mv", "a.txt", "moved.txt")
	os.WriteFile(filepath.Join(dir, "new.txt"), []byte("n\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "sub", "b.txt"), []byte("changed\n"), 0o644)
	files, err := changed(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(files)
	if want := []string{"a.txt", "moved.txt", "new.txt", "sub/b.txt"}; !slices.Equal(files, want) {
		t.Errorf("changed = %v, want %v", files, want)
	}
	git("add", "-A")
	git("commit", "-q", "-m", "work")
	if files, err := changed(ctx, dir); err != nil || len(files) != 0 {
		t.Errorf("after a commit: changed %v, %v; want none", files, err)
	}
	// The second job's copy saw none of the first job's work.
	if files, err := changed(ctx, dirs[1]); err != nil || len(files) != 0 {
		t.Errorf("second work dir: changed %v, %v; want none", files, err)
	}
	if _, err := os.Stat(filepath.Join(dirs[1], "a.txt")); err != nil {
		t.Errorf("second work dir lost a.txt: %v", err)
	}
}

func TestRunCommandsSkipsUndefined(t *testing.T) {
	dir := t.TempDir()
	exits, skipped := runCommands(context.Background(), dir, []string{"build", "test", "lint"},
		map[string]string{"build": "true", "test": "exit 3"}, 0, os.Stderr)
	if exits["build"] != 0 || exits["test"] != 3 || len(exits) != 2 {
		t.Errorf("exits = %v, want build 0, test 3", exits)
	}
	if !slices.Equal(skipped, []string{"lint"}) {
		t.Errorf("skipped = %v, want [lint]", skipped)
	}
}
