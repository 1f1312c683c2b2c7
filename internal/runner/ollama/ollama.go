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
	"os"
	"strings"
	"time"

	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/runner"
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
	raw := s.URL
	if raw == "" {
		raw = DefaultURL
	}
	base, err := baseURL(s.Name, raw, DefaultURL)
	if err != nil {
		return nil, err
	}
	r := &chat{name: s.Name, endpoint: base + "/api/chat", model: s.Model, d: d}
	if len(s.Env) > 0 {
		r.keyEnv = s.Env[0]
	}
	if r.d.Client == nil {
		r.d.Client = &http.Client{}
	}
	if r.d.Getenv == nil {
		r.d.Getenv = os.Getenv
	}
	if r.d.Now == nil {
		r.d.Now = time.Now
	}
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
	model := inv.Model
	if model == "" {
		model = r.model
	}
	if model == "" {
		return runner.Result{}, fmt.Errorf("runner %s: no model: set runners.%s.model to a model you pulled (ollama list), or the role's model", r.name, r.name)
	}
	if inv.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, inv.Timeout)
		defer cancel()
	}
	log, err := openLog(inv.LogPath)
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
	fmt.Fprintf(log, "POST %s model=%s prompt=%d bytes\n", r.endpoint, model, len(inv.Prompt))
	if inv.Progress != nil {
		inv.Progress(fmt.Sprintf("asking %s", model))
	}
	start := time.Now()
	ans, err := post(ctx, r.d.Client, r.endpoint, h, request{Model: model, Stream: false,
		Messages: []message{{Role: "user", Content: inv.Prompt}}})
	if err != nil {
		err = failed(ctx, r.name, inv.Timeout, err)
		if ctx.Err() == nil {
			err = fmt.Errorf("%w (is `ollama serve` running at %s? set runners.%s.url if it listens elsewhere)", err, strings.TrimSuffix(r.endpoint, "/api/chat"), r.name)
		}
		fmt.Fprintf(log, "failed: %s\n", brief(err.Error(), key))
		return runner.Result{}, err
	}
	fmt.Fprintf(log, "HTTP %d in %s\n", ans.status, time.Since(start).Round(time.Millisecond))
	if ans.status != http.StatusOK {
		fmt.Fprintf(log, "%s\n", brief(string(ans.body), key))
		return runner.Result{}, r.classify(ans, model, key)
	}
	var resp response
	if err := json.Unmarshal(ans.body, &resp); err != nil || resp.Message == nil {
		what := "no message, not an Ollama chat reply"
		switch {
		case err != nil:
			what = "malformed JSON: " + err.Error()
		case resp.Error != "":
			what = "an error: " + brief(resp.Error, key)
		}
		fmt.Fprintf(log, "%s\n", brief(string(ans.body), key))
		return runner.Result{}, &runner.Error{Kind: runner.KindBackend, Runner: r.name,
			Msg: fmt.Sprintf("%s answered with %s; is runners.%s.url an Ollama server?", r.endpoint, what, r.name)}
	}
	if resp.Model != "" {
		model = resp.Model
	}
	text := resp.Message.Content
	usage := event.Usage{InputTokens: resp.PromptEvalCount, OutputTokens: resp.EvalCount}
	fmt.Fprintf(log, "model=%s done_reason=%s tokens prompt_eval=%d eval=%d\n", model, resp.DoneReason, resp.PromptEvalCount, resp.EvalCount)
	logText(log, text)
	res := runner.Result{Output: capReply(text), Usage: usage, Model: model}
	if resp.DoneReason == "length" {
		return res, &runner.Error{Kind: runner.KindTurnLimit, Runner: r.name,
			Msg: "the reply was cut off at the model's output limit (num_predict) before it finished"}
	}
	return res, nil
}

// classify maps an error answer ({"error": "..."}) to a *runner.Error.
func (r *chat) classify(ans answer, model, key string) *runner.Error {
	var e struct {
		Error string `json:"error"`
	}
	json.Unmarshal(ans.body, &e)
	msg := e.Error
	if msg == "" {
		msg = string(ans.body)
	}
	detail := fmt.Sprintf("HTTP %d", ans.status)
	if m := brief(msg, key); m != "" {
		detail += ": " + m
	}
	re := &runner.Error{Kind: runner.KindBackend, Runner: r.name, Msg: detail}
	lower := strings.ToLower(msg)
	switch {
	case ans.status == http.StatusUnauthorized || ans.status == http.StatusForbidden:
		re.Kind = runner.KindAuth
		if r.keyEnv != "" {
			re.Msg += fmt.Sprintf(" (check the key in %s)", r.keyEnv)
		} else {
			re.Msg += fmt.Sprintf(" (name the variable holding a key in runners.%s.env)", r.name)
		}
	case ans.status == http.StatusTooManyRequests || ans.status == http.StatusServiceUnavailable:
		re.Kind = runner.KindRateLimit
		re.RetryAfter = retry.After(ans.header, r.d.Now())
	case ans.status == http.StatusNotFound && strings.Contains(lower, "not found"):
		re.Msg += fmt.Sprintf(" (pull it with: ollama pull %s)", model)
	}
	return re
}
