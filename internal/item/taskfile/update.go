package taskfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/lexer"
	"github.com/goccy/go-yaml/token"
)

// Field is one frontmatter key to set and its value: a string or an integer.
type Field struct {
	Key   string
	Value any
}

// Update sets the given scalar frontmatter keys (e.g. "stage", "mode", "agent", "attempts") in the
// file at path. Every other line of the frontmatter (unknown keys, comments, order, quoting) and
// the body stay byte for byte. A key that exists is replaced in place, keeping a comment at the end
// of its line; when its old value spanned several lines (a block or flow value), those lines are
// replaced too. A missing key is appended at the end of the frontmatter. Strings are quoted only
// when YAML needs it.
//
// The file is re-read, and replaced atomically (temp file in the same directory, fsync, rename,
// fsync of the directory) with its mode kept. Update checks that the new frontmatter reads back
// with exactly the intended change and leaves the file alone otherwise. Callers that update the
// same file from several goroutines must serialize the calls.
func Update(path string, set []Field) error {
	if len(set) == 0 {
		return nil
	}
	return rewrite(path, true, func(data []byte) ([]byte, error) { return update(path, data, set) })
}

// UpdateNoSync is Update without the two fsyncs: the replacement is still
// atomic (a reader, or a process killed mid-write, sees the old file or the
// new one), but an operating-system crash or power loss may leave the old
// content. It is for a caller whose record of truth is elsewhere and who
// rewrites the file after such a crash anyway: the engine's board, which
// replays the stage fields from the journal on resume. Those writes come
// several times per agent step, and two fsyncs each were most of their cost.
func UpdateNoSync(path string, set []Field) error {
	if len(set) == 0 {
		return nil
	}
	return rewrite(path, false, func(data []byte) ([]byte, error) { return update(path, data, set) })
}

// rewrite replaces the file at path with change(its content). Someone else
// (an agent editing the task's body) may write the file meanwhile: when its
// content changed between the read and the rename, the change is applied
// again to the new content, so their edit is never overwritten.
func rewrite(path string, sync bool, change func([]byte) ([]byte, error)) error {
	for try := 0; ; try++ {
		target, data, perm, err := read(path)
		if err != nil {
			return err
		}
		out, err := change(data)
		if err != nil {
			return err
		}
		err = write(target, out, data, perm, sync)
		if !errors.Is(err, errChanged) || try == maxRewrites {
			return err
		}
	}
}

// maxRewrites bounds how often rewrite starts over for a file that keeps
// changing under it.
const maxRewrites = 20

// errChanged reports that the file changed while it was being rewritten.
var errChanged = errors.New("the file changed while it was being updated; try again")

// update returns data, the content of the task file at path, with the fields set.
func update(path string, data []byte, set []Field) ([]byte, error) {
	vals, err := render(set)
	if err != nil {
		return nil, fmt.Errorf("update %s: %w", path, err)
	}
	d, err := split(path, data)
	if err != nil {
		return nil, err
	}
	fm, err := d.frontmatter()
	if err != nil {
		return nil, err
	}
	if fm.root != nil && fm.root.IsFlowStyle {
		return nil, &Error{Path: path, Line: fm.root.GetToken().Position.Line + 1,
			Msg: `cannot update a frontmatter written as one {...} mapping: put each key on its own line`}
	}
	out := d.update(fm, set, vals)
	if err := verify(path, fm, out, set); err != nil {
		return nil, err
	}
	return []byte(out), nil
}

