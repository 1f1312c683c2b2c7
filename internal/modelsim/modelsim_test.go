package modelsim

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// testScenario scripts a coder that writes a file, then reports; and an
// auditor that only answers.
const testScenario = `
conversations:
  - name: coder
    match: {role: coder}
    turns:
      - text: Writing the file.
        tools:
          - name: Write
            input: {file_path: "{{cwd}}/a.txt", content: "hi\n"}
        usage: {input_tokens: 100, output_tokens: 20, cache_read_tokens: 7}
      - text: "Done.\n### SIGNAL BLOCK\n- Result: SUCCESS\n"
        usage: {input_tokens: 150, output_tokens: 30}
  - name: auditor
    match: {contains: "AUDIT", api: ollama}
    turns:
      - text: rating 9
`

func newTestServer(t *testing.T, scenario string) (*httptest.Server, *lockedBuffer) {
	t.Helper()
	sc, err := Parse("test.yaml", []byte(scenario))
	if err != nil {
		t.Fatal(err)
	}
	log := &lockedBuffer{}
	srv := httptest.NewServer(New(sc, log))
	t.Cleanup(srv.Close)
	return srv, log
}

// answer is a model answer decoded from any API, stream or not.
type answer struct {
	Text   string
	Tools  []tool
	Input  int
	Output int
	Stop   string // the API's stop or finish reason, "" where it has none
}

type tool struct {
	Name string
	Args map[string]any
}

// apiCase knows how to ask one API for a conversation with n earlier
// assistant turns, and how to decode its answer.
type apiCase struct {
	api    string
	path   string
	stream bool
	body   func(prompt string, n int) any
	decode func(t *testing.T, body []byte) answer
}

// prompt is a cadre coder prompt from a Claude-like client in /work/repo.
const prompt = "You are the **coder** for task `01`.\nPrimary working directory: /work/repo\nCreate a.txt."

func anthropicBody(stream bool) func(string, int) any {
	return func(p string, n int) any {
		msgs := []any{map[string]any{"role": "user", "content": p}}
		for i := range n {
			id := fmt.Sprintf("toolu_%d", i)
			msgs = append(msgs,
				map[string]any{"role": "assistant", "content": []any{
					map[string]any{"type": "text", "text": "x"},
					map[string]any{"type": "tool_use", "id": id, "name": "Write", "input": map[string]any{}}}},
				map[string]any{"role": "user", "content": []any{
					map[string]any{"type": "tool_result", "tool_use_id": id, "content": "ok"}}})
		}
		return map[string]any{"model": "claude-test", "max_tokens": 100, "stream": stream,
			"system":   []any{map[string]any{"type": "text", "text": "You are a coding agent."}},
			"tools":    []any{map[string]any{"name": "Write", "input_schema": map[string]any{"type": "object"}}},
			"messages": msgs}
	}
}

func openAIBody(stream bool) func(string, int) any {
	return func(p string, n int) any {
		msgs := []any{map[string]any{"role": "system", "content": "You are a coding agent."},
			map[string]any{"role": "user", "content": p}}
		for i := range n {
			id := fmt.Sprintf("call_%d", i)
			msgs = append(msgs,
				map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{"id": id, "type": "function",
					"function": map[string]any{"name": "Write", "arguments": "{}"}}}},
				map[string]any{"role": "tool", "tool_call_id": id, "content": "ok"})
		}
		return map[string]any{"model": "gpt-test", "stream": stream, "stream_options": map[string]any{"include_usage": true},
			"tools": []any{map[string]any{"type": "function", "function": map[string]any{"name": "Write"}}}, "messages": msgs}
	}
}

