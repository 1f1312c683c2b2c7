package copilot

import (
	"strings"

	"github.com/cadre-dev/cadre/internal/runner"
	"github.com/cadre-dev/cadre/internal/runner/cliutil"
)

// parser reads the JSON lines as they arrive.
type parser struct {
	progress  func(string)
	sessionID string
	reply     string // the last assistant message with text
	failure   *runner.Error
}

type cliEvent struct {
	Type      string `json:"type"`
	SessionID string `json:"sessionId"`
	Data      struct {
		Content    string         `json:"content"`
		ToolName   string         `json:"toolName"`
		Arguments  map[string]any `json:"arguments"`
		ErrorType  string         `json:"errorType"`
		Message    string         `json:"message"`
		StatusCode int            `json:"statusCode"`
	} `json:"data"`
}

// event handles one event of the stream.
func (p *parser) event(ev cliEvent) {
	switch ev.Type {
	case "assistant.message":
		if t := ev.Data.Content; strings.TrimSpace(t) != "" {
			p.reply = t
			p.note("says: " + cliutil.FirstLine(t))
		}
	case "tool.execution_start":
		p.note(cliutil.ToolNote(ev.Data.ToolName, ev.Data.Arguments, "path", "command", "pattern", "url"))
	case "session.error":
		msg := ev.Data.Message
		p.failure = &runner.Error{Kind: classify(ev.Data.ErrorType, ev.Data.StatusCode, msg),
			Msg: cliutil.Short(msg, cliutil.MsgMax), RetryAfter: cliutil.RetryAfter(msg)}
	case "result":
		p.sessionID = ev.SessionID
	}
}

func (p *parser) note(s string) { cliutil.Note(p.progress, s) }

// classify maps a session.error to an error kind: its type and HTTP status
// first, then the words of its message.
func classify(typ string, status int, msg string) runner.Kind {
	m := strings.ToLower(msg)
	switch {
	case typ == "authentication" || status == 401 || status == 403 ||
		cliutil.ContainsAny(m, "not authenticated", "no authentication", "invalid api key", "unauthorized", "copilot login"):
		return runner.KindAuth
	case typ == "quota" || status == 402 || cliutil.ContainsAny(m, "quota", "premium requests", "billing", "insufficient"):
		return runner.KindQuota
	case typ == "rate_limit" || status == 429 || cliutil.ContainsAny(m, "rate limit", "too many requests"):
		return runner.KindRateLimit
	case typ == "context_length" || cliutil.ContainsAny(m, "context length", "context window", "prompt is too long", "maximum context"):
		return runner.KindTurnLimit
	}
	return runner.KindBackend
}
