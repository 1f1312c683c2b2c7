package openai_test

import (
	"bytes"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/cadre-dev/cadre/internal/modelsim"
	"github.com/cadre-dev/cadre/internal/runner"
	"github.com/cadre-dev/cadre/internal/runner/openai"
	"github.com/cadre-dev/cadre/internal/signal"
)

// simScenario answers the planner with a plan and its SIGNAL BLOCK, and a
// prompt asking for trouble with an API error.
const simScenario = `conversations:
  - name: plan
    match: {role: planner, api: openai}
    turns:
      - text: |
          1. Add greet.go.

          ### SIGNAL BLOCK
          - Agent: planner
          - Result: PLAN_CREATED
          - Loop Summary: one step
          - Confidence: 8
          - Next: coder
        usage: {input_tokens: 900, output_tokens: 120, cache_read_tokens: 40}
  - name: busy
    match: {contains: "the server is busy", api: openai}
    turns:
      - error: {status: 429}
`

// TestAgainstModelsim runs the runner against cadre's scripted model server.
func TestAgainstModelsim(t *testing.T) {
	sc, err := modelsim.Parse("scenario.yaml", []byte(simScenario))
	if err != nil {
		t.Fatal(err)
	}
	var requests bytes.Buffer
	srv := httptest.NewServer(modelsim.New(sc, &requests))
	t.Cleanup(srv.Close)
	r, err := openai.NewWith(runner.Settings{Name: "sim", URL: srv.URL, Model: "sim-model"}, openai.Deps{Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}

	inv := invocation(t)
	inv.Prompt = "You are the **planner** for task `07-sample`: Greet.\n"
	res, err := r.Run(t.Context(), inv)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	sig, err := signal.Parse(res.Output)
	if err != nil || sig.Result != signal.PlanCreated {
		t.Errorf("reply %q: signal %+v, %v; want PLAN_CREATED", res.Output, sig, err)
	}
	if u := res.Usage; u.InputTokens != 860 || u.OutputTokens != 120 || u.CacheReadTokens != 40 {
		t.Errorf("usage %+v, want in=860 out=120 cache_read=40", u)
	}
	if !strings.Contains(requests.String(), "sim-model") {
		t.Errorf("modelsim did not log a request for sim-model:\n%s", requests.String())
	}

	inv.Prompt = "Please answer, though the server is busy.\n"
	if _, err := r.Run(t.Context(), inv); runner.KindOf(err) != runner.KindRateLimit {
		t.Errorf("error %v, want a rate-limit error from HTTP 429", err)
	}
}
