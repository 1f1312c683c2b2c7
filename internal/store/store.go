package store

import (
	"context"
	"database/sql"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"modernc.org/sqlite"
	sqlitelib "modernc.org/sqlite/lib"
)

var (
	// ErrNotFound is returned (wrapped) when a run, item or step does not exist.
	ErrNotFound = errors.New("not found")
	// ErrCompleted is returned (wrapped) when starting or finishing a step
	// that the journal already records as completed.
	ErrCompleted = errors.New("step already completed")
	// ErrDamaged is returned (wrapped) by Open when the file is no SQLite
	// database, or a damaged one: nothing in it can be trusted, and only
	// the person running cadre can decide to start a new journal.
	ErrDamaged = errors.New("the journal is damaged")
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// busyTimeout bounds how long a statement waits for another connection's
// write lock (another process running, or a reader checkpointing) before it
// fails with SQLITE_BUSY.
const busyTimeout = 10 * time.Second

// Store is the journal. Create it with Open; it is safe for concurrent use.
type Store struct {
	w   *sql.DB // single connection: all writes, serialised in-process
	r   *sql.DB // read-only pool
	now func() time.Time

	stmts sync.Map // stmtKey → *sql.Stmt, see prepared

	tap     atomic.Pointer[func(Op)]            // see SetTap
	faultFn atomic.Pointer[func(OpKind) error]  // see SetFault
	maskFn  atomic.Pointer[func(string) string] // see SetMask
}

// stmtKey names a prepared statement: its text and the pool it runs on.
type stmtKey struct {
	write bool
	query string
}

// prepared returns query prepared on the writer (write) or the read pool,
// preparing it the first time. The journal runs the same few statements
// for every step; SQLite parsing each one again was close to half of the
// time the journal took per step. A statement is prepared once per
// connection, by database/sql, and reused in transactions on the writer
// (Tx.StmtContext).
func (s *Store) prepared(ctx context.Context, write bool, query string) (*sql.Stmt, error) {
	k := stmtKey{write, query}
	if st, ok := s.stmts.Load(k); ok {
		return st.(*sql.Stmt), nil
	}
	db := s.r
	if write {
		db = s.w
	}
	st, err := db.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	if prev, loaded := s.stmts.LoadOrStore(k, st); loaded {
		st.Close()
		return prev.(*sql.Stmt), nil
	}
	return st, nil
}

// Open opens the journal at path, creating the file and its parent
// directory if needed, and brings the schema up to date.
func Open(ctx context.Context, path string) (*Store, error) {
	if path == "" {
		return nil, errors.New("open store: empty database path")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
		return nil, fmt.Errorf("open store: create directory: %w", err)
	}

	// NORMAL synchronous in WAL mode: a committed transaction survives a
	// process crash (SIGKILL included), which is what resume relies on; only
	// an OS crash or power loss can drop the last transactions, and then the
	// steps they recorded simply run again. FULL would fsync every one of the
	// handful of writes around each step and dominate the engine's overhead.
	common := []string{
		"busy_timeout(" + strconv.FormatInt(busyTimeout.Milliseconds(), 10) + ")",
		"foreign_keys(1)",
		"synchronous(NORMAL)",
	}
	// IMMEDIATE transactions take the write lock at BEGIN, so a transaction
	// never has to upgrade from read to write, which fails at once with
	// SQLITE_BUSY (no busy wait) when another process wrote in between.
	wdsn := dsn(abs, append(common, "journal_mode(WAL)"), "_txlock=immediate")
	rdsn := dsn(abs, append(common, "query_only(1)"))

	w, err := sql.Open("sqlite", wdsn)
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", abs, err)
	}
	w.SetMaxOpenConns(1)
	s := &Store{w: w, now: func() time.Time { return time.Now().UTC() }}
	if err := migrateWhenFree(ctx, w); err != nil {
		w.Close()
		return nil, openError(abs, err)
	}
	// The read pool opens after migration so it never sees a file that is
	// not yet in WAL mode.
	r, err := sql.Open("sqlite", rdsn)
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("open store %s: %w", abs, err)
	}
	r.SetMaxOpenConns(8)
	s.r = r
	for _, q := range txQueries {
		if _, err := s.prepared(ctx, true, q); err != nil {
			s.Close()
			return nil, openError(abs, err)
		}
	}
	if err := r.PingContext(ctx); err != nil {
		s.Close()
		return nil, openError(abs, err)
	}
	return s, nil
}

