package anthropic_test

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
	"github.com/cadre-dev/cadre/internal/runner/anthropic"
	"github.com/cadre-dev/cadre/internal/runner/httpapi/apitest"
	"github.com/cadre-dev/cadre/internal/runner/price"
	"github.com/cadre-dev/cadre/internal/runner/runnertest"
)

const key = "sk-ant-test-0123456789"

var now = apitest.Now

// builder makes the runners of the tests, the API key in anthropic.DefaultKeyEnv.
var builder = apitest.Builder{NewWith: anthropic.NewWith, Name: "anthropic", Env: map[string]string{anthropic.DefaultKeyEnv: key}}

func build(t *testing.T, s runner.Settings, d anthropic.Deps) runner.Runner {
	t.Helper()
	return builder.Build(t, s, d)
}

func invocation(t *testing.T) runner.Invocation {
	return apitest.Invocation(t, "planner", "Plan the work.\n")
}

func messageJSON(text, stop string) string {
	b, _ := json.Marshal(map[string]any{
		"id": "msg_01", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
		"content": []map[string]any{
			{"type": "text", "text": "Here is the plan.\n"},
			{"type": "text", "text": text},
		},
		"stop_reason": stop, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": 1200, "output_tokens": 340,
			"cache_read_input_tokens": 800, "cache_creation_input_tokens": 50},
	})
	return string(b)
}

func TestRunSendsPromptAndReadsReply(t *testing.T) {
	srv, got := apitest.Serve(t, 200, nil, messageJSON(runnertest.OKReply, "end_turn"))
	// The project's price wins over the built-in one for the model that answered.
	prices := price.New(map[string]config.Price{"claude-sonnet-4-5": {InputPerMTok: 3, OutputPerMTok: 15,
		CacheReadPerMTok: 0.3, CacheWritePerMTok: 3.75}})
	r := build(t, runner.Settings{URL: srv.URL + "/", Model: "claude-opus-4-1"}, anthropic.Deps{Prices: prices})
	inv := invocation(t)
	res, err := r.Run(t.Context(), inv)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if len(*got) != 1 {
		t.Fatalf("%d requests, want 1", len(*got))
	}
	req := (*got)[0]
	if req.Path != "POST /v1/messages" {
		t.Errorf("request %s, want POST /v1/messages", req.Path)
	}
	for h, want := range map[string]string{"X-Api-Key": key, "Anthropic-Version": "2023-06-01", "Content-Type": "application/json"} {
		if v := req.Header.Get(h); v != want {
			t.Errorf("header %s = %q, want %q", h, v, want)
		}
	}
	if req.Body["model"] != "claude-opus-4-1" {
		t.Errorf("model %v, want the configured claude-opus-4-1", req.Body["model"])
	}
	if mt, _ := req.Body["max_tokens"].(float64); mt <= 0 {
		t.Errorf("max_tokens %v, want a positive bound (the API requires it)", req.Body["max_tokens"])
	}
	msgs, _ := req.Body["messages"].([]any)
	if len(msgs) != 1 {
		t.Fatalf("messages %v, want one user message", req.Body["messages"])
	}
	if m := msgs[0].(map[string]any); m["role"] != "user" || m["content"] != inv.Prompt {
		t.Errorf("message %v, want role user with the prompt", m)
	}
	if want := "Here is the plan.\n" + runnertest.OKReply; res.Output != want {
		t.Errorf("output %q, want the text blocks joined %q", res.Output, want)
	}
	wantCost := (1200*3 + 340*15 + 800*0.3 + 50*3.75) / 1e6
	wantUsage := event.Usage{InputTokens: 1200, OutputTokens: 340, CacheReadTokens: 800, CacheWriteTokens: 50,
		CostUSD: res.Usage.CostUSD, CostEstimated: true}
	if res.Usage != wantUsage || math.Abs(res.Usage.CostUSD-wantCost) > 1e-12 {
		t.Errorf("usage %+v, want %+v costing %v", res.Usage, wantUsage, wantCost)
	}
	if res.Model != "claude-sonnet-4-5-20250929" {
		t.Errorf("model %q, want the model that answered", res.Model)
	}
	log, err := os.ReadFile(inv.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(log), "POST "+srv.URL+"/v1/messages") || !strings.Contains(string(log), "SIGNAL BLOCK") {
		t.Errorf("log lacks the request line or the reply:\n%s", log)
	}
	if strings.Contains(string(log), key) {
		t.Errorf("the API key is in the log:\n%s", log)
	}
}

