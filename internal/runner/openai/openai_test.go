package openai_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"os"
	"strings"
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

var now = apitest.Now

// builder makes the runners of the tests, the API key in openai.DefaultKeyEnv.
var builder = apitest.Builder{NewWith: openai.NewWith, Name: "openai", Env: map[string]string{openai.DefaultKeyEnv: key}}

func build(t *testing.T, s runner.Settings, d openai.Deps) runner.Runner {
	t.Helper()
	return builder.Build(t, s, d)
}

func invocation(t *testing.T) runner.Invocation {
	return apitest.Invocation(t, "judge", "Judge the plans.\n")
}

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
	srv, got := apitest.Serve(t, 200, nil, completionJSON(runnertest.OKReply, "stop"))
	prices := price.New(map[string]config.Price{"gpt-4.1": {InputPerMTok: 2, OutputPerMTok: 8, CacheReadPerMTok: 0.5}})
	r := build(t, runner.Settings{URL: srv.URL, Model: "gpt-4.1-mini"}, openai.Deps{Prices: prices})
	inv := invocation(t)
	res, err := r.Run(t.Context(), inv)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	req := (*got)[0]
	if req.Path != "POST /v1/chat/completions" {
		t.Errorf("request %s, want POST /v1/chat/completions", req.Path)
	}
	if a := req.Header.Get("Authorization"); a != "Bearer "+key {
		t.Errorf("Authorization %q, want the bearer key", a)
	}
	if req.Body["model"] != "gpt-4.1-mini" {
		t.Errorf("model %v, want gpt-4.1-mini", req.Body["model"])
	}
	msgs, _ := req.Body["messages"].([]any)
	if len(msgs) != 1 {
		t.Fatalf("messages %v, want one user message", req.Body["messages"])
	}
	if m := msgs[0].(map[string]any); m["role"] != "user" || m["content"] != inv.Prompt {
		t.Errorf("message %v, want role user with the prompt", m)
	}
	if res.Output != runnertest.OKReply {
		t.Errorf("output %q, want %q", res.Output, runnertest.OKReply)
	}
	// Cached tokens are counted inside prompt_tokens; cadre keeps them apart.
	wantCost := (1200*2 + 340*8 + 800*0.5) / 1e6
	want := event.Usage{InputTokens: 1200, OutputTokens: 340, CacheReadTokens: 800, CostUSD: res.Usage.CostUSD, CostEstimated: true}
	if res.Usage != want || math.Abs(res.Usage.CostUSD-wantCost) > 1e-12 {
		t.Errorf("usage %+v, want %+v costing %v (priced as the model that answered)", res.Usage, want, wantCost)
	}
	if res.Model != "gpt-4.1-2025-04-14" {
		t.Errorf("model %q, want the model that answered", res.Model)
	}
	log, err := os.ReadFile(inv.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(log), "POST "+srv.URL+"/v1/chat/completions") || !strings.Contains(string(log), "SIGNAL BLOCK") {
		t.Errorf("log lacks the request line or the reply:\n%s", log)
	}
	if strings.Contains(string(log), key) {
		t.Errorf("the API key is in the log:\n%s", log)
	}
}

