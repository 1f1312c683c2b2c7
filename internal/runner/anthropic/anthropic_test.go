package anthropic_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cadre-dev/cadre/internal/config"
	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/runner"
	"github.com/cadre-dev/cadre/internal/runner/anthropic"
	"github.com/cadre-dev/cadre/internal/runner/httpapi"
	"github.com/cadre-dev/cadre/internal/runner/httpapi/apitest"
	"github.com/cadre-dev/cadre/internal/runner/price"
	"github.com/cadre-dev/cadre/internal/runner/runnertest"
)

const key = "sk-ant-test-0123456789"

// builder makes the runners of the tests, the API key in anthropic.DefaultKeyEnv.
var builder = apitest.Builder{NewWith: anthropic.NewWith, Name: "anthropic", Env: map[string]string{anthropic.DefaultKeyEnv: key},
	Path: "POST /v1/messages"}

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
	// The project's price wins over the built-in one for the model that answered.
	prices := price.New(map[string]config.Price{"claude-sonnet-4-5": {InputPerMTok: 3, OutputPerMTok: 15,
		CacheReadPerMTok: 0.3, CacheWritePerMTok: 3.75}})
	req := builder.Ask(t, runner.Settings{URL: "/", Model: "claude-opus-4-1", Prices: prices}, messageJSON(runnertest.OKReply, "end_turn"), apitest.Reply{
		// The text blocks joined.
		Output: "Here is the plan.\n" + runnertest.OKReply,
		Usage: event.Usage{InputTokens: 1200, OutputTokens: 340, CacheReadTokens: 800, CacheWriteTokens: 50,
			CostUSD: (1200*3 + 340*15 + 800*0.3 + 50*3.75) / 1e6, CostEstimated: true},
		Model: "claude-sonnet-4-5-20250929",
	})
	for h, want := range map[string]string{"X-Api-Key": key, "Anthropic-Version": "2023-06-01", "Content-Type": "application/json"} {
		if v := req.Header.Get(h); v != want {
			t.Errorf("header %s = %q, want %q", h, v, want)
		}
	}
	if mt, _ := req.Body["max_tokens"].(float64); mt <= 0 {
		t.Errorf("max_tokens %v, want a positive bound (the API requires it)", req.Body["max_tokens"])
	}
}