// keyPattern is what Update accepts as a key: plain names that need no quoting.
var keyPattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]*$`)

// render validates the fields and returns the YAML text of each value, in order.
func render(set []Field) ([]string, error) {
	vals := make([]string, len(set))
	seen := map[string]bool{}
	for i, f := range set {
		if !keyPattern.MatchString(f.Key) {
			return nil, fmt.Errorf("key %q is not a simple name", f.Key)
		}
		if seen[f.Key] {
			return nil, fmt.Errorf("key %q is set twice", f.Key)
		}
		seen[f.Key] = true
		var err error
		switch v := f.Value.(type) {
		case string:
			vals[i], err = scalar(v)
		case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
			vals[i] = fmt.Sprint(v)
		default:
			err = fmt.Errorf("value %v of %s is a %T: want a string or an integer", f.Value, f.Key, f.Value)
		}
		if err != nil {
			return nil, err
		}
		if err := checkKnown(f.Key, f.Value); err != nil {
			return nil, err
		}
	}
	return vals, nil
}

// checkKnown refuses values that would make the file unreadable by Parse.
func checkKnown(key string, v any) error {
	switch key {
	case "stage":
		if s, ok := v.(string); !ok || !slices.Contains(Stages, s) {
			return fmt.Errorf("unknown stage %q (want one of %s)", fmt.Sprint(v), strings.Join(Stages, ", "))
		}
	case "attempts":
		_, text := v.(string)
		if n, err := strconv.ParseInt(fmt.Sprint(v), 10, 0); text || err != nil || n < 0 {
			return fmt.Errorf("attempts %q: want a whole number 0 or more", fmt.Sprint(v))
		}
	case "mode", "agent", "workflow":
		if _, ok := v.(string); !ok {
			return fmt.Errorf("%s must be a string, not %T", key, v)
		}
	case "tags", "depends_on", "contexts":
		return fmt.Errorf("%s is a list: Update sets single values only", key)
	}
	return nil
}

// scalar is s as a YAML scalar: plain when YAML reads it back as the same string, else
// double-quoted.
func scalar(s string) (string, error) {
	if !utf8.ValidString(s) {
		return "", fmt.Errorf("value %q is not valid UTF-8", s)
	}
	if plain(s) {
		return s, nil
	}
	// Go's escapes for valid UTF-8 (\n, \t, \", \\, \xNN below 0x80, \uNNNN, \UNNNNNNNN) mean the
	// same in a YAML double-quoted scalar.
	return strconv.Quote(s), nil
}

func plain(s string) bool {
	if s == "" || s != strings.TrimSpace(s) || strings.ContainsAny(s[:1], "-?:,[]{}#&*!|>'\"%@`") {
		return false
	}
	if strings.Contains(s, ": ") || strings.Contains(s, " #") || strings.HasSuffix(s, ":") {
		return false
	}
	for _, r := range s {
		if r != ' ' && !unicode.IsGraphic(r) {
			return false
		}
	}
	switch strings.ToLower(s) {
	case "y", "n", "yes", "no", "on", "off": // booleans to YAML 1.1 readers
		return false
	}
	var v map[string]any
	if err := yaml.Unmarshal([]byte("v: "+s), &v); err != nil {
		return false
	}
	got, ok := v["v"].(string)
	return ok && got == s
}

// span is the lines [start, end) of one top-level key and its value.
type span struct {
	start, end int
}

// spans maps each top-level key to its lines. A value runs up to the next key; blank lines and
// comments at the key's indentation before that key belong to what follows, not to the value.
func (d *doc) spans(fm *frontmatter) map[string]span {
	out := map[string]span{}
	if fm.root == nil {
		return out
	}
	indent := len(leading(d.lines[fm.root.Values[0].Key.GetToken().Position.Line]))
	for i, kv := range fm.root.Values {
		start := kv.Key.GetToken().Position.Line // frontmatter line n is d.lines[n]
		end := d.close
		if i+1 < len(fm.root.Values) {
			end = fm.root.Values[i+1].Key.GetToken().Position.Line
		}
		for end > start+1 {
			l := chomp(d.lines[end-1])
			t := strings.TrimSpace(l)
			if t != "" && !(strings.HasPrefix(t, "#") && len(leading(l)) <= indent) {
				break
			}
			end--
		}
		out[keyName(kv.Key)] = span{start, end}
	}
	return out
}

func leading(line string) string {
	return line[:len(line)-len(strings.TrimLeft(line, " \t"))]
}

