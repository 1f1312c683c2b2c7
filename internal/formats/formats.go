// Package formats is the table of the file formats cadre writes, with
// their versions (docs/formats.md, generated from it): the context file,
// the journal, the task file's frontmatter and the cycle log.
//
// Each format has a shape, computed from the code that writes it (the
// context file's JSON fields, the journal's SQL schema, the frontmatter's
// fields, the cycle log's headings). The shapes of the current versions
// are kept in testdata; the package's test fails when a shape changes
// while its version does not, so no format changes unversioned.
//
// After changing a format: bump its version constant, say what changed in
// Change below, and run `go generate ./internal/formats`.
package formats

//go:generate go test . -run TestFormats -update

import (
	"context"
	"database/sql"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/cadre-dev/cadre/internal/contextfile"
	"github.com/cadre-dev/cadre/internal/cyclelog"
	"github.com/cadre-dev/cadre/internal/item/taskfile"
	"github.com/cadre-dev/cadre/internal/store"
)

// Format is one file format cadre writes.
type Format struct {
	ID      string // its shape's name in testdata
	Name    string
	File    string // where cadre writes it
	Version int
	Const   string // the constant holding Version
	Change  string // what Version changed
	// Shape computes the format's shape from the code of the module at
	// root: sorted lines, one per field, table or heading.
	Shape func(root string) ([]string, error)
}

// All are the formats, in the order docs/formats.md lists them.
func All() []Format {
	return []Format{
		{ID: "contextfile", Name: "Context file", File: ".cadre/runs/<run>/items/<item>/contexts/<step>.json",
			Version: contextfile.SchemaVersion, Const: "contextfile.SchemaVersion (internal/contextfile)",
			Change: `"phase" is the cadre workflow's phase number; its name moved to "phaseName"`,
			Shape:  func(string) ([]string, error) { return jsonShape(reflect.TypeFor[contextfile.File]()), nil }},
		{ID: "journal", Name: "Journal", File: ".cadre/cadre.db",
			Version: store.SchemaVersion, Const: "store.SchemaVersion (internal/store: its migrations' count, PRAGMA user_version)",
			Change: "migration 0007: the index of steps by id holds completed steps only (steps_completed_id)", Shape: journalShape},
		{ID: "frontmatter", Name: "Task frontmatter", File: "tasks/*.md",
			Version: taskfile.FrontmatterVersion, Const: "taskfile.FrontmatterVersion (internal/item/taskfile)",
			Change: "first versioned: stage, mode, agent, attempts, workflow, tags, depends_on, contexts",
			Shape:  func(string) ([]string, error) { return frontmatterShape(), nil }},
		{ID: "cyclelog", Name: "Cycle log", File: ".cadre/runs/<run>/items/<item>/current_cycle.md",
			Version: cyclelog.Version, Const: "cyclelog.Version (internal/cyclelog)",
			Change: "first versioned: Goal, Current State, Context Docs, Assets, Bookkeeping, then iterations of outputs and SIGNAL BLOCKs",
			Shape:  cycleShape},
	}
}

// jsonShape lists the JSON fields of struct type t as "path: type".
func jsonShape(t reflect.Type) []string {
	var out []string
	var walk func(t reflect.Type, prefix string)
	walk = func(t reflect.Type, prefix string) {
		for f := range t.Fields() {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if !f.IsExported() || name == "-" {
				continue
			}
			if name == "" {
				name = f.Name
			}
			out = append(out, prefix+name+": "+jsonType(f.Type))
			if ft := deref(f.Type); ft.Kind() == reflect.Struct {
				walk(ft, prefix+name+".")
			}
		}
	}
	walk(t, "")
	slices.Sort(out)
	return out
}

func deref(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	return t
}

// jsonType names t as JSON sees it.
func jsonType(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Pointer:
		return jsonType(t.Elem()) + "|null"
	case reflect.Slice:
		return "[]" + jsonType(t.Elem())
	case reflect.Map:
		return "map[" + jsonType(t.Key()) + "]" + jsonType(t.Elem())
	case reflect.Struct:
		return "object"
	case reflect.Interface:
		return "any"
	case reflect.Int, reflect.Int64, reflect.Int32, reflect.Uint, reflect.Uint64, reflect.Uint32:
		return "integer"
	case reflect.Float64, reflect.Float32:
		return "number"
	}
	return t.Kind().String()
}