func TestRunEndpointModelAndKey(t *testing.T) {
	tests := []struct {
		name      string
		suffix    string // appended to the server URL in the settings
		settings  runner.Settings
		vars      map[string]string
		stepModel string
		wantPath  string
		wantModel string
		wantAuth  string
	}{
		{name: "base URL", vars: map[string]string{"OPENAI_API_KEY": key},
			wantPath: "POST /v1/chat/completions", wantModel: openai.DefaultModel, wantAuth: "Bearer " + key},
		{name: "URL already ending in /v1", suffix: "/v1/", vars: map[string]string{"OPENAI_API_KEY": key},
			wantPath: "POST /v1/chat/completions", wantModel: openai.DefaultModel, wantAuth: "Bearer " + key},
		{name: "server under a path", suffix: "/api/v1", vars: map[string]string{"OPENAI_API_KEY": key},
			wantPath: "POST /api/v1/chat/completions", wantModel: openai.DefaultModel, wantAuth: "Bearer " + key},
		{name: "step model wins", settings: runner.Settings{Model: "qwen2.5-coder-32b"}, stepModel: "llama-3.3-70b",
			vars: map[string]string{}, wantPath: "POST /v1/chat/completions", wantModel: "llama-3.3-70b"},
		{name: "key from the configured variable", settings: runner.Settings{Env: []string{"OPENROUTER_API_KEY"}},
			vars:     map[string]string{"OPENAI_API_KEY": "other", "OPENROUTER_API_KEY": "or-key"},
			wantPath: "POST /v1/chat/completions", wantModel: openai.DefaultModel, wantAuth: "Bearer or-key"},
		{name: "a local server gets no key when none is set", vars: map[string]string{},
			wantPath: "POST /v1/chat/completions", wantModel: openai.DefaultModel, wantAuth: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, got := apitest.Serve(t, 200, nil, completionJSON("ok", "stop"))
			s := tt.settings
			s.URL = srv.URL + tt.suffix
			inv := invocation(t)
			inv.Model = tt.stepModel
			if _, err := build(t, s, openai.Deps{Getenv: apitest.Env(tt.vars)}).Run(t.Context(), inv); err != nil {
				t.Fatalf("Run: %v", err)
			}
			req := (*got)[0]
			if req.Path != tt.wantPath || req.Body["model"] != tt.wantModel || req.Header.Get("Authorization") != tt.wantAuth {
				t.Errorf("sent %s model %v auth %q; want %s model %s auth %q", req.Path, req.Body["model"],
					req.Header.Get("Authorization"), tt.wantPath, tt.wantModel, tt.wantAuth)
			}
		})
	}
}

func TestRunWithoutKeyForOpenAI(t *testing.T) {
	r := build(t, runner.Settings{}, openai.Deps{Client: &http.Client{Transport: apitest.NoNetwork{T: t}}, Getenv: apitest.Env(nil)})
	_, err := r.Run(t.Context(), invocation(t))
	if runner.KindOf(err) != runner.KindAuth || !strings.Contains(err.Error(), "OPENAI_API_KEY is not set") {
		t.Fatalf("error %v, want an auth error naming OPENAI_API_KEY", err)
	}
}

