// Package apitest holds the fixtures the tests of the model-API runners
// share: a fake API that records what it was sent, a transport that must
// not be used, a Getenv reading a map, a step and a runner built for a
// test, and the suites every API runner passes (the conformance suite's
// part that applies, and a run against modelsim). What each API answers
// stays in that runner's tests.
package apitest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/modelsim"
	"github.com/cadre-dev/cadre/internal/runner"
	"github.com/cadre-dev/cadre/internal/runner/httpapi"
	"github.com/cadre-dev/cadre/internal/runner/runnertest"
	"github.com/cadre-dev/cadre/internal/signal"
)

// Request is what a fake API received.
type Request struct {
	Header http.Header
	Path   string         // method and path, as "POST /v1/messages"
	Body   map[string]any // the JSON body
}

// Serve starts a fake API answering every request with status, headers and
// body, a JSON document (Content-Type application/json unless headers set
// another), and records the requests it got. A request whose body is not
// JSON fails the test.
func Serve(t testing.TB, status int, headers map[string]string, body string) (*httptest.Server, *[]Request) {
	t.Helper()
	var got []Request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := Request{Header: r.Header.Clone(), Path: r.Method + " " + r.URL.Path}
		data, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(data, &c.Body); err != nil {
			t.Errorf("request body is not JSON: %v: %q", err, data)
		}
		got = append(got, c)
		w.Header().Set("Content-Type", "application/json")
		for k, v := range headers {
			w.Header().Set(k, v)
		}
		w.WriteHeader(status)
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv, &got
}

// NoNetwork is a transport that fails the test if a request is sent at all.
type NoNetwork struct{ T testing.TB }

// RoundTrip fails the test and the request.
func (n NoNetwork) RoundTrip(r *http.Request) (*http.Response, error) {
	n.T.Errorf("request sent to %s", r.URL)
	return nil, errors.New("no network in tests")
}

// Env is a Getenv that reads vars.
func Env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

// Invocation is a text-only step of role with prompt, its log inside a
// fresh working tree and a minute's timeout.
func Invocation(t testing.TB, role, prompt string) runner.Invocation {
	t.Helper()
	dir := t.TempDir()
	return runner.Invocation{Role: role, Item: "07-sample", Step: "07-sample/" + role + "/" + role + "#1", Attempt: 1,
		Prompt: prompt, Dir: dir, LogPath: filepath.Join(dir, "logs", "step.log"), Timeout: time.Minute}
}

// Builder builds an API runner for a test: newWith is the package's
// NewWith, name the instance name of settings that give none, and env
// the variables Getenv reads when the dependencies give no Getenv. Every
// runner it builds dates a retry-after by Now.
type Builder struct {
	NewWith func(runner.Settings, httpapi.Deps) (runner.Runner, error)
	Name    string
	Env     map[string]string
}

// Now is the time a Builder's runners take for now.
var Now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// Build makes a runner of s and d, with b's defaults.
func (b Builder) Build(t testing.TB, s runner.Settings, d httpapi.Deps) runner.Runner {
	t.Helper()
	if s.Name == "" {
		s.Name = b.Name
	}
	if d.Getenv == nil && b.Env != nil {
		d.Getenv = Env(b.Env)
	}
	d.Now = func() time.Time { return Now }
	r, err := b.NewWith(s, d)
	if err != nil {
		t.Fatalf("NewWith: %v", err)
	}
	return r
}

// Conformance runs the shared suite on what applies to an API runner: no
// process, so timeout and cancellation end the request; a huge reply, the
// API's answer around reply, stays bounded. build makes the runner sent
// to the fake API at url.
func Conformance(t *testing.T, answer func(reply string) string, build func(t *testing.T, url string) runner.Runner) {
	runnertest.Run(t, runnertest.Harness{
		New: func(t *testing.T, b runnertest.Behavior) runner.Runner {
			var h http.HandlerFunc
			switch b {
			case runnertest.Hang:
				h = func(w http.ResponseWriter, r *http.Request) {
					io.Copy(io.Discard, r.Body) // lets the server notice the client leave
					<-r.Context().Done()
				}
			case runnertest.Flood:
				h = func(w http.ResponseWriter, r *http.Request) {
					io.WriteString(w, answer(strings.Repeat("0123456789abcdef", runnertest.FloodSize/16)))
				}
			default:
				t.Skipf("an API runner cannot behave as %q: it writes no files, reads no context file, runs no process; the tests above cover replies, usage and errors", b)
			}
			srv := httptest.NewServer(h)
			t.Cleanup(srv.Close)
			return build(t, srv.URL)
		},
		Usage:     true,
		InProcess: true,
	})
}

// Modelsim is how an API runner meets cadre's scripted model server.
type Modelsim struct {
	API string // the API modelsim speaks (its scenario's match.api)
	// Busy is the HTTP status by which the API says it is busy.
	Busy int
	// Usage are the tokens the runner reports of a reply modelsim counts
	// as 900 in, 120 out, 40 read from the cache.
	Usage event.Usage
	// New builds the runner sent to modelsim at url, with model sim-model.
	New func(url string) (runner.Runner, error)
}

// simScenario answers the planner with a plan and its SIGNAL BLOCK, and a
// prompt asking for trouble with an API error; %[1]s is the API, %[2]d
// the status of its error.
const simScenario = `conversations:
  - name: plan
    match: {role: planner, api: %[1]s}
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
    match: {contains: "the server is busy", api: %[1]s}
    turns:
      - error: {status: %[2]d}
`

// AgainstModelsim runs the runner against cadre's scripted model server:
// a plan comes back with its signal and usage, and a busy server is a
// rate limit.
func AgainstModelsim(t *testing.T, m Modelsim) {
	sc, err := modelsim.Parse("scenario.yaml", fmt.Appendf(nil, simScenario, m.API, m.Busy))
	if err != nil {
		t.Fatal(err)
	}
	var requests bytes.Buffer
	srv := httptest.NewServer(modelsim.New(sc, &requests))
	t.Cleanup(srv.Close)
	r, err := m.New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}

	inv := Invocation(t, "planner", "You are the **planner** for task `07-sample`: Greet.\n")
	res, err := r.Run(t.Context(), inv)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	sig, err := signal.Parse(res.Output)
	if err != nil || sig.Result != signal.PlanCreated {
		t.Errorf("reply %q: signal %+v, %v; want PLAN_CREATED", res.Output, sig, err)
	}
	if u := res.Usage; u.InputTokens != m.Usage.InputTokens || u.OutputTokens != m.Usage.OutputTokens || u.CacheReadTokens != m.Usage.CacheReadTokens {
		t.Errorf("usage %+v, want in=%d out=%d cache_read=%d", u, m.Usage.InputTokens, m.Usage.OutputTokens, m.Usage.CacheReadTokens)
	}
	if !strings.Contains(requests.String(), "sim-model") {
		t.Errorf("modelsim did not log a request for sim-model:\n%s", requests.String())
	}

	inv.Prompt = "Please answer, though the server is busy.\n"
	if _, err := r.Run(t.Context(), inv); runner.KindOf(err) != runner.KindRateLimit {
		t.Errorf("error %v, want a rate-limit error from HTTP %d", err, m.Busy)
	}
}
