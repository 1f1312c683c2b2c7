package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/cadre-dev/cadre/internal/proc"
	"github.com/cadre-dev/cadre/internal/runner"
)

const key = "sk-test-0123456789"

func TestBaseURL(t *testing.T) {
	tests := []struct {
		raw, want, wantErr string
	}{
		{raw: "", want: "http://127.0.0.1:11434"},
		{raw: "https://api.example.com/", want: "https://api.example.com"},
		{raw: "http://gw:8080/v1//", want: "http://gw:8080/v1"},
		{raw: "api.example.com", wantErr: `runners.api.url "api.example.com" is not an http(s) URL: set it like http://127.0.0.1:11434`},
		{raw: "unix:///run/sock", wantErr: "runners.api.url"},
	}
	for _, tt := range tests {
		got, err := BaseURL("api", tt.raw, "http://127.0.0.1:11434")
		switch {
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("BaseURL(%q) error %v, want one containing %q", tt.raw, err, tt.wantErr)
		case tt.wantErr == "" && (err != nil || got != tt.want):
			t.Errorf("BaseURL(%q) = %q, %v; want %q", tt.raw, got, err, tt.want)
		}
	}
}

func TestKeyEnv(t *testing.T) {
	tests := []struct {
		env  []string
		want string
	}{
		{nil, "API_KEY"},
		{[]string{""}, "API_KEY"},
		{[]string{"WORK_KEY", "OTHER"}, "WORK_KEY"},
	}
	for _, tt := range tests {
		if got := KeyEnv(tt.env, "API_KEY"); got != tt.want {
			t.Errorf("KeyEnv(%q) = %q, want %q", tt.env, got, tt.want)
		}
	}
}

func TestNewEndpoint(t *testing.T) {
	d := runner.Descriptor{Type: "api", Kind: runner.TypeAPI, BaseURL: "https://api.example.com", KeyEnv: "API_KEY",
		KeyRequired: func(base string) bool { return base == "https://api.example.com" }}
	e, err := NewEndpoint(runner.Settings{Name: "x"}, d, "m1", Deps{})
	if err != nil {
		t.Fatal(err)
	}
	if e.Base != d.BaseURL || e.Model != "m1" || e.KeyEnv != "API_KEY" || !e.Keyed || e.Name() != "x" {
		t.Errorf("defaults: %+v, want the descriptor's URL and key variable, model m1, keyed", e)
	}
	if e.Client == nil || e.Client.Timeout != 0 || e.Getenv == nil || e.Now == nil {
		t.Errorf("dependencies left nil: want a client without timeout, os.Getenv, time.Now")
	}
	mine := &http.Client{}
	fixed := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	e, err = NewEndpoint(runner.Settings{Name: "x", URL: "http://127.0.0.1:9/", Model: "m2", Env: []string{"MINE"}}, d, "m1",
		Deps{Client: mine, Getenv: func(string) string { return "v" }, Now: func() time.Time { return fixed }})
	if err != nil {
		t.Fatal(err)
	}
	if e.Base != "http://127.0.0.1:9" || e.Model != "m2" || e.KeyEnv != "MINE" || e.Keyed {
		t.Errorf("settings: %+v, want their URL without slash, model and key variable, not keyed", e)
	}
	if e.Client != mine || e.Getenv("X") != "v" || !e.Now().Equal(fixed) {
		t.Errorf("NewEndpoint replaced dependencies that were given")
	}
	if _, err := NewEndpoint(runner.Settings{Name: "x", URL: "ftp://h"}, d, "", Deps{}); err == nil || !strings.Contains(err.Error(), "runners.x.url") {
		t.Errorf("bad URL: %v, want an error naming runners.x.url", err)
	}
}

func TestBegin(t *testing.T) {
	vars := map[string]string{}
	e := Endpoint{Instance: "x", KeyEnv: "API_KEY", Keyed: true, Deps: Deps{Getenv: func(k string) string { return vars[k] }}}
	logPath := filepath.Join(t.TempDir(), "s.log")
	_, _, err := e.Begin(runner.Invocation{LogPath: logPath}, "Example")
	if runner.KindOf(err) != runner.KindAuth || !strings.Contains(err.Error(), "API_KEY is not set: export your Example API key") {
		t.Errorf("keyed without a key: %v, want an auth error saying to export API_KEY", err)
	}
	if b, _ := os.ReadFile(logPath); !strings.Contains(string(b), "not sent: API_KEY is not set") {
		t.Errorf("log %q does not say why nothing was sent", b)
	}
	vars["API_KEY"] = "k"
	log, key, err := e.Begin(runner.Invocation{LogPath: logPath}, "Example")
	if err != nil || key != "k" {
		t.Fatalf("with a key: %q, %v", key, err)
	}
	log.Close()
	e.Keyed, vars["API_KEY"] = false, ""
	log, key, err = e.Begin(runner.Invocation{LogPath: logPath}, "Example")
	if err != nil || key != "" {
		t.Fatalf("not keyed, no key: %q, %v; want it sent without", key, err)
	}
	log.Close()
}