func TestRunUnpricedModel(t *testing.T) {
	srv, _ := apitest.Serve(t, 200, nil, strings.Replace(messageJSON("ok", "end_turn"), "claude-sonnet-4-5-20250929", "house-model-v2", 1))
	res, err := build(t, runner.Settings{URL: srv.URL}, anthropic.Deps{}).Run(t.Context(), invocation(t))
	if err != nil {
		t.Fatal(err)
	}
	if res.Usage.CostUSD != 0 || res.Usage.CostEstimated || res.Usage.InputTokens != 1200 {
		t.Errorf("usage %+v, want tokens without a made-up cost", res.Usage)
	}
}

func TestRunModelAndKeyVariable(t *testing.T) {
	tests := []struct {
		name      string
		settings  runner.Settings
		vars      map[string]string
		stepModel string
		wantModel string
		wantKey   string // "" means no x-api-key header
	}{
		{name: "default model", vars: map[string]string{"ANTHROPIC_API_KEY": key},
			wantModel: anthropic.DefaultModel, wantKey: key},
		{name: "step model wins", settings: runner.Settings{Model: "claude-haiku-4-5"}, stepModel: "claude-opus-4-1",
			vars: map[string]string{"ANTHROPIC_API_KEY": key}, wantModel: "claude-opus-4-1", wantKey: key},
		{name: "key from the configured variable", settings: runner.Settings{Env: []string{"WORK_CLAUDE_KEY"}},
			vars:      map[string]string{"ANTHROPIC_API_KEY": "other", "WORK_CLAUDE_KEY": key + "-work"},
			wantModel: anthropic.DefaultModel, wantKey: key + "-work"},
		{name: "no key for a server other than Anthropic's", vars: map[string]string{},
			wantModel: anthropic.DefaultModel, wantKey: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, got := apitest.Serve(t, 200, nil, messageJSON("ok", "end_turn"))
			s := tt.settings
			s.URL = srv.URL
			r := build(t, s, anthropic.Deps{Getenv: apitest.Env(tt.vars)})
			inv := invocation(t)
			inv.Model = tt.stepModel
			if _, err := r.Run(t.Context(), inv); err != nil {
				t.Fatalf("Run: %v", err)
			}
			req := (*got)[0]
			if req.Body["model"] != tt.wantModel {
				t.Errorf("model %v, want %s", req.Body["model"], tt.wantModel)
			}
			if k, ok := req.Header["X-Api-Key"]; tt.wantKey == "" && ok || tt.wantKey != "" && (len(k) != 1 || k[0] != tt.wantKey) {
				t.Errorf("x-api-key %q, want %q", k, tt.wantKey)
			}
		})
	}
}

