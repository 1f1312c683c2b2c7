package modelsim

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParse(t *testing.T) {
	const text = `# a coder that writes a file, then reports
conversations:
  - name: coder
    match: {role: coder, tool: Write, api: anthropic, model: opus, contains: "Create"}
    turns:
      - text: Writing.
        tools:
          - name: Write
            input:
              file_path: "{{cwd}}/a.txt"
              content: "hi\n"
              nested: {1: [a, {b: true}]}
          - name: apply_patch
            input: "*** Begin Patch"
        usage: {input_tokens: 10, output_tokens: 2, cache_read_tokens: 3}
      - error: {status: 529, type: overloaded_error, message: busy}
default:
  text: fallback
`
	got, err := Parse("s.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	want := Scenario{
		Conversations: []Conversation{{
			Name:  "coder",
			Match: Match{Role: "coder", Tool: "Write", API: "anthropic", Model: "opus", Contains: "Create"},
			Turns: []Turn{
				{
					Text: "Writing.",
					Tools: []ToolCall{
						{Name: "Write", Input: map[string]any{"file_path": "{{cwd}}/a.txt", "content": "hi\n",
							"nested": map[string]any{"1": []any{"a", map[string]any{"b": true}}}}},
						{Name: "apply_patch", Input: "*** Begin Patch"},
					},
					Usage: Usage{InputTokens: 10, OutputTokens: 2, CacheReadTokens: 3},
				},
				{Error: &APIError{Status: 529, Type: "overloaded_error", Message: "busy"}},
			},
		}},
		Default: &Turn{Text: "fallback"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Parse (-want +got):\n%s", d)
	}
}

func TestParseEmpty(t *testing.T) {
	for _, text := range []string{"", "# nothing\n", "conversations: []\n"} {
		sc, err := Parse("s.yaml", []byte(text))
		if err != nil || len(sc.Conversations) != 0 || sc.Default != nil {
			t.Errorf("Parse(%q) = %+v, %v; want an empty scenario", text, sc, err)
		}
	}
}

// TestParseErrors checks that every bad scenario gets one line naming the
// file, the line and the field.
func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, text, want string
	}{
		{"unknown key", "conversations:\n  - name: a\n    turnz: []\n",
			`s.yaml:3: unknown field "turnz"`},
		{"unknown top-level key", "conversation: []\n",
			`s.yaml:1: unknown field "conversation"`},
		{"no turns", "conversations:\n  - name: a\n    match: {role: coder}\n",
			"s.yaml:2: conversations[0].turns: want at least one turn (text, tools or error)"},
		{"empty turn", "conversations:\n  - turns:\n      - usage: {input_tokens: 1}\n",
			"s.yaml:3: conversations[0].turns[0]: want text, tools or error"},
		{"tool without name", "conversations:\n  - turns:\n      - tools:\n          - input: {a: 1}\n",
			"s.yaml:4: conversations[0].turns[0].tools[0].name: want the tool's name"},
		{"tool input a list", "conversations:\n  - turns:\n      - tools:\n          - name: Write\n            input: [a, b]\n",
			"s.yaml:5: conversations[0].turns[0].tools[0].input: want a mapping of arguments or a string, got a list"},
		{"error with text", "conversations:\n  - turns:\n      - text: hi\n        error: {status: 500}\n",
			"s.yaml:4: conversations[0].turns[0].error: an error turn has no text or tools"},
		{"error status", "conversations:\n  - turns:\n      - {text: a}\n      - error: {status: 200}\n",
			"s.yaml:4: conversations[0].turns[1].error.status: want an HTTP error status 400-599, got 200"},
		{"unknown api", "conversations:\n  - match: {api: claude}\n    turns: [{text: a}]\n",
			`s.yaml:2: conversations[0].match.api: unknown API "claude"; want one of anthropic, openai, responses, gemini, ollama`},
		{"negative usage", "conversations:\n  - turns:\n      - text: a\n        usage: {output_tokens: -1}\n",
			"s.yaml:4: conversations[0].turns[0].usage: token counts cannot be negative"},
		{"bad default", "default: {usage: {input_tokens: 1}}\n",
			"s.yaml:1: default: want text, tools or error"},
		{"number for a list", "conversations:\n  - turns: 5\n",
			"s.yaml:2: "},
		{"list for text", "conversations:\n  - turns:\n      - text: [a]\n",
			"s.yaml:3: want text here, got a list"},
		{"text for a number", "default: {text: a, usage: {input_tokens: x}}\n",
			"s.yaml:1: want a number here, got text"},
		{"tab indent", "conversations:\n\t- turns: []\n",
			"s.yaml:2: found character '\\t' that cannot start any token; indent with spaces, not tabs"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("s.yaml", []byte(tc.text))
			if err == nil {
				t.Fatalf("Parse succeeded, want an error starting %q", tc.want)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, tc.want) {
				t.Errorf("error %q, want it to start %q", msg, tc.want)
			}
			if strings.Contains(msg, "\n") {
				t.Errorf("error %q spans several lines, want one", msg)
			}
		})
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sim.yaml")
	if err := os.WriteFile(path, []byte("conversations:\n  - turns: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path)
	if err == nil || !strings.HasPrefix(err.Error(), path+":2: conversations[0].turns") {
		t.Errorf("Load error = %v, want it to name %s:2 and the field", err, path)
	}
	if _, err := Load(filepath.Join(dir, "missing.yaml")); err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("Load of a missing file = %v, want an error naming it", err)
	}
}

// TestDocExample keeps the scenario in docs/modelsim.md valid.
func TestDocExample(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "modelsim.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "```yaml\n")
	text, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatal("docs/modelsim.md has no yaml block")
	}
	sc, err := Parse("docs/modelsim.md", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if len(sc.Conversations) != 2 || sc.Default == nil || sc.Conversations[1].Turns[0].Error.Status != 429 {
		t.Errorf("parsed %+v, want two conversations, the second a 429, and a default", sc)
	}
}
