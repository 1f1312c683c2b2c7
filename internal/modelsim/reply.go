package modelsim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// reply is the answer chosen for one request, ready to be written in any
// API's format.
type reply struct {
	id    string // unique per server, for message and call ids
	rule  string // conversation name, or "default"
	turn  int    // index of the turn played
	text  string
	calls []toolUse
	err   *APIError
	usage Usage // with estimates filled in
}

// toolUse is a scripted tool call with its input in every form the APIs
// want it.
type toolUse struct {
	id    string
	name  string
	kind  string         // kindFunction or kindCustom
	args  string         // JSON object text, for function tools
	obj   map[string]any // the same object, for APIs that embed it
	input string         // raw text, for custom (freeform) tools
}

// wantsTools reports whether the model stops to have tools run.
func (r *reply) wantsTools() bool { return len(r.calls) > 0 }

// choose picks the conversation and turn for c and fills in the reply.
// n makes message and tool call ids unique across requests.
func choose(sc *Scenario, c *call, n int64) *reply {
	r := &reply{rule: "default"}
	var t *Turn
	for i := range sc.Conversations {
		conv := &sc.Conversations[i]
		if !conv.Match.matches(c) {
			continue
		}
		r.rule = conv.Name
		if r.rule == "" {
			r.rule = fmt.Sprintf("conversations[%d]", i)
		}
		r.turn = min(c.turn, len(conv.Turns)-1)
		t = &conv.Turns[r.turn]
		break
	}
	if t == nil {
		t = sc.Default
		if t == nil {
			t = &Turn{Text: "OK"}
			if c.schema != nil {
				t.Text = example(c.schema)
			}
		}
	}
	cwd := c.cwd()
	if cwd == "" {
		cwd = "."
	}
	r.text = strings.ReplaceAll(t.Text, "{{cwd}}", cwd)
	r.err = t.Error
	r.id = fmt.Sprint(n)
	out := len(r.text)
	for i, tc := range t.Tools {
		u := toolUse{id: fmt.Sprintf("%d_%d", n, i), name: tc.Name, kind: c.tools[tc.Name]}
		if u.kind == "" {
			u.kind = kindFunction
		}
		u.setInput(substitute(tc.Input, cwd))
		r.calls = append(r.calls, u)
		out += len(u.args)
	}
	r.usage = t.Usage
	if r.usage.InputTokens == 0 {
		r.usage.InputTokens = max(1, c.size/4)
	}
	if r.usage.OutputTokens == 0 {
		r.usage.OutputTokens = max(1, out/4)
	}
	return r
}

// setInput stores a tool's input, a mapping or a string, in every form.
func (u *toolUse) setInput(in any) {
	switch x := in.(type) {
	case map[string]any:
		u.obj = x
		b, _ := json.Marshal(x)
		u.args = string(b)
		u.input = u.args
	case string:
		u.input = x
		if json.Unmarshal([]byte(x), &u.obj) == nil && u.obj != nil {
			u.args = x
			return
		}
		u.obj = map[string]any{"input": x}
		b, _ := json.Marshal(u.obj)
		u.args = string(b)
	default:
		u.obj = map[string]any{}
		u.args = "{}"
		u.input = "{}"
	}
}

// substitute replaces {{cwd}} in every string of a tool input.
func substitute(v any, cwd string) any {
	switch x := v.(type) {
	case string:
		return strings.ReplaceAll(x, "{{cwd}}", cwd)
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = substitute(e, cwd)
		}
		return m
	case []any:
		l := make([]any, len(x))
		for i, e := range x {
			l[i] = substitute(e, cwd)
		}
		return l
	}
	return v
}