// update returns the file with the fields set.
func (d *doc) update(fm *frontmatter, set []Field, vals []string) string {
	spans := d.spans(fm)
	indent := ""
	if fm.root != nil {
		indent = leading(d.lines[fm.root.Values[0].Key.GetToken().Position.Line])
	}
	type edit struct {
		end  int
		line string
	}
	edits := map[int]edit{}
	var added strings.Builder
	for i, f := range set {
		sp, ok := spans[f.Key]
		if !ok {
			added.WriteString(indent + f.Key + ": " + vals[i] + d.eol)
			continue
		}
		orig := d.lines[sp.start]
		line := leading(orig) + f.Key + ": " + vals[i]
		if c := d.comment(sp.start); c != "" {
			col := utf8.RuneCountInString(chomp(orig)) - utf8.RuneCountInString(c)
			line += strings.Repeat(" ", max(1, col-utf8.RuneCountInString(line))) + c
		}
		edits[sp.start] = edit{sp.end, line + d.eol}
	}
	var b strings.Builder
	for i := 0; i < len(d.lines); {
		if i == d.close {
			b.WriteString(added.String())
		}
		if e, ok := edits[i]; ok {
			b.WriteString(e.line)
			i = e.end
			continue
		}
		b.WriteString(d.lines[i])
		i++
	}
	return b.String()
}

// comment returns the "# ..." comment that ends line i of d, or "".
func (d *doc) comment(i int) string {
	src := strings.Join(d.lines[1:d.close], "")
	for _, tk := range lexer.Tokenize(src) {
		if tk.Type != token.CommentType || tk.Position.Line != i {
			continue
		}
		// Take the text from the line itself: the lexer's columns are not reliable after tabs.
		c := "#" + strings.TrimRight(tk.Value, "\r\n")
		if line := chomp(d.lines[i]); strings.HasSuffix(line, c) {
			return c
		}
	}
	return ""
}

// verify checks that out's frontmatter reads back as before except for the set keys, which must
// hold exactly the new values.
func verify(path string, before *frontmatter, out string, set []Field) error {
	fail := func(why string) error {
		return fmt.Errorf("update %s: %s; the file is left unchanged", path, why)
	}
	d, err := split(path, []byte(out))
	if err != nil {
		return fail(err.Error())
	}
	after, err := d.frontmatter()
	if err != nil {
		return fail(err.Error())
	}
	want := map[string]any{}
	for k, v := range before.values {
		want[k] = v
	}
	for _, f := range set {
		got := after.values[f.Key]
		_, gotStr := got.(string)
		_, wantStr := f.Value.(string)
		if got == nil || gotStr != wantStr || fmt.Sprint(got) != fmt.Sprint(f.Value) {
			return fail(fmt.Sprintf("%s would read back as %v, not %v", f.Key, got, f.Value))
		}
		want[f.Key] = got
	}
	if !reflect.DeepEqual(want, after.values) {
		return fail("another key would change (is one of the set keys referred to by an alias?)")
	}
	return nil
}

// SetReview appends, or replaces, the "## Review" section of the body of the task file at path (a
// "## Review" line up to the next "## " heading or the end; headings inside code fences do not
// count) with:
//
//	## Review
//
//	**Rating: N/10**
//
//	**Verdict: ACCEPTED|REJECTED**
//
//	text
//
// Blank lines around text are dropped; an empty text leaves the section ending at the verdict.
// An appended section is separated from what comes before by exactly one blank line; a replaced
// one is followed by a blank line when another section follows. The file's line ending is used
// throughout. Atomic as Update.
func SetReview(path string, rating int, accepted bool, text string) error {
	return rewrite(path, true, func(data []byte) ([]byte, error) { return review(path, data, rating, accepted, text) })
}

