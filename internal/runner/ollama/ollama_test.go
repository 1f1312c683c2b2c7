package ollama_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/runner"
	"github.com/cadre-dev/cadre/internal/runner/httpapi/apitest"
	"github.com/cadre-dev/cadre/internal/runner/ollama"
	"github.com/cadre-dev/cadre/internal/runner/retry"
	"github.com/cadre-dev/cadre/internal/runner/runnertest"
)

var now = apitest.Now

// serve starts a fake Ollama server answering every request with status,
// headers and body, and records the requests it got.
func serve(t *testing.T, status int, headers map[string]string, body string) (*httptest.Server, *[]apitest.Request) {
	t.Helper()
	h := map[string]string{"Content-Type": "application/json; charset=utf-8"}
	maps.Copy(h, headers)
	return apitest.Serve(t, status, h, body)
}

// builder makes the runners of the tests.
var builder = apitest.Builder{NewWith: ollama.NewWith, Name: "ollama"}

func build(t *testing.T, s runner.Settings, d ollama.Deps) runner.Runner {
	t.Helper()
	return builder.Build(t, s, d)
}

func invocation(t *testing.T) runner.Invocation {
	return apitest.Invocation(t, "triage", "Which workflow fits?\n")
}

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
	srv, got := serve(t, 200, nil, chatJSON(runnertest.OKReply, "stop"))
	r := build(t, runner.Settings{URL: srv.URL, Model: "qwen2.5-coder"}, ollama.Deps{})
	inv := invocation(t)
	res, err := r.Run(t.Context(), inv)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	req := (*got)[0]
	if req.Path != "POST /api/chat" {
		t.Errorf("request %s, want POST /api/chat", req.Path)
	}
	if req.Body["model"] != "qwen2.5-coder" || req.Body["stream"] != false {
		t.Errorf("model %v stream %v, want qwen2.5-coder and stream false", req.Body["model"], req.Body["stream"])
	}
	if a := req.Header.Get("Authorization"); a != "" {
		t.Errorf("Authorization %q sent to a server with no key configured", a)
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
	if want := (event.Usage{InputTokens: 1200, OutputTokens: 340}); res.Usage != want {
		t.Errorf("usage %+v, want %+v (a local model has no cost)", res.Usage, want)
	}
	if res.Model != "qwen2.5-coder:7b" {
		t.Errorf("model %q, want the model that answered", res.Model)
	}
	if log, _ := os.ReadFile(inv.LogPath); !strings.Contains(string(log), "POST "+srv.URL+"/api/chat") || !strings.Contains(string(log), "SIGNAL BLOCK") {
		t.Errorf("log lacks the request line or the reply:\n%s", log)
	}
}

func TestRunModelAndKey(t *testing.T) {
	tests := []struct {
		name      string
		settings  runner.Settings
		vars      map[string]string
		stepModel string
		wantModel string
		wantAuth  string
	}{
		{name: "configured model", settings: runner.Settings{Model: "llama3.2"}, wantModel: "llama3.2"},
		{name: "step model wins", settings: runner.Settings{Model: "llama3.2"}, stepModel: "gemma3", wantModel: "gemma3"},
		{name: "bearer key when a variable is named", settings: runner.Settings{Model: "gpt-oss:120b", Env: []string{"OLLAMA_API_KEY"}},
			vars: map[string]string{"OLLAMA_API_KEY": "ollama-key-123456"}, wantModel: "gpt-oss:120b", wantAuth: "Bearer ollama-key-123456"},
		{name: "no header when the named variable is unset", settings: runner.Settings{Model: "llama3.2", Env: []string{"OLLAMA_API_KEY"}},
			wantModel: "llama3.2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, got := serve(t, 200, nil, chatJSON("ok", "stop"))
			s := tt.settings
			s.URL = srv.URL
			inv := invocation(t)
			inv.Model = tt.stepModel
			vars := tt.vars
			if _, err := build(t, s, ollama.Deps{Getenv: func(k string) string { return vars[k] }}).Run(t.Context(), inv); err != nil {
				t.Fatalf("Run: %v", err)
			}
			req := (*got)[0]
			if req.Body["model"] != tt.wantModel || req.Header.Get("Authorization") != tt.wantAuth {
				t.Errorf("model %v auth %q, want %s %q", req.Body["model"], req.Header.Get("Authorization"), tt.wantModel, tt.wantAuth)
			}
		})
	}
}

