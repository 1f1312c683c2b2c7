package store_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"

	"golang.org/x/sync/errgroup"

	"github.com/cadre-dev/cadre/internal/store"
)

// Processes starting together (cadre run and its workers) may all be the
// first to open the journal: each waits for the others, none fails busy.
func TestFirstOpensTogether(t *testing.T) {
	ctx := context.Background()
	for round := range 20 {
		path := filepath.Join(t.TempDir(), fmt.Sprintf("cadre-%d.db", round))
		var g errgroup.Group
		for range 4 {
			g.Go(func() error {
				s, err := store.Open(ctx, path)
				if err != nil {
					return err
				}
				return s.Close()
			})
		}
		if err := g.Wait(); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		db, err := sql.Open("sqlite", path)
		if err != nil {
			t.Fatal(err)
		}
		var mode string
		err = db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode)
		db.Close()
		if err != nil || mode != "wal" {
			t.Fatalf("round %d: journal mode %q (%v), want wal", round, mode, err)
		}
	}
}
