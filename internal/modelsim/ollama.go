package modelsim

import (
	"encoding/json"
	"net/http"
	"time"
)

// Ollama /api/chat: newline-delimited JSON objects, each with a message
// delta and done:false, ending with done:true, done_reason and the token
// counts prompt_eval_count and eval_count; with "stream": false, one
// object with the whole message.

func ollamaMessage(r *reply, content string, calls bool) map[string]any {
	m := map[string]any{"role": "assistant", "content": content}
	if calls && r.wantsTools() {
		var tc []any
		for _, u := range r.calls {
			tc = append(tc, map[string]any{"function": map[string]any{"name": u.name, "arguments": u.obj}})
		}
		m["tool_calls"] = tc
	}
	return m
}

func ollamaDone(c *call, r *reply, msg map[string]any) map[string]any {
	return map[string]any{
		"model": c.model, "created_at": time.Now().UTC().Format(time.RFC3339Nano), "message": msg,
		"done": true, "done_reason": "stop",
		"total_duration": 0, "load_duration": 0, "prompt_eval_duration": 0, "eval_duration": 0,
		"prompt_eval_count": r.usage.InputTokens, "eval_count": r.usage.OutputTokens,
	}
}

func writeOllama(w http.ResponseWriter, c *call, r *reply) {
	w.Header().Set("Content-Type", "application/x-ndjson")
	enc := json.NewEncoder(w)
	if !c.stream {
		enc.Encode(ollamaDone(c, r, ollamaMessage(r, r.text, true)))
		return
	}
	f, _ := w.(http.Flusher)
	line := func(v any) {
		enc.Encode(v)
		if f != nil {
			f.Flush()
		}
	}
	for _, t := range chunks(r.text, 64) {
		line(map[string]any{"model": c.model, "created_at": time.Now().UTC().Format(time.RFC3339Nano),
			"message": ollamaMessage(r, t, false), "done": false})
	}
	if r.wantsTools() {
		line(map[string]any{"model": c.model, "created_at": time.Now().UTC().Format(time.RFC3339Nano),
			"message": ollamaMessage(r, "", true), "done": false})
	}
	line(ollamaDone(c, r, ollamaMessage(r, "", false)))
}