func (m Match) matches(c *call) bool {
	if m.API != "" && m.API != c.api {
		return false
	}
	if m.Model != "" && !strings.Contains(c.model, m.Model) {
		return false
	}
	if m.Tool != "" {
		if _, ok := c.tools[m.Tool]; !ok {
			return false
		}
	}
	if m.Contains != "" && !strings.Contains(c.text(), m.Contains) {
		return false
	}
	if m.Role != "" && !strings.Contains(c.text(), "You are the **"+m.Role+"**") {
		return false
	}
	return true
}

// example returns a small JSON value that fits a JSON schema (empty
// strings and lists, numbers 1 or their minimum, the first enum value), so
// a client asking for structured output, such as Gemini CLI's model
// router, gets something it can parse.
func example(schema json.RawMessage) string {
	var s map[string]any
	if json.Unmarshal(schema, &s) != nil {
		return "{}"
	}
	b, err := json.Marshal(exampleValue(s, 0))
	if err != nil {
		return "{}"
	}
	return string(b)
}

func exampleValue(s map[string]any, depth int) any {
	if depth > 8 {
		return nil
	}
	if c, ok := s["const"]; ok {
		return c
	}
	if e, ok := s["enum"].([]any); ok && len(e) > 0 {
		return e[0]
	}
	for _, k := range []string{"anyOf", "oneOf", "allOf"} {
		if alts, ok := s[k].([]any); ok && len(alts) > 0 {
			if a, ok := alts[0].(map[string]any); ok {
				return exampleValue(a, depth+1)
			}
		}
	}
	typ, _ := s["type"].(string)
	if list, ok := s["type"].([]any); ok {
		for _, t := range list {
			if ts, _ := t.(string); ts != "null" {
				typ = ts
				break
			}
		}
	}
	props, hasProps := s["properties"].(map[string]any)
	switch strings.ToLower(typ) {
	case "string":
		return ""
	case "integer", "number":
		if m, ok := s["minimum"].(float64); ok {
			return m
		}
		// 1 rather than 0: scores and counts usually start there.
		return 1
	case "boolean":
		return false
	case "array":
		return []any{}
	case "null":
		return nil
	case "object", "":
		if typ == "" && !hasProps {
			return map[string]any{}
		}
		obj := map[string]any{}
		for k, p := range props {
			if ps, ok := p.(map[string]any); ok {
				obj[k] = exampleValue(ps, depth+1)
			}
		}
		return obj
	}
	return nil
}

// errorType names an HTTP status the way the Anthropic and OpenAI APIs do.
func errorType(api string, status int) string {
	if api == apiAnthropic {
		switch status {
		case http.StatusBadRequest:
			return "invalid_request_error"
		case http.StatusUnauthorized:
			return "authentication_error"
		case http.StatusForbidden:
			return "permission_error"
		case http.StatusNotFound:
			return "not_found_error"
		case http.StatusRequestEntityTooLarge:
			return "request_too_large"
		case http.StatusTooManyRequests:
			return "rate_limit_error"
		case 529:
			return "overloaded_error"
		}
		return "api_error"
	}
	switch status {
	case http.StatusBadRequest, http.StatusNotFound, http.StatusRequestEntityTooLarge:
		return "invalid_request_error"
	case http.StatusUnauthorized:
		return "invalid_api_key"
	case http.StatusForbidden:
		return "permission_denied"
	case http.StatusTooManyRequests:
		return "rate_limit_exceeded"
	}
	return "server_error"
}

// googleStatus is the canonical status name Google APIs put in errors.
func googleStatus(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "INVALID_ARGUMENT"
	case http.StatusUnauthorized:
		return "UNAUTHENTICATED"
	case http.StatusForbidden:
		return "PERMISSION_DENIED"
	case http.StatusNotFound:
		return "NOT_FOUND"
	case http.StatusTooManyRequests:
		return "RESOURCE_EXHAUSTED"
	case http.StatusServiceUnavailable:
		return "UNAVAILABLE"
	case http.StatusGatewayTimeout:
		return "DEADLINE_EXCEEDED"
	}
	return "INTERNAL"
}