func responsesBody(stream bool) func(string, int) any {
	return func(p string, n int) any {
		input := []any{map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": p}}}}
		for i := range n {
			id := fmt.Sprintf("call_%d", i)
			input = append(input,
				map[string]any{"type": "reasoning", "summary": []any{}},
				map[string]any{"type": "message", "role": "assistant", "content": []any{map[string]any{"type": "output_text", "text": "x"}}},
				map[string]any{"type": "function_call", "call_id": id, "name": "Write", "arguments": "{}"},
				map[string]any{"type": "function_call_output", "call_id": id, "output": "ok"})
		}
		return map[string]any{"model": "gpt-test", "stream": stream, "instructions": "You are a coding agent.",
			"tools": []any{map[string]any{"type": "function", "name": "Write"}}, "input": input}
	}
}

func geminiBody(p string, n int) any {
	contents := []any{map[string]any{"role": "user", "parts": []any{map[string]any{"text": p}}}}
	for range n {
		contents = append(contents,
			map[string]any{"role": "model", "parts": []any{map[string]any{"functionCall": map[string]any{"name": "Write", "args": map[string]any{}}}}},
			map[string]any{"role": "user", "parts": []any{map[string]any{"functionResponse": map[string]any{"name": "Write", "response": map[string]any{}}}}})
	}
	return map[string]any{"contents": contents,
		"systemInstruction": map[string]any{"parts": []any{map[string]any{"text": "You are a coding agent."}}},
		"tools":             []any{map[string]any{"functionDeclarations": []any{map[string]any{"name": "Write"}}}}}
}

func ollamaBody(stream bool) func(string, int) any {
	return func(p string, n int) any {
		msgs := []any{map[string]any{"role": "user", "content": p}}
		for range n {
			msgs = append(msgs,
				map[string]any{"role": "assistant", "content": "", "tool_calls": []any{map[string]any{"function": map[string]any{"name": "Write", "arguments": map[string]any{}}}}},
				map[string]any{"role": "tool", "content": "ok"})
		}
		return map[string]any{"model": "qwen-test", "stream": stream, "messages": msgs,
			"tools": []any{map[string]any{"type": "function", "function": map[string]any{"name": "Write"}}}}
	}
}

func apiCases() []apiCase {
	return []apiCase{
		{api: "anthropic", path: "/v1/messages?beta=true", body: anthropicBody(false), decode: decodeAnthropic},
		{api: "anthropic", path: "/v1/messages", stream: true, body: anthropicBody(true), decode: decodeAnthropicStream},
		{api: "openai", path: "/v1/chat/completions", body: openAIBody(false), decode: decodeOpenAI},
		{api: "openai", path: "/v1/chat/completions", stream: true, body: openAIBody(true), decode: decodeOpenAIStream},
		{api: "responses", path: "/v1/responses", body: responsesBody(false), decode: decodeResponses},
		{api: "responses", path: "/v1/responses", stream: true, body: responsesBody(true), decode: decodeResponsesStream},
		{api: "gemini", path: "/v1beta/models/gemini-test:generateContent", body: geminiBody, decode: decodeGemini},
		{api: "gemini", path: "/v1beta/models/gemini-test:streamGenerateContent?alt=sse", stream: true, body: geminiBody, decode: decodeGeminiStream},
		{api: "gemini", path: "/v1beta/models/gemini-test:streamGenerateContent", stream: true, body: geminiBody, decode: decodeGeminiArray},
		{api: "ollama", path: "/api/chat", body: ollamaBody(false), decode: decodeOllama},
		{api: "ollama", path: "/api/chat", stream: true, body: ollamaBody(true), decode: decodeOllama},
	}
}

func (c apiCase) name() string {
	mode := "whole"
	if c.stream {
		mode = "stream"
	}
	if c.api == "gemini" && c.stream && !strings.Contains(c.path, "alt=sse") {
		mode = "array"
	}
	return c.api + "/" + mode
}

func post(t *testing.T, url string, body any) (int, []byte) {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(url, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, out
}

// TestAPIs plays the coder conversation over every API, stream and not:
// first the tool call, then the final text.
func TestAPIs(t *testing.T) {
	wantTool := []tool{{Name: "Write", Args: map[string]any{"file_path": "/work/repo/a.txt", "content": "hi\n"}}}
	stops := map[string][2]string{
		"anthropic": {"tool_use", "end_turn"},
		"openai":    {"tool_calls", "stop"},
		"gemini":    {"STOP", "STOP"},
		"ollama":    {"stop", "stop"},
		"responses": {"", ""},
	}
	for _, tc := range apiCases() {
		t.Run(tc.name(), func(t *testing.T) {
			srv, _ := newTestServer(t, testScenario)
			status, body := post(t, srv.URL+tc.path, tc.body(prompt, 0))
			if status != http.StatusOK {
				t.Fatalf("status %d: %s", status, body)
			}
			got := tc.decode(t, body)
			want := answer{Text: "Writing the file.", Tools: wantTool, Input: 100, Output: 20, Stop: stops[tc.api][0]}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("turn 0 (-want +got):\n%s", d)
			}
			status, body = post(t, srv.URL+tc.path, tc.body(prompt, 1))
			if status != http.StatusOK {
				t.Fatalf("status %d: %s", status, body)
			}
			got = tc.decode(t, body)
			want = answer{Text: "Done.\n### SIGNAL BLOCK\n- Result: SUCCESS\n", Input: 150, Output: 30, Stop: stops[tc.api][1]}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("turn 1 (-want +got):\n%s", d)
			}
		})
	}
}

