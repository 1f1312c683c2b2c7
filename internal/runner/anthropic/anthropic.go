// Package anthropic is the runner for the Anthropic Messages API
// (POST {url}/v1/messages). The rendered prompt goes as one user message;
// the reply's text blocks come back with the token usage the API reports.
// It serves text-only roles (triage, planner, judge…): the model reads and
// edits no files, so the engine inlines what the role needs in the prompt.
package anthropic

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
	"github.com/cadre-dev/cadre/internal/runner/price"
	"github.com/cadre-dev/cadre/internal/runner/retry"
)

// Defaults for a runner with no settings.
const (
	DefaultURL    = "https://api.anthropic.com"
	DefaultKeyEnv = "ANTHROPIC_API_KEY"
	DefaultModel  = "claude-sonnet-4-5"
)

const (
	apiVersion = "2023-06-01"
	// maxTokens bounds the reply; a plan or a verdict fits with room to spare.
	maxTokens = 8192
)

// Deps are the runner's outside dependencies; the zero value is production.
type Deps struct {
	// Client sends the requests; nil means a client without an overall
	// timeout, since the step's own timeout bounds each request.
	Client *http.Client
	// Getenv reads the API key when a step runs; nil means os.Getenv.
	Getenv func(string) string
	// Prices turns the tokens the API reports into an estimated cost (it
	// reports none); nil means the built-in list prices, without the
	// config's overrides.
	Prices *price.Table
	// Now dates a retry-after given as an HTTP date; nil means time.Now.
	Now func() time.Time
}

// messages sends each step to the Messages API.
type messages struct {
	name     string
	endpoint string
	model    string
	keyEnv   string
	// keyed says the endpoint is Anthropic's own, which always needs a key;
	// another server (a proxy, a local simulator) is sent one only if set.
	keyed bool
	d     Deps
}

// New builds a runner from its settings: URL (default DefaultURL), Model
// (default DefaultModel; a step's model wins) and Env[0], the variable
// holding the API key (default DefaultKeyEnv).
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
	r := &messages{name: s.Name, endpoint: base + "/v1/messages", model: s.Model, keyEnv: DefaultKeyEnv,
		keyed: base == DefaultURL, d: d}
	if r.model == "" {
		r.model = DefaultModel
	}
	if len(s.Env) > 0 && s.Env[0] != "" {
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

// estimate adds the cost of u from the price table, marked estimated; a
// model the table does not know keeps a cost of 0, unmarked.
func (r *messages) estimate(model string, u event.Usage) event.Usage {
	if cost, ok := r.d.Prices.Estimate(model, u); ok {
		u.CostUSD, u.CostEstimated = cost, true
	}
	return u
}

// Name returns the configured instance name.
func (r *messages) Name() string { return r.name }

// Capabilities: text only, any model, cost estimated from tokens.
func (r *messages) Capabilities() runner.Caps { return runner.Caps{ModelChoice: true} }

type request struct {
	Model     string    `json:"model"`
	MaxTokens int       `json:"max_tokens"`
	Messages  []message `json:"messages"`
}

type message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type response struct {
	ID         string `json:"id"`
	Type       string `json:"type"`
	Model      string `json:"model"`
	StopReason string `json:"stop_reason"`
	Content    []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	Usage struct {
		InputTokens              int64 `json:"input_tokens"`
		OutputTokens             int64 `json:"output_tokens"`
		CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
		CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	} `json:"usage"`
}

// Run sends the prompt and returns the reply. An error the API answers
// with is a *runner.Error of the matching kind.
func (r *messages) Run(ctx context.Context, inv runner.Invocation) (runner.Result, error) {
	if inv.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, inv.Timeout)
		defer cancel()
	}
	model := inv.Model
	if model == "" {
		model = r.model
	}
	log, err := openLog(inv.LogPath)
	if err != nil {
		return runner.Result{}, fmt.Errorf("runner %s: %w", r.name, err)
	}
	defer log.Close()
	key := r.d.Getenv(r.keyEnv)
	if key == "" && r.keyed {
		fmt.Fprintf(log, "not sent: %s is not set\n", r.keyEnv)
		return runner.Result{}, &runner.Error{Kind: runner.KindAuth, Runner: r.name,
			Msg: fmt.Sprintf("%s is not set: export your Anthropic API key in it, or name another variable in runners.%s.env", r.keyEnv, r.name)}
	}
	h := http.Header{}
	h.Set("anthropic-version", apiVersion)
	if key != "" {
		h.Set("x-api-key", key)
	}
	fmt.Fprintf(log, "POST %s model=%s prompt=%d bytes\n", r.endpoint, model, len(inv.Prompt))
	if inv.Progress != nil {
		inv.Progress(fmt.Sprintf("asking %s", model))
	}
	start := time.Now()
	ans, err := post(ctx, r.d.Client, r.endpoint, h, request{Model: model, MaxTokens: maxTokens,
		Messages: []message{{Role: "user", Content: inv.Prompt}}})
	if err != nil {
		err = failed(ctx, r.name, inv.Timeout, err)
		fmt.Fprintf(log, "failed: %s\n", brief(err.Error(), key))
		return runner.Result{}, err
	}
	fmt.Fprintf(log, "HTTP %d in %s\n", ans.status, time.Since(start).Round(time.Millisecond))
	if ans.status != http.StatusOK {
		fmt.Fprintf(log, "%s\n", brief(string(ans.body), key))
		return runner.Result{}, r.classify(ans, key)
	}
	var resp response
	if err := json.Unmarshal(ans.body, &resp); err != nil || resp.Type != "message" {
		what := "not a Messages API reply"
		if err != nil {
			what = "malformed JSON: " + err.Error()
		}
		fmt.Fprintf(log, "%s\n", brief(string(ans.body), key))
		return runner.Result{}, &runner.Error{Kind: runner.KindBackend, Runner: r.name,
			Msg: fmt.Sprintf("%s answered with %s; is runners.%s.url an Anthropic Messages API?", r.endpoint, what, r.name)}
	}
	var text strings.Builder
	for _, c := range resp.Content {
		if c.Type == "text" {
			text.WriteString(c.Text)
		}
	}
	if resp.Model != "" {
		model = resp.Model
	}
	u := resp.Usage
	usage := r.estimate(model, event.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens,
		CacheReadTokens: u.CacheReadInputTokens, CacheWriteTokens: u.CacheCreationInputTokens})
	fmt.Fprintf(log, "model=%s stop_reason=%s tokens in=%d out=%d cache_read=%d cache_write=%d\n",
		model, resp.StopReason, u.InputTokens, u.OutputTokens, u.CacheReadInputTokens, u.CacheCreationInputTokens)
	logText(log, text.String())
	res := runner.Result{Output: capReply(text.String()), Usage: usage, Model: model}
	if resp.StopReason == "max_tokens" {
		return res, &runner.Error{Kind: runner.KindTurnLimit, Runner: r.name,
			Msg: fmt.Sprintf("the reply was cut off at max_tokens (%d) before it finished", maxTokens)}
	}
	return res, nil
}

