// Package openai is the runner for OpenAI's Chat Completions API and any
// server that speaks it (vLLM, llama.cpp, LM Studio, OpenRouter, a gateway):
// POST {url}/v1/chat/completions. The rendered prompt goes as one user
// message; the reply comes back with the token usage the server reports.
// It serves text-only roles: the model reads and edits no files, so the
// engine inlines what the role needs in the prompt.
package openai

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/runner"
	"github.com/cadre-dev/cadre/internal/runner/cliutil"
	"github.com/cadre-dev/cadre/internal/runner/httpapi"
	"github.com/cadre-dev/cadre/internal/runner/retry"
)

// Defaults for a runner with no settings.
const (
	DefaultURL    = "https://api.openai.com"
	DefaultKeyEnv = "OPENAI_API_KEY"
	DefaultModel  = "gpt-4.1"
)

// Type describes the openai runner type: OpenAI's own endpoint always needs
// the key; the list of models (GET /v1/models) tells whether the key and
// URL work, at no cost. A base URL already ending in /v1, as many servers
// document theirs, is used as is.
var Type = runner.Descriptor{
	Type: "openai", Kind: runner.TypeAPI,
	BaseURL: DefaultURL, KeyEnv: DefaultKeyEnv,
	KeyRequired: func(base string) bool { return base == DefaultURL || base == DefaultURL+"/v1" },
	Probe: func(base, key string) (string, http.Header) {
		return v1(base) + "/models", httpapi.Bearer(key)
	},
}

// v1 is the API's versioned root: base, or base/v1 when base does not end
// in /v1 already.
func v1(base string) string {
	if strings.HasSuffix(base, "/v1") {
		return base
	}
	return base + "/v1"
}

// New builds a runner from its settings: URL (default DefaultURL; a URL
// already ending in /v1, as many servers document theirs, is used as is),
// Model (default DefaultModel; a step's model wins) and Env[0], the
// variable holding the API key (default DefaultKeyEnv).
func New(s runner.Settings) (runner.Runner, error) { return NewWith(s, httpapi.Deps{}) }

// NewWith is New with explicit dependencies.
func NewWith(s runner.Settings, d httpapi.Deps) (runner.Runner, error) {
	return httpapi.New(s, Type, DefaultModel, d, completions)
}

// completions sends a step to a Chat Completions endpoint.
func completions(e *httpapi.Endpoint, inv runner.Invocation) httpapi.API {
	return httpapi.API{
		Name: "an OpenAI-compatible server", Provider: "OpenAI", URL: v1(e.Base) + "/chat/completions", Header: httpapi.Bearer, Priced: true,
		Body:    func(model string) any { return request{Model: model, Messages: httpapi.Chat(inv)} },
		Read:    read,
		Refused: func(ans httpapi.Answer, _, key string) *runner.Error { return classify(e, ans, key) },
	}
}

type request struct {
	Model    string            `json:"model"`
	Messages []httpapi.Message `json:"messages"`
}