// TestTurnSelection checks that the turn played is the number of
// assistant turns already in the request, the last repeating past the end.
func TestTurnSelection(t *testing.T) {
	const sc = `
conversations:
  - name: three
    turns: [{text: one}, {text: two}, {text: three}]
`
	for _, tc := range apiCases() {
		t.Run(tc.name(), func(t *testing.T) {
			srv, log := newTestServer(t, sc)
			for n, want := range []string{"one", "two", "three", "three", "three"} {
				status, body := post(t, srv.URL+tc.path, tc.body("hello", n))
				if status != http.StatusOK {
					t.Fatalf("status %d: %s", status, body)
				}
				if got := tc.decode(t, body).Text; got != want {
					t.Errorf("with %d assistant turns: text %q, want %q", n, got, want)
				}
			}
			var turns []int
			for _, e := range log.entries(t) {
				turns = append(turns, e.Turn)
			}
			if d := cmp.Diff([]int{0, 1, 2, 2, 2}, turns); d != "" {
				t.Errorf("logged turns (-want +got):\n%s", d)
			}
		})
	}
}

func TestMatch(t *testing.T) {
	const sc = `
conversations:
  - name: by-role
    match: {role: auditor}
    turns: [{text: auditor}]
  - name: by-tool-and-api
    match: {tool: write_file, api: gemini}
    turns: [{text: gemini writer}]
  - name: by-model
    match: {model: mini, contains: "PLAN"}
    turns: [{text: planner}]
`
	tests := []struct {
		name string
		path string
		body any
		want string
		rule string
	}{
		{"role in the user message", "/v1/chat/completions",
			map[string]any{"model": "m", "messages": []any{map[string]any{"role": "user", "content": "You are the **auditor** for task 1"}}},
			"auditor", "by-role"},
		{"role in the system prompt", "/v1/messages",
			map[string]any{"model": "m", "system": "You are the **auditor**.", "messages": []any{map[string]any{"role": "user", "content": "go"}}},
			"auditor", "by-role"},
		{"role needs the bold name", "/v1/messages",
			map[string]any{"model": "m", "messages": []any{map[string]any{"role": "user", "content": "You are the auditor"}}},
			"OK", "default"},
		{"tool result text is not searched", "/v1/messages",
			map[string]any{"model": "m", "messages": []any{
				map[string]any{"role": "user", "content": "go"},
				map[string]any{"role": "assistant", "content": "x"},
				map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": "1", "content": "You are the **auditor**"}}}}},
			"OK", "default"},
		{"tool offered, right API", "/v1beta/models/g:generateContent",
			map[string]any{"contents": []any{map[string]any{"role": "user", "parts": []any{map[string]any{"text": "hi"}}}},
				"tools": []any{map[string]any{"functionDeclarations": []any{map[string]any{"name": "write_file"}}}}},
			"gemini writer", "by-tool-and-api"},
		{"tool offered, wrong API", "/api/chat",
			map[string]any{"model": "m", "stream": false, "messages": []any{map[string]any{"role": "user", "content": "hi"}},
				"tools": []any{map[string]any{"function": map[string]any{"name": "write_file"}}}},
			"OK", "default"},
		{"model and text", "/v1/responses",
			map[string]any{"model": "gpt-mini", "input": "PLAN this"}, "planner", "by-model"},
		{"model without text", "/v1/responses",
			map[string]any{"model": "gpt-mini", "input": "code this"}, "OK", "default"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv, log := newTestServer(t, sc)
			status, body := post(t, srv.URL+tc.path, tc.body)
			if status != http.StatusOK {
				t.Fatalf("status %d: %s", status, body)
			}
			if !bytes.Contains(body, []byte(tc.want)) {
				t.Errorf("answer %s, want text %q", body, tc.want)
			}
			if e := log.entries(t); len(e) != 1 || e[0].Rule != tc.rule {
				t.Errorf("log %+v, want one entry with rule %q", e, tc.rule)
			}
		})
	}
}

// TestDefault checks the answers to requests no conversation matches.
func TestDefault(t *testing.T) {
	router := map[string]any{
		"contents": []any{map[string]any{"role": "user", "parts": []any{map[string]any{"text": "route this"}}}},
		"generationConfig": map[string]any{"responseMimeType": "application/json", "responseJsonSchema": map[string]any{
			"type": "OBJECT",
			"properties": map[string]any{
				"complexity_reasoning": map[string]any{"type": "STRING"},
				"complexity_score":     map[string]any{"type": "INTEGER"},
				"mode":                 map[string]any{"type": "STRING", "enum": []any{"fast", "slow"}},
				"tags":                 map[string]any{"type": "ARRAY", "items": map[string]any{"type": "STRING"}},
			}}}}
	tests := []struct {
		name, scenario string
		body           any
		want           string
	}{
		{"plain OK", "conversations: []", router, ""},
		{"scenario default", "default: {text: fallback answer}", router, "fallback answer"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv, _ := newTestServer(t, tc.scenario)
			_, body := post(t, srv.URL+"/v1beta/models/flash:generateContent", tc.body)
			got := decodeGemini(t, body).Text
			if tc.want != "" {
				if got != tc.want {
					t.Errorf("text %q, want %q", got, tc.want)
				}
				return
			}
			var v map[string]any
			if err := json.Unmarshal([]byte(got), &v); err != nil {
				t.Fatalf("schema answer %q is not JSON: %v", got, err)
			}
			want := map[string]any{"complexity_reasoning": "", "complexity_score": 1.0, "mode": "fast", "tags": []any{}}
			if d := cmp.Diff(want, v); d != "" {
				t.Errorf("schema answer (-want +got):\n%s", d)
			}
		})
	}
	t.Run("OK without a schema", func(t *testing.T) {
		srv, _ := newTestServer(t, "")
		_, body := post(t, srv.URL+"/v1/messages", map[string]any{"model": "m", "messages": []any{map[string]any{"role": "user", "content": "title?"}}})
		if got := decodeAnthropic(t, body).Text; got != "OK" {
			t.Errorf("text %q, want OK", got)
		}
	})
}

