package safefile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestReadRefusesLinks(t *testing.T) {
	root := t.TempDir()
	outside := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(outside, []byte("host secret"), 0o644)
	os.MkdirAll(filepath.Join(root, "outputs"), 0o755)
	os.WriteFile(filepath.Join(root, "outputs", "plain.md"), []byte("ok"), 0o644)
	os.Symlink(outside, filepath.Join(root, "outputs", "link.md"))
	os.Symlink(filepath.Dir(outside), filepath.Join(root, "dirlink"))
	os.Link(outside, filepath.Join(root, "outputs", "hard.md"))
	syscall.Mkfifo(filepath.Join(root, "outputs", "fifo.md"), 0o644)

	if got, err := ReadFile(root, filepath.Join(root, "outputs", "plain.md")); err != nil || string(got) != "ok" {
		t.Fatalf("plain file: %q, %v", got, err)
	}
	for _, p := range []string{"outputs/link.md", "dirlink/secret", "outputs/hard.md", "outputs/fifo.md", "../x"} {
		got, err := ReadFile(root, filepath.Join(root, p))
		if !errors.Is(err, ErrUnsafe) {
			t.Errorf("%s: read %q, err %v; want ErrUnsafe", p, got, err)
		}
	}
	if _, err := ReadFile(root, filepath.Join(root, "outputs", "none.md")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

func TestWriteRefusesLinks(t *testing.T) {
	root := t.TempDir()
	outside := filepath.Join(t.TempDir(), "target")
	os.WriteFile(outside, []byte("keep"), 0o644)
	os.Symlink(outside, filepath.Join(root, "link.md"))
	os.Symlink(filepath.Dir(outside), filepath.Join(root, "dirlink"))
	os.Link(outside, filepath.Join(root, "hard.md"))
	for _, p := range []string{"link.md", "dirlink/target", "hard.md"} {
		if err := WriteFile(root, filepath.Join(root, p), []byte("overwritten"), 0o644); !errors.Is(err, ErrUnsafe) {
			t.Errorf("%s: %v, want ErrUnsafe", p, err)
		}
	}
	if data, _ := os.ReadFile(outside); string(data) != "keep" {
		t.Errorf("the file outside became %q", data)
	}
	p := filepath.Join(root, "new", "dir", "f.md")
	if err := WriteFile(root, p, []byte("longer text"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(root, p, []byte("short"), 0o644); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(p); string(data) != "short" {
		t.Errorf("rewritten file holds %q", data)
	}
}

func TestCheckAndAppendRefuseLinks(t *testing.T) {
	root := t.TempDir()
	outside := filepath.Join(t.TempDir(), "target")
	os.WriteFile(outside, []byte("keep"), 0o644)
	os.Symlink(outside, filepath.Join(root, "link.md"))
	os.WriteFile(filepath.Join(root, "plain.md"), []byte("a"), 0o644)

	if err := Check(root, filepath.Join(root, "link.md")); !errors.Is(err, ErrUnsafe) {
		t.Errorf("Check of a link: %v, want ErrUnsafe", err)
	}
	for _, p := range []string{"plain.md", "none.md"} {
		if err := Check(root, filepath.Join(root, p)); err != nil {
			t.Errorf("Check %s: %v", p, err)
		}
	}
	if f, err := OpenAppend(root, filepath.Join(root, "link.md"), 0o644); !errors.Is(err, ErrUnsafe) {
		if f != nil {
			f.Close()
		}
		t.Errorf("OpenAppend of a link: %v, want ErrUnsafe", err)
	}
	f, err := OpenAppend(root, filepath.Join(root, "plain.md"), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("b")
	f.Close()
	if data, _ := os.ReadFile(filepath.Join(root, "plain.md")); string(data) != "ab" {
		t.Errorf("appended file holds %q", data)
	}
	if data, _ := os.ReadFile(outside); string(data) != "keep" {
		t.Errorf("the file outside became %q", data)
	}
}

func TestReadWholeFile(t *testing.T) {
	root := t.TempDir()
	big := make([]byte, 200_000)
	for i := range big {
		big[i] = byte('a' + i%26)
	}
	os.WriteFile(filepath.Join(root, "big"), big, 0o644)
	os.WriteFile(filepath.Join(root, "empty"), nil, 0o644)
	if got, err := ReadFile(root, filepath.Join(root, "big")); err != nil || string(got) != string(big) {
		t.Errorf("big file: %d bytes, %v; want %d", len(got), err, len(big))
	}
	if got, err := ReadFile(root, filepath.Join(root, "empty")); err != nil || got == nil || len(got) != 0 {
		t.Errorf("empty file: %q (nil %v), %v", got, got == nil, err)
	}
}

// BenchmarkWriteStepFile rewrites a step-sized file two directories under
// the root, as the engine writes a step's context file.
func BenchmarkWriteStepFile(b *testing.B) {
	root := b.TempDir()
	data := make([]byte, 3000)
	path := filepath.Join(root, "items", "contexts", "step.json")
	for b.Loop() {
		if err := WriteFile(root, path, data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReadStepFile reads it back, as the engine reads an output.
func BenchmarkReadStepFile(b *testing.B) {
	root := b.TempDir()
	path := filepath.Join(root, "items", "outputs", "step.md")
	if err := WriteFile(root, path, make([]byte, 3000), 0o644); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := ReadFile(root, path); err != nil {
			b.Fatal(err)
		}
	}
}

// Remove removes a file or a link at the path, never a file a link on the
// way leads to.
func TestRemoveRefusesLinks(t *testing.T) {
	root := t.TempDir()
	elsewhere := t.TempDir()
	victim := filepath.Join(elsewhere, "x.md")
	os.WriteFile(victim, []byte("keep"), 0o644)
	if err := os.Symlink(elsewhere, filepath.Join(root, "outputs")); err != nil {
		t.Fatal(err)
	}
	if err := Remove(root, filepath.Join(root, "outputs", "x.md")); !errors.Is(err, ErrUnsafe) {
		t.Errorf("remove through a linked directory: %v, want ErrUnsafe", err)
	}
	if _, err := os.Stat(victim); err != nil {
		t.Errorf("the file the link leads to was removed: %v", err)
	}
	link := filepath.Join(root, "link.md")
	os.Symlink(victim, link)
	if err := Remove(root, link); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(link); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the link is still there: %v", err)
	}
	if _, err := os.Stat(victim); err != nil {
		t.Errorf("the link's target was removed: %v", err)
	}
	plain := filepath.Join(root, "sub", "p.md")
	os.MkdirAll(filepath.Dir(plain), 0o755)
	os.WriteFile(plain, nil, 0o644)
	for range 2 { // the second time it is missing: no error
		if err := Remove(root, plain); err != nil {
			t.Fatal(err)
		}
	}
	if err := Remove(root, filepath.Join(root, "none", "p.md")); err != nil {
		t.Errorf("a missing directory: %v", err)
	}
	if err := Remove(root, filepath.Join(elsewhere, "x.md")); !errors.Is(err, ErrUnsafe) {
		t.Errorf("a path outside the root: %v", err)
	}
}

func TestReplace(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "archive.md")
	if err := os.WriteFile(p, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Replace(p, []byte("new")); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(p); string(got) != "new" {
		t.Errorf("content %q, want new", got)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("the directory holds %d entries, want the file alone (no temp file left)", len(ents))
	}
	missing := filepath.Join(dir, "no-such-dir", "x.md")
	if err := Replace(missing, []byte("x")); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("Replace into a missing directory: %v, want an error naming %s", err, missing)
	}
}

func TestWriteMakingMakesItsRootOnceAndRefusesLinks(t *testing.T) {
	root := filepath.Join(t.TempDir(), "item", "outputs")
	p := filepath.Join(root, "step.md")
	if err := WriteMaking(root, p, []byte("one")); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(p); string(got) != "one" {
		t.Errorf("content %q, want one", got)
	}
	outside := filepath.Join(t.TempDir(), "secret")
	os.Remove(p)
	if err := os.Symlink(outside, p); err != nil {
		t.Fatal(err)
	}
	if err := WriteMaking(root, p, []byte("two")); !errors.Is(err, ErrUnsafe) {
		t.Errorf("write through a planted link: %v, want ErrUnsafe", err)
	}
	if _, err := os.Stat(outside); err == nil {
		t.Error("the write followed the link out of its root")
	}
}
