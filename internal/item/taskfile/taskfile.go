// Package taskfile reads and writes task files: Markdown documents that start with a YAML
// frontmatter block between two "---" lines and describe one unit of work.
//
// The frontmatter is the task's state (stage, attempts, last agent …) and only cadre writes it.
// Writes go through Update and SetReview, which change just the lines they must, keep everything
// else (unknown keys, comments, order, quoting, line endings) byte for byte, and replace the file
// atomically so a crash never leaves a half-written task behind. A Board writes a running item's
// frontmatter in the background, coalescing changes and keeping out of an agent's way.
//
// A UTF-8 byte order mark before the opening "---" is tolerated: it is ignored when parsing and
// kept when writing.
package taskfile

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
)

// Stages are the values "stage" may take, in pipeline order.
var Stages = []string{"backlog", "plan", "code", "audit", "completed", "failed"}

// Task is one parsed task file.
type Task struct {
	Path      string   // as given to Parse or Load
	ID        string   // file stem: "add-login" for tasks/add-login.md
	Stage     string   // one of Stages; never empty
	Mode      string   // mode the task was last run in
	Agent     string   // last role that worked on the task
	Attempts  int      // audit failures so far
	Workflow  string   // per-task workflow override; empty for the default
	Tags      []string // free-form labels
	DependsOn []string // IDs that must be completed first
	Contexts  []string // extra documents handed to every agent
	Title     string   // text of the first "# " heading of the body, else ID
	Body      string   // everything after the closing frontmatter line, byte for byte
}

// Error is a problem with the content of a task file. Its message names the file and, when known,
// the line, so it can be shown to the user as is.
type Error struct {
	Path string
	Line int // 1-based; 0 when the problem has no single line
	Msg  string
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.Path, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.Path, e.Msg)
}

// Load reads and parses the task file at path.
func Load(path string) (*Task, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read task file: %w", err)
	}
	return Parse(path, data)
}

// Parse parses the content of a task file; path names the file in errors and gives the ID.
// Unknown frontmatter keys are allowed and ignored.
func Parse(path string, data []byte) (*Task, error) {
	d, err := split(path, data)
	if err != nil {
		return nil, err
	}
	fm, err := d.frontmatter()
	if err != nil {
		return nil, err
	}
	t := &Task{
		Path: path,
		ID:   strings.TrimSuffix(filepath.Base(path), filepath.Ext(path)),
		Body: d.body(),
	}
	if err := fm.decode(t); err != nil {
		return nil, err
	}
	t.Title = title(d.lines[d.close+1:])
	if t.Title == "" {
		t.Title = t.ID
	}
	return t, nil
}

// doc is a task file cut into lines, each with its line ending, so that joining them gives the
// file back byte for byte.
type doc struct {
	path  string
	lines []string
	close int    // index of the closing "---" line
	eol   string // the file's line ending: "\n" or "\r\n"
}

func split(path string, data []byte) (*doc, error) {
	d := &doc{path: path, lines: splitLines(string(data)), eol: "\n"}
	if len(d.lines) == 0 || !isFence(strings.TrimPrefix(d.lines[0], "\ufeff")) {
		return nil, &Error{Path: path, Line: 1, Msg: `no frontmatter: the file must start with a "---" line`}
	}
	if strings.HasSuffix(d.lines[0], "\r\n") {
		d.eol = "\r\n"
	}
	for i := 1; i < len(d.lines); i++ {
		if isFence(d.lines[i]) {
			d.close = i
			return d, nil
		}
	}
	return nil, &Error{Path: path, Msg: `frontmatter is not closed by a "---" line`}
}

// isFence reports whether line is a frontmatter delimiter. Trailing blanks are allowed because
// they are invisible in an editor.
func isFence(line string) bool {
	return strings.TrimRight(line, " \t\r\n") == "---"
}

func (d *doc) body() string {
	return strings.Join(d.lines[d.close+1:], "")
}

// splitLines cuts s after each "\n".
func splitLines(s string) []string {
	var lines []string
	for s != "" {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			lines = append(lines, s)
			break
		}
		lines = append(lines, s[:i+1])
		s = s[i+1:]
	}
	return lines
}

// chomp drops the line ending of line.
func chomp(line string) string {
	line = strings.TrimSuffix(line, "\n")
	return strings.TrimSuffix(line, "\r")
}

// frontmatter is the parsed YAML between the delimiters.
type frontmatter struct {
	d      *doc
	root   *ast.MappingNode // nil when the frontmatter holds no keys
	values map[string]any
	lines  map[string]int // key → file line
}

