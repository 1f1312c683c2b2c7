package cliutil

import (
	"encoding/json"
	"strings"
)

// StdoutJSON decodes a line of stdout holding a JSON object, an event of a
// CLI's stream; ok is false for stderr, other text and malformed JSON, which
// the stream's reader skips.
func StdoutJSON[T any](stream, line string) (v T, ok bool) {
	if stream != "stdout" || !strings.HasPrefix(strings.TrimSpace(line), "{") {
		return v, false
	}
	if json.Unmarshal([]byte(line), &v) != nil {
		return v, false
	}
	return v, true
}

// Events is the line handler of a CLI whose stdout is a stream of JSON
// events: each line of stdout holding one is decoded (see StdoutJSON) and
// handed to event.
func Events[T any](event func(T)) func(stream, line string) {
	return func(stream, line string) {
		if ev, ok := StdoutJSON[T](stream, line); ok {
			event(ev)
		}
	}
}

// Block is a content block of an assistant message in Claude Code's
// stream-json, which Qwen Code writes too: text, or a tool call and its
// input.
type Block struct {
	Type  string         `json:"type"`
	Text  string         `json:"text"`
	Name  string         `json:"name"`
	Input map[string]any `json:"input"`
}

// Said sends progress a note for each block, a text by its first line and
// a tool call as ToolNote names it by the first of keys, and returns the
// last text that is not blank ("" for none): the reply so far.
func Said(progress func(string), blocks []Block, keys ...string) string {
	last := ""
	for _, b := range blocks {
		switch b.Type {
		case "text":
			if strings.TrimSpace(b.Text) != "" {
				last = b.Text
				Note(progress, "says: "+FirstLine(b.Text))
			}
		case "tool_use":
			Note(progress, ToolNote(b.Name, b.Input, keys...))
		}
	}
	return last
}
