package modelsim

import (
	"fmt"
	"net/http"
	"time"
)

// OpenAI Responses API: a response object whose output holds a message
// item and function_call (or custom_tool_call) items, or the same as
// semantic events: response.created, response.in_progress, per item
// response.output_item.added, its deltas and response.output_item.done,
// then response.completed with usage.

func responsesUsage(r *reply) map[string]any {
	return map[string]any{
		"input_tokens":          r.usage.InputTokens,
		"input_tokens_details":  map[string]any{"cached_tokens": r.usage.CacheReadTokens},
		"output_tokens":         r.usage.OutputTokens,
		"output_tokens_details": map[string]any{"reasoning_tokens": 0},
		"total_tokens":          r.usage.InputTokens + r.usage.OutputTokens,
	}
}

// responsesItems returns the output items of r, finished.
func responsesItems(r *reply) []map[string]any {
	var items []map[string]any
	if r.text != "" {
		items = append(items, map[string]any{
			"id": "msg_modelsim_" + r.id, "type": "message", "status": "completed", "role": "assistant",
			"content": []any{map[string]any{"type": "output_text", "text": r.text, "annotations": []any{}}},
		})
	}
	for _, u := range r.calls {
		if u.kind == kindCustom {
			items = append(items, map[string]any{
				"id": "ctc_" + u.id, "type": "custom_tool_call", "status": "completed",
				"call_id": "call_" + u.id, "name": u.name, "input": u.input,
			})
			continue
		}
		items = append(items, map[string]any{
			"id": "fc_" + u.id, "type": "function_call", "status": "completed",
			"call_id": "call_" + u.id, "name": u.name, "arguments": u.args,
		})
	}
	return items
}

func responsesObject(c *call, r *reply, status string, created int64, output []map[string]any) map[string]any {
	o := map[string]any{
		"id": "resp_modelsim_" + r.id, "object": "response", "created_at": created,
		"status": status, "model": c.model, "output": output, "error": nil, "incomplete_details": nil,
	}
	if status == "completed" {
		o["usage"] = responsesUsage(r)
	}
	return o
}

func writeResponses(w http.ResponseWriter, c *call, r *reply) {
	created := time.Now().Unix()
	items := responsesItems(r)
	if !c.stream {
		writeJSON(w, responsesObject(c, r, "completed", created, items))
		return
	}
	s := newSSE(w)
	seq := 0
	send := func(typ string, fields map[string]any) {
		fields["type"] = typ
		fields["sequence_number"] = seq
		seq++
		s.send(typ, fields)
	}
	send("response.created", map[string]any{"response": responsesObject(c, r, "in_progress", created, []map[string]any{})})
	send("response.in_progress", map[string]any{"response": responsesObject(c, r, "in_progress", created, []map[string]any{})})
	for i, item := range items {
		id := item["id"]
		added := map[string]any{}
		for k, v := range item {
			added[k] = v
		}
		added["status"] = "in_progress"
		switch item["type"] {
		case "message":
			added["content"] = []any{}
			send("response.output_item.added", map[string]any{"output_index": i, "item": added})
			send("response.content_part.added", map[string]any{"item_id": id, "output_index": i, "content_index": 0,
				"part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}})
			for _, t := range chunks(r.text, 64) {
				send("response.output_text.delta", map[string]any{"item_id": id, "output_index": i, "content_index": 0, "delta": t})
			}
			send("response.output_text.done", map[string]any{"item_id": id, "output_index": i, "content_index": 0, "text": r.text})
			send("response.content_part.done", map[string]any{"item_id": id, "output_index": i, "content_index": 0,
				"part": map[string]any{"type": "output_text", "text": r.text, "annotations": []any{}}})
		case "function_call":
			added["arguments"] = ""
			send("response.output_item.added", map[string]any{"output_index": i, "item": added})
			args := fmt.Sprint(item["arguments"])
			for _, part := range chunks(args, 256) {
				send("response.function_call_arguments.delta", map[string]any{"item_id": id, "output_index": i, "delta": part})
			}
			send("response.function_call_arguments.done", map[string]any{"item_id": id, "output_index": i, "arguments": args})
		case "custom_tool_call":
			added["input"] = ""
			send("response.output_item.added", map[string]any{"output_index": i, "item": added})
			in := fmt.Sprint(item["input"])
			for _, part := range chunks(in, 256) {
				send("response.custom_tool_call_input.delta", map[string]any{"item_id": id, "output_index": i, "delta": part})
			}
			send("response.custom_tool_call_input.done", map[string]any{"item_id": id, "output_index": i, "input": in})
		}
		send("response.output_item.done", map[string]any{"output_index": i, "item": item})
	}
	send("response.completed", map[string]any{"response": responsesObject(c, r, "completed", created, items)})
}
