package taskfile

import (
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkUpdate measures one frontmatter update of a typical task file,
// which the engine does before every step.
func BenchmarkUpdate(b *testing.B) {
	path := filepath.Join(b.TempDir(), "t.md")
	data, err := os.ReadFile("testdata/runner-engine.md")
	if err != nil {
		b.Fatal(err)
	}
	os.WriteFile(path, data, 0o644)
	stages := []string{"code", "audit"}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := Update(path, []Field{{Key: "stage", Value: stages[i%2]}, {Key: "agent", Value: "coder"}}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkUpdateNoSync is BenchmarkUpdate without the fsync: the board's
// write of a task file's stage, whose cost is cadre's CPU alone.
func BenchmarkUpdateNoSync(b *testing.B) {
	path := filepath.Join(b.TempDir(), "t.md")
	data, err := os.ReadFile("testdata/runner-engine.md")
	if err != nil {
		b.Fatal(err)
	}
	os.WriteFile(path, data, 0o644)
	stages := []string{"code", "audit"}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := UpdateNoSync(path, []Field{{Key: "stage", Value: stages[i%2]}, {Key: "agent", Value: "coder"}}); err != nil {
			b.Fatal(err)
		}
	}
}