// review returns data, the content of the task file at path, with its review section set.
func review(path string, data []byte, rating int, accepted bool, text string) ([]byte, error) {
	if rating < 0 || rating > 10 {
		return nil, fmt.Errorf("set review of %s: rating %d is not between 0 and 10", path, rating)
	}
	d, err := split(path, data)
	if err != nil {
		return nil, err
	}
	verdict := "REJECTED"
	if accepted {
		verdict = "ACCEPTED"
	}
	section := []string{
		"## Review" + d.eol, d.eol,
		fmt.Sprintf("**Rating: %d/10**", rating) + d.eol, d.eol,
		"**Verdict: " + verdict + "**" + d.eol,
	}
	if t := strings.Trim(strings.ReplaceAll(text, "\r\n", "\n"), "\n"); t != "" {
		section = append(section, d.eol)
		for l := range strings.SplitSeq(t, "\n") {
			section = append(section, l+d.eol)
		}
	}

	lines := d.lines
	var out []string
	if start, end := d.section("## Review"); start >= 0 {
		out = append(out, lines[:start]...)
		out = append(out, section...)
		if end < len(lines) {
			out = append(out, d.eol)
		}
		out = append(out, lines[end:]...)
	} else {
		keep := len(lines)
		for keep > d.close+1 && strings.TrimSpace(lines[keep-1]) == "" {
			keep--
		}
		out = append(out, lines[:keep]...)
		if last := out[keep-1]; !strings.HasSuffix(last, "\n") {
			out[keep-1] = last + d.eol
		}
		out = append(out, d.eol)
		out = append(out, section...)
	}
	return []byte(strings.Join(out, "")), nil
}

// section finds the body section headed by the line heading: its lines [start, end), end being the
// next "## " heading or the end of the file. start is -1 when there is none.
func (d *doc) section(heading string) (start, end int) {
	var f fence
	start = -1
	for i := d.close + 1; i < len(d.lines); i++ {
		l := chomp(d.lines[i])
		if f.skip(l) {
			continue
		}
		switch {
		case start < 0 && strings.TrimRight(l, " \t") == heading:
			start = i
		case start >= 0 && strings.HasPrefix(l, "## "):
			return start, i
		}
	}
	return start, len(d.lines)
}

// read reads the file behind path, following symbolic links so that a linked task file stays a
// link after it is rewritten.
func read(path string) (target string, data []byte, perm fs.FileMode, err error) {
	target, err = filepath.EvalSymlinks(path)
	if err != nil {
		return "", nil, 0, fmt.Errorf("read task file: %w", err)
	}
	fi, err := os.Stat(target)
	if err != nil {
		return "", nil, 0, fmt.Errorf("read task file: %w", err)
	}
	data, err = os.ReadFile(target)
	if err != nil {
		return "", nil, 0, fmt.Errorf("read task file: %w", err)
	}
	return target, data, fi.Mode().Perm(), nil
}

// write replaces the file at path with data, atomically: a reader sees the old file or the new
// one, never a mix, and a crash leaves one of the two. Nothing is written when data equals old.
func write(path string, data, old []byte, perm fs.FileMode, sync bool) (err error) {
	if string(data) == string(old) {
		return nil
	}
	dir := filepath.Dir(path)
	// The temp file names its writer's pid: a writer that finds one left
	// by a dead process removes it, not one another live process (a
	// worker sharing the checkout) is about to rename.
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+"."+strconv.Itoa(os.Getpid())+".*.tmp")
	if err != nil {
		return fmt.Errorf("write task file: %w", err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
			err = fmt.Errorf("write task file %s: %w", path, err)
		}
	}()
	if err := f.Chmod(perm); err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		return err
	}
	if sync {
		if err := f.Sync(); err != nil {
			return err
		}
	}
	if err := f.Close(); err != nil {
		return err
	}
	// The last moment to notice a concurrent writer before replacing its work.
	if now, err := os.ReadFile(path); err != nil || string(now) != string(old) {
		return errChanged
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return err
	}
	if !sync {
		return nil
	}
	// The rename is durable only once the directory entry is on disk.
	dh, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer dh.Close()
	return dh.Sync()
}
