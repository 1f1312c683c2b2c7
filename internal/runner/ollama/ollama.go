// Package ollama is the runner for a local (or remote) Ollama server's chat
// API: POST {url}/api/chat with stream:false. The rendered prompt goes as
// one user message; the reply comes back with the prompt_eval_count and
// eval_count token counts. It serves text-only roles: the model reads and
// edits no files, so the engine inlines what the role needs in the prompt.
// A local model costs nothing per token, so no cost is reported.
package ollama

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/runner"
	"github.com/cadre-dev/cadre/internal/runner/cliutil"
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

// Deps are the runner's outside dependencies; the zero value is production.
type Deps = httpapi.Deps

// chat sends each step to an Ollama server.
type chat struct {
	httpapi.Endpoint
}

// New builds a runner from its settings: URL (default DefaultURL), Model
// (required here or per step: Ollama has no default model) and, optionally,
// Env[0], a variable holding a bearer key.
func New(s runner.Settings) (runner.Runner, error) { return NewWith(s, Deps{}) }

// NewWith is New with explicit dependencies.
func NewWith(s runner.Settings, d Deps) (runner.Runner, error) {
	e, err := httpapi.NewEndpoint(s, Type, "", d)
	if err != nil {
		return nil, err
	}
	return &chat{Endpoint: e}, nil
}

type request struct {
	Model    string    `json:"model"`
	Messages []message `json:"messages"`
	Stream   bool      `json:"stream"`
}

type message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
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

// Run sends the prompt and returns the reply. An error the server answers
// with is a *runner.Error of the matching kind.
func (r *chat) Run(ctx context.Context, inv runner.Invocation) (runner.Result, error) {
	if cliutil.Model(inv, r.Model) == "" {
		return runner.Result{}, fmt.Errorf("runner %s: no model: set runners.%s.model to a model you pulled (ollama list), or the role's model", r.Instance, r.Instance)
	}
	return r.Step(ctx, inv, httpapi.API{
		Name: "an Ollama server", Provider: "Ollama", URL: r.Base + "/api/chat", Header: httpapi.Bearer,
		Body: func(model string) any { return request{Model: model, Stream: false, Messages: conversation(inv)} },
		Hint: fmt.Sprintf("(is `ollama serve` running at %s? set runners.%s.url if it listens elsewhere)", r.Base, r.Instance),
		Read: read, Refused: r.classify,
	})
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
func (r *chat) classify(ans httpapi.Answer, model, key string) *runner.Error {
	var e struct {
		Error string `json:"error"`
	}
	json.Unmarshal(ans.Body, &e)
	msg := e.Error
	if msg == "" {
		msg = string(ans.Body)
	}
	re := httpapi.Refusal(r.Instance, ans.Status, "", msg, key)
	lower := strings.ToLower(msg)
	switch {
	case ans.Status == http.StatusUnauthorized || ans.Status == http.StatusForbidden:
		re.Kind = runner.KindAuth
		if r.KeyEnv != "" {
			re.Msg += fmt.Sprintf(" (check the key in %s)", r.KeyEnv)
		} else {
			re.Msg += fmt.Sprintf(" (name the variable holding a key in runners.%s.env)", r.Instance)
		}
	case ans.Status == http.StatusTooManyRequests || ans.Status == http.StatusServiceUnavailable:
		re.Kind = runner.KindRateLimit
		re.RetryAfter = retry.After(ans.Header, r.Now())
	case ans.Status == http.StatusNotFound && strings.Contains(lower, "not found"):
		re.Msg += fmt.Sprintf(" (pull it with: ollama pull %s)", model)
	}
	return re
}

// conversation is one step's messages: the role's instructions as the
// system message, then the step's prompt.
func conversation(inv runner.Invocation) []message {
	var msgs []message
	if inv.Instructions != "" {
		msgs = append(msgs, message{Role: "system", Content: inv.Instructions})
	}
	return append(msgs, message{Role: "user", Content: inv.UserText()})
}
