package modelsim

import (
	"encoding/json"
	"net/http"
)

// Gemini generateContent: a GenerateContentResponse with one candidate
// whose parts hold text and functionCall parts; streamGenerateContent
// sends several such responses, the last with finishReason and
// usageMetadata, as SSE with ?alt=sse or as one JSON array without.

func geminiUsage(r *reply) map[string]any {
	return map[string]any{
		"promptTokenCount":        r.usage.InputTokens,
		"candidatesTokenCount":    r.usage.OutputTokens,
		"totalTokenCount":         r.usage.InputTokens + r.usage.OutputTokens,
		"cachedContentTokenCount": r.usage.CacheReadTokens,
	}
}

// geminiChunk is one GenerateContentResponse; the last one carries the
// finish reason and usage.
func geminiChunk(c *call, r *reply, parts []any, last bool) map[string]any {
	cand := map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "index": 0}
	resp := map[string]any{"candidates": []any{cand}, "modelVersion": c.model, "responseId": "modelsim-" + r.id}
	if last {
		cand["finishReason"] = "STOP"
		resp["usageMetadata"] = geminiUsage(r)
	}
	return resp
}

// geminiChunks splits r into the responses a stream sends.
func geminiChunks(c *call, r *reply) []map[string]any {
	var parts [][]any
	for _, t := range chunks(r.text, 64) {
		parts = append(parts, []any{map[string]any{"text": t}})
	}
	if r.wantsTools() {
		var calls []any
		for _, u := range r.calls {
			calls = append(calls, map[string]any{"functionCall": map[string]any{"name": u.name, "args": u.obj}})
		}
		parts = append(parts, calls)
	}
	if len(parts) == 0 {
		parts = append(parts, []any{map[string]any{"text": ""}})
	}
	out := make([]map[string]any, len(parts))
	for i, p := range parts {
		out[i] = geminiChunk(c, r, p, i == len(parts)-1)
	}
	return out
}

func writeGemini(w http.ResponseWriter, c *call, r *reply) {
	if !c.stream {
		var parts []any
		if r.text != "" {
			parts = append(parts, map[string]any{"text": r.text})
		}
		for _, u := range r.calls {
			parts = append(parts, map[string]any{"functionCall": map[string]any{"name": u.name, "args": u.obj}})
		}
		writeJSON(w, geminiChunk(c, r, parts, true))
		return
	}
	s := newSSE(w)
	for _, ch := range geminiChunks(c, r) {
		s.send("", ch)
	}
}

// writeGeminiArray answers streamGenerateContent without alt=sse: the
// chunks as one JSON array.
func writeGeminiArray(w http.ResponseWriter, c *call, r *reply) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(geminiChunks(c, r))
}