// openError is Open's error for the journal at abs. A damaged file gets
// one line saying what to do: its -wal and -shm files go with it, or
// SQLite would replay them into the new journal.
func openError(abs string, err error) error {
	why := ""
	var e *sqlite.Error
	if errors.As(err, &e) {
		why = map[int]string{sqlitelib.SQLITE_NOTADB: "it is not a SQLite database",
			sqlitelib.SQLITE_CORRUPT: "its database image is malformed"}[e.Code()&0xff]
	}
	if why == "" {
		return fmt.Errorf("open store %s: %w", abs, err)
	}
	return fmt.Errorf("%w: %s: %s: move it and its -wal and -shm files aside to start a new journal (the runs it recorded can then not be resumed)",
		ErrDamaged, abs, why)
}

// dsn builds a file: URI so paths containing '?', '#' or '%' are taken
// literally.
func dsn(abs string, pragmas []string, extra ...string) string {
	q := make([]string, 0, len(pragmas)+len(extra))
	for _, p := range pragmas {
		q = append(q, "_pragma="+url.QueryEscape(p))
	}
	q = append(q, extra...)
	u := url.URL{Path: filepath.ToSlash(abs)}
	return "file:" + u.EscapedPath() + "?" + strings.Join(q, "&")
}

// Close releases the database connections.
func (s *Store) Close() error {
	var errs []error
	s.stmts.Range(func(k, st any) bool {
		st.(*sql.Stmt).Close()
		return true
	})
	if s.r != nil {
		errs = append(errs, s.r.Close())
	}
	errs = append(errs, s.w.Close())
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close store: %w", err)
	}
	return nil
}

// migration is one numbered schema file.
type migration struct {
	version int
	name    string
	sql     string
}

// loadMigrations reads migrations/NNNN_name.sql from fsys and checks they
// are numbered 1, 2, 3… without gaps or duplicates.
func loadMigrations(fsys fs.FS) ([]migration, error) {
	names, err := fs.Glob(fsys, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var ms []migration
	for _, name := range names {
		base := path.Base(name)
		num, _, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s: name must start with a positive number and '_', e.g. 0002_add_x.sql", name)
		}
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: v, name: base, sql: string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	for i, m := range ms {
		if m.version != i+1 {
			return nil, fmt.Errorf("migration %s: expected number %d (migrations must be numbered 1, 2, 3… without gaps)", m.name, i+1)
		}
	}
	return ms, nil
}

// migrate applies the migrations the database has not seen yet, each in its
// own transaction together with the user_version bump, so a crash leaves the
// schema at a whole version.
func migrate(ctx context.Context, db *sql.DB, fsys fs.FS) error {
	ms, err := loadMigrations(fsys)
	if err != nil {
		return err
	}
	var cur int
	if err := db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&cur); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	if cur > len(ms) {
		return fmt.Errorf("database schema version %d is newer than this cadre knows (%d): upgrade cadre", cur, len(ms))
	}
	for cur < len(ms) {
		// Another process may be migrating too; the IMMEDIATE transaction
		// serialises us and the version is re-read inside it.
		done, err := applyNext(ctx, db, ms)
		if err != nil {
			return err
		}
		cur = done
	}
	return nil
}