// apiError is the body of an error answer.
type apiError struct {
	Type  string `json:"type"`
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
		Details struct {
			ErrorCode string `json:"error_code"`
		} `json:"details"`
	} `json:"error"`
}

// classify maps an error answer to a *runner.Error. A spend limit or an
// empty credit balance is a quota even when it comes as a 429 or a 400:
// waiting a few seconds will not lift it.
func (r *messages) classify(ans answer, key string) *runner.Error {
	var e apiError
	json.Unmarshal(ans.body, &e)
	typ, msg := e.Error.Type, e.Error.Message
	if msg == "" {
		msg = string(ans.body)
	}
	detail := fmt.Sprintf("HTTP %d", ans.status)
	if typ != "" {
		detail += " " + typ
	}
	if m := brief(msg, key); m != "" {
		detail += ": " + m
	}
	re := &runner.Error{Kind: runner.KindBackend, Runner: r.name, Msg: detail}
	lower := strings.ToLower(msg)
	switch {
	case ans.status == http.StatusPaymentRequired || typ == "billing_error" || typ == "payment_required" ||
		strings.Contains(e.Error.Details.ErrorCode, "spend_limit") ||
		containsAny(lower, "credit balance", "spend limit", "billing", "usage limit"):
		re.Kind = runner.KindQuota
	case ans.status == http.StatusUnauthorized || ans.status == http.StatusForbidden ||
		typ == "authentication_error" || typ == "permission_error":
		re.Kind = runner.KindAuth
		re.Msg += fmt.Sprintf(" (check the key in %s)", r.keyEnv)
	case ans.status == http.StatusTooManyRequests || ans.status == 529 ||
		typ == "rate_limit_error" || typ == "overloaded_error":
		re.Kind = runner.KindRateLimit
		re.RetryAfter = retry.After(ans.header, r.d.Now())
	case containsAny(lower, "prompt is too long", "context window"):
		re.Kind = runner.KindTurnLimit
	}
	return re
}

func containsAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
