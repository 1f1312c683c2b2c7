package config

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"
)

// What a value should look like, shared by file and environment errors.
const (
	wantInt      = "want an integer"
	wantNumber   = "want a number"
	wantBool     = "want true or false"
	wantDuration = `want a duration like "20m" or "90s"`
	wantList     = "want a list"
	wantMapping  = "want a mapping"
)

// maxDepth bounds nesting, which only an alias loop could exceed.
const maxDepth = 32

// maxAliases bounds alias expansions, so that aliases of aliases cannot
// make decoding take exponential time.
const maxAliases = 10000

var durationType = reflect.TypeFor[Duration]()

// loader decodes one file and remembers where each key path got its value,
// so that validation errors can point at the line or variable to fix.
type loader struct {
	name    string
	anchors []*ast.AnchorNode
	aliases int               // expansions so far
	origin  map[string]string // key path → "cadre.yaml:7", where the file set it
	fromEnv map[string]string // key path → the variable that overrode it
	depth   int
}

func newLoader(name string) *loader {
	return &loader{name: name, origin: map[string]string{}, fromEnv: map[string]string{}}
}

// decodeFile decodes the YAML in data onto cfg.
func (l *loader) decodeFile(data []byte, cfg *Config) error {
	data = bytes.TrimPrefix(data, []byte("\uFEFF"))
	// Duplicates are allowed here and reported by entries, which can name
	// the key path.
	file, err := parser.ParseBytes(data, 0, parser.AllowDuplicateMapKey())
	if err != nil {
		return l.syntaxError(err)
	}
	var body ast.Node
	for _, doc := range file.Docs {
		if doc == nil || doc.Body == nil {
			continue
		}
		if body != nil {
			return fmt.Errorf("%s:%d: more than one YAML document; keep all settings in one", l.name, line(doc.Body))
		}
		body = doc.Body
	}
	if body == nil {
		return nil // empty or comments only: defaults
	}
	for _, n := range ast.Filter(ast.AnchorType, body) {
		if a, ok := n.(*ast.AnchorNode); ok {
			l.anchors = append(l.anchors, a)
		}
	}
	top, err := l.resolve(body)
	if err != nil {
		return err
	}
	if !isMapping(top) {
		return fmt.Errorf("%s:%d: want a mapping of settings (key: value) at the top level, got %s",
			l.name, line(top), describe(top))
	}
	return l.decode(top, reflect.ValueOf(cfg).Elem(), "")
}

// syntaxError turns a parser error into one line, dropping the source
// excerpt the parser would print.
func (l *loader) syntaxError(err error) error {
	var ye yaml.Error
	if !errors.As(err, &ye) {
		return fmt.Errorf("%s: invalid YAML: %s", l.name, oneLine(err.Error()))
	}
	msg := oneLine(ye.GetMessage())
	if strings.Contains(msg, "\t") {
		msg = strings.ReplaceAll(msg, "\t", `\t`) + "; indent with spaces, not tabs"
	}
	if tk := ye.GetToken(); tk != nil && tk.Position != nil {
		return fmt.Errorf("%s:%d: invalid YAML: %s", l.name, tk.Position.Line, msg)
	}
	return fmt.Errorf("%s: invalid YAML: %s", l.name, msg)
}

// decode stores node n into v; path is n's key path, such as "limits.max_attempts".
func (l *loader) decode(n ast.Node, v reflect.Value, path string) error {
	l.depth++
	defer func() { l.depth-- }()
	if l.depth > maxDepth {
		return l.errorAt(n, path, "nested too deeply (does an alias refer to itself?)")
	}
	n, err := l.resolve(n)
	if err != nil {
		return err
	}
	if _, ok := n.(*ast.NullNode); ok {
		return nil // "key:" with no value keeps the default
	}
	if path != "" {
		l.origin[path] = fmt.Sprintf("%s:%d", l.name, line(n))
	}
	if v.Type() == durationType {
		s, ok := n.(*ast.StringNode)
		if !ok {
			return l.errorAt(n, path, "%s, got %s", wantDuration, describe(n))
		}
		d, err := time.ParseDuration(s.Value)
		if err != nil {
			return l.errorAt(n, path, "%s, got %s", wantDuration, describe(n))
		}
		v.SetInt(int64(d))
		return nil
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		return l.decode(n, v.Elem(), path)
	case reflect.Struct:
		return l.decodeStruct(n, v, path)
	case reflect.Map:
		return l.decodeMap(n, v, path)
	case reflect.Slice:
		return l.decodeList(n, v, path)
	case reflect.String:
		s, ok := scalarText(n)
		if !ok {
			return l.errorAt(n, path, "want a string, got %s", describe(n))
		}
		v.SetString(s)
	case reflect.Int:
		i, ok := n.(*ast.IntegerNode)
		if !ok {
			return l.errorAt(n, path, "%s, got %s", wantInt, describe(n))
		}
		switch x := i.Value.(type) {
		case int64:
			v.SetInt(x)
		case uint64:
			if x > math.MaxInt64 {
				return l.errorAt(n, path, "%s, got %s (too large)", wantInt, describe(n))
			}
			v.SetInt(int64(x))
		default:
			return l.errorAt(n, path, "%s, got %s", wantInt, describe(n))
		}
	case reflect.Float64:
		switch x := n.(type) {
		case *ast.FloatNode:
			v.SetFloat(x.Value)
		case *ast.IntegerNode:
			f, err := strconv.ParseFloat(fmt.Sprint(x.Value), 64)
			if err != nil {
				return l.errorAt(n, path, "%s, got %s", wantNumber, describe(n))
			}
			v.SetFloat(f)
		default:
			return l.errorAt(n, path, "%s, got %s", wantNumber, describe(n))
		}
	case reflect.Bool:
		b, ok := n.(*ast.BoolNode)
		if !ok {
			return l.errorAt(n, path, "%s, got %s", wantBool, describe(n))
		}
		v.SetBool(b.Value)
	default:
		return fmt.Errorf("config: no decoder for %s at %s", v.Type(), path)
	}
	return nil
}

