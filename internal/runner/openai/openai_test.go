package openai_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/cadre-dev/cadre/internal/config"
	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/runner"
	"github.com/cadre-dev/cadre/internal/runner/httpapi/apitest"
	"github.com/cadre-dev/cadre/internal/runner/openai"
	"github.com/cadre-dev/cadre/internal/runner/price"
	"github.com/cadre-dev/cadre/internal/runner/runnertest"
)

const key = "sk-proj-test-0123456789"

// builder makes the runners of the tests, the API key in openai.DefaultKeyEnv.
var builder = apitest.Builder{NewWith: openai.NewWith, Name: "openai", Env: map[string]string{openai.DefaultKeyEnv: key},
	Path: "POST /v1/chat/completions"}

func completionJSON(text, finish string) string {
	b, _ := json.Marshal(map[string]any{
		"id": "chatcmpl-1", "object": "chat.completion", "created": 1741000000, "model": "gpt-4.1-2025-04-14",
		"choices": []map[string]any{{"index": 0, "finish_reason": finish,
			"message": map[string]any{"role": "assistant", "content": text, "refusal": nil}}},
		"usage": map[string]any{"prompt_tokens": 2000, "completion_tokens": 340, "total_tokens": 2340,
			"prompt_tokens_details": map[string]any{"cached_tokens": 800}},
	})
	return string(b)
}

func TestRunSendsPromptAndReadsReply(t *testing.T) {
	prices := price.New(map[string]config.Price{"gpt-4.1": {InputPerMTok: 2, OutputPerMTok: 8, CacheReadPerMTok: 0.5}})
	req := builder.Ask(t, runner.Settings{Model: "gpt-4.1-mini", Prices: prices}, completionJSON(runnertest.OKReply, "stop"), apitest.Reply{
		Output: runnertest.OKReply,
		// Cached tokens are counted inside prompt_tokens; cadre keeps them
		// apart. They are priced as the model that answered.
		Usage: event.Usage{InputTokens: 1200, OutputTokens: 340, CacheReadTokens: 800,
			CostUSD: (1200*2 + 340*8 + 800*0.5) / 1e6, CostEstimated: true},
		Model: "gpt-4.1-2025-04-14",
	})
	if a := req.Header.Get("Authorization"); a != "Bearer "+key {
		t.Errorf("Authorization %q, want the bearer key", a)
	}
}

func TestRunEndpointModelAndKey(t *testing.T) {
	withKey := map[string]string{"OPENAI_API_KEY": key}
	builder.Routes(t, "Authorization", completionJSON("ok", "stop"),
		apitest.Route{Name: "base URL", Vars: withKey, WantModel: openai.DefaultModel, WantKey: "Bearer " + key},
		apitest.Route{Name: "URL already ending in /v1", Suffix: "/v1/", Vars: withKey, WantModel: openai.DefaultModel, WantKey: "Bearer " + key},
		apitest.Route{Name: "server under a path", Suffix: "/api/v1", Vars: withKey,
			WantPath: "POST /api/v1/chat/completions", WantModel: openai.DefaultModel, WantKey: "Bearer " + key},
		apitest.Route{Name: "step model wins", S: runner.Settings{Model: "qwen2.5-coder-32b"}, StepModel: "llama-3.3-70b",
			Vars: map[string]string{}, WantModel: "llama-3.3-70b"},
		apitest.Route{Name: "key from the configured variable", S: runner.Settings{Env: []string{"OPENROUTER_API_KEY"}},
			Vars:      map[string]string{"OPENAI_API_KEY": "other", "OPENROUTER_API_KEY": "or-key"},
			WantModel: openai.DefaultModel, WantKey: "Bearer or-key"},
		apitest.Route{Name: "a local server gets no key when none is set", Vars: map[string]string{}, WantModel: openai.DefaultModel},
	)
}

func TestRunWithoutKeyForOpenAI(t *testing.T) {
	builder.MissingKey(t, runner.Settings{}, "OPENAI_API_KEY is not set")
}