// serve starts a server answering every request with status and body, and
// keeps the last request it got.
func serve(t *testing.T, status int, body string) (*httptest.Server, *http.Request, *[]byte) {
	t.Helper()
	last := &http.Request{}
	var got []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		*last = *r.Clone(context.Background())
		got, _ = io.ReadAll(r.Body)
		w.WriteHeader(status)
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv, last, &got
}

func TestSendOK(t *testing.T) {
	srv, last, body := serve(t, 200, `{"ok":true}`)
	var log strings.Builder
	var notes []string
	h := http.Header{}
	h.Set("x-api-key", key)
	ans, err := Send(t.Context(), srv.Client(), &log, Request{Runner: "r", Endpoint: srv.URL + "/v1/chat", Header: h,
		Key: key, Model: "m1", Prompt: "hello", Body: map[string]string{"model": "m1"}, Timeout: time.Minute,
		Progress: func(n string) { notes = append(notes, n) }})
	if err != nil {
		t.Fatal(err)
	}
	if ans.Status != 200 || string(ans.Body) != `{"ok":true}` {
		t.Errorf("answer %d %q", ans.Status, ans.Body)
	}
	for k, want := range map[string]string{"Content-Type": "application/json", "Accept": "application/json", "X-Api-Key": key} {
		if got := last.Header.Get(k); got != want {
			t.Errorf("header %s = %q, want %q", k, got, want)
		}
	}
	var sent map[string]string
	if err := json.Unmarshal(*body, &sent); err != nil || sent["model"] != "m1" {
		t.Errorf("body %q (%v), want the request as JSON", *body, err)
	}
	if h.Get("Content-Type") != "" {
		t.Errorf("Send changed the caller's header: %v", h)
	}
	if len(notes) != 1 || notes[0] != "asking m1" {
		t.Errorf("progress %q, want [asking m1]", notes)
	}
	if !strings.HasPrefix(log.String(), "POST "+srv.URL+"/v1/chat model=m1 prompt=5 bytes\nHTTP 200 in ") {
		t.Errorf("log %q, want the request and status lines", log.String())
	}
}

func TestSendErrorAnswerIsLogged(t *testing.T) {
	srv, _, _ := serve(t, 401, "bad key "+key+"\n  try again")
	var log strings.Builder
	ans, err := Send(t.Context(), srv.Client(), &log, Request{Runner: "r", Endpoint: srv.URL, Key: key, Model: "m", Body: struct{}{}})
	if err != nil || ans.Status != 401 {
		t.Fatalf("Send = %d, %v; want the 401 answer", ans.Status, err)
	}
	if !strings.HasSuffix(log.String(), "\nbad key [redacted] try again\n") || strings.Contains(log.String(), key) {
		t.Errorf("log %q, want the body on one line without the key", log.String())
	}
}

func TestSendFailures(t *testing.T) {
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Reading the request lets the server notice the client leave.
		io.Copy(io.Discard, r.Body)
		<-r.Context().Done()
	}))
	t.Cleanup(hang.Close)
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	tests := []struct {
		name     string
		ctx      context.Context
		url      string
		timeout  time.Duration
		wantIs   error
		wantMsg  string
		wantHint bool
	}{
		{name: "step timeout", ctx: t.Context(), url: hang.URL, timeout: 50 * time.Millisecond,
			wantIs: context.DeadlineExceeded, wantMsg: "runner r: no answer within the step timeout of 50ms"},
		{name: "cancelled", ctx: cancelled, url: hang.URL, wantIs: context.Canceled, wantMsg: "runner r: context canceled"},
		{name: "no server", ctx: t.Context(), url: gone.URL, wantMsg: "runner r: unavailable: Post", wantHint: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var log strings.Builder
			_, err := Send(tt.ctx, &http.Client{}, &log, Request{Runner: "r", Endpoint: tt.url, Model: "m", Body: struct{}{},
				Timeout: tt.timeout, Hint: "(is the server up?)"})
			if err == nil || !strings.HasPrefix(err.Error(), tt.wantMsg) {
				t.Fatalf("error %v, want one starting %q", err, tt.wantMsg)
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("error %v, want it to be %v", err, tt.wantIs)
			}
			// A refused connection sent nothing: it is retried after a pause.
			if got, want := runner.KindOf(err), map[bool]runner.Kind{true: runner.KindUnavailable}[tt.url == gone.URL]; got != want {
				t.Errorf("error %v: kind %q, want %q", err, got, want)
			}
			if got := strings.HasSuffix(err.Error(), " (is the server up?)"); got != tt.wantHint {
				t.Errorf("error %q: hint added %v, want %v", err, got, tt.wantHint)
			}
			if !strings.Contains(log.String(), "failed: "+err.Error()) {
				t.Errorf("log %q lacks the failure", log.String())
			}
		})
	}
}