// frontmatter parses the YAML of d. Lines in YAML errors are mapped to file lines: frontmatter
// line n is file line n+1.
func (d *doc) frontmatter() (*frontmatter, error) {
	src := []byte(strings.Join(d.lines[1:d.close], ""))
	fm := &frontmatter{d: d, lines: map[string]int{}}
	file, err := parser.ParseBytes(src, 0)
	if err != nil {
		return nil, d.yamlError(err)
	}
	if len(file.Docs) > 1 {
		return nil, &Error{Path: d.path, Line: 1, Msg: "malformed frontmatter: it holds more than one YAML document"}
	}
	if len(file.Docs) == 1 {
		switch body := file.Docs[0].Body.(type) {
		case nil, *ast.CommentGroupNode:
		case *ast.MappingNode:
			fm.root = body
		case *ast.MappingValueNode:
			fm.root = ast.Mapping(body.GetToken(), false, body)
		default:
			return nil, &Error{Path: d.path, Line: body.GetToken().Position.Line + 1,
				Msg: fmt.Sprintf(`malformed frontmatter: want "key: value" lines, found a %s`, strings.ToLower(body.Type().String()))}
		}
	}
	if fm.root != nil {
		for _, kv := range fm.root.Values {
			fm.lines[keyName(kv.Key)] = kv.Key.GetToken().Position.Line + 1
		}
	}
	if err := yaml.Unmarshal(src, &fm.values); err != nil {
		return nil, d.yamlError(err)
	}
	return fm, nil
}

// keyName is the text of a mapping key as YAML reads it (quotes removed).
func keyName(k ast.MapKeyNode) string {
	switch k := k.(type) {
	case *ast.StringNode:
		return k.Value
	case *ast.MappingKeyNode:
		if v, ok := k.Value.(ast.MapKeyNode); ok {
			return keyName(v)
		}
	}
	return k.GetToken().Value
}

// yamlPos matches the "[line:column]" positions the YAML library puts in some messages.
var yamlPos = regexp.MustCompile(`\[(\d+):\d+\]`)

func (d *doc) yamlError(err error) error {
	line, msg := 1, err.Error()
	var ye yaml.Error
	if errors.As(err, &ye) {
		msg = ye.GetMessage()
		if tk := ye.GetToken(); tk != nil {
			line = tk.Position.Line + 1
		}
	}
	msg = yamlPos.ReplaceAllStringFunc(msg, func(m string) string {
		n, _ := strconv.Atoi(yamlPos.FindStringSubmatch(m)[1])
		return fmt.Sprintf("line %d", n+1)
	})
	// One line, always; and a tab is shown as one, not as blank space.
	msg = strings.NewReplacer("\t", `\t`, "\r", "", "\n", " ").Replace(msg)
	return &Error{Path: d.path, Line: line, Msg: "malformed frontmatter: " + msg}
}

func (fm *frontmatter) errorf(key, format string, args ...any) error {
	line, ok := fm.lines[key]
	if !ok {
		line = 1 // a key that came from a merge ("<<") has no line of its own
	}
	return &Error{Path: fm.d.path, Line: line, Msg: fmt.Sprintf(format, args...)}
}

func (fm *frontmatter) decode(t *Task) error {
	stage, ok := fm.values["stage"]
	switch {
	case !ok:
		return &Error{Path: fm.d.path, Line: 1, Msg: fmt.Sprintf(`no stage in the frontmatter: add a "stage:" line (one of %s)`, strings.Join(Stages, ", "))}
	case stage == nil:
		return fm.errorf("stage", "stage is empty (want one of %s)", strings.Join(Stages, ", "))
	}
	s, ok := stage.(string)
	if !ok || !slices.Contains(Stages, s) {
		return fm.errorf("stage", "unknown stage %q (want one of %s)", fmt.Sprint(stage), strings.Join(Stages, ", "))
	}
	t.Stage = s

	for _, f := range []struct {
		key string
		dst *string
	}{{"mode", &t.Mode}, {"agent", &t.Agent}, {"workflow", &t.Workflow}} {
		if err := fm.str(f.key, f.dst); err != nil {
			return err
		}
	}
	for _, f := range []struct {
		key string
		dst *[]string
	}{{"tags", &t.Tags}, {"depends_on", &t.DependsOn}, {"contexts", &t.Contexts}} {
		if err := fm.list(f.key, f.dst); err != nil {
			return err
		}
	}

	switch n := fm.values["attempts"].(type) {
	case nil:
	case uint64:
		if n > math.MaxInt {
			return fm.errorf("attempts", "attempts %d is too large", n)
		}
		t.Attempts = int(n)
	case int64:
		if n < 0 {
			return fm.errorf("attempts", "attempts is %d: want a whole number 0 or more", n)
		}
		t.Attempts = int(n)
	default:
		return fm.errorf("attempts", "attempts is %q: want a whole number 0 or more", fmt.Sprint(n))
	}
	return nil
}

