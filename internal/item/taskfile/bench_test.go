package taskfile

import (
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkUpdate measures one frontmatter update of a typical task file,
// which the engine does before every step: synced (Update, for a file a
// person keeps) and not (UpdateNoSync, the board's write of a stage, whose
// cost is cadre's CPU alone).
func BenchmarkUpdate(b *testing.B) {
	for _, c := range []struct {
		name   string
		update func(string, []Field) error
	}{{"sync", Update}, {"nosync", UpdateNoSync}} {
		b.Run(c.name, func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "t.md")
			data, err := os.ReadFile("testdata/runner-engine.md")
			if err != nil {
				b.Fatal(err)
			}
			os.WriteFile(path, data, 0o644)
			stages := []string{"code", "audit"}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := c.update(path, []Field{{Key: "stage", Value: stages[i%2]}, {Key: "agent", Value: "coder"}}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