func TestMissingKey(t *testing.T) {
	var log strings.Builder
	err := MissingKey(&log, "api", "MY_KEY", "Example")
	want := "MY_KEY is not set: export your Example API key in it, or name another variable in runners.api.env"
	if err.Kind != runner.KindAuth || err.Runner != "api" || err.Msg != want {
		t.Errorf("MissingKey = %+v", err)
	}
	if log.String() != "not sent: MY_KEY is not set\n" {
		t.Errorf("log %q", log.String())
	}
}

func TestRefusal(t *testing.T) {
	tests := []struct {
		status   int
		typ, msg string
		want     string
	}{
		{429, "rate_limit_error", "slow down", "HTTP 429 rate_limit_error: slow down"},
		{502, "", "<html>\n<body>Bad Gateway</body></html>", "HTTP 502: <html> <body>Bad Gateway</body></html>"},
		{500, "api_error", "", "HTTP 500 api_error"},
		{401, "", "key " + key + " is wrong", "HTTP 401: key [redacted] is wrong"},
	}
	for _, tt := range tests {
		e := Refusal("api", tt.status, tt.typ, tt.msg, key)
		if e.Kind != runner.KindBackend || e.Runner != "api" || e.Msg != tt.want {
			t.Errorf("Refusal(%d, %q, %q) = %+v, want backend %q", tt.status, tt.typ, tt.msg, e, tt.want)
		}
	}
}

func TestBrief(t *testing.T) {
	// Two bytes a rune after one byte: maxErrMsg falls inside a rune.
	long := "a" + strings.Repeat("é", maxErrMsg)
	tests := []struct {
		name, s, key, want string
	}{
		{"folds whitespace", " a\n\tb  c ", "", "a b c"},
		{"redacts the key", "got " + key, key, "got [redacted]"},
		{"leaves a short key", "got abc", "abc", "got abc"},
		{"cuts before a rune", long, "", "a" + strings.Repeat("é", maxErrMsg/2-1) + "…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Brief(tt.s, tt.key)
			if got != tt.want || !utf8.ValidString(got) {
				t.Errorf("Brief = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestCapReply(t *testing.T) {
	if got := CapReply("short reply"); got != "short reply" {
		t.Errorf("CapReply kept %q", got)
	}
	long := "é" + strings.Repeat("x", proc.DefaultMaxStdout) + "### SIGNAL BLOCK"
	got := CapReply(long)
	if len(got) > proc.DefaultMaxStdout || !strings.HasPrefix(got, "[reply cut: only its end is kept]\n") ||
		!strings.HasSuffix(got, "### SIGNAL BLOCK") || !utf8.ValidString(got) {
		t.Errorf("CapReply kept %d bytes, starting %q, ending %q", len(got), got[:40], got[len(got)-20:])
	}
}

func TestLogText(t *testing.T) {
	var short strings.Builder
	LogText(&short, "reply\n\n")
	if short.String() != "reply\n" {
		t.Errorf("LogText = %q, want one newline", short.String())
	}
	var long strings.Builder
	LogText(&long, strings.Repeat("x", proc.DefaultMaxLog+10))
	if !strings.HasSuffix(long.String(), fmt.Sprintf("\n[output truncated after %d bytes]\n", proc.DefaultMaxLog)) || long.Len() > proc.DefaultMaxLog+100 {
		t.Errorf("LogText of a long text wrote %d bytes ending %q", long.Len(), long.String()[long.Len()-50:])
	}
}

func TestUnreadable(t *testing.T) {
	req := Request{Runner: "api", Endpoint: "http://h/v1/chat", Key: key}
	ans := Answer{Status: 200, Body: []byte(`{"choices": [], "echo": "` + key + `"}`)}
	var decodeErr error
	if err := json.Unmarshal([]byte(`{"cut`), &struct{}{}); err != nil {
		decodeErr = err
	}
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"lacking", nil, "http://h/v1/chat answered with no choices; is runners.api.url an example server?"},
		{"malformed", decodeErr, "http://h/v1/chat answered with malformed JSON: " + decodeErr.Error() + "; is runners.api.url an example server?"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var log strings.Builder
			e := Unreadable(&log, req, ans, tt.err, "no choices", "an example server")
			if e.Kind != runner.KindBackend || e.Runner != "api" || e.Msg != tt.want {
				t.Errorf("Unreadable = %+v, want backend %q", e, tt.want)
			}
			if log.String() != `{"choices": [], "echo": "[redacted]"}`+"\n" {
				t.Errorf("log %q, want the body without the key", log.String())
			}
		})
	}
}
