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
	"time"

	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/runner"
	"github.com/cadre-dev/cadre/internal/runner/cliutil"
	"github.com/cadre-dev/cadre/internal/runner/httpapi"
	"github.com/cadre-dev/cadre/internal/runner/retry"
)

// DefaultURL is where `ollama serve` listens.
const DefaultURL = "http://127.0.0.1:11434"

// Deps are the runner's outside dependencies; the zero value is production.
type Deps struct {
	// Client sends the requests; nil means a client without an overall
	// timeout, since the step's own timeout bounds each request (a local
	// model may take minutes).
	Client *http.Client
	// Getenv reads the API key, if one is configured, when a step runs;
	// nil means os.Getenv.
	Getenv func(string) string
	// Now dates a retry-after given as an HTTP date; nil means time.Now.
	Now func() time.Time
}

// chat sends each step to an Ollama server.
type chat struct {
	name     string
	endpoint string
	model    string
	// keyEnv names the variable of a bearer key, for an Ollama behind an
	// authenticating proxy or ollama.com; empty for a plain local server.
	keyEnv string
	d      Deps
}

// New builds a runner from its settings: URL (default DefaultURL), Model
// (required here or per step: Ollama has no default model) and, optionally,
// Env[0], a variable holding a bearer key.
func New(s runner.Settings) (runner.Runner, error) { return NewWith(s, Deps{}) }

// NewWith is New with explicit dependencies.
func NewWith(s runner.Settings, d Deps) (runner.Runner, error) {
	base, err := httpapi.BaseURL(s.Name, s.URL, DefaultURL)
	if err != nil {
		return nil, err
	}
	r := &chat{name: s.Name, endpoint: base + "/api/chat", model: s.Model, keyEnv: httpapi.KeyEnv(s.Env, ""), d: d}
	r.d.Client, r.d.Getenv, r.d.Now = httpapi.Defaults(r.d.Client, r.d.Getenv, r.d.Now)
	return r, nil
}

// Name returns the configured instance name.
func (r *chat) Name() string { return r.name }

// Capabilities: text only, any pulled model; no cost.
func (r *chat) Capabilities() runner.Caps { return runner.Caps{ModelChoice: true} }

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
	model := cliutil.Model(inv, r.model)
	if model == "" {
		return runner.Result{}, fmt.Errorf("runner %s: no model: set runners.%s.model to a model you pulled (ollama list), or the role's model", r.name, r.name)
	}
	log, err := cliutil.OpenLog(inv.LogPath)
	if err != nil {
		return runner.Result{}, fmt.Errorf("runner %s: %w", r.name, err)
	}
	defer log.Close()
	h := http.Header{}
	key := ""
	if r.keyEnv != "" {
		if key = r.d.Getenv(r.keyEnv); key != "" {
			h.Set("Authorization", "Bearer "+key)
		}
	}
	call := httpapi.Request{
		Runner: r.name, Endpoint: r.endpoint, Header: h, Key: key, Model: model, Prompt: inv.Instructions + inv.UserText(),
		Body:    request{Model: model, Stream: false, Messages: conversation(inv)},
		Timeout: inv.Timeout, Progress: inv.Progress,
		Hint: fmt.Sprintf("(is `ollama serve` running at %s? set runners.%s.url if it listens elsewhere)",
			strings.TrimSuffix(r.endpoint, "/api/chat"), r.name),
	}
	ans, err := httpapi.Send(ctx, r.d.Client, log, call)
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
		return res, &runner.Error{Kind: runner.KindTurnLimit, Runner: r.name,
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
	re := httpapi.Refusal(r.name, ans.Status, "", msg, key)
	lower := strings.ToLower(msg)
	switch {
	case ans.Status == http.StatusUnauthorized || ans.Status == http.StatusForbidden:
		re.Kind = runner.KindAuth
		if r.keyEnv != "" {
			re.Msg += fmt.Sprintf(" (check the key in %s)", r.keyEnv)
		} else {
			re.Msg += fmt.Sprintf(" (name the variable holding a key in runners.%s.env)", r.name)
		}
	case ans.Status == http.StatusTooManyRequests || ans.Status == http.StatusServiceUnavailable:
		re.Kind = runner.KindRateLimit
		re.RetryAfter = retry.After(ans.Header, r.d.Now())
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