// TestCwd checks that {{cwd}} takes each CLI's announced directory.
func TestCwd(t *testing.T) {
	const sc = `
conversations:
  - turns:
      - tools: [{name: Write, input: {file_path: "{{cwd}}/a.txt", list: ["{{cwd}}"]}}]
`
	tests := []struct {
		name, text, want string
	}{
		{"claude", "# Environment\n - Primary working directory: /home/u/proj\n - Is a git repository: true", "/home/u/proj"},
		{"codex", "<environment_context>\n  <cwd>/srv/x</cwd>\n</environment_context>", "/srv/x"},
		{"gemini", "- **Workspace Directories:**\n  - /tmp/ws\n- **Directory Structure:**", "/tmp/ws"},
		{"qwen", "I'm currently working in the following directories:\n  - /tmp/qw/a\n  - /tmp/qw/b\n", "/tmp/qw/a"},
		{"none", "no directory here", "."},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv, _ := newTestServer(t, sc)
			_, body := post(t, srv.URL+"/v1/messages", anthropicBody(false)(tc.text, 0))
			got := decodeAnthropic(t, body).Tools
			want := []tool{{Name: "Write", Args: map[string]any{"file_path": tc.want + "/a.txt", "list": []any{tc.want}}}}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("tool input (-want +got):\n%s", d)
			}
		})
	}
}

// TestErrorTurn checks that an error turn answers with the status and the
// API's own error body, for every API.
func TestErrorTurn(t *testing.T) {
	const sc = `
conversations:
  - turns:
      - error: {status: 429, message: slow down}
`
	want := map[string]string{
		"anthropic": `{"error":{"message":"slow down","type":"rate_limit_error"},"type":"error"}`,
		"openai":    `{"error":{"code":"rate_limit_exceeded","message":"slow down","param":null,"type":"rate_limit_exceeded"}}`,
		"responses": `{"error":{"code":"rate_limit_exceeded","message":"slow down","param":null,"type":"rate_limit_exceeded"}}`,
		"gemini":    `{"error":{"code":429,"message":"slow down","status":"RESOURCE_EXHAUSTED"}}`,
		"ollama":    `{"error":"slow down"}`,
	}
	for _, tc := range apiCases() {
		t.Run(tc.name(), func(t *testing.T) {
			srv, log := newTestServer(t, sc)
			status, body := post(t, srv.URL+tc.path, tc.body("hi", 0))
			if status != http.StatusTooManyRequests {
				t.Errorf("status %d, want 429", status)
			}
			if got := strings.TrimSpace(string(body)); got != want[tc.api] {
				t.Errorf("body %s, want %s", got, want[tc.api])
			}
			if e := log.entries(t); len(e) != 1 || e[0].Status != 429 || e[0].Error != "slow down" {
				t.Errorf("log %+v, want one 429 entry", e)
			}
		})
	}
}

