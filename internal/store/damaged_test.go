package store_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cadre-dev/cadre/internal/store"
)

// A journal that is no database, or a damaged one, is refused as damaged
// with what to do, not as any other failure to open it.
func TestOpenRefusesADamagedJournal(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		name   string
		damage func(t *testing.T, path string)
		why    string
	}{
		{"not a database", func(t *testing.T, path string) {
			os.WriteFile(path, []byte(strings.Repeat("not a journal\n", 512)), 0o644)
		}, "it is not a SQLite database"},
		{"schema page overwritten", func(t *testing.T, path string) {
			s, err := store.Open(ctx, path)
			if err != nil {
				t.Fatal(err)
			}
			mustRun(t, s, "r1", t0)
			s.Close()
			// Past the 100-byte file header: the b-tree page holding the
			// schema.
			f, err := os.OpenFile(path, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteAt([]byte(strings.Repeat("\xff", 200)), 100)
			f.Close()
		}, "malformed"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "cadre.db")
			tt.damage(t, path)
			s, err := store.Open(ctx, path)
			if err == nil {
				s.Close()
				t.Fatal("a damaged journal opened")
			}
			if !errors.Is(err, store.ErrDamaged) {
				t.Fatalf("error %v, want store.ErrDamaged", err)
			}
			for _, want := range []string{path, tt.why, "move it and its -wal and -shm files aside"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
		})
	}
}
