package modelsim

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/parser"
)

// Scenario is what the server answers: conversations matched against each
// request, and a default answer for requests no conversation matches.
// The format is documented in docs/modelsim.md.
type Scenario struct {
	Conversations []Conversation `yaml:"conversations"`
	// Default answers unmatched requests (a CLI's side requests, such as
	// title generation or model routing). When nil the answer is "OK", or
	// the smallest JSON value that fits when the request demands a schema.
	Default *Turn `yaml:"default"`
}

// Conversation is a scripted exchange: the turns a model plays, in order,
// for every request its rule matches.
type Conversation struct {
	Name  string `yaml:"name"` // names the conversation in the request log
	Match Match  `yaml:"match"`
	// Turns are played by position: a request that already holds N
	// assistant turns gets Turns[N]; past the end the last turn repeats.
	Turns []Turn `yaml:"turns"`
}

// Match selects requests. Every field set must hold; an empty Match
// matches every request.
type Match struct {
	// Contains is a substring of the system prompt or of a user message
	// (tool results are not searched).
	Contains string `yaml:"contains"`
	// Role matches cadre's role prompts, which begin "You are the **ROLE**".
	Role string `yaml:"role"`
	// Tool is the name of a tool the request offers, e.g. Write (Claude
	// Code), exec_command (Codex) or write_file (Gemini CLI).
	Tool string `yaml:"tool"`
	// API is one of anthropic, openai, responses, gemini, ollama.
	API string `yaml:"api"`
	// Model is a substring of the requested model name.
	Model string `yaml:"model"`
}

// Turn is one model answer: text, tool calls (after the text), or an
// error response. "{{cwd}}" in text and tool input is replaced with the
// working directory the client announces in its prompt.
type Turn struct {
	Text  string     `yaml:"text"`
	Tools []ToolCall `yaml:"tools"`
	Error *APIError  `yaml:"error"`
	Usage Usage      `yaml:"usage"`
}

// ToolCall is a call of one of the client's tools.
type ToolCall struct {
	Name string `yaml:"name"`
	// Input is a mapping of arguments, or a string for a freeform tool
	// (the Responses API's custom tools, such as Codex's apply_patch).
	Input any `yaml:"input"`
}

// APIError makes a turn fail with an HTTP error in the API's own format.
type APIError struct {
	Status  int    `yaml:"status"`  // 400–599, e.g. 429 for a rate limit
	Type    string `yaml:"type"`    // the API's error type; derived from Status when empty
	Message string `yaml:"message"` // defaults to the status text
}

// Usage is the token account reported for a turn. Zero input tokens are
// estimated as request bytes / 4, zero output tokens from the answer's size.
type Usage struct {
	InputTokens     int `yaml:"input_tokens"`
	OutputTokens    int `yaml:"output_tokens"`
	CacheReadTokens int `yaml:"cache_read_tokens"`
}

// apis lists the wire formats the server speaks, as named in Match.API and
// in the request log.
var apis = []string{apiAnthropic, apiOpenAI, apiResponses, apiGemini, apiOllama}

const (
	apiAnthropic = "anthropic"
	apiOpenAI    = "openai"
	apiResponses = "responses"
	apiGemini    = "gemini"
	apiOllama    = "ollama"
)

// Load reads and checks the scenario file at path.
func Load(path string) (Scenario, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Scenario{}, fmt.Errorf("read scenario: %w", err)
	}
	return Parse(path, data)
}

// Parse decodes and checks a scenario. name (usually the file path) starts
// every error message, which is one line naming the line and field to fix.
func Parse(name string, data []byte) (Scenario, error) {
	data = bytes.TrimPrefix(data, []byte("\uFEFF"))
	var sc Scenario
	if err := yaml.UnmarshalWithOptions(data, &sc, yaml.DisallowUnknownField()); err != nil {
		return Scenario{}, yamlError(name, err)
	}
	if err := sc.check(); err != nil {
		var fe *fieldError
		if errors.As(err, &fe) {
			return Scenario{}, fmt.Errorf("%s:%d: %s: %s", name, lineOf(data, fe.path), fe.path, fe.msg)
		}
		return Scenario{}, fmt.Errorf("%s: %w", name, err)
	}
	return sc, nil
}

// fieldError is a check failure at a field path such as
// "conversations[0].turns[1].tools[0].name".
type fieldError struct {
	path string
	msg  string
}

func (e *fieldError) Error() string { return e.path + ": " + e.msg }

func errAt(path, format string, args ...any) error {
	return &fieldError{path: path, msg: fmt.Sprintf(format, args...)}
}

func (sc *Scenario) check() error {
	for i := range sc.Conversations {
		c := &sc.Conversations[i]
		path := fmt.Sprintf("conversations[%d]", i)
		if c.Match.API != "" && !slices.Contains(apis, c.Match.API) {
			return errAt(path+".match.api", "unknown API %q; want one of %s", c.Match.API, strings.Join(apis, ", "))
		}
		if len(c.Turns) == 0 {
			return errAt(path+".turns", "want at least one turn (text, tools or error)")
		}
		for j := range c.Turns {
			if err := c.Turns[j].check(fmt.Sprintf("%s.turns[%d]", path, j)); err != nil {
				return err
			}
		}
	}
	if sc.Default != nil {
		return sc.Default.check("default")
	}
	return nil
}