// TestLog checks the request log's fields, and the bytes/4 estimate of
// input tokens when the scenario gives none.
func TestLog(t *testing.T) {
	srv, log := newTestServer(t, "conversations: [{name: any, turns: [{text: twelve chars}]}]")
	body := openAIBody(false)("hello", 0)
	raw, _ := json.Marshal(body)
	post(t, srv.URL+"/v1/chat/completions", body)
	post(t, srv.URL+"/nowhere", body)
	got := log.entries(t)
	if len(got) != 2 {
		t.Fatalf("log has %d entries, want 2", len(got))
	}
	for i := range got {
		if got[i].Time.IsZero() {
			t.Errorf("entry %d has no time", i)
		}
		got[i].Time = got[0].Time
	}
	want := []LogEntry{
		{Time: got[0].Time, API: "openai", Path: "/v1/chat/completions", Model: "gpt-test", Rule: "any", Status: 200,
			RequestBytes: len(raw), InputTokens: len(raw) / 4, OutputTokens: 3},
		{Time: got[0].Time, API: "unknown", Path: "/nowhere", Status: 404, Error: "modelsim serves no POST /nowhere"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("log (-want +got):\n%s", d)
	}
}

func TestBadRequest(t *testing.T) {
	srv, log := newTestServer(t, "")
	for _, path := range []string{"/v1/messages", "/v1/chat/completions", "/v1/responses", "/v1beta/models/g:generateContent", "/api/chat"} {
		resp, err := http.Post(srv.URL+path, "application/json", strings.NewReader("{not json"))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !bytes.Contains(body, []byte("not the JSON this API expects")) {
			t.Errorf("%s: status %d body %s, want 400 naming the bad JSON", path, resp.StatusCode, body)
		}
	}
	if n := len(log.entries(t)); n != 5 {
		t.Errorf("logged %d requests, want 5", n)
	}
}

// TestCustomTool checks that a freeform tool of the Responses API (Codex's
// apply_patch, or its code-mode exec inside a namespace) is answered with
// a custom_tool_call carrying the raw input.
func TestCustomTool(t *testing.T) {
	const sc = `
conversations:
  - turns:
      - tools: [{name: exec, input: "await tools.apply_patch(\"*** Begin Patch\")"}, {name: exec_command, input: {cmd: ls}}]
`
	srv, _ := newTestServer(t, sc)
	body := map[string]any{"model": "gpt", "stream": true,
		"tools": []any{map[string]any{"type": "function", "name": "exec_command"}},
		"input": []any{
			map[string]any{"type": "additional_tools", "role": "developer", "tools": []any{
				map[string]any{"type": "namespace", "name": "functions", "tools": []any{map[string]any{"type": "custom", "name": "exec"}}}}},
			map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": "go"}}}}}
	_, out := post(t, srv.URL+"/v1/responses", body)
	var items []map[string]any
	for _, ev := range sseEvents(t, out) {
		if ev.name == "response.output_item.done" {
			items = append(items, ev.data["item"].(map[string]any))
		}
	}
	if len(items) != 2 {
		t.Fatalf("got %d output items, want 2: %s", len(items), out)
	}
	if items[0]["type"] != "custom_tool_call" || items[0]["input"] != `await tools.apply_patch("*** Begin Patch")` {
		t.Errorf("item 0 = %v, want a custom_tool_call with the raw input", items[0])
	}
	if items[1]["type"] != "function_call" || items[1]["arguments"] != `{"cmd":"ls"}` {
		t.Errorf("item 1 = %v, want a function_call with JSON arguments", items[1])
	}
}

func TestCountTokens(t *testing.T) {
	srv, _ := newTestServer(t, "")
	body := map[string]any{"model": "m", "messages": []any{map[string]any{"role": "user", "content": strings.Repeat("x", 400)}}}
	raw, _ := json.Marshal(body)
	_, out := post(t, srv.URL+"/v1/messages/count_tokens", body)
	var got struct {
		InputTokens int `json:"input_tokens"`
	}
	if err := json.Unmarshal(out, &got); err != nil || got.InputTokens != len(raw)/4 {
		t.Errorf("count_tokens = %s, want input_tokens %d", out, len(raw)/4)
	}
}

// The model lists answer as the real APIs do, naming the one model, so a
// client probing them finds the server.
func TestModelLists(t *testing.T) {
	srv, log := newTestServer(t, "")
	for path, want := range map[string]string{"/v1/models": `"id":"` + ModelName + `"`, "/api/tags": `"name":"` + ModelName + `"`} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(out), want) {
			t.Errorf("GET %s = %d %s, want 200 naming %s", path, resp.StatusCode, out, ModelName)
		}
	}
	if e := log.entries(t); len(e) != 2 || e[0].API != "models" || e[1].API != "models" {
		t.Errorf("log = %+v, want the two model list requests", e)
	}
}

func TestStart(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := Start(ctx, "127.0.0.1:0", New(Scenario{}, nil))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(srv.URL, "http://127.0.0.1:") || strings.HasSuffix(srv.URL, ":0") {
		t.Errorf("URL %q, want a chosen loopback port", srv.URL)
	}
	status, _ := post(t, srv.URL+"/api/chat", map[string]any{"model": "m", "stream": false, "messages": []any{}})
	if status != http.StatusOK {
		t.Errorf("status %d, want 200", status)
	}
	// A second server cannot take the same address.
	if _, err := Start(ctx, strings.TrimPrefix(srv.URL, "http://"), New(Scenario{}, nil)); err == nil {
		t.Error("Start on a busy address succeeded, want an error")
	}
	cancel()
	if err := srv.Wait(); err != nil {
		t.Errorf("Wait after cancel = %v, want nil", err)
	}
	if _, err := http.Get(srv.URL); err == nil {
		t.Error("server still answers after its context ended")
	}
}

// --- decoders: each API's answer back to an answer ---

func sortTools(ts []tool) []tool {
	sort.SliceStable(ts, func(i, j int) bool { return ts[i].Name < ts[j].Name })
	return ts
}

func args(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("tool arguments %q: %v", s, err)
	}
	return m
}

