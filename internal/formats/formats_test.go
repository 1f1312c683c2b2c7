package formats

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var (
	update = flag.Bool("update", false, "record the formats' shapes and versions in testdata and rewrite docs/formats.md")
	// keepVersion accepts a new shape under the same version: for a change
	// of the code that leaves the files alone (a Go field renamed with its
	// JSON name kept). Use it knowingly.
	keepVersion = flag.Bool("keep-version", false, "with -update: accept a changed shape without a new version")
)

const root = "../.."

// recorded is what testdata holds of one format's current version.
type recorded struct {
	Version int    `json:"version"`
	Change  string `json:"change"`
}

func readRecorded(t *testing.T) map[string]recorded {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "versions.json"))
	if err != nil {
		t.Fatalf("read testdata/versions.json: %v (run go generate ./internal/formats)", err)
	}
	var m map[string]recorded
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("testdata/versions.json: %v", err)
	}
	return m
}

// TestFormatsVersioned fails when a format's shape differs from the one
// its version was recorded with while the version stayed the same.
func TestFormatsVersioned(t *testing.T) {
	rec := map[string]recorded{}
	if !*update {
		rec = readRecorded(t)
	} else if _, err := os.Stat(filepath.Join("testdata", "versions.json")); err == nil {
		rec = readRecorded(t)
	}
	next := map[string]recorded{}
	for _, f := range All() {
		shape, err := f.Shape(root)
		if err != nil {
			t.Fatal(err)
		}
		shapePath := filepath.Join("testdata", f.ID+".shape")
		old, err := os.ReadFile(shapePath)
		was, known := rec[f.ID]
		if err := check(f, shape, string(old), was, known && err == nil); err != nil {
			t.Error(err)
			continue
		}
		next[f.ID] = recorded{Version: f.Version, Change: f.Change}
		if *update {
			if err := os.WriteFile(shapePath, []byte(strings.Join(shape, "\n")+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if *update && !t.Failed() {
		b, _ := json.MarshalIndent(next, "", "  ")
		if err := os.WriteFile(filepath.Join("testdata", "versions.json"), append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// check compares format f's shape with the one recorded (old) for
// version was; known is false when none is recorded yet.
func check(f Format, shape []string, old string, was recorded, known bool) error {
	if !known {
		if *update {
			return nil
		}
		return fmt.Errorf("%s: no recorded shape: run go generate ./internal/formats", f.Name)
	}
	oldLines := strings.Split(strings.TrimSuffix(old, "\n"), "\n")
	changed := !slices.Equal(shape, oldLines)
	switch {
	case f.Version < was.Version:
		return fmt.Errorf("%s: version %d is below the recorded %d", f.Name, f.Version, was.Version)
	case changed && f.Version == was.Version && !*keepVersion:
		return fmt.Errorf("%s changed without a new version (%s): bump %s, say what changed in All, then run go generate ./internal/formats",
			f.Name, diff(oldLines, shape), f.Const)
	case f.Version > was.Version && f.Change == was.Change:
		return fmt.Errorf("%s: version %d has the change note of %d: say in All what it changed", f.Name, f.Version, was.Version)
	case !*update && (changed || f.Version != was.Version || f.Change != was.Change):
		return fmt.Errorf("%s: version %d is not recorded yet: run go generate ./internal/formats", f.Name, f.Version)
	}
	return nil
}

// diff names the lines of shape b that a lacks and the other way round.
func diff(a, b []string) string {
	var parts []string
	for _, l := range b {
		if !slices.Contains(a, l) {
			parts = append(parts, "+"+l)
		}
	}
	for _, l := range a {
		if !slices.Contains(b, l) {
			parts = append(parts, "-"+l)
		}
	}
	return strings.Join(parts, "; ")
}

// TestFormatsDoc: docs/formats.md is the table All renders.
func TestFormatsDoc(t *testing.T) {
	path := filepath.Join(root, "docs", "formats.md")
	want := Doc(All())
	if *update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(path)
	if err != nil || string(got) != want {
		t.Fatalf("docs/formats.md is not what internal/formats renders: run go generate ./internal/formats")
	}
}

// A changed shape under the same version is refused with what to do; a
// new version needs its own change note.
func TestCheckRefusesAnUnversionedChange(t *testing.T) {
	f := Format{Name: "Context file", Version: 2, Const: "contextfile.SchemaVersion", Change: "phase"}
	was := recorded{Version: 2, Change: "phase"}
	err := check(f, []string{"agent: string", "extra: string"}, "agent: string\n", was, true)
	if err == nil || !strings.Contains(err.Error(), "+extra: string") || !strings.Contains(err.Error(), "bump contextfile.SchemaVersion") {
		t.Errorf("an unversioned change: err = %v", err)
	}
	f.Version = 3
	if err := check(f, []string{"agent: string"}, "agent: string\n", was, true); err == nil || !strings.Contains(err.Error(), "change note") {
		t.Errorf("a new version with the old note: err = %v", err)
	}
	f.Change = "extra"
	if err := check(f, []string{"agent: string", "extra: string"}, "agent: string\n", was, true); err == nil || !strings.Contains(err.Error(), "go generate") {
		t.Errorf("a new version not recorded yet: err = %v", err)
	}
	if err := check(f, []string{"agent: string"}, "agent: string\n", recorded{Version: 3, Change: "extra"}, true); err != nil {
		t.Errorf("the recorded version: %v", err)
	}
}