func (t *Turn) check(path string) error {
	if t.Error != nil {
		if t.Text != "" || len(t.Tools) > 0 {
			return errAt(path+".error", "an error turn has no text or tools; move them to another turn")
		}
		if t.Error.Status < 400 || t.Error.Status > 599 {
			return errAt(path+".error.status", "want an HTTP error status 400-599, got %d", t.Error.Status)
		}
	} else if t.Text == "" && len(t.Tools) == 0 {
		return errAt(path, "want text, tools or error")
	}
	for k, tc := range t.Tools {
		tp := fmt.Sprintf("%s.tools[%d]", path, k)
		if strings.TrimSpace(tc.Name) == "" {
			return errAt(tp+".name", "want the tool's name, e.g. Write")
		}
		in, err := normalize(tc.Input)
		if err != nil {
			return errAt(tp+".input", "%v", err)
		}
		t.Tools[k].Input = in
	}
	u := t.Usage
	if u.InputTokens < 0 || u.OutputTokens < 0 || u.CacheReadTokens < 0 {
		return errAt(path+".usage", "token counts cannot be negative")
	}
	return nil
}

// normalize turns decoded YAML tool input into JSON-ready values: a
// mapping with string keys or a string.
func normalize(v any) (any, error) {
	switch x := v.(type) {
	case nil:
		return map[string]any{}, nil
	case string:
		return x, nil
	case map[string]any, map[any]any:
		return jsonValue(x), nil
	}
	got := "a number"
	switch v.(type) {
	case []any:
		got = "a list"
	case bool:
		got = "true or false"
	}
	return nil, fmt.Errorf("want a mapping of arguments or a string, got %s", got)
}

// jsonValue converts YAML maps with arbitrary keys to map[string]any,
// recursively, so the value encodes as JSON.
func jsonValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = jsonValue(e)
		}
		return m
	case map[any]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[fmt.Sprint(k)] = jsonValue(e)
		}
		return m
	case []any:
		l := make([]any, len(x))
		for i, e := range x {
			l[i] = jsonValue(e)
		}
		return l
	}
	return v
}

// unmarshalMsg is the decoder's wording for a value of the wrong type.
var unmarshalMsg = regexp.MustCompile(`^cannot unmarshal (.+) into Go (?:struct field|value) .*of type (.+)$`)

// kind names Go types the way a scenario author thinks of them.
func kind(goType string) string {
	switch {
	case strings.HasPrefix(goType, "[]"):
		return "a list"
	case strings.HasPrefix(goType, "map"), strings.HasPrefix(goType, "modelsim."):
		return "a mapping"
	case strings.HasPrefix(goType, "int"), strings.HasPrefix(goType, "uint"), strings.HasPrefix(goType, "float"):
		return "a number"
	case goType == "bool":
		return "true or false"
	case goType == "string":
		return "text"
	}
	return goType
}

// yamlError reduces a decoder error to one line with its line number.
func yamlError(name string, err error) error {
	var ye yaml.Error
	if errors.As(err, &ye) {
		msg := firstLine(ye.GetMessage())
		if m := unmarshalMsg.FindStringSubmatch(msg); m != nil {
			msg = fmt.Sprintf("want %s here, got %s", kind(m[2]), kind(m[1]))
		}
		if strings.Contains(msg, "\t") {
			msg = strings.ReplaceAll(msg, "\t", `\t`) + "; indent with spaces, not tabs"
		}
		if tk := ye.GetToken(); tk != nil && tk.Position != nil {
			return fmt.Errorf("%s:%d: %s", name, tk.Position.Line, msg)
		}
		return fmt.Errorf("%s: %s", name, msg)
	}
	return fmt.Errorf("%s: %s", name, firstLine(err.Error()))
}

// lineOf finds the line of the field at path (as written by check), or of
// the nearest enclosing field the file has; 0 when unknown.
func lineOf(data []byte, path string) int {
	file, err := parser.ParseBytes(data, 0)
	if err != nil {
		return 0
	}
	for p := path; p != ""; p = parent(p) {
		yp, err := yaml.PathString("$." + p)
		if err != nil {
			continue
		}
		n, err := yp.FilterFile(file)
		if err != nil || n == nil {
			continue
		}
		if tk := n.GetToken(); tk != nil && tk.Position != nil {
			return tk.Position.Line
		}
	}
	return 0
}

// parent drops the last element of a field path.
func parent(p string) string {
	i := strings.LastIndexAny(p, ".[")
	if i <= 0 {
		return ""
	}
	return p[:i]
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	s, _, _ = strings.Cut(s, "\n")
	return s
}