// migrateWhenFree migrates, waiting up to busyTimeout for other
// processes opening the journal at the same time (cadre run and its
// workers starting together): turning a new file to WAL mode, or reading
// it while another connection does, fails busy at once, without waiting
// for the busy timeout.
func migrateWhenFree(ctx context.Context, db *sql.DB) error {
	deadline := time.Now().Add(busyTimeout)
	for {
		err := migrate(ctx, db, migrationFS)
		if err == nil || !isBusy(err) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// applyNext applies the first migration newer than the database's version
// and returns the resulting version.
func applyNext(ctx context.Context, db *sql.DB, ms []migration) (int, error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("migrate: %w", err)
	}
	defer tx.Rollback()
	var cur int
	if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&cur); err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	if cur >= len(ms) {
		return cur, nil
	}
	m := ms[cur]
	if _, err := tx.ExecContext(ctx, m.sql); err != nil {
		return 0, fmt.Errorf("migration %s: %w", m.name, err)
	}
	// PRAGMA takes no bound parameters; the version is our own integer.
	if _, err := tx.ExecContext(ctx, "PRAGMA user_version = "+strconv.Itoa(m.version)); err != nil {
		return 0, fmt.Errorf("migration %s: set version: %w", m.name, err)
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("migration %s: commit: %w", m.name, err)
	}
	return m.version, nil
}

// txStmt is query for use in tx: the statement Open prepared, or, for
// one it did not, prepared in tx for tx alone. (Preparing it on the writer
// now would wait for its only connection, which tx holds.)
func (s *Store) txStmt(ctx context.Context, tx *sql.Tx, query string) (*sql.Stmt, error) {
	if st, ok := s.stmts.Load(stmtKey{true, query}); ok {
		return tx.StmtContext(ctx, st.(*sql.Stmt)), nil
	}
	return tx.PrepareContext(ctx, query)
}

// txQueries are the statements run inside write transactions for every
// step, prepared by Open (see txStmt).
var txQueries = []string{finishStepQuery, stepUsageQuery, appendEventQuery}

// inTx runs fn in a write transaction, committing when fn returns nil.
func (s *Store) inTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

// timeLayout is fixed width so stored times sort correctly as text.
const timeLayout = "2006-01-02T15:04:05.000000000Z"

func fmtTime(t time.Time) string { return t.UTC().Format(timeLayout) }

func fmtTimePtr(t *time.Time) any {
	if t == nil {
		return nil
	}
	return fmtTime(*t)
}

func parseTime(s string) (time.Time, error) {
	t, err := time.Parse(timeLayout, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("bad stored time %q: %w", s, err)
	}
	return t, nil
}

func parseTimePtr(s sql.NullString) (*time.Time, error) {
	if !s.Valid {
		return nil, nil
	}
	t, err := parseTime(s.String)
	if err != nil {
		return nil, err
	}
	return &t, nil
}

// orNow returns t in UTC, or the store's clock when t is zero.
func (s *Store) orNow(t time.Time) time.Time {
	if t.IsZero() {
		return s.now()
	}
	return t.UTC()
}

// jsonArg validates a JSON column value and converts it for storage:
// NULL when empty or JSON null (a nil value after a trip through JSON),
// TEXT otherwise.
func jsonArg(field string, v json.RawMessage) (any, error) {
	if len(v) == 0 || string(v) == "null" {
		return nil, nil
	}
	if !json.Valid(v) {
		return nil, fmt.Errorf("%s is not valid JSON", field)
	}
	return string(v), nil
}

func jsonCol(s sql.NullString) json.RawMessage {
	if !s.Valid {
		return nil
	}
	return json.RawMessage(s.String)
}

// isForeignKey reports whether err is a foreign-key violation, which here
// always means the referenced run (or step) does not exist.
func isForeignKey(err error) bool {
	var e *sqlite.Error
	return errors.As(err, &e) && e.Code() == sqlitelib.SQLITE_CONSTRAINT_FOREIGNKEY
}

func isBusy(err error) bool {
	var e *sqlite.Error
	return errors.As(err, &e) && e.Code()&0xff == sqlitelib.SQLITE_BUSY
}

func isUnique(err error) bool {
	var e *sqlite.Error
	return errors.As(err, &e) &&
		(e.Code() == sqlitelib.SQLITE_CONSTRAINT_PRIMARYKEY || e.Code() == sqlitelib.SQLITE_CONSTRAINT_UNIQUE)
}

// rowScanner is satisfied by *sql.Row and *sql.Rows.
type rowScanner interface {
	Scan(dest ...any) error
}
