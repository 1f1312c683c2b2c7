package modelsim

import (
	"net/http"
)

// Anthropic Messages API: one message with text and tool_use blocks, or
// the same as a stream of message_start, content_block_start/delta/stop,
// message_delta (stop reason and usage) and message_stop events.

func anthropicUsage(r *reply) map[string]any {
	return map[string]any{
		"input_tokens":                r.usage.InputTokens,
		"output_tokens":               r.usage.OutputTokens,
		"cache_read_input_tokens":     r.usage.CacheReadTokens,
		"cache_creation_input_tokens": 0,
	}
}

func anthropicStop(r *reply) string {
	if r.wantsTools() {
		return "tool_use"
	}
	return "end_turn"
}

func writeAnthropic(w http.ResponseWriter, c *call, r *reply) {
	id := "msg_modelsim_" + r.id
	if !c.stream {
		var content []any
		if r.text != "" {
			content = append(content, map[string]any{"type": "text", "text": r.text})
		}
		for _, u := range r.calls {
			content = append(content, map[string]any{"type": "tool_use", "id": "toolu_" + u.id, "name": u.name, "input": u.obj})
		}
		writeJSON(w, map[string]any{
			"id": id, "type": "message", "role": "assistant", "model": c.model,
			"content": content, "stop_reason": anthropicStop(r), "stop_sequence": nil,
			"usage": anthropicUsage(r),
		})
		return
	}
	s := newSSE(w)
	start := anthropicUsage(r)
	start["output_tokens"] = 1
	s.send("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": c.model,
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": start,
	}})
	index := 0
	if r.text != "" {
		s.send("content_block_start", map[string]any{"type": "content_block_start", "index": index,
			"content_block": map[string]any{"type": "text", "text": ""}})
		for _, t := range chunks(r.text, 64) {
			s.send("content_block_delta", map[string]any{"type": "content_block_delta", "index": index,
				"delta": map[string]any{"type": "text_delta", "text": t}})
		}
		s.send("content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
		index++
	}
	for _, u := range r.calls {
		s.send("content_block_start", map[string]any{"type": "content_block_start", "index": index,
			"content_block": map[string]any{"type": "tool_use", "id": "toolu_" + u.id, "name": u.name, "input": map[string]any{}}})
		for _, part := range chunks(u.args, 256) {
			s.send("content_block_delta", map[string]any{"type": "content_block_delta", "index": index,
				"delta": map[string]any{"type": "input_json_delta", "partial_json": part}})
		}
		s.send("content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
		index++
	}
	s.send("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": anthropicStop(r), "stop_sequence": nil},
		"usage": anthropicUsage(r)})
	s.send("message_stop", map[string]any{"type": "message_stop"})
}