func TestRunErrors(t *testing.T) {
	errJSON := func(typ, code, msg string) string {
		return fmt.Sprintf(`{"error":{"message":%q,"type":%q,"param":null,"code":%q}}`, msg, typ, code)
	}
	tests := []struct {
		name      string
		status    int
		headers   map[string]string
		body      string
		wantKind  runner.Kind
		wantAfter time.Duration
		wantMsg   string
	}{
		{name: "bad key", status: 401, body: errJSON("invalid_request_error", "invalid_api_key", "Incorrect API key provided: sk-proj-****6789."),
			wantKind: runner.KindAuth, wantMsg: "HTTP 401 invalid_api_key: Incorrect API key provided"},
		{name: "rate limit with retry-after", status: 429, headers: map[string]string{"retry-after": "3"},
			body:     errJSON("requests", "rate_limit_exceeded", "Rate limit reached for gpt-4.1 on requests per min (RPM): Limit 500, Used 500."),
			wantKind: runner.KindRateLimit, wantAfter: 3 * time.Second},
		{name: "rate limit with reset headers", status: 429,
			headers: map[string]string{"x-ratelimit-remaining-requests": "12", "x-ratelimit-reset-requests": "120ms",
				"x-ratelimit-remaining-tokens": "0", "x-ratelimit-reset-tokens": "6m0s"},
			body:     errJSON("tokens", "rate_limit_exceeded", "Rate limit reached on tokens per min (TPM)."),
			wantKind: runner.KindRateLimit, wantAfter: 6 * time.Minute},
		{name: "rate limit with reset seconds", status: 429,
			headers:  map[string]string{"x-ratelimit-reset-requests": "1.5"},
			body:     errJSON("requests", "rate_limit_exceeded", "slow down"),
			wantKind: runner.KindRateLimit, wantAfter: 1500 * time.Millisecond},
		{name: "insufficient quota is not a rate limit", status: 429, headers: map[string]string{"retry-after": "1"},
			body:     errJSON("insufficient_quota", "insufficient_quota", "You exceeded your current quota, please check your plan and billing details."),
			wantKind: runner.KindQuota, wantMsg: "exceeded your current quota"},
		{name: "overloaded", status: 503, body: errJSON("server_error", "", "The engine is currently overloaded, please try again later."),
			wantKind: runner.KindRateLimit},
		{name: "context length", status: 400,
			body:     errJSON("invalid_request_error", "context_length_exceeded", "This model's maximum context length is 128000 tokens."),
			wantKind: runner.KindTurnLimit},
		{name: "unknown model", status: 404, body: errJSON("invalid_request_error", "model_not_found", "The model `gpt-9` does not exist"),
			wantKind: runner.KindBackend, wantMsg: "HTTP 404 model_not_found: The model `gpt-9` does not exist"},
		{name: "bare string error of a compatible server", status: 500, body: `{"error":"CUDA out of memory"}`,
			wantKind: runner.KindBackend, wantMsg: "HTTP 500: CUDA out of memory"},
		{name: "malformed JSON", status: 200, body: `{"choices":[{"message":`,
			wantKind: runner.KindBackend, wantMsg: "malformed JSON"},
		{name: "no choices", status: 200, body: `{"object":"list","data":[]}`,
			wantKind: runner.KindBackend, wantMsg: "no choices"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, _ := apitest.Serve(t, tt.status, tt.headers, tt.body)
			inv := invocation(t)
			_, err := build(t, runner.Settings{URL: srv.URL}, openai.Deps{}).Run(t.Context(), inv)
			var re *runner.Error
			if !errors.As(err, &re) {
				t.Fatalf("error %v, want a *runner.Error", err)
			}
			if re.Kind != tt.wantKind || re.RetryAfter != tt.wantAfter {
				t.Errorf("kind %s retry-after %s, want %s %s (%v)", re.Kind, re.RetryAfter, tt.wantKind, tt.wantAfter, err)
			}
			if !strings.Contains(err.Error(), tt.wantMsg) || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q: want one line containing %q", err, tt.wantMsg)
			}
			if log, _ := os.ReadFile(inv.LogPath); !strings.Contains(string(log), fmt.Sprintf("HTTP %d", tt.status)) {
				t.Errorf("log lacks the HTTP status:\n%s", log)
			}
		})
	}
}

func TestRunReplyCutAtLength(t *testing.T) {
	srv, _ := apitest.Serve(t, 200, nil, completionJSON("and then", "length"))
	res, err := build(t, runner.Settings{URL: srv.URL}, openai.Deps{}).Run(t.Context(), invocation(t))
	if runner.KindOf(err) != runner.KindTurnLimit {
		t.Fatalf("error %v, want a turn-limit error", err)
	}
	if res.Output != "and then" || res.Usage.OutputTokens != 340 {
		t.Errorf("result %+v, want the partial reply and its usage kept", res)
	}
}

func TestNewRejectsBadURL(t *testing.T) {
	_, err := openai.New(runner.Settings{Name: "local-llm", URL: "localhost:8000"})
	if err == nil || !strings.Contains(err.Error(), "runners.local-llm.url") {
		t.Fatalf("error %v, want one naming runners.local-llm.url", err)
	}
}

// TestConformance runs the shared suite on what applies to an API runner.
func TestConformance(t *testing.T) {
	apitest.Conformance(t, func(reply string) string { return completionJSON(reply, "stop") }, func(t *testing.T, url string) runner.Runner {
		return build(t, runner.Settings{URL: url}, openai.Deps{})
	})
}