func TestRunWithoutKeyForAnthropic(t *testing.T) {
	r := build(t, runner.Settings{Name: "claude-api", Env: []string{"MY_KEY"}}, anthropic.Deps{
		Client: &http.Client{Transport: apitest.NoNetwork{T: t}}, Getenv: apitest.Env(nil)})
	_, err := r.Run(t.Context(), invocation(t))
	if runner.KindOf(err) != runner.KindAuth {
		t.Fatalf("error %v, want an auth error", err)
	}
	for _, want := range []string{"MY_KEY is not set", "runners.claude-api.env"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

func TestRunErrors(t *testing.T) {
	errJSON := func(typ, msg string) string {
		return fmt.Sprintf(`{"type":"error","error":{"type":%q,"message":%q},"request_id":"req_011"}`, typ, msg)
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
		{name: "bad key", status: 401, body: errJSON("authentication_error", "invalid x-api-key"),
			wantKind: runner.KindAuth, wantMsg: "invalid x-api-key (check the key in ANTHROPIC_API_KEY)"},
		{name: "no permission", status: 403, body: errJSON("permission_error", "not allowed"), wantKind: runner.KindAuth},
		{name: "rate limit with retry-after seconds", status: 429, headers: map[string]string{"retry-after": "7"},
			body:     errJSON("rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit"),
			wantKind: runner.KindRateLimit, wantAfter: 7 * time.Second, wantMsg: "HTTP 429 rate_limit_error"},
		{name: "overloaded with retry-after date", status: 529,
			headers: map[string]string{"retry-after": now.Add(20 * time.Second).Format(http.TimeFormat)},
			body:    errJSON("overloaded_error", "Overloaded"), wantKind: runner.KindRateLimit, wantAfter: 20 * time.Second},
		{name: "overloaded without retry-after", status: 529, body: errJSON("overloaded_error", "Overloaded"),
			wantKind: runner.KindRateLimit},
		{name: "spend limit as a 429 is a quota", status: 429,
			body:     `{"type":"error","error":{"type":"rate_limit_error","message":"You have reached your monthly spend limit.","details":{"error_code":"enforced_spend_limit_reached"}}}`,
			wantKind: runner.KindQuota},
		{name: "credit balance", status: 400,
			body:     errJSON("invalid_request_error", "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits."),
			wantKind: runner.KindQuota, wantMsg: "credit balance is too low"},
		{name: "billing error", status: 402, body: errJSON("billing_error", "payment required"), wantKind: runner.KindQuota},
		{name: "prompt too long", status: 400, body: errJSON("invalid_request_error", "prompt is too long: 212000 tokens > 200000 maximum"),
			wantKind: runner.KindTurnLimit},
		{name: "bad request", status: 400, body: errJSON("invalid_request_error", "model: unknown model claude-x"),
			wantKind: runner.KindBackend, wantMsg: "HTTP 400 invalid_request_error: model: unknown model claude-x"},
		{name: "server error", status: 500, body: errJSON("api_error", "Internal server error"), wantKind: runner.KindBackend},
		{name: "proxy page instead of JSON", status: 502, body: "<html><body>Bad Gateway</body></html>",
			wantKind: runner.KindBackend, wantMsg: "HTTP 502: <html><body>Bad Gateway</body></html>"},
		{name: "malformed JSON", status: 200, body: `{"type":"message","content":[{"type":"text","text":"cut`,
			wantKind: runner.KindBackend, wantMsg: "malformed JSON"},
		{name: "not a Messages reply", status: 200, body: `{"choices":[]}`,
			wantKind: runner.KindBackend, wantMsg: "not a Messages API reply"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, _ := apitest.Serve(t, tt.status, tt.headers, tt.body)
			inv := invocation(t)
			_, err := build(t, runner.Settings{URL: srv.URL}, anthropic.Deps{}).Run(t.Context(), inv)
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

func TestRunReplyCutAtMaxTokens(t *testing.T) {
	srv, _ := apitest.Serve(t, 200, nil, messageJSON("and then", "max_tokens"))
	res, err := build(t, runner.Settings{URL: srv.URL}, anthropic.Deps{}).Run(t.Context(), invocation(t))
	if runner.KindOf(err) != runner.KindTurnLimit {
		t.Fatalf("error %v, want a turn-limit error", err)
	}
	if !strings.HasSuffix(res.Output, "and then") || res.Usage.OutputTokens != 340 {
		t.Errorf("result %+v, want the partial reply and its usage kept", res)
	}
}

func TestNewRejectsBadURL(t *testing.T) {
	_, err := anthropic.New(runner.Settings{Name: "claude-api", URL: "api.anthropic.com"})
	if err == nil || !strings.Contains(err.Error(), "runners.claude-api.url") {
		t.Fatalf("error %v, want one naming runners.claude-api.url", err)
	}
}

// TestConformance runs the shared suite on what applies to an API runner:
// no process, so timeout and cancellation end the request; a huge reply
// stays bounded.
func TestConformance(t *testing.T) {
	apitest.Conformance(t, func(reply string) string { return messageJSON(reply, "end_turn") }, func(t *testing.T, url string) runner.Runner {
		return build(t, runner.Settings{URL: url}, anthropic.Deps{})
	})
}
