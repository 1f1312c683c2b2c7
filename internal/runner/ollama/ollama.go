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
	endpoint string
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
	return &chat{Endpoint: e, endpoint: e.Base + "/api/chat"}, nil
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
	model := cliutil.Model(inv, r.Model)
	if model == "" {
		return runner.Result{}, fmt.Errorf("runner %s: no model: set runners.%s.model to a model you pulled (ollama list), or the role's model", r.Instance, r.Instance)
	}
	log, key, err := r.Begin(inv, "Ollama")
	if err != nil {
		return runner.Result{}, err
	}
	defer log.Close()
	call := httpapi.Request{
		Runner: r.Instance, Endpoint: r.endpoint, Header: httpapi.Bearer(key), Key: key, Model: model, Prompt: inv.Instructions + inv.UserText(),
		Body:    request{Model: model, Stream: false, Messages: conversation(inv)},
		Timeout: inv.Timeout, Progress: inv.Progress,
		Hint: fmt.Sprintf("(is `ollama serve` running at %s? set runners.%s.url if it listens elsewhere)",
			strings.TrimSuffix(r.endpoint, "/api/chat"), r.Instance),
	}
	ans, err := httpapi.Send(ctx, r.Client, log, call)
	if err != nil {
		return runner.Result{}, err
	}
	if ans.Status != http.StatusOK {
		return runner.Result{}, r.classify(ans, model, key)
	}
	var resp response
	if err := json.Unmarshal(ans.Body, &resp); err != nil || resp.Message == nil {
		what := "no message, not an Ollama chat reply"
		if resp.Error != "" {
			what = "an error: " + httpapi.Brief(resp.Error, key)
		}
		return runner.Result{}, httpapi.Unreadable(log, call, ans, err, what, "an Ollama server")
	}
	if resp.Model != "" {
		model = resp.Model
	}
	text := resp.Message.Content
	usage := event.Usage{InputTokens: resp.PromptEvalCount, OutputTokens: resp.EvalCount}
	fmt.Fprintf(log, "model=%s done_reason=%s tokens prompt_eval=%d eval=%d\n", model, resp.DoneReason, resp.PromptEvalCount, resp.EvalCount)
	httpapi.LogText(log, text)
	res := runner.Result{Output: httpapi.CapReply(text), Usage: usage, Model: model}
	if resp.DoneReason == "length" {
		return res, &runner.Error{Kind: runner.KindTurnLimit, Runner: r.Instance,
			Msg: "the reply was cut off at the model's output limit (num_predict) before it finished"}
	}
	return res, nil
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
