package modelsim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// call is a request reduced to what matching and answering need, whatever
// the API it came in.
type call struct {
	api    string
	model  string
	stream bool
	system []string // system and developer prompts
	user   []string // text of user messages; tool results are not included
	turn   int      // assistant turns already in the conversation
	tools  map[string]string
	schema json.RawMessage // JSON schema the answer must follow, if any
	size   int             // request body bytes
	// usageChunk asks for a final usage chunk (OpenAI stream_options).
	usageChunk bool
}

// Tool kinds, as the Responses API distinguishes them.
const (
	kindFunction = "function"
	kindCustom   = "custom" // freeform text input, e.g. Codex's apply_patch
)

// text is what Match.Contains and Match.Role search.
func (c *call) text() string {
	return strings.Join(c.system, "\n") + "\n" + strings.Join(c.user, "\n")
}

// cwdPatterns find the working directory agent CLIs announce: Claude
// Code's system prompt, Codex's environment_context, Gemini CLI's
// session_context, Qwen Code's list of directories (the first is its
// working directory) and the plainer phrasings of other CLIs.
var cwdPatterns = []*regexp.Regexp{
	regexp.MustCompile(`Primary working directory: *([^\n]+)`),
	regexp.MustCompile(`<cwd>([^<]+)</cwd>`),
	regexp.MustCompile(`\*\*Workspace Directories:\*\*\s*\n\s*- *([^\n]+)`),
	regexp.MustCompile(`working in the following directories:\s*\n\s*- *([^\n]+)`),
	regexp.MustCompile(`(?i)current working directory(?: is)?: *([^\n]+)`),
	regexp.MustCompile(`(?i)working in the directory:? *([^\n]+)`),
}

// cwd returns the working directory the client announced, or "".
func (c *call) cwd() string {
	t := c.text()
	for _, re := range cwdPatterns {
		if m := re.FindStringSubmatch(t); m != nil {
			return strings.TrimSpace(m[1])
		}
	}
	return ""
}

// turns counts runs of assistant entries in a conversation, so several
// items of one answer (a message and its tool calls) count once.
type turns struct {
	n    int
	last bool
}

func (t *turns) add(assistant bool) {
	if assistant && !t.last {
		t.n++
	}
	t.last = assistant
}

// texts returns the text of a message content: a string, or a list of
// parts whose text fields are taken (text, input_text, output_text).
func texts(raw json.RawMessage) []string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []string{s}
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return nil
	}
	var out []string
	for _, p := range parts {
		switch p.Type {
		case "", "text", "input_text", "output_text":
			if p.Text != "" {
				out = append(out, p.Text)
			}
		}
	}
	return out
}

// decode reads body as JSON into v, with a one-line error.
func decode(body []byte, v any) error {
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("request body is not the JSON this API expects: %v", err)
	}
	return nil
}

func parseAnthropic(body []byte) (*call, error) {
	var r struct {
		Model    string          `json:"model"`
		Stream   bool            `json:"stream"`
		System   json.RawMessage `json:"system"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
		OutputConfig struct {
			Format struct {
				Type   string          `json:"type"`
				Schema json.RawMessage `json:"schema"`
			} `json:"format"`
		} `json:"output_config"`
	}
	if err := decode(body, &r); err != nil {
		return nil, err
	}
	c := &call{api: apiAnthropic, model: r.Model, stream: r.Stream, system: texts(r.System), tools: map[string]string{}}
	var t turns
	for _, m := range r.Messages {
		switch m.Role {
		case "system":
			c.system = append(c.system, texts(m.Content)...)
		case "user":
			c.user = append(c.user, texts(m.Content)...)
		}
		t.add(m.Role == "assistant")
	}
	c.turn = t.n
	for _, tl := range r.Tools {
		c.tools[tl.Name] = kindFunction
	}
	if r.OutputConfig.Format.Type == "json_schema" {
		c.schema = r.OutputConfig.Format.Schema
	}
	return c, nil
}

func parseOpenAI(body []byte) (*call, error) {
	var r struct {
		Model    string `json:"model"`
		Stream   bool   `json:"stream"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Tools []struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
		StreamOptions struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
		ResponseFormat struct {
			Type       string `json:"type"`
			JSONSchema struct {
				Schema json.RawMessage `json:"schema"`
			} `json:"json_schema"`
		} `json:"response_format"`
	}
	if err := decode(body, &r); err != nil {
		return nil, err
	}
	c := &call{api: apiOpenAI, model: r.Model, stream: r.Stream, usageChunk: r.StreamOptions.IncludeUsage, tools: map[string]string{}}
	var t turns
	for _, m := range r.Messages {
		switch m.Role {
		case "system", "developer":
			c.system = append(c.system, texts(m.Content)...)
		case "user":
			c.user = append(c.user, texts(m.Content)...)
		}
		t.add(m.Role == "assistant")
	}
	c.turn = t.n
	for _, tl := range r.Tools {
		c.tools[tl.Function.Name] = kindFunction
	}
	switch r.ResponseFormat.Type {
	case "json_schema":
		c.schema = r.ResponseFormat.JSONSchema.Schema
	case "json_object":
		c.schema = json.RawMessage(`{"type":"object"}`)
	}
	return c, nil
}

// responsesTool is a Responses API tool declaration; namespaces hold more.
type responsesTool struct {
	Type  string          `json:"type"`
	Name  string          `json:"name"`
	Tools []responsesTool `json:"tools"`
}