func TestRunWithoutModel(t *testing.T) {
	srv, got := serve(t, 200, nil, chatJSON("ok", "stop"))
	_, err := build(t, runner.Settings{Name: "local", URL: srv.URL}, ollama.Deps{}).Run(t.Context(), invocation(t))
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
	_, err = build(t, runner.Settings{URL: "http://" + addr, Model: "llama3.2"}, ollama.Deps{}).Run(t.Context(), invocation(t))
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
	r := retry.Wrap(build(t, runner.Settings{URL: "http://" + addr, Model: "llama3.2"}, ollama.Deps{}), retry.Policy{Sleep: start})
	inv := invocation(t)
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
	tests := []struct {
		name      string
		status    int
		headers   map[string]string
		body      string
		wantKind  runner.Kind
		wantAfter time.Duration
		wantMsg   string
	}{
		{name: "model not pulled", status: 404, body: `{"error":"model \"llama3.2\" not found, try pulling it first"}`,
			wantKind: runner.KindBackend, wantMsg: "(pull it with: ollama pull llama3.2)"},
		{name: "unauthorized", status: 401, body: `{"error":"unauthorized"}`, wantKind: runner.KindAuth, wantMsg: "runners.ollama.env"},
		{name: "too many requests", status: 429, headers: map[string]string{"Retry-After": "4"}, body: `{"error":"too many requests"}`,
			wantKind: runner.KindRateLimit, wantAfter: 4 * time.Second},
		{name: "server busy", status: 503, body: `{"error":"server busy, please try again.  maximum pending requests exceeded"}`,
			wantKind: runner.KindRateLimit},
		{name: "server error", status: 500, body: `{"error":"llama runner process has terminated: signal: killed"}`,
			wantKind: runner.KindBackend, wantMsg: "HTTP 500: llama runner process has terminated"},
		{name: "malformed JSON", status: 200, body: `{"model":"llama3.2","message":{"content":"half`,
			wantKind: runner.KindBackend, wantMsg: "malformed JSON"},
		{name: "error in a 200", status: 200, body: `{"error":"an error was encountered while running the model"}`,
			wantKind: runner.KindBackend, wantMsg: "an error: an error was encountered"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, _ := serve(t, tt.status, tt.headers, tt.body)
			_, err := build(t, runner.Settings{URL: srv.URL, Model: "llama3.2"}, ollama.Deps{}).Run(t.Context(), invocation(t))
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
		})
	}
}

func TestRunReplyCutAtLength(t *testing.T) {
	srv, _ := serve(t, 200, nil, chatJSON("and then", "length"))
	res, err := build(t, runner.Settings{URL: srv.URL, Model: "llama3.2"}, ollama.Deps{}).Run(t.Context(), invocation(t))
	if runner.KindOf(err) != runner.KindTurnLimit {
		t.Fatalf("error %v, want a turn-limit error", err)
	}
	if res.Output != "and then" || res.Usage.OutputTokens != 340 {
		t.Errorf("result %+v, want the partial reply and its usage kept", res)
	}
}

func TestRunHugeReplyKeepsItsEnd(t *testing.T) {
	huge := strings.Repeat("filler line\n", 6<<20/12) + runnertest.OKReply
	srv, _ := serve(t, 200, nil, chatJSON(huge, "stop"))
	res, err := build(t, runner.Settings{URL: srv.URL, Model: "llama3.2"}, ollama.Deps{}).Run(t.Context(), invocation(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Output) > 4<<20 || !strings.HasSuffix(res.Output, runnertest.OKReply) || !strings.HasPrefix(res.Output, "[reply cut") {
		t.Errorf("output of %d bytes (%q…): want at most 4 MiB, marked cut, ending with the SIGNAL BLOCK", len(res.Output), res.Output[:40])
	}
}

func TestNewRejectsBadURL(t *testing.T) {
	_, err := ollama.New(runner.Settings{Name: "ollama", URL: "ftp://gpu-box:11434"})
	if err == nil || !strings.Contains(err.Error(), "runners.ollama.url") {
		t.Fatalf("error %v, want one naming runners.ollama.url", err)
	}
}

// TestConformance runs the shared suite on what applies to an API runner.
func TestConformance(t *testing.T) {
	apitest.Conformance(t, func(reply string) string { return chatJSON(reply, "stop") }, func(t *testing.T, url string) runner.Runner {
		return build(t, runner.Settings{URL: url, Model: "llama3.2"}, ollama.Deps{})
	})
}
