// Package ollama is the runner for a local (or remote) Ollama server's chat
// API: POST {url}/api/chat with stream:false. The rendered prompt goes as
// one user message; the reply comes back with the prompt_eval_count and
// eval_count token counts. It serves text-only roles: the model reads and
// edits no files, so the engine inlines what the role needs in the prompt.
// A local model costs nothing per token, so no cost is reported.
package ollama

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/runner"
	"github.com/cadre-dev/cadre/internal/runner/httpapi"
	"github.com/cadre-dev/cadre/internal/runner/retry"
)

// DefaultURL is where `ollama serve` listens.
const DefaultURL = "http://127.0.0.1:11434"

// Type describes the ollama runner type: a plain local server needs no key
// (one named in runners.NAME.env, for an Ollama behind an authenticating
// proxy or ollama.com, is sent as a bearer token when set); the list of
// pulled models (GET /api/tags) tells whether the server answers.
var Type = runner.Descriptor{
	Type: "ollama", Kind: runner.TypeAPI,
	BaseURL: DefaultURL,
	Probe: func(base, key string) (string, http.Header) {
		return base + "/api/tags", httpapi.Bearer(key)
	},
}

// New builds a runner from its settings: URL (default DefaultURL), Model
// (required here or per step: Ollama has no default model) and, optionally,
// Env[0], a variable holding a bearer key.
func New(s runner.Settings) (runner.Runner, error) { return NewWith(s, httpapi.Deps{}) }

// NewWith is New with explicit dependencies.
func NewWith(s runner.Settings, d httpapi.Deps) (runner.Runner, error) {
	return httpapi.New(s, Type, "", d, chat)
}

// chat sends a step to an Ollama server's chat API, not streamed.
func chat(e *httpapi.Endpoint, inv runner.Invocation) httpapi.API {
	return httpapi.API{
		Name: "an Ollama server", Provider: "Ollama", URL: e.Base + "/api/chat", Header: httpapi.Bearer,
		Body:    func(model string) any { return request{Model: model, Stream: false, Messages: httpapi.Chat(inv)} },
		Hint:    fmt.Sprintf("(is `ollama serve` running at %s? set runners.%s.url if it listens elsewhere)", e.Base, e.Instance),
		NoModel: fmt.Sprintf("set runners.%s.model to a model you pulled (ollama list), or the role's model", e.Instance),
		Read:    read,
		Refused: func(ans httpapi.Answer, model, key string) *runner.Error { return classify(e, ans, model, key) },
	}
}

type request struct {
	Model    string            `json:"model"`
	Messages []httpapi.Message `json:"messages"`
	Stream   bool              `json:"stream"`
}

type response struct {
	Model   string `json:"model"`
	Message *struct {
		Content string `json:"content"`
	} `json:"message"`
	Done            bool   `json:"done"`
	DoneReason      string `json:"done_reason"`
	PromptEvalCount int64  `json:"prompt_eval_count"`
	EvalCount       int64  `json:"eval_count"`
	Error           string `json:"error"`
}

// read reads an Ollama chat reply; a local model has no cost.
func read(body []byte, key string) (httpapi.Reply, error) {
	var resp response
	if err := json.Unmarshal(body, &resp); err != nil {
		return httpapi.Reply{}, err
	}
	if resp.Message == nil {
		if resp.Error != "" {
			return httpapi.Reply{}, httpapi.NotReply("an error: " + httpapi.Brief(resp.Error, key))
		}
		return httpapi.Reply{}, httpapi.NotReply("no message, not an Ollama chat reply")
	}
	reply := httpapi.Reply{Text: resp.Message.Content, Model: resp.Model,
		Usage: event.Usage{InputTokens: resp.PromptEvalCount, OutputTokens: resp.EvalCount},
		Log:   fmt.Sprintf("done_reason=%s tokens prompt_eval=%d eval=%d", resp.DoneReason, resp.PromptEvalCount, resp.EvalCount)}
	if resp.DoneReason == "length" {
		reply.Cut = "the reply was cut off at the model's output limit (num_predict) before it finished"
	}
	return reply, nil
}

// classify maps an error answer ({"error": "..."}) to a *runner.Error.
func classify(ep *httpapi.Endpoint, ans httpapi.Answer, model, key string) *runner.Error {
	var e struct {
		Error string `json:"error"`
	}
	json.Unmarshal(ans.Body, &e)
	msg := e.Error
	if msg == "" {
		msg = string(ans.Body)
	}
	re := httpapi.Refusal(ep.Instance, ans.Status, "", msg, key)
	lower := strings.ToLower(msg)
	switch {
	case ans.Status == http.StatusUnauthorized || ans.Status == http.StatusForbidden:
		re.Kind = runner.KindAuth
		if ep.KeyEnv != "" {
			re.Msg += fmt.Sprintf(" (check the key in %s)", ep.KeyEnv)
		} else {
			re.Msg += fmt.Sprintf(" (name the variable holding a key in runners.%s.env)", ep.Instance)
		}
	case ans.Status == http.StatusTooManyRequests || ans.Status == http.StatusServiceUnavailable:
		re.Kind = runner.KindRateLimit
		re.RetryAfter = retry.After(ans.Header, ep.Now())
	case ans.Status == http.StatusNotFound && strings.Contains(lower, "not found"):
		re.Msg += fmt.Sprintf(" (pull it with: ollama pull %s)", model)
	}
	return re
}
