package bench

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/parser"

	"github.com/cadre-dev/cadre/internal/eval"
)

// Case is one benchmark case: a prompt for a role, the gatekeeper's
// requirements and the judge's rubric (docs/evaluation.md#case-files), and
// optionally a fixture the agent works in.
type Case struct {
	Role   string `yaml:"role"`
	Name   string `yaml:"name"` // default: the file name without .yaml
	Prompt string `yaml:"prompt"`
	// Requirements override the role's built-in ones field by field
	// (eval.Merge over eval.DefaultRequirements).
	Requirements eval.Requirements `yaml:"requirements"`
	// Rubric replaces the role's built-in rubric when set.
	Rubric eval.Rubric `yaml:"rubric"`
	// Fixture is a directory of files, relative to the case file, copied
	// into the fresh git repository the agent works in.
	Fixture string `yaml:"fixture"`
	// Commands are the shell commands the requirements' command names
	// (build, test, lint…) stand for. A fixture has no cadre.yaml, so the
	// case brings its own; a required command the case does not define is
	// not checked, as in a run with no such command configured.
	Commands map[string]string `yaml:"commands"`

	// Source names the file the case came from, for messages.
	Source string `yaml:"-"`
	// fixture is the fixture directory, nil for an empty repository.
	fixture fs.FS
}

// ID is the case's name within its role: "role/name".
func (c Case) ID() string { return c.Role + "/" + c.Name }

// Checks are the requirements the gatekeeper applies: the role's built-in
// requirements with the case's over them.
func (c Case) Checks() eval.Requirements {
	return eval.Merge(eval.DefaultRequirements(c.Role), c.Requirements)
}

// Criteria are the judge's rubric: the case's own, else the role's.
func (c Case) Criteria() eval.Rubric {
	if len(c.Rubric) > 0 {
		return c.Rubric
	}
	return eval.DefaultRubric(c.Role)
}

//go:embed cases
var builtinFS embed.FS

