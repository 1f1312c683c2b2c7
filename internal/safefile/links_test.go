package safefile

import (
	"os"
	"path/filepath"
	"testing"
)

// TestOutsideLink: links whose target leaves the root, by their text or
// once resolved, are outside; links inside, dangling links that stay
// inside by their text, and plain files are not.
func TestOutsideLink(t *testing.T) {
	root := t.TempDir()
	other := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(root, "file"), []byte("x"), 0o644))
	must(os.Mkdir(filepath.Join(root, "dir"), 0o755))
	must(os.Symlink("../file", filepath.Join(root, "dir", "up-inside")))
	must(os.Symlink("/etc/passwd", filepath.Join(root, "absolute")))
	must(os.Symlink("../../x", filepath.Join(root, "dir", "climbing")))
	must(os.Symlink(other, filepath.Join(root, "to-other")))
	must(os.Symlink("to-other", filepath.Join(root, "via-link"))) // inside by its text, outside resolved
	must(os.Symlink("missing", filepath.Join(root, "dangling")))
	for rel, want := range map[string]bool{
		"file": false, "dir/up-inside": false, "dangling": false, "nothing-there": false,
		"absolute": true, "dir/climbing": true, "to-other": true, "via-link": true,
	} {
		target, outside := OutsideLink(root, rel)
		if outside != want {
			t.Errorf("%s: outside %v (target %q), want %v", rel, outside, target, want)
		}
	}
}