func unmarshal(t *testing.T, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
}

type event struct {
	name string
	data map[string]any
	raw  string
}

// sseEvents splits a Server-Sent Events body into events.
func sseEvents(t *testing.T, body []byte) []event {
	t.Helper()
	var evs []event
	for _, block := range strings.Split(strings.TrimSpace(string(body)), "\n\n") {
		var ev event
		for _, line := range strings.Split(block, "\n") {
			switch {
			case strings.HasPrefix(line, "event: "):
				ev.name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				ev.raw = strings.TrimPrefix(line, "data: ")
			default:
				t.Fatalf("unexpected SSE line %q", line)
			}
		}
		if ev.raw != "[DONE]" {
			unmarshal(t, []byte(ev.raw), &ev.data)
			if ev.name != "" && ev.data["type"] != ev.name {
				t.Errorf("event %q carries type %v", ev.name, ev.data["type"])
			}
		}
		evs = append(evs, ev)
	}
	return evs
}

type anthropicMessage struct {
	Type    string `json:"type"`
	Content []struct {
		Type  string         `json:"type"`
		Text  string         `json:"text"`
		Name  string         `json:"name"`
		ID    string         `json:"id"`
		Input map[string]any `json:"input"`
	} `json:"content"`
	StopReason string `json:"stop_reason"`
	Usage      struct {
		InputTokens  int `json:"input_tokens"`
		OutputTokens int `json:"output_tokens"`
	} `json:"usage"`
}

func decodeAnthropic(t *testing.T, body []byte) answer {
	var m anthropicMessage
	unmarshal(t, body, &m)
	a := answer{Input: m.Usage.InputTokens, Output: m.Usage.OutputTokens, Stop: m.StopReason}
	for _, c := range m.Content {
		switch c.Type {
		case "text":
			a.Text += c.Text
		case "tool_use":
			if !strings.HasPrefix(c.ID, "toolu_") {
				t.Errorf("tool_use id %q", c.ID)
			}
			a.Tools = append(a.Tools, tool{c.Name, c.Input})
		}
	}
	return a
}