func (l *loader) decodeStruct(n ast.Node, v reflect.Value, path string) error {
	entries, err := l.entries(n, path)
	if err != nil {
		return err
	}
	fields := fieldsOf(v.Type())
	for _, e := range entries {
		i := slices.IndexFunc(fields, func(f field) bool { return f.name == e.key })
		if i < 0 {
			return l.unknownKey(e, path, fields)
		}
		if err := l.decode(e.value, v.Field(fields[i].index), join(path, e.key)); err != nil {
			return err
		}
	}
	return nil
}

func (l *loader) decodeMap(n ast.Node, v reflect.Value, path string) error {
	entries, err := l.entries(n, path)
	if err != nil {
		return err
	}
	if v.IsNil() {
		v.Set(reflect.MakeMap(v.Type()))
	}
	for _, e := range entries {
		if strings.TrimSpace(e.key) == "" {
			return l.errorAt(e.keyNode, path, "want a name as key, got %q", e.key)
		}
		elem := reflect.New(v.Type().Elem()).Elem()
		if err := l.decode(e.value, elem, join(path, e.key)); err != nil {
			return err
		}
		v.SetMapIndex(reflect.ValueOf(e.key), elem)
	}
	return nil
}

func (l *loader) decodeList(n ast.Node, v reflect.Value, path string) error {
	seq, ok := n.(*ast.SequenceNode)
	if !ok {
		return l.errorAt(n, path, "%s, got %s", wantList, describe(n))
	}
	list := reflect.MakeSlice(v.Type(), len(seq.Values), len(seq.Values))
	for i, item := range seq.Values {
		ipath := fmt.Sprintf("%s[%d]", path, i)
		item, err := l.resolve(item)
		if err != nil {
			return err
		}
		if _, null := item.(*ast.NullNode); null {
			return l.errorAt(item, ipath, "want a value, got null")
		}
		if err := l.decode(item, list.Index(i), ipath); err != nil {
			return err
		}
	}
	v.Set(list)
	return nil
}

// entry is one key of a mapping.
type entry struct {
	key     string
	keyNode ast.Node
	value   ast.Node
}

// entries lists the keys of mapping n in order. Keys brought in by a merge
// key ("<<: *base") come first and are replaced by keys written in n.
func (l *loader) entries(n ast.Node, path string) ([]entry, error) {
	var pairs []*ast.MappingValueNode
	switch m := n.(type) {
	case *ast.MappingNode:
		pairs = m.Values
	case *ast.MappingValueNode:
		pairs = []*ast.MappingValueNode{m}
	default:
		return nil, l.errorAt(n, path, "%s, got %s", wantMapping, describe(n))
	}
	var merged, own []entry
	for _, p := range pairs {
		if _, ok := p.Key.(*ast.MergeKeyNode); ok {
			more, err := l.mergeEntries(p.Value, path)
			if err != nil {
				return nil, err
			}
			for _, e := range more {
				if !slices.ContainsFunc(merged, func(m entry) bool { return m.key == e.key }) {
					merged = append(merged, e)
				}
			}
			continue
		}
		key, ok := keyText(p.Key)
		if !ok {
			return nil, l.errorAt(p.Key, path, "want a plain name as key, got %s", describe(p.Key))
		}
		if i := slices.IndexFunc(own, func(e entry) bool { return e.key == key }); i >= 0 {
			return nil, l.errorAt(p.Key, join(path, key), "duplicate key (first set on line %d); keep one",
				line(own[i].keyNode))
		}
		own = append(own, entry{key: key, keyNode: p.Key, value: p.Value})
	}
	merged = slices.DeleteFunc(merged, func(m entry) bool {
		return slices.ContainsFunc(own, func(e entry) bool { return e.key == m.key })
	})
	return append(merged, own...), nil
}