func (fm *frontmatter) str(key string, dst *string) error {
	switch v := fm.values[key].(type) {
	case nil:
	case string:
		*dst = v
	default:
		return fm.errorf(key, "%s must be a single word or text, e.g. %s: %s", key, key, exampleValue(key))
	}
	return nil
}

func exampleValue(key string) string {
	switch key {
	case "agent":
		return "coder"
	case "workflow":
		return "runner"
	}
	return "code"
}

func (fm *frontmatter) list(key string, dst *[]string) error {
	v, ok := fm.values[key]
	if !ok || v == nil {
		return nil
	}
	items, ok := v.([]any)
	if !ok {
		return fm.errorf(key, "%s must be a list, e.g. %s: [a, b]", key, key)
	}
	out := make([]string, 0, len(items))
	for i, it := range items {
		s, ok := it.(string)
		if !ok {
			return fm.errorf(key, "%s: item %d must be text (quote it: %q)", key, i+1, fmt.Sprint(it))
		}
		out = append(out, s)
	}
	*dst = out
	return nil
}

// title is the text of the first "# " heading outside code fences, or "".
func title(body []string) string {
	var f fence
	for _, line := range body {
		l := chomp(line)
		if f.skip(l) {
			continue
		}
		if rest, ok := strings.CutPrefix(l, "# "); ok {
			if t := strings.TrimSpace(rest); t != "" {
				return t
			}
		}
	}
	return ""
}

// fence tracks Markdown code fences, so that headings shown inside code blocks are not taken for
// the document's own.
type fence struct {
	marker string // the opening "```" or "~~~" run while inside a block, else ""
}

// skip reports whether line (without its ending) is a fence line or inside a fenced block.
func (f *fence) skip(line string) bool {
	l := strings.TrimLeft(line, " ")
	if len(line)-len(l) > 3 {
		return f.marker != ""
	}
	for _, c := range []string{"```", "~~~"} {
		if !strings.HasPrefix(l, c) {
			continue
		}
		run := l[:len(l)-len(strings.TrimLeft(l, c[:1]))]
		switch {
		case f.marker == "":
			f.marker = run
			return true
		case strings.HasPrefix(run, f.marker) && strings.TrimSpace(l[len(run):]) == "":
			f.marker = ""
			return true
		}
	}
	return f.marker != ""
}

// Abs is the absolute path of the task file at p as the file system has
// it: the symbolic links among its directories resolved, as git resolves
// a repository's root, so that a path named from a shell that changed
// into the repository through a link, or through a linked directory of it,
// compares with the root as the file really lies. The file itself is not
// followed: a task file that is a link stays one, for the caller to judge.
func Abs(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	dir, err := filepath.EvalSymlinks(filepath.Dir(abs))
	if err != nil {
		return abs, nil // no such directory: loading the file says so
	}
	return filepath.Join(dir, filepath.Base(abs)), nil
}

// Find lists the task files under dir, recursively, sorted: every *.md file except README.md,
// skipping hidden files and directories.
func Find(dir string) ([]string, error) {
	if fi, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("find task files: %w", err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("find task files: %s is not a directory", dir)
	}
	// The trailing separator makes the walk follow dir itself when it is a symbolic link; the
	// paths it yields are the same as without it.
	root := dir + string(filepath.Separator)
	var paths []string
	err := filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := e.Name()
		if path != root && strings.HasPrefix(name, ".") {
			if e.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if e.IsDir() || filepath.Ext(name) != ".md" || strings.EqualFold(name, "README.md") {
			return nil
		}
		if e.Type()&fs.ModeSymlink != 0 {
			if fi, err := os.Stat(path); err != nil || !fi.Mode().IsRegular() {
				return nil // a dangling or odd link is not a task
			}
		} else if !e.Type().IsRegular() {
			return nil
		}
		paths = append(paths, path)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("find task files: %w", err)
	}
	slices.Sort(paths)
	return paths, nil
}
