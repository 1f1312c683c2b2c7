package ollama_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/runner"
	"github.com/cadre-dev/cadre/internal/runner/httpapi"
	"github.com/cadre-dev/cadre/internal/runner/httpapi/apitest"
	"github.com/cadre-dev/cadre/internal/runner/ollama"
	"github.com/cadre-dev/cadre/internal/runner/retry"
	"github.com/cadre-dev/cadre/internal/runner/runnertest"
)

// builder makes the runners of the tests; its fake Ollama server answers
// with Ollama's content type.
var builder = apitest.Builder{NewWith: ollama.NewWith, Name: "ollama", Path: "POST /api/chat",
	Headers: map[string]string{"Content-Type": "application/json; charset=utf-8"}}

func chatJSON(text, reason string) string {
	b, _ := json.Marshal(map[string]any{
		"model": "qwen2.5-coder:7b", "created_at": "2026-03-01T12:00:00.000Z",
		"message": map[string]any{"role": "assistant", "content": text},
		"done":    true, "done_reason": reason,
		"total_duration": 5191566416, "load_duration": 2154458, "prompt_eval_count": 1200,
		"prompt_eval_duration": 383809000, "eval_count": 340, "eval_duration": 4799921000,
	})
	return string(b)
}

func TestRunSendsPromptAndReadsReply(t *testing.T) {
	// A local model has no cost.
	req := builder.Ask(t, runner.Settings{Model: "qwen2.5-coder"}, chatJSON(runnertest.OKReply, "stop"), apitest.Reply{
		Output: runnertest.OKReply, Usage: event.Usage{InputTokens: 1200, OutputTokens: 340}, Model: "qwen2.5-coder:7b"})
	if req.Body["stream"] != false {
		t.Errorf("stream %v, want false", req.Body["stream"])
	}
	if a := req.Header.Get("Authorization"); a != "" {
		t.Errorf("Authorization %q sent to a server with no key configured", a)
	}
}

func TestRunModelAndKey(t *testing.T) {
	builder.Routes(t, "Authorization", chatJSON("ok", "stop"),
		apitest.Route{Name: "configured model", S: runner.Settings{Model: "llama3.2"}, WantModel: "llama3.2"},
		apitest.Route{Name: "step model wins", S: runner.Settings{Model: "llama3.2"}, StepModel: "gemma3", WantModel: "gemma3"},
		apitest.Route{Name: "bearer key when a variable is named", S: runner.Settings{Model: "gpt-oss:120b", Env: []string{"OLLAMA_API_KEY"}},
			Vars: map[string]string{"OLLAMA_API_KEY": "ollama-key-123456"}, WantModel: "gpt-oss:120b", WantKey: "Bearer ollama-key-123456"},
		apitest.Route{Name: "no header when the named variable is unset", S: runner.Settings{Model: "llama3.2", Env: []string{"OLLAMA_API_KEY"}},
			WantModel: "llama3.2"},
	)
}

func TestRunWithoutModel(t *testing.T) {
	srv, got := builder.Serve(t, 200, nil, chatJSON("ok", "stop"))
	_, err := builder.Build(t, runner.Settings{Name: "local", URL: srv.URL}, httpapi.Deps{}).Run(t.Context(), apitest.Invocation(t, "triage", "Which workflow fits?\n"))
	if err == nil || !strings.Contains(err.Error(), "runners.local.model") {
		t.Fatalf("error %v, want one naming runners.local.model", err)
	}
	if len(*got) != 0 {
		t.Errorf("%d requests sent without a model", len(*got))
	}
}

func TestRunServerDown(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	_, err = builder.Build(t, runner.Settings{URL: "http://" + addr, Model: "llama3.2"}, httpapi.Deps{}).Run(t.Context(), apitest.Invocation(t, "triage", "Which workflow fits?\n"))
	if err == nil || !strings.Contains(err.Error(), "is `ollama serve` running at http://"+addr) {
		t.Fatalf("error %v, want a hint to start ollama", err)
	}
}