func (c *call) addResponsesTools(ts []responsesTool) {
	for _, tl := range ts {
		switch tl.Type {
		case "namespace":
			c.addResponsesTools(tl.Tools)
		case kindCustom:
			c.tools[tl.Name] = kindCustom
		default:
			if tl.Name != "" {
				c.tools[tl.Name] = kindFunction
			}
		}
	}
}

func parseResponses(body []byte) (*call, error) {
	var r struct {
		Model        string          `json:"model"`
		Stream       bool            `json:"stream"`
		Instructions string          `json:"instructions"`
		Input        json.RawMessage `json:"input"`
		Tools        []responsesTool `json:"tools"`
		Text         struct {
			Format struct {
				Type   string          `json:"type"`
				Schema json.RawMessage `json:"schema"`
			} `json:"format"`
		} `json:"text"`
	}
	if err := decode(body, &r); err != nil {
		return nil, err
	}
	c := &call{api: apiResponses, model: r.Model, stream: r.Stream, tools: map[string]string{}}
	if r.Instructions != "" {
		c.system = append(c.system, r.Instructions)
	}
	c.addResponsesTools(r.Tools)
	var items []struct {
		Type    string          `json:"type"`
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
		Tools   []responsesTool `json:"tools"`
	}
	var s string
	switch {
	case json.Unmarshal(r.Input, &s) == nil:
		c.user = append(c.user, s)
	case len(bytes.TrimSpace(r.Input)) > 0:
		if err := decode(r.Input, &items); err != nil {
			return nil, err
		}
	}
	var t turns
	for _, it := range items {
		assistant := false
		switch it.Type {
		case "", "message":
			switch it.Role {
			case "system", "developer":
				c.system = append(c.system, texts(it.Content)...)
			case "user":
				c.user = append(c.user, texts(it.Content)...)
			case "assistant":
				assistant = true
			}
		case "additional_tools":
			c.addResponsesTools(it.Tools)
			continue
		case "function_call", "custom_tool_call", "local_shell_call", "reasoning", "web_search_call":
			assistant = true
		}
		t.add(assistant)
	}
	c.turn = t.n
	if r.Text.Format.Type == "json_schema" {
		c.schema = r.Text.Format.Schema
	}
	return c, nil
}

// geminiContent is one entry of a Gemini conversation.
type geminiContent struct {
	Role  string `json:"role"`
	Parts []struct {
		Text         string          `json:"text"`
		Thought      bool            `json:"thought"`
		FunctionCall json.RawMessage `json:"functionCall"`
	} `json:"parts"`
}

func parseGemini(body []byte, model string, stream bool) (*call, error) {
	var r struct {
		Contents          []geminiContent `json:"contents"`
		SystemInstruction *geminiContent  `json:"systemInstruction"`
		Tools             []struct {
			FunctionDeclarations []struct {
				Name string `json:"name"`
			} `json:"functionDeclarations"`
		} `json:"tools"`
		GenerationConfig struct {
			ResponseMimeType   string          `json:"responseMimeType"`
			ResponseJSONSchema json.RawMessage `json:"responseJsonSchema"`
			ResponseSchema     json.RawMessage `json:"responseSchema"`
		} `json:"generationConfig"`
	}
	if err := decode(body, &r); err != nil {
		return nil, err
	}
	c := &call{api: apiGemini, model: model, stream: stream, tools: map[string]string{}}
	if si := r.SystemInstruction; si != nil {
		for _, p := range si.Parts {
			if p.Text != "" {
				c.system = append(c.system, p.Text)
			}
		}
	}
	var t turns
	for _, ct := range r.Contents {
		if ct.Role != "model" {
			for _, p := range ct.Parts {
				if p.Text != "" && !p.Thought {
					c.user = append(c.user, p.Text)
				}
			}
		}
		t.add(ct.Role == "model")
	}
	c.turn = t.n
	for _, tl := range r.Tools {
		for _, fd := range tl.FunctionDeclarations {
			c.tools[fd.Name] = kindFunction
		}
	}
	gc := r.GenerationConfig
	switch {
	case len(gc.ResponseJSONSchema) > 0:
		c.schema = gc.ResponseJSONSchema
	case len(gc.ResponseSchema) > 0:
		c.schema = gc.ResponseSchema
	case gc.ResponseMimeType == "application/json":
		c.schema = json.RawMessage(`{"type":"object"}`)
	}
	return c, nil
}

func parseOllama(body []byte) (*call, error) {
	var r struct {
		Model    string `json:"model"`
		Stream   *bool  `json:"stream"`
		Messages []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
		Tools []struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
		Format json.RawMessage `json:"format"`
	}
	if err := decode(body, &r); err != nil {
		return nil, err
	}
	// Ollama streams unless told not to.
	c := &call{api: apiOllama, model: r.Model, stream: r.Stream == nil || *r.Stream, tools: map[string]string{}}
	var t turns
	for _, m := range r.Messages {
		switch m.Role {
		case "system":
			c.system = append(c.system, m.Content)
		case "user":
			c.user = append(c.user, m.Content)
		}
		t.add(m.Role == "assistant")
	}
	c.turn = t.n
	for _, tl := range r.Tools {
		c.tools[tl.Function.Name] = kindFunction
	}
	switch f := bytes.TrimSpace(r.Format); {
	case string(f) == `"json"`:
		c.schema = json.RawMessage(`{"type":"object"}`)
	case len(f) > 0 && f[0] == '{':
		c.schema = f
	}
	return c, nil
}