type response struct {
	ID      string `json:"id"`
	Model   string `json:"model"`
	Choices []struct {
		Message struct {
			Content *string `json:"content"`
			Refusal *string `json:"refusal"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage struct {
		PromptTokens        int64 `json:"prompt_tokens"`
		CompletionTokens    int64 `json:"completion_tokens"`
		PromptTokensDetails struct {
			CachedTokens int64 `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	} `json:"usage"`
}

// read reads a Chat Completions reply: the first choice's content, or its
// refusal.
func read(body []byte, _ string) (httpapi.Reply, error) {
	var resp response
	if err := json.Unmarshal(body, &resp); err != nil {
		return httpapi.Reply{}, err
	}
	if len(resp.Choices) == 0 {
		return httpapi.Reply{}, httpapi.NotReply("no choices, not a Chat Completions reply")
	}
	choice := resp.Choices[0]
	var text string
	switch m := choice.Message; {
	case m.Content != nil:
		text = *m.Content
	case m.Refusal != nil:
		text = *m.Refusal
	}
	// The API counts cached prompt tokens inside prompt_tokens; cadre keeps
	// them apart, so a price table charges each token once.
	u := resp.Usage
	cached := min(u.PromptTokensDetails.CachedTokens, u.PromptTokens)
	reply := httpapi.Reply{Text: text, Model: resp.Model,
		Usage: event.Usage{InputTokens: u.PromptTokens - cached, OutputTokens: u.CompletionTokens, CacheReadTokens: cached},
		Log: fmt.Sprintf("finish_reason=%s tokens prompt=%d (cached %d) completion=%d",
			choice.FinishReason, u.PromptTokens, cached, u.CompletionTokens)}
	if choice.FinishReason == "length" {
		reply.Cut = "the reply was cut off at the model's output limit before it finished"
	}
	return reply, nil
}

// apiError is the body of an error answer. OpenAI sends an object; some
// compatible servers send a bare string.
type apiError struct {
	Error json.RawMessage `json:"error"`
}

type errorObject struct {
	Message string `json:"message"`
	Type    string `json:"type"`
	Code    any    `json:"code"` // a string at OpenAI, a number at some servers
}

// classify maps an error answer to a *runner.Error. insufficient_quota
// comes as a 429 like a rate limit, but waiting will not lift it.
func classify(ep *httpapi.Endpoint, ans httpapi.Answer, key string) *runner.Error {
	var e apiError
	var obj errorObject
	if json.Unmarshal(ans.Body, &e) == nil && len(e.Error) > 0 {
		if json.Unmarshal(e.Error, &obj) != nil {
			json.Unmarshal(e.Error, &obj.Message)
		}
	}
	msg := obj.Message
	if msg == "" {
		msg = string(ans.Body)
	}
	code := ""
	if c, ok := obj.Code.(string); ok {
		code = c
	}
	re := httpapi.Refusal(ep.Instance, ans.Status, firstNonEmpty(code, obj.Type), msg, key)
	lower := strings.ToLower(msg)
	switch {
	case ans.Status == http.StatusPaymentRequired || code == "insufficient_quota" || obj.Type == "insufficient_quota" ||
		code == "billing_hard_limit_reached" || cliutil.ContainsAny(lower, "exceeded your current quota", "billing", "credit"):
		re.Kind = runner.KindQuota
	case ans.Status == http.StatusUnauthorized || ans.Status == http.StatusForbidden || code == "invalid_api_key":
		re.Kind = runner.KindAuth
		re.Msg += fmt.Sprintf(" (check the key in %s)", ep.KeyEnv)
	case ans.Status == http.StatusTooManyRequests || code == "rate_limit_exceeded" ||
		(ans.Status == http.StatusServiceUnavailable && strings.Contains(lower, "overloaded")):
		re.Kind = runner.KindRateLimit
		re.RetryAfter = retry.After(ans.Header, ep.Now())
		if re.RetryAfter == 0 {
			re.RetryAfter = resetAfter(ans.Header)
		}
	case code == "context_length_exceeded" || strings.Contains(lower, "maximum context length"):
		re.Kind = runner.KindTurnLimit
	}
	return re
}

// resetAfter reads OpenAI's x-ratelimit-reset-requests and -tokens ("1s",
// "6m0s", "20ms"; plain seconds at some servers): the wait for the limit
// that is used up, or the longer one when the headers do not say which.
func resetAfter(h http.Header) time.Duration {
	var spent, longest time.Duration
	for _, limit := range []string{"requests", "tokens"} {
		d := parseReset(h.Get("X-Ratelimit-Reset-" + limit))
		longest = max(longest, d)
		if strings.TrimSpace(h.Get("X-Ratelimit-Remaining-"+limit)) == "0" {
			spent = max(spent, d)
		}
	}
	if spent > 0 {
		return spent
	}
	return longest
}

func parseReset(v string) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if d, err := time.ParseDuration(v); err == nil && d > 0 {
		return d
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s > 0 && s < 1e9 {
		return time.Duration(s * float64(time.Second))
	}
	return 0
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}
