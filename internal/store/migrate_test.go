package store

import (
	"context"
	"database/sql"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
)

func TestLoadMigrations(t *testing.T) {
	file := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	tests := []struct {
		name    string
		fsys    fs.FS
		want    []int
		wantErr string
	}{
		{"ordered", fstest.MapFS{"migrations/0002_b.sql": file("b"), "migrations/0001_a.sql": file("a")}, []int{1, 2}, ""},
		{"gap", fstest.MapFS{"migrations/0001_a.sql": file("a"), "migrations/0003_c.sql": file("c")}, nil, "expected number 2"},
		{"duplicate", fstest.MapFS{"migrations/0001_a.sql": file("a"), "migrations/0001_b.sql": file("b")}, nil, "expected number 2"},
		{"bad name", fstest.MapFS{"migrations/init.sql": file("a")}, nil, "must start with a positive number"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ms, err := loadMigrations(tt.fsys)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(ms) != len(tt.want) {
				t.Fatalf("got %d migrations, want %d", len(ms), len(tt.want))
			}
			for i, m := range ms {
				if m.version != tt.want[i] {
					t.Errorf("migration %d has version %d, want %d", i, m.version, tt.want[i])
				}
			}
		})
	}
}

// TestEmbeddedMigrationsLoad checks the shipped migrations are numbered
// 1..n. It counts the files rather than naming a version, since branches
// add migrations in parallel and renumber them when they merge.
func TestEmbeddedMigrationsLoad(t *testing.T) {
	files, err := fs.Glob(migrationFS, "migrations/*.sql")
	if err != nil {
		t.Fatal(err)
	}
	ms, err := loadMigrations(migrationFS)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) == 0 || len(ms) != len(files) {
		t.Fatalf("loaded %d migrations from %d files", len(ms), len(files))
	}
	for i, m := range ms {
		if m.version != i+1 {
			t.Errorf("migration %s has version %d, want %d", m.name, m.version, i+1)
		}
	}
}

func userVersion(t *testing.T, db *sql.DB) int {
	t.Helper()
	var v int
	if err := db.QueryRow("PRAGMA user_version").Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestMigrateAppliesOnlyNewMigrations(t *testing.T) {
	ctx := context.Background()
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "m.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	v1 := fstest.MapFS{"migrations/0001_a.sql": {Data: []byte("CREATE TABLE a (x); CREATE TABLE a2 (y);")}}
	v2 := fstest.MapFS{
		"migrations/0001_a.sql": v1["migrations/0001_a.sql"],
		"migrations/0002_b.sql": {Data: []byte("CREATE TABLE b (x);")},
	}
	// Each step is run twice: re-running must be a no-op (CREATE TABLE
	// would fail if a migration were applied again).
	for _, step := range []struct {
		fsys fstest.MapFS
		want int
	}{{v1, 1}, {v1, 1}, {v2, 2}, {v2, 2}} {
		if err := migrate(ctx, db, step.fsys); err != nil {
			t.Fatalf("migrate to %d: %v", step.want, err)
		}
		if got := userVersion(t, db); got != step.want {
			t.Errorf("user_version = %d, want %d", got, step.want)
		}
	}
	for _, table := range []string{"a", "a2", "b"} {
		if _, err := db.Exec("SELECT * FROM " + table); err != nil {
			t.Errorf("table %s missing: %v", table, err)
		}
	}
}

func TestMigrateFailureLeavesWholeVersion(t *testing.T) {
	ctx := context.Background()
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "m.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	bad := fstest.MapFS{"migrations/0001_a.sql": {Data: []byte("CREATE TABLE a (x); THIS IS NOT SQL;")}}
	if err := migrate(ctx, db, bad); err == nil || !strings.Contains(err.Error(), "0001_a.sql") {
		t.Fatalf("err = %v, want one naming 0001_a.sql", err)
	}
	if got := userVersion(t, db); got != 0 {
		t.Errorf("user_version = %d after failed migration, want 0", got)
	}
	if _, err := db.Exec("SELECT * FROM a"); err == nil {
		t.Error("table a exists: failed migration was partly applied")
	}
}

func TestOpenRefusesNewerSchema(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "cadre.db")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if got := userVersion(t, s.r); got == 0 {
		t.Errorf("user_version = 0 after Open")
	}
	if _, err := s.w.Exec("PRAGMA user_version = 999"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := Open(ctx, path); err == nil || !strings.Contains(err.Error(), "newer") {
		t.Fatalf("Open on newer schema: err = %v, want one saying the schema is newer", err)
	}
}

// TestOpenUpgradesJournalWithoutEvaluations opens a journal written before
// the score store existed: its runs stay and evaluations can be recorded.
func TestOpenUpgradesJournalWithoutEvaluations(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "cadre.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	first, err := fs.ReadFile(migrationFS, "migrations/0001_init.sql")
	if err != nil {
		t.Fatal(err)
	}
	if err := migrate(ctx, db, fstest.MapFS{"migrations/0001_init.sql": {Data: first}}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO runs (id, status, started_at, updated_at) VALUES ('old', 'completed', 'x', 'x')`); err != nil {
		t.Fatal(err)
	}
	db.Close()

	s, err := Open(ctx, path)
	if err != nil {
		t.Fatalf("Open old journal: %v", err)
	}
	defer s.Close()
	var n int
	if err := s.r.QueryRow(`SELECT COUNT(*) FROM runs WHERE id = 'old'`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("old run after upgrade: count %d, err %v", n, err)
	}
	e := Evaluation{Source: SourceRun, RunID: "old", StepID: "s", Role: "coder", Runner: "claude", Kind: KindOutcome}
	if err := s.RecordEvaluation(ctx, e); err != nil {
		t.Fatalf("RecordEvaluation after upgrade: %v", err)
	}
}

// LastCompleted reads the partial index of completed steps, not the table:
// it runs before every issue a run takes up.
func TestLastCompletedUsesItsIndex(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "cadre.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rows, err := s.r.QueryContext(ctx, "EXPLAIN QUERY PLAN "+lastCompletedQuery, "x")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if got := strings.Join(plan, "; "); !strings.Contains(got, "USING INDEX steps_completed_id") {
		t.Errorf("plan %q does not use steps_completed_id", got)
	}
}
