package modelsim

import (
	"net/http"
	"time"
)

// OpenAI Chat Completions: one chat.completion, or chat.completion.chunk
// events (role, content deltas, tool_calls deltas, finish_reason, then a
// usage chunk when stream_options.include_usage asks for it) ending with
// "data: [DONE]".

func openAIUsage(r *reply) map[string]any {
	return map[string]any{
		"prompt_tokens":         r.usage.InputTokens,
		"completion_tokens":     r.usage.OutputTokens,
		"total_tokens":          r.usage.InputTokens + r.usage.OutputTokens,
		"prompt_tokens_details": map[string]any{"cached_tokens": r.usage.CacheReadTokens},
	}
}

func openAIFinish(r *reply) string {
	if r.wantsTools() {
		return "tool_calls"
	}
	return "stop"
}

func writeOpenAI(w http.ResponseWriter, c *call, r *reply) {
	id := "chatcmpl-modelsim-" + r.id
	created := time.Now().Unix()
	if !c.stream {
		msg := map[string]any{"role": "assistant", "content": nil}
		if r.text != "" {
			msg["content"] = r.text
		}
		if r.wantsTools() {
			var calls []any
			for _, u := range r.calls {
				calls = append(calls, map[string]any{"id": "call_" + u.id, "type": "function",
					"function": map[string]any{"name": u.name, "arguments": u.args}})
			}
			msg["tool_calls"] = calls
		}
		writeJSON(w, map[string]any{
			"id": id, "object": "chat.completion", "created": created, "model": c.model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": openAIFinish(r)}},
			"usage":   openAIUsage(r),
		})
		return
	}
	s := newSSE(w)
	chunk := func(delta map[string]any, finish any) {
		s.send("", map[string]any{
			"id": id, "object": "chat.completion.chunk", "created": created, "model": c.model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}},
		})
	}
	chunk(map[string]any{"role": "assistant", "content": ""}, nil)
	for _, t := range chunks(r.text, 64) {
		chunk(map[string]any{"content": t}, nil)
	}
	for i, u := range r.calls {
		chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": "call_" + u.id, "type": "function",
			"function": map[string]any{"name": u.name, "arguments": ""}}}}, nil)
		for _, part := range chunks(u.args, 256) {
			chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i,
				"function": map[string]any{"arguments": part}}}}, nil)
		}
	}
	chunk(map[string]any{}, openAIFinish(r))
	if c.usageChunk {
		s.send("", map[string]any{
			"id": id, "object": "chat.completion.chunk", "created": created, "model": c.model,
			"choices": []any{}, "usage": openAIUsage(r),
		})
	}
	s.raw("[DONE]")
}