func decodeAnthropicStream(t *testing.T, body []byte) answer {
	evs := sseEvents(t, body)
	var a answer
	names := []string{}
	inputs := map[int]string{}
	for _, ev := range evs {
		names = append(names, ev.name)
		switch ev.name {
		case "message_start":
			a.Input = int(num(get(ev.data, "message", "usage", "input_tokens")))
		case "content_block_start":
			if get(ev.data, "content_block", "type") == "tool_use" {
				a.Tools = append(a.Tools, tool{Name: get(ev.data, "content_block", "name").(string)})
			}
		case "content_block_delta":
			switch get(ev.data, "delta", "type") {
			case "text_delta":
				a.Text += get(ev.data, "delta", "text").(string)
			case "input_json_delta":
				inputs[len(a.Tools)-1] += get(ev.data, "delta", "partial_json").(string)
			}
		case "message_delta":
			a.Output = int(num(get(ev.data, "usage", "output_tokens")))
			a.Stop = get(ev.data, "delta", "stop_reason").(string)
		}
	}
	for i, in := range inputs {
		a.Tools[i].Args = args(t, in)
	}
	if names[0] != "message_start" || names[len(names)-1] != "message_stop" {
		t.Errorf("events %v, want message_start first and message_stop last", names)
	}
	return a
}

