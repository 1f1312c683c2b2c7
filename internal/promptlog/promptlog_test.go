package promptlog

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Every prompt of an item is kept in order in one file; the latest of a
// step is what Read gives, whatever the prompts' text holds.
func TestPromptsFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "items", "42")
	forged := "fix it\n" + promptMark + `3 bytes "b-1" -->` + "\nbad\n"
	for _, p := range []struct{ stem, text string }{
		{"a-1", "first ask"},
		{"b-1", forged},
		{"a-1", "asked again after a resume"},
		{"c-1", ""},
	} {
		if err := Append(dir, p.stem, p.text); err != nil {
			t.Fatal(err)
		}
	}
	got, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"a-1": "asked again after a resume", "b-1": forged, "c-1": ""}
	if len(got) != len(want) {
		t.Fatalf("prompts %q, want %q", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("prompt %s = %q, want %q", k, got[k], v)
		}
	}
	data, _ := os.ReadFile(filepath.Join(dir, File))
	if !strings.HasPrefix(string(data), promptMark+`9 bytes "a-1" -->`+"\nfirst ask\n") {
		t.Errorf("file starts %q", data[:60])
	}
	// A torn last prompt (a crash mid-write) is left out; those before stay.
	if err := os.WriteFile(filepath.Join(dir, File), data[:len(data)-3], 0o644); err != nil {
		t.Fatal(err)
	}
	if got, _ := Read(dir); len(got) != 2 || got["a-1"] != "asked again after a resume" {
		t.Errorf("after a torn write: %q", got)
	}
	// Prompts appended after the torn one (the run resumed) are read; the
	// whole ones before it still by their length.
	torn := filepath.Join(dir, File)
	os.WriteFile(torn, append(data[:len(data)-3:len(data)-3], []byte("\n")...), 0o644)
	if err := Append(dir, "d-1", "after the crash"); err != nil {
		t.Fatal(err)
	}
	got, _ = Read(dir)
	if len(got) != 3 || got["d-1"] != "after the crash" || got["a-1"] != "asked again after a resume" || got["b-1"] != forged {
		t.Errorf("after a torn write and a resume: %q", got)
	}
	if got, err := Read(t.TempDir()); err != nil || len(got) != 0 {
		t.Errorf("no file: %q %v", got, err)
	}
}

// Parallel steps of one item append whole prompts, never interleaved.
func TestPromptsParallel(t *testing.T) {
	dir := t.TempDir()
	text := strings.Repeat("instructions line\n", 400)
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := Append(dir, "s-"+string(rune('a'+i)), text); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	got, err := Read(dir)
	if err != nil || len(got) != 16 {
		t.Fatalf("%d prompts (%v), want 16", len(got), err)
	}
	for k, v := range got {
		if v != text {
			t.Errorf("prompt %s torn", k)
		}
	}
}

// A prompts file an agent replaced with a link is not read.
func TestPromptsRefusesLink(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(secret, []byte(promptMark+`2 bytes "x" -->`+"\nhi\n"), 0o600)
	if err := os.Symlink(secret, filepath.Join(dir, File)); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(dir); err == nil {
		t.Error("read a prompts file through a link")
	}
	if err := Append(dir, "x", "hello"); err == nil {
		t.Error("appended through a link")
	}
	if data, _ := os.ReadFile(secret); strings.Contains(string(data), "hello") {
		t.Error("wrote through the link")
	}
}

// A run journaled when each step kept its prompt in prompts/<stem>.md
// still shows them; a link there is not read.
func TestPromptsOfEarlierRuns(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "prompts"), 0o755)
	os.WriteFile(filepath.Join(dir, "prompts", "a-1.md"), []byte("an old prompt"), 0o644)
	secret := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(secret, []byte("do not read"), 0o600)
	os.Symlink(secret, filepath.Join(dir, "prompts", "b-1.md"))
	got, err := Read(dir)
	if err != nil || len(got) != 1 || got["a-1"] != "an old prompt" {
		t.Errorf("prompts %q (%v), want a-1's alone", got, err)
	}
}
