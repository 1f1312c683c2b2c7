package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/cadre-dev/cadre/internal/event"
)

// jsonSink prints one JSON object per event, one per line, on stdout: the
// `--json` output scripts read.
func jsonSink(w io.Writer) event.Sink {
	var mu sync.Mutex
	enc := json.NewEncoder(w)
	return event.SinkFunc(func(e event.Event) {
		mu.Lock()
		defer mu.Unlock()
		enc.Encode(e)
	})
}

// printJSON prints v as indented JSON, the --json output of the
// commands that print one document.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// lineSink prints one readable line per event.
func lineSink(w io.Writer) event.Sink {
	return event.SinkFunc(func(e event.Event) {
		fmt.Fprintln(w, formatLine(e))
	})
}

func formatLine(e event.Event) string {
	var b strings.Builder
	b.WriteString(e.Time.Local().Format("15:04:05"))
	b.WriteByte(' ')
	if e.Item != "" {
		b.WriteString(e.Item)
		b.WriteByte(' ')
	}
	b.WriteString(e.Type)
	for _, kv := range [][2]string{{"stage", e.Stage}, {"role", e.Role}, {"runner", e.Runner}, {"model", e.Model}} {
		if kv[1] != "" {
			fmt.Fprintf(&b, " %s=%s", kv[0], kv[1])
		}
	}
	if e.Usage != nil && (e.Usage.InputTokens+e.Usage.OutputTokens > 0 || e.Usage.CostUSD > 0) {
		fmt.Fprintf(&b, " tokens=%d/%d cost=$%.4f", e.Usage.InputTokens, e.Usage.OutputTokens, e.Usage.CostUSD)
	}
	if e.Message != "" {
		fmt.Fprintf(&b, " — %s", e.Message)
	}
	if e.Error != "" {
		fmt.Fprintf(&b, " error: %s", e.Error)
	}
	return b.String()
}