// nameRE keeps case names usable in step ids and file names.
var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`)

// Builtin returns the cases built into cadre, sorted by role and name.
func Builtin(roleExists func(string) bool) ([]Case, error) {
	sub, err := fs.Sub(builtinFS, "cases")
	if err != nil {
		return nil, fmt.Errorf("built-in cases: %w", err)
	}
	return loadFS(sub, "builtin:", roleExists)
}

// LoadDir reads the *.yaml cases of dir (a repository's .cadre/bench); a
// missing directory holds none. Fixtures are resolved against dir.
func LoadDir(dir string, roleExists func(string) bool) ([]Case, error) {
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return loadFS(os.DirFS(dir), dir+string(filepath.Separator), roleExists)
}

// loadFS reads every top-level *.yaml or *.yml file of fsys as a case;
// prefix makes each file's name for messages.
func loadFS(fsys fs.FS, prefix string, roleExists func(string) bool) ([]Case, error) {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, fmt.Errorf("read cases %s: %w", prefix, err)
	}
	var out []Case
	seen := map[string]string{}
	for _, e := range entries {
		if e.IsDir() || (path.Ext(e.Name()) != ".yaml" && path.Ext(e.Name()) != ".yml") {
			continue
		}
		data, err := fs.ReadFile(fsys, e.Name())
		if err != nil {
			return nil, fmt.Errorf("read case %s%s: %w", prefix, e.Name(), err)
		}
		c, err := Parse(prefix+e.Name(), data, roleExists)
		if err != nil {
			return nil, err
		}
		if c.Fixture != "" {
			c.fixture, err = fs.Sub(fsys, path.Clean(c.Fixture))
			if err == nil {
				_, err = fs.Stat(c.fixture, ".")
			}
			if err != nil {
				return nil, fmt.Errorf("%s:%d: fixture: %q is not a directory beside the case file", c.Source,
					lineOf(data, "fixture"), c.Fixture)
			}
		}
		if prev, dup := seen[c.ID()]; dup {
			return nil, fmt.Errorf("%s: case %s is also defined in %s; give one of them another name", c.Source, c.ID(), prev)
		}
		seen[c.ID()] = c.Source
		out = append(out, c)
	}
	sortCases(out)
	return out, nil
}

// Parse decodes one case file strictly: an unknown field or a value of the
// wrong type is a one-line error naming the file, line and field. name
// starts every message; the stem of its base name is the default Name.
func Parse(name string, data []byte, roleExists func(string) bool) (Case, error) {
	data = bytes.TrimPrefix(data, []byte("\uFEFF"))
	var c Case
	if err := yaml.UnmarshalWithOptions(data, &c, yaml.DisallowUnknownField()); err != nil {
		return Case{}, yamlError(name, err)
	}
	c.Source = name
	if c.Name == "" {
		base := path.Base(filepath.ToSlash(name))
		c.Name = strings.TrimSuffix(strings.TrimSuffix(base, ".yaml"), ".yml")
	}
	at := func(field, format string, args ...any) error {
		msg := field + ": " + fmt.Sprintf(format, args...)
		if n := lineOf(data, field); n > 0 {
			return fmt.Errorf("%s:%d: %s", name, n, msg)
		}
		return fmt.Errorf("%s: %s", name, msg) // a missing field has no line
	}
	switch {
	case strings.TrimSpace(c.Role) == "":
		return Case{}, at("role", "want the role the case benchmarks, e.g. executor")
	case roleExists != nil && !roleExists(c.Role):
		return Case{}, at("role", "no role %q (cadre roles list shows them)", c.Role)
	case !nameRE.MatchString(c.Name):
		return Case{}, at("name", "%q: use lower-case letters, digits, '.', '_' and '-'", c.Name)
	case strings.TrimSpace(c.Prompt) == "":
		return Case{}, at("prompt", "want the task the agent is given")
	case c.Fixture != "" && (path.IsAbs(filepath.ToSlash(c.Fixture)) || !fs.ValidPath(path.Clean(filepath.ToSlash(c.Fixture)))):
		return Case{}, at("fixture", "%q: want a directory relative to the case file, inside its directory", c.Fixture)
	}
	c.Fixture = filepath.ToSlash(c.Fixture)
	if err := c.Requirements.Validate(); err != nil {
		return Case{}, at("requirements", "%v", err)
	}
	for _, k := range slices.Sorted(maps.Keys(c.Rubric)) {
		if strings.TrimSpace(c.Rubric[k]) == "" || strings.TrimSpace(k) == "" {
			return Case{}, at("rubric."+k, "want a criterion name and what it means")
		}
	}
	for _, k := range slices.Sorted(maps.Keys(c.Commands)) {
		if strings.TrimSpace(c.Commands[k]) == "" {
			return Case{}, at("commands."+k, "empty command")
		}
	}
	return c, nil
}

// Merge puts the repository's cases over the built-in ones: a repository
// case with a built-in case's role and name replaces it.
func Merge(builtin, repo []Case) []Case {
	byID := map[string]Case{}
	for _, c := range builtin {
		byID[c.ID()] = c
	}
	for _, c := range repo {
		byID[c.ID()] = c
	}
	out := make([]Case, 0, len(byID))
	for _, c := range byID {
		out = append(out, c)
	}
	sortCases(out)
	return out
}

// Select keeps the cases of roles (all cases when roles is empty). A role
// without a case is an error naming the roles that have some.
func Select(cases []Case, roles []string) ([]Case, error) {
	if len(roles) == 0 {
		return cases, nil
	}
	var out []Case
	for _, r := range roles {
		n := len(out)
		for _, c := range cases {
			if c.Role == r {
				out = append(out, c)
			}
		}
		if len(out) == n {
			return nil, fmt.Errorf("no benchmark case for role %q (cases exist for %s; add one in .cadre/bench/)", r, strings.Join(Roles(cases), ", "))
		}
	}
	return out, nil
}

// Roles lists the roles cases exist for, sorted.
func Roles(cases []Case) []string {
	var out []string
	for _, c := range cases {
		if !slices.Contains(out, c.Role) {
			out = append(out, c.Role)
		}
	}
	sort.Strings(out)
	return out
}

func sortCases(cs []Case) {
	sort.Slice(cs, func(i, j int) bool { return cs[i].ID() < cs[j].ID() })
}

// yamlError reduces a decoder error to one line with its line number.
func yamlError(name string, err error) error {
	var ye yaml.Error
	if errors.As(err, &ye) {
		msg := firstLine(ye.GetMessage())
		if m := unmarshalMsg.FindStringSubmatch(msg); m != nil {
			msg = fmt.Sprintf("%s: want %s, got %s", strings.ToLower(m[2]), kind(m[3]), kind(m[1]))
		}
		if tk := ye.GetToken(); tk != nil && tk.Position != nil {
			return fmt.Errorf("%s:%d: %s", name, tk.Position.Line, msg)
		}
		return fmt.Errorf("%s: %s", name, msg)
	}
	return fmt.Errorf("%s: %s", name, firstLine(err.Error()))
}

// unmarshalMsg is the decoder's wording for a value of the wrong type.
var unmarshalMsg = regexp.MustCompile(`^cannot unmarshal (.+) into Go struct field \w+\.(\w+) of type (.+)$`)

// kind names Go types the way a case author thinks of them.
func kind(goType string) string {
	switch {
	case strings.HasPrefix(goType, "[]"):
		return "a list"
	case strings.HasPrefix(goType, "map"), strings.HasPrefix(goType, "eval."):
		return "a mapping"
	case goType == "bool", goType == "*bool":
		return "true or false"
	case goType == "string":
		return "text"
	}
	return goType
}

// lineOf finds the line of a top-level field path such as "rubric.x", or
// of its nearest enclosing field; 0 when the file does not have it.
func lineOf(data []byte, field string) int {
	file, err := parser.ParseBytes(data, 0)
	if err != nil {
		return 0
	}
	for p := field; p != ""; {
		if yp, err := yaml.PathString("$." + p); err == nil {
			if n, err := yp.FilterFile(file); err == nil && n != nil {
				if tk := n.GetToken(); tk != nil && tk.Position != nil {
					return tk.Position.Line
				}
			}
		}
		i := strings.LastIndexByte(p, '.')
		if i < 0 {
			break
		}
		p = p[:i]
	}
	return 0
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}