func decodeOpenAI(t *testing.T, body []byte) answer {
	var r struct {
		Choices []struct {
			Message struct {
				Content   *string `json:"content"`
				ToolCalls []struct {
					Function struct{ Name, Arguments string } `json:"function"`
				} `json:"tool_calls"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage struct {
			PromptTokens     int `json:"prompt_tokens"`
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
	}
	unmarshal(t, body, &r)
	ch := r.Choices[0]
	a := answer{Input: r.Usage.PromptTokens, Output: r.Usage.CompletionTokens, Stop: ch.FinishReason}
	if ch.Message.Content != nil {
		a.Text = *ch.Message.Content
	}
	for _, tc := range ch.Message.ToolCalls {
		a.Tools = append(a.Tools, tool{tc.Function.Name, args(t, tc.Function.Arguments)})
	}
	return a
}

func decodeOpenAIStream(t *testing.T, body []byte) answer {
	evs := sseEvents(t, body)
	if evs[len(evs)-1].raw != "[DONE]" {
		t.Errorf("last event %q, want [DONE]", evs[len(evs)-1].raw)
	}
	var a answer
	var argText []string
	for _, ev := range evs[:len(evs)-1] {
		if u, ok := ev.data["usage"]; ok {
			a.Input = int(num(get(u, "prompt_tokens")))
			a.Output = int(num(get(u, "completion_tokens")))
			continue
		}
		ch := ev.data["choices"].([]any)[0]
		if f, ok := get(ch, "finish_reason").(string); ok {
			a.Stop = f
		}
		if s, ok := get(ch, "delta", "content").(string); ok {
			a.Text += s
		}
		calls, _ := get(ch, "delta", "tool_calls").([]any)
		for _, c := range calls {
			i := int(num(get(c, "index")))
			if name, ok := get(c, "function", "name").(string); ok {
				a.Tools = append(a.Tools, tool{Name: name})
				argText = append(argText, "")
			}
			argText[i] += get(c, "function", "arguments").(string)
		}
	}
	for i := range a.Tools {
		a.Tools[i].Args = args(t, argText[i])
	}
	return a
}

// responsesOutput decodes a finished response object.
func responsesOutput(t *testing.T, resp any) answer {
	var r struct {
		Status string `json:"status"`
		Output []struct {
			Type    string `json:"type"`
			Name    string `json:"name"`
			CallID  string `json:"call_id"`
			Args    string `json:"arguments"`
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"output"`
		Usage struct {
			InputTokens  int `json:"input_tokens"`
			OutputTokens int `json:"output_tokens"`
		} `json:"usage"`
	}
	b, _ := json.Marshal(resp)
	unmarshal(t, b, &r)
	if r.Status != "completed" {
		t.Errorf("response status %q, want completed", r.Status)
	}
	a := answer{Input: r.Usage.InputTokens, Output: r.Usage.OutputTokens}
	for _, it := range r.Output {
		switch it.Type {
		case "message":
			for _, c := range it.Content {
				a.Text += c.Text
			}
		case "function_call":
			if it.CallID == "" {
				t.Error("function_call without call_id")
			}
			a.Tools = append(a.Tools, tool{it.Name, args(t, it.Args)})
		}
	}
	return a
}

func decodeResponses(t *testing.T, body []byte) answer {
	var v any
	unmarshal(t, body, &v)
	return responsesOutput(t, v)
}

func decodeResponsesStream(t *testing.T, body []byte) answer {
	evs := sseEvents(t, body)
	if evs[0].name != "response.created" || evs[len(evs)-1].name != "response.completed" {
		t.Errorf("events from %q to %q, want response.created to response.completed", evs[0].name, evs[len(evs)-1].name)
	}
	// Deltas must add up to what the done events and the final response say.
	var text, fnArgs string
	for i, ev := range evs {
		if num(ev.data["sequence_number"]) != float64(i) {
			t.Errorf("event %d has sequence_number %v", i, ev.data["sequence_number"])
		}
		switch ev.name {
		case "response.output_text.delta":
			text += ev.data["delta"].(string)
		case "response.function_call_arguments.delta":
			fnArgs += ev.data["delta"].(string)
		}
	}
	a := responsesOutput(t, evs[len(evs)-1].data["response"])
	if text != a.Text {
		t.Errorf("text deltas %q, final text %q", text, a.Text)
	}
	if len(a.Tools) > 0 && cmp.Diff(args(t, fnArgs), a.Tools[0].Args) != "" {
		t.Errorf("argument deltas %q differ from the final call", fnArgs)
	}
	return a
}

type geminiResponse struct {
	Candidates []struct {
		Content struct {
			Role  string `json:"role"`
			Parts []struct {
				Text         string `json:"text"`
				FunctionCall *struct {
					Name string         `json:"name"`
					Args map[string]any `json:"args"`
				} `json:"functionCall"`
			} `json:"parts"`
		} `json:"content"`
		FinishReason string `json:"finishReason"`
	} `json:"candidates"`
	UsageMetadata *struct {
		PromptTokenCount     int `json:"promptTokenCount"`
		CandidatesTokenCount int `json:"candidatesTokenCount"`
	} `json:"usageMetadata"`
}

func (g geminiResponse) addTo(a *answer) {
	c := g.Candidates[0]
	for _, p := range c.Content.Parts {
		a.Text += p.Text
		if p.FunctionCall != nil {
			a.Tools = append(a.Tools, tool{p.FunctionCall.Name, p.FunctionCall.Args})
		}
	}
	if c.FinishReason != "" {
		a.Stop = c.FinishReason
	}
	if u := g.UsageMetadata; u != nil {
		a.Input, a.Output = u.PromptTokenCount, u.CandidatesTokenCount
	}
}

func decodeGemini(t *testing.T, body []byte) answer {
	var g geminiResponse
	unmarshal(t, body, &g)
	var a answer
	g.addTo(&a)
	return a
}

func decodeGeminiStream(t *testing.T, body []byte) answer {
	var a answer
	for _, ev := range sseEvents(t, body) {
		var g geminiResponse
		unmarshal(t, []byte(ev.raw), &g)
		g.addTo(&a)
	}
	return a
}

func decodeGeminiArray(t *testing.T, body []byte) answer {
	var gs []geminiResponse
	unmarshal(t, body, &gs)
	var a answer
	for _, g := range gs {
		g.addTo(&a)
	}
	return a
}

// decodeOllama reads one object (stream false) or JSON lines.
func decodeOllama(t *testing.T, body []byte) answer {
	var a answer
	sc := bufio.NewScanner(bytes.NewReader(body))
	done := 0
	for sc.Scan() {
		var r struct {
			Message struct {
				Content   string `json:"content"`
				ToolCalls []struct {
					Function struct {
						Name      string         `json:"name"`
						Arguments map[string]any `json:"arguments"`
					} `json:"function"`
				} `json:"tool_calls"`
			} `json:"message"`
			Done            bool   `json:"done"`
			DoneReason      string `json:"done_reason"`
			PromptEvalCount int    `json:"prompt_eval_count"`
			EvalCount       int    `json:"eval_count"`
		}
		unmarshal(t, sc.Bytes(), &r)
		a.Text += r.Message.Content
		for _, tc := range r.Message.ToolCalls {
			a.Tools = append(a.Tools, tool{tc.Function.Name, tc.Function.Arguments})
		}
		if r.Done {
			done++
			a.Input, a.Output, a.Stop = r.PromptEvalCount, r.EvalCount, r.DoneReason
		}
	}
	if done != 1 {
		t.Errorf("%d objects with done:true, want 1", done)
	}
	a.Tools = sortTools(a.Tools)
	return a
}
