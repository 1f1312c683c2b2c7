// Package anthropic is the runner for the Anthropic Messages API
// (POST {url}/v1/messages). The rendered prompt goes as one user message;
// the reply's text blocks come back with the token usage the API reports.
// It serves text-only roles (triage, planner, judge…): the model reads and
// edits no files, so the engine inlines what the role needs in the prompt.
package anthropic

import (
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

// Defaults for a runner with no settings.
const (
	DefaultURL    = "https://api.anthropic.com"
	DefaultKeyEnv = "ANTHROPIC_API_KEY"
	DefaultModel  = "claude-sonnet-4-5"
)

// APIVersion is the anthropic-version header every request carries.
const APIVersion = "2023-06-01"

const (
	// maxTokens bounds the reply; a plan or a verdict fits with room to spare.
	maxTokens = 8192
)

// Type describes the anthropic runner type: Anthropic's own endpoint always
// needs the key; the list of models (GET /v1/models) tells whether the key
// and URL work, at no cost.
var Type = runner.Descriptor{
	Type: "anthropic", Kind: runner.TypeAPI,
	BaseURL: DefaultURL, KeyEnv: DefaultKeyEnv,
	KeyRequired: func(base string) bool { return base == DefaultURL },
	Probe: func(base, key string) (string, http.Header) {
		return base + "/v1/models", header(key)
	},
}

// header carries the API version and, when set, the key.
func header(key string) http.Header {
	h := http.Header{}
	h.Set("anthropic-version", APIVersion)
	if key != "" {
		h.Set("x-api-key", key)
	}
	return h
}

// New builds a runner from its settings: URL (default DefaultURL), Model
// (default DefaultModel; a step's model wins) and Env[0], the variable
// holding the API key (default DefaultKeyEnv).
func New(s runner.Settings) (runner.Runner, error) { return NewWith(s, httpapi.Deps{}) }

// NewWith is New with explicit dependencies.
func NewWith(s runner.Settings, d httpapi.Deps) (runner.Runner, error) {
	return httpapi.New(s, Type, DefaultModel, d, messages)
}

// messages sends a step to the Messages API: the role's instructions as the
// system prompt, the step's prompt as the one user message.
func messages(e *httpapi.Endpoint, inv runner.Invocation) httpapi.API {
	return httpapi.API{
		Name: "an Anthropic Messages API", Provider: "Anthropic", URL: e.Base + "/v1/messages", Header: header, Priced: true,
		Body: func(model string) any {
			return request{Model: model, MaxTokens: maxTokens, System: inv.Instructions, Messages: []httpapi.Message{{Role: "user", Content: inv.UserText()}}}
		},
		Read:    read,
		Refused: func(ans httpapi.Answer, _, key string) *runner.Error { return classify(e, ans, key) },
	}
}

type request struct {
	Model     string            `json:"model"`
	MaxTokens int               `json:"max_tokens"`
	System    string            `json:"system,omitempty"` // the role's instructions
	Messages  []httpapi.Message `json:"messages"`
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

// read reads a Messages API reply: its text blocks joined.
func read(body []byte, _ string) (httpapi.Reply, error) {
	var resp response
	if err := json.Unmarshal(body, &resp); err != nil {
		return httpapi.Reply{}, err
	}
	if resp.Type != "message" {
		return httpapi.Reply{}, httpapi.NotReply("not a Messages API reply")
	}
	var text strings.Builder
	for _, c := range resp.Content {
		if c.Type == "text" {
			text.WriteString(c.Text)
		}
	}
	u := resp.Usage
	reply := httpapi.Reply{Text: text.String(), Model: resp.Model,
		Usage: event.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CacheReadTokens: u.CacheReadInputTokens, CacheWriteTokens: u.CacheCreationInputTokens},
		Log: fmt.Sprintf("stop_reason=%s tokens in=%d out=%d cache_read=%d cache_write=%d",
			resp.StopReason, u.InputTokens, u.OutputTokens, u.CacheReadInputTokens, u.CacheCreationInputTokens)}
	if resp.StopReason == "max_tokens" {
		reply.Cut = fmt.Sprintf("the reply was cut off at max_tokens (%d) before it finished", maxTokens)
	}
	return reply, nil
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
func classify(ep *httpapi.Endpoint, ans httpapi.Answer, key string) *runner.Error {
	var e apiError
	json.Unmarshal(ans.Body, &e)
	typ, msg := e.Error.Type, e.Error.Message
	if msg == "" {
		msg = string(ans.Body)
	}
	re := httpapi.Refusal(ep.Instance, ans.Status, typ, msg, key)
	lower := strings.ToLower(msg)
	switch {
	case ans.Status == http.StatusPaymentRequired || typ == "billing_error" || typ == "payment_required" ||
		strings.Contains(e.Error.Details.ErrorCode, "spend_limit") ||
		cliutil.ContainsAny(lower, "credit balance", "spend limit", "billing", "usage limit"):
		re.Kind = runner.KindQuota
	case ans.Status == http.StatusUnauthorized || ans.Status == http.StatusForbidden ||
		typ == "authentication_error" || typ == "permission_error":
		re.Kind = runner.KindAuth
		re.Msg += fmt.Sprintf(" (check the key in %s)", ep.KeyEnv)
	case ans.Status == http.StatusTooManyRequests || ans.Status == 529 ||
		typ == "rate_limit_error" || typ == "overloaded_error":
		re.Kind = runner.KindRateLimit
		re.RetryAfter = retry.After(ans.Header, ep.Now())
	case cliutil.ContainsAny(lower, "prompt is too long", "context window"):
		re.Kind = runner.KindTurnLimit
	}
	return re
}