// A server that refuses the connection (not started yet, restarting) got
// nothing: the step is tried again after the retry decorator's pause, as a
// rate-limited step is, and succeeds once the server listens.
func TestRunRetriesARefusedConnection(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there until the pause before the retry
	var pauses []time.Duration
	start := func(ctx context.Context, d time.Duration) error {
		pauses = append(pauses, d)
		l, err := net.Listen("tcp", addr)
		if err != nil {
			t.Skipf("the freed port %s was taken meanwhile: %v", addr, err)
		}
		srv := &httptest.Server{Listener: l, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, chatJSON(runnertest.OKReply, "stop"))
		})}}
		srv.Start()
		t.Cleanup(srv.Close)
		return nil
	}
	r := retry.Wrap(builder.Build(t, runner.Settings{URL: "http://" + addr, Model: "llama3.2"}, httpapi.Deps{}), retry.Policy{Sleep: start})
	inv := apitest.Invocation(t, "triage", "Which workflow fits?\n")
	var progress []string
	inv.Progress = func(s string) { progress = append(progress, s) }
	res, err := r.Run(t.Context(), inv)
	if err != nil {
		t.Fatalf("Run after a refused connection: %v", err)
	}
	if res.Output != runnertest.OKReply || len(pauses) != 1 {
		t.Errorf("output %q after %d pauses, want the reply after one", res.Output, len(pauses))
	}
	if !slices.ContainsFunc(progress, func(s string) bool { return strings.HasPrefix(s, "connection refused; retrying in ") }) {
		t.Errorf("progress %q does not say the step is retried", progress)
	}
}

func TestRunErrors(t *testing.T) {
	builder.Refusals(t, runner.Settings{Model: "llama3.2"},
		apitest.Refusal{Name: "model not pulled", Status: 404, Body: `{"error":"model \"llama3.2\" not found, try pulling it first"}`,
			Kind: runner.KindBackend, Msg: "(pull it with: ollama pull llama3.2)"},
		apitest.Refusal{Name: "unauthorized", Status: 401, Body: `{"error":"unauthorized"}`, Kind: runner.KindAuth, Msg: "runners.ollama.env"},
		apitest.Refusal{Name: "too many requests", Status: 429, Headers: map[string]string{"Retry-After": "4"}, Body: `{"error":"too many requests"}`,
			Kind: runner.KindRateLimit, After: 4 * time.Second},
		apitest.Refusal{Name: "server busy", Status: 503, Body: `{"error":"server busy, please try again.  maximum pending requests exceeded"}`,
			Kind: runner.KindRateLimit},
		apitest.Refusal{Name: "server error", Status: 500, Body: `{"error":"llama runner process has terminated: signal: killed"}`,
			Kind: runner.KindBackend, Msg: "HTTP 500: llama runner process has terminated"},
		apitest.Refusal{Name: "malformed JSON", Status: 200, Body: `{"model":"llama3.2","message":{"content":"half`,
			Kind: runner.KindBackend, Msg: "malformed JSON"},
		apitest.Refusal{Name: "error in a 200", Status: 200, Body: `{"error":"an error was encountered while running the model"}`,
			Kind: runner.KindBackend, Msg: "an error: an error was encountered"},
	)
}

func TestRunHugeReplyKeepsItsEnd(t *testing.T) {
	huge := strings.Repeat("filler line\n", 6<<20/12) + runnertest.OKReply
	srv, _ := builder.Serve(t, 200, nil, chatJSON(huge, "stop"))
	res, err := builder.Build(t, runner.Settings{URL: srv.URL, Model: "llama3.2"}, httpapi.Deps{}).Run(t.Context(), apitest.Invocation(t, "triage", "Which workflow fits?\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Output) > 4<<20 || !strings.HasSuffix(res.Output, runnertest.OKReply) || !strings.HasPrefix(res.Output, "[reply cut") {
		t.Errorf("output of %d bytes (%q…): want at most 4 MiB, marked cut, ending with the SIGNAL BLOCK", len(res.Output), res.Output[:40])
	}
}

// TestSuite runs what every API runner passes: a reply cut at num_predict,
// a bad URL, the conformance suite's part that applies and modelsim.
func TestSuite(t *testing.T) {
	builder.Suite(t, apitest.Suite{S: runner.Settings{Model: "llama3.2"}, Answer: chatJSON, Done: "stop", Cut: "length", Tokens: 340, BadURL: "ftp://gpu-box:11434",
		Modelsim: apitest.Modelsim{API: "ollama", Busy: 429, Usage: event.Usage{InputTokens: 900, OutputTokens: 120}}})
}