// journalShape is the SQL schema a new journal gets, one statement a line,
// and refuses a store.SchemaVersion other than the migrations' count.
func journalShape(string) ([]string, error) {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "cadre-formats-*")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "cadre.db")
	st, err := store.Open(ctx, path)
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	st.Close()
	db, err := sql.Open("sqlite", path) // the driver store registers
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	defer db.Close()
	var v int
	if err := db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return nil, fmt.Errorf("journal version: %w", err)
	}
	if v != store.SchemaVersion {
		return nil, fmt.Errorf("journal: store.SchemaVersion is %d but the migrations reach %d: set it to %d", store.SchemaVersion, v, v)
	}
	rows, err := db.QueryContext(ctx, "SELECT sql FROM sqlite_master WHERE sql IS NOT NULL")
	if err != nil {
		return nil, fmt.Errorf("journal schema: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, fmt.Errorf("journal schema: %w", err)
		}
		out = append(out, strings.Join(strings.Fields(stripComments(s)), " "))
	}
	slices.Sort(out)
	return out, rows.Err()
}

// stripComments drops SQL's "--" comments, which sqlite keeps in the
// schema's text: they explain the schema without changing it.
func stripComments(s string) string {
	var b strings.Builder
	for line := range strings.Lines(s) {
		code, _, cut := strings.Cut(line, "--")
		b.WriteString(code)
		if cut {
			b.WriteString("\n")
		}
	}
	return b.String()
}

// frontmatterShape is what a task file's frontmatter decodes into: the
// Task's fields and the stages "stage" takes.
func frontmatterShape() []string {
	var out []string
	for f := range reflect.TypeFor[taskfile.Task]().Fields() {
		out = append(out, "field "+f.Name+": "+f.Type.String())
	}
	slices.Sort(out)
	return append(out, "stages: "+strings.Join(taskfile.Stages, ", "))
}

// cycleShape is the headings and marks the cycle log's code writes: the
// lines starting with "#" or "<!--" in the string literals of
// internal/cyclelog (its tests aside), read from its source so that any
// change to them counts whatever function writes them.
func cycleShape(root string) ([]string, error) {
	dir := filepath.Join(root, "internal", "cyclelog")
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	fset := token.NewFileSet()
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, fmt.Errorf("cycle log: %w", err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				headings(lit.Value, seen)
			}
			return true
		})
	}
	return slices.Sorted(func(yield func(string) bool) {
		for k := range seen {
			if !yield(k) {
				return
			}
		}
	}), nil
}

// headings adds the heading and mark lines of Go string literal lit.
func headings(lit string, seen map[string]bool) {
	s, err := strconv.Unquote(lit)
	if err != nil {
		return
	}
	for line := range strings.Lines(s) {
		line = strings.TrimSpace(line)
		// A bare "#" or "##" is a prefix the log's reader matches, not a
		// heading it writes.
		if strings.Trim(line, "#") != "" && (strings.HasPrefix(line, "#") || strings.HasPrefix(line, "<!--")) {
			seen[line] = true
		}
	}
}

// Doc renders docs/formats.md.
func Doc(fs []Format) string {
	var b strings.Builder
	b.WriteString("# File formats and their versions\n\n")
	b.WriteString("<!-- Generated by `go generate ./internal/formats` from internal/formats; do not edit. -->\n\n")
	b.WriteString("The files cadre writes that other programs (and later versions of cadre) read, each with a\n" +
		"version that changes whenever its shape does. A test (`go test ./internal/formats`) compares\n" +
		"each format's shape, computed from the code that writes it, with the shape its version was\n" +
		"recorded with, and fails on a change without a new version.\n\n")
	b.WriteString("| format | file | version | what changed last |\n| --- | --- | --- | --- |\n")
	for _, f := range fs {
		fmt.Fprintf(&b, "| %s | `%s` | %d | %s |\n", f.Name, f.File, f.Version, strings.ReplaceAll(f.Change, "|", "\\|"))
	}
	b.WriteString("\nThe versions are constants in the code: ")
	for i, f := range fs {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("`" + f.Const + "`")
	}
	b.WriteString(".\n\nChanging a format: bump its constant, say what changed in `internal/formats` (`All`), and run\n" +
		"`go generate ./internal/formats`, which records the new shape and rewrites this page.\n")
	return b.String()
}