func TestRunErrors(t *testing.T) {
	errJSON := func(typ, code, msg string) string {
		return fmt.Sprintf(`{"error":{"message":%q,"type":%q,"param":null,"code":%q}}`, msg, typ, code)
	}
	builder.Refusals(t, runner.Settings{},
		apitest.Refusal{Name: "bad key", Status: 401, Body: errJSON("invalid_request_error", "invalid_api_key", "Incorrect API key provided: sk-proj-****6789."),
			Kind: runner.KindAuth, Msg: "HTTP 401 invalid_api_key: Incorrect API key provided"},
		apitest.Refusal{Name: "rate limit with retry-after", Status: 429, Headers: map[string]string{"retry-after": "3"},
			Body: errJSON("requests", "rate_limit_exceeded", "Rate limit reached for gpt-4.1 on requests per min (RPM): Limit 500, Used 500."),
			Kind: runner.KindRateLimit, After: 3 * time.Second},
		apitest.Refusal{Name: "rate limit with reset headers", Status: 429,
			Headers: map[string]string{"x-ratelimit-remaining-requests": "12", "x-ratelimit-reset-requests": "120ms",
				"x-ratelimit-remaining-tokens": "0", "x-ratelimit-reset-tokens": "6m0s"},
			Body: errJSON("tokens", "rate_limit_exceeded", "Rate limit reached on tokens per min (TPM)."),
			Kind: runner.KindRateLimit, After: 6 * time.Minute},
		apitest.Refusal{Name: "rate limit with reset seconds", Status: 429,
			Headers: map[string]string{"x-ratelimit-reset-requests": "1.5"},
			Body:    errJSON("requests", "rate_limit_exceeded", "slow down"),
			Kind:    runner.KindRateLimit, After: 1500 * time.Millisecond},
		apitest.Refusal{Name: "insufficient quota is not a rate limit", Status: 429, Headers: map[string]string{"retry-after": "1"},
			Body: errJSON("insufficient_quota", "insufficient_quota", "You exceeded your current quota, please check your plan and billing details."),
			Kind: runner.KindQuota, Msg: "exceeded your current quota"},
		apitest.Refusal{Name: "overloaded", Status: 503, Body: errJSON("server_error", "", "The engine is currently overloaded, please try again later."),
			Kind: runner.KindRateLimit},
		apitest.Refusal{Name: "context length", Status: 400,
			Body: errJSON("invalid_request_error", "context_length_exceeded", "This model's maximum context length is 128000 tokens."),
			Kind: runner.KindTurnLimit},
		apitest.Refusal{Name: "unknown model", Status: 404, Body: errJSON("invalid_request_error", "model_not_found", "The model `gpt-9` does not exist"),
			Kind: runner.KindBackend, Msg: "HTTP 404 model_not_found: The model `gpt-9` does not exist"},
		apitest.Refusal{Name: "bare string error of a compatible server", Status: 500, Body: `{"error":"CUDA out of memory"}`,
			Kind: runner.KindBackend, Msg: "HTTP 500: CUDA out of memory"},
		apitest.Refusal{Name: "malformed JSON", Status: 200, Body: `{"choices":[{"message":`,
			Kind: runner.KindBackend, Msg: "malformed JSON"},
		apitest.Refusal{Name: "no choices", Status: 200, Body: `{"object":"list","data":[]}`,
			Kind: runner.KindBackend, Msg: "no choices"},
	)
}

// TestSuite runs what every API runner passes: a reply cut at the length
// limit, a bad URL, the conformance suite's part that applies and
// modelsim.
func TestSuite(t *testing.T) {
	builder.Suite(t, apitest.Suite{Answer: completionJSON, Done: "stop", Cut: "length", Tokens: 340, BadURL: "localhost:8000",
		Modelsim: apitest.Modelsim{API: "openai", Busy: 429, Usage: event.Usage{InputTokens: 860, OutputTokens: 120, CacheReadTokens: 40}}})
}