// mergeEntries returns the entries a merge key's value brings in: one
// mapping or a list of them, earlier ones winning.
func (l *loader) mergeEntries(n ast.Node, path string) ([]entry, error) {
	l.depth++
	defer func() { l.depth-- }()
	if l.depth > maxDepth {
		return nil, l.errorAt(n, path, "nested too deeply (does an alias refer to itself?)")
	}
	n, err := l.resolve(n)
	if err != nil {
		return nil, err
	}
	seq, ok := n.(*ast.SequenceNode)
	if !ok {
		return l.entries(n, path)
	}
	var all []entry
	for _, item := range seq.Values {
		item, err := l.resolve(item)
		if err != nil {
			return nil, err
		}
		more, err := l.entries(item, path)
		if err != nil {
			return nil, err
		}
		for _, e := range more {
			if !slices.ContainsFunc(all, func(a entry) bool { return a.key == e.key }) {
				all = append(all, e)
			}
		}
	}
	return all, nil
}

// resolve looks through anchors, tags and aliases to the value node.
func (l *loader) resolve(n ast.Node) (ast.Node, error) {
	for range maxDepth {
		switch t := n.(type) {
		case *ast.AnchorNode:
			n = t.Value
		case *ast.TagNode:
			n = t.Value
		case *ast.AliasNode:
			if l.aliases++; l.aliases > maxAliases {
				return nil, fmt.Errorf("%s:%d: more than %d alias expansions; write the values out", l.name, line(t), maxAliases)
			}
			target := l.anchorFor(t)
			if target == nil {
				return nil, fmt.Errorf("%s:%d: alias %q refers to no earlier anchor", l.name, line(t), "*"+aliasName(t))
			}
			n = target.Value
		default:
			return n, nil
		}
	}
	return nil, fmt.Errorf("%s:%d: aliases nested too deeply", l.name, line(n))
}

// anchorFor returns the anchor an alias names: the last one of that name
// before the alias, as YAML defines.
func (l *loader) anchorFor(a *ast.AliasNode) *ast.AnchorNode {
	name := aliasName(a)
	var found *ast.AnchorNode
	for _, anc := range l.anchors {
		if anc.Name == nil || anc.Name.GetToken().Value != name {
			continue
		}
		if before(anc.GetToken(), a.GetToken()) {
			found = anc
		}
	}
	return found
}

func aliasName(a *ast.AliasNode) string {
	if a.Value == nil {
		return ""
	}
	return a.Value.GetToken().Value
}

// unknownKey reports a key the struct has no field for, suggesting the
// closest known key or else listing them all.
func (l *loader) unknownKey(e entry, path string, fields []field) error {
	names := make([]string, len(fields))
	for i, f := range fields {
		names[i] = f.name
	}
	where := ""
	if path != "" {
		where = " in " + path
	}
	hint := "valid keys: " + strings.Join(names, ", ")
	if s := closest(e.key, names); s != "" {
		hint = fmt.Sprintf("did you mean %q?", s)
	}
	return fmt.Errorf("%s:%d: unknown key %q%s (%s)", l.name, line(e.keyNode), e.key, where, hint)
}

// errorAt formats an error at n's line, naming path when there is one.
func (l *loader) errorAt(n ast.Node, path, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if path != "" {
		msg = path + ": " + msg
	}
	return fmt.Errorf("%s:%d: %s", l.name, line(n), msg)
}

// field is one yaml-tagged struct field.
type field struct {
	name  string
	index int
}

func fieldsOf(t reflect.Type) []field {
	var fs []field
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		if name != "" && name != "-" {
			fs = append(fs, field{name: name, index: i})
		}
	}
	return fs
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func isMapping(n ast.Node) bool {
	switch n.(type) {
	case *ast.MappingNode, *ast.MappingValueNode:
		return true
	}
	return false
}

// scalarText returns the text of a scalar node as written.
func scalarText(n ast.Node) (string, bool) {
	switch s := n.(type) {
	case *ast.StringNode:
		return s.Value, true
	case *ast.LiteralNode:
		if s.Value == nil {
			return "", true
		}
		return s.Value.Value, true
	case *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode, *ast.InfinityNode, *ast.NanNode:
		return n.GetToken().Value, true
	}
	return "", false
}

func keyText(n ast.Node) (string, bool) {
	switch k := n.(type) {
	case *ast.MappingKeyNode:
		return keyText(k.Value)
	case *ast.TagNode:
		return keyText(k.Value)
	}
	return scalarText(n)
}

// describe names what a node holds, for "got ..." in messages.
func describe(n ast.Node) string {
	if s, ok := scalarText(n); ok {
		const max = 60
		if len(s) > max {
			s = s[:max] + "..."
		}
		return strconv.Quote(s)
	}
	switch n.(type) {
	case *ast.MappingNode, *ast.MappingValueNode:
		return "a mapping"
	case *ast.SequenceNode:
		return "a list"
	case *ast.NullNode:
		return "null"
	}
	return "a " + n.Type().String()
}

func line(n ast.Node) int {
	if n == nil {
		return 0
	}
	if tk := n.GetToken(); tk != nil && tk.Position != nil {
		return tk.Position.Line
	}
	return 0
}

// before reports whether token a comes before token b in the file.
func before(a, b *token.Token) bool {
	if a == nil || b == nil || a.Position == nil || b.Position == nil {
		return false
	}
	if a.Position.Line != b.Position.Line {
		return a.Position.Line < b.Position.Line
	}
	return a.Position.Column < b.Position.Column
}

func oneLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return strings.TrimSpace(s)
}