func TestRunUnpricedModel(t *testing.T) {
	srv, _ := apitest.Serve(t, 200, nil, strings.Replace(messageJSON("ok", "end_turn"), "claude-sonnet-4-5-20250929", "house-model-v2", 1))
	res, err := builder.Build(t, runner.Settings{URL: srv.URL}, httpapi.Deps{}).Run(t.Context(), apitest.Invocation(t, "planner", "Plan the work.\n"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Usage.CostUSD != 0 || res.Usage.CostEstimated || res.Usage.InputTokens != 1200 {
		t.Errorf("usage %+v, want tokens without a made-up cost", res.Usage)
	}
}

func TestRunModelAndKeyVariable(t *testing.T) {
	builder.Routes(t, "X-Api-Key", messageJSON("ok", "end_turn"),
		apitest.Route{Name: "default model", Vars: map[string]string{"ANTHROPIC_API_KEY": key},
			WantModel: anthropic.DefaultModel, WantKey: key},
		apitest.Route{Name: "step model wins", S: runner.Settings{Model: "claude-haiku-4-5"}, StepModel: "claude-opus-4-1",
			Vars: map[string]string{"ANTHROPIC_API_KEY": key}, WantModel: "claude-opus-4-1", WantKey: key},
		apitest.Route{Name: "key from the configured variable", S: runner.Settings{Env: []string{"WORK_CLAUDE_KEY"}},
			Vars:      map[string]string{"ANTHROPIC_API_KEY": "other", "WORK_CLAUDE_KEY": key + "-work"},
			WantModel: anthropic.DefaultModel, WantKey: key + "-work"},
		apitest.Route{Name: "no key for a server other than Anthropic's", Vars: map[string]string{},
			WantModel: anthropic.DefaultModel, WantKey: ""},
	)
}

func TestRunWithoutKeyForAnthropic(t *testing.T) {
	builder.MissingKey(t, runner.Settings{Name: "claude-api", Env: []string{"MY_KEY"}}, "MY_KEY is not set", "runners.claude-api.env")
}

func TestRunErrors(t *testing.T) {
	errJSON := func(typ, msg string) string {
		return fmt.Sprintf(`{"type":"error","error":{"type":%q,"message":%q},"request_id":"req_011"}`, typ, msg)
	}
	builder.Refusals(t, runner.Settings{},
		apitest.Refusal{Name: "bad key", Status: 401, Body: errJSON("authentication_error", "invalid x-api-key"),
			Kind: runner.KindAuth, Msg: "invalid x-api-key (check the key in ANTHROPIC_API_KEY)"},
		apitest.Refusal{Name: "no permission", Status: 403, Body: errJSON("permission_error", "not allowed"), Kind: runner.KindAuth},
		apitest.Refusal{Name: "rate limit with retry-after seconds", Status: 429, Headers: map[string]string{"retry-after": "7"},
			Body: errJSON("rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit"),
			Kind: runner.KindRateLimit, After: 7 * time.Second, Msg: "HTTP 429 rate_limit_error"},
		apitest.Refusal{Name: "overloaded with retry-after date", Status: 529,
			Headers: map[string]string{"retry-after": apitest.Now.Add(20 * time.Second).Format(http.TimeFormat)},
			Body:    errJSON("overloaded_error", "Overloaded"), Kind: runner.KindRateLimit, After: 20 * time.Second},
		apitest.Refusal{Name: "overloaded without retry-after", Status: 529, Body: errJSON("overloaded_error", "Overloaded"),
			Kind: runner.KindRateLimit},
		apitest.Refusal{Name: "spend limit as a 429 is a quota", Status: 429,
			Body: `{"type":"error","error":{"type":"rate_limit_error","message":"You have reached your monthly spend limit.","details":{"error_code":"enforced_spend_limit_reached"}}}`,
			Kind: runner.KindQuota},
		apitest.Refusal{Name: "credit balance", Status: 400,
			Body: errJSON("invalid_request_error", "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits."),
			Kind: runner.KindQuota, Msg: "credit balance is too low"},
		apitest.Refusal{Name: "billing error", Status: 402, Body: errJSON("billing_error", "payment required"), Kind: runner.KindQuota},
		apitest.Refusal{Name: "prompt too long", Status: 400, Body: errJSON("invalid_request_error", "prompt is too long: 212000 tokens > 200000 maximum"),
			Kind: runner.KindTurnLimit},
		apitest.Refusal{Name: "bad request", Status: 400, Body: errJSON("invalid_request_error", "model: unknown model claude-x"),
			Kind: runner.KindBackend, Msg: "HTTP 400 invalid_request_error: model: unknown model claude-x"},
		apitest.Refusal{Name: "server error", Status: 500, Body: errJSON("api_error", "Internal server error"), Kind: runner.KindBackend},
		apitest.Refusal{Name: "proxy page instead of JSON", Status: 502, Body: "<html><body>Bad Gateway</body></html>",
			Kind: runner.KindBackend, Msg: "HTTP 502: <html><body>Bad Gateway</body></html>"},
		apitest.Refusal{Name: "malformed JSON", Status: 200, Body: `{"type":"message","content":[{"type":"text","text":"cut`,
			Kind: runner.KindBackend, Msg: "malformed JSON"},
		apitest.Refusal{Name: "not a Messages reply", Status: 200, Body: `{"choices":[]}`,
			Kind: runner.KindBackend, Msg: "not a Messages API reply"},
	)
}

// TestSuite runs what every API runner passes: a reply cut at max_tokens,
// a bad URL, the conformance suite's part that applies (timeout and
// cancellation end the request; a huge reply stays bounded) and modelsim.
func TestSuite(t *testing.T) {
	builder.Suite(t, apitest.Suite{Answer: messageJSON, Done: "end_turn", Cut: "max_tokens", Tokens: 340, BadURL: "api.anthropic.com",
		Modelsim: apitest.Modelsim{API: "anthropic", Busy: 529, Usage: event.Usage{InputTokens: 900, OutputTokens: 120, CacheReadTokens: 40}}})
}
