// Package apitest holds the fixtures and table checks the tests of the
// model-API runners share: a fake API that records what it was sent, a
// transport that must not be used, a Getenv reading a map, a step and a
// runner built for a test, the checks every API runner passes alike (a
// step sent and its reply read, where a step goes and which key it
// carries, a missing key, error answers), and the suite of the rest (a
// cut-off reply, a bad URL, the conformance suite's part that applies, a
// run against modelsim). What each API answers stays in that runner's
// tests.
package apitest

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
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
// runner it builds dates a retry-after by Now. Path is where the API is
// sent a step, as a Request names it ("POST /v1/messages"), and Headers
// are what its fakes answer with besides a case's own.
type Builder struct {
	NewWith func(runner.Settings, httpapi.Deps) (runner.Runner, error)
	Name    string
	Env     map[string]string
	Path    string
	Headers map[string]string
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

// Serve is the package's Serve, the fake API also answering with b's
// headers (a case's own win).
func (b Builder) Serve(t testing.TB, status int, headers map[string]string, body string) (*httptest.Server, *[]Request) {
	t.Helper()
	h := maps.Clone(b.Headers)
	if h == nil {
		h = map[string]string{}
	}
	maps.Copy(h, headers)
	return Serve(t, status, h, body)
}

// Reply is what a runner must make of the API's answer: the reply Output,
// the usage Usage and Model, the model that answered.
type Reply struct {
	Output string
	Usage  event.Usage
	Model  string
}

// Ask sends a step, answered 200 with answer, through a runner of s whose
// URL is the fake API's followed by s.URL, and checks what every API
// runner does alike: the step succeeds with the result want, the API gets
// one request asking s.Model with the prompt (see sent), and the log holds
// the request line and the reply but no key of b.Env. It returns the
// request, for what the API alone needs of it.
func (b Builder) Ask(t *testing.T, s runner.Settings, answer string, want Reply) Request {
	t.Helper()
	srv, got := b.Serve(t, 200, nil, answer)
	s.URL = srv.URL + s.URL
	inv := Invocation(t, "planner", "Plan the work.\n")
	res, err := b.Build(t, s, httpapi.Deps{}).Run(t.Context(), inv)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	want.check(t, res)
	req := b.sent(t, *got, s.Model, inv)
	for _, key := range b.Env {
		logged(t, inv, srv.URL+strings.TrimPrefix(b.Path, "POST "), key)
	}
	if len(b.Env) == 0 {
		logged(t, inv, srv.URL+strings.TrimPrefix(b.Path, "POST "), "")
	}
	return req
}

// check fails unless res is the reply want says; a cost, a sum of
// products of prices, may differ from want's in its last bits.
func (want Reply) check(t testing.TB, res runner.Result) {
	t.Helper()
	if res.Output != want.Output {
		t.Errorf("output %q, want %q", res.Output, want.Output)
	}
	got, u := res.Usage, want.Usage
	got.CostUSD, u.CostUSD = 0, 0
	if got != u || math.Abs(res.Usage.CostUSD-want.Usage.CostUSD) > 1e-12 {
		t.Errorf("usage %+v, want %+v", res.Usage, want.Usage)
	}
	if res.Model != want.Model {
		t.Errorf("model %q, want the model that answered, %q", res.Model, want.Model)
	}
}

// sent checks the one request a fake API got for inv: sent to b.Path,
// asking model, with one message, the user's prompt. It returns it.
func (b Builder) sent(t testing.TB, got []Request, model string, inv runner.Invocation) Request {
	t.Helper()
	if len(got) != 1 {
		t.Fatalf("%d requests, want 1", len(got))
	}
	req := got[0]
	if req.Path != b.Path {
		t.Errorf("request %s, want %s", req.Path, b.Path)
	}
	if req.Body["model"] != model {
		t.Errorf("model %v, want %s", req.Body["model"], model)
	}
	msgs, _ := req.Body["messages"].([]any)
	if len(msgs) != 1 {
		t.Fatalf("messages %v, want one user message", req.Body["messages"])
	}
	if m := msgs[0].(map[string]any); m["role"] != "user" || m["content"] != inv.Prompt {
		t.Errorf("message %v, want role user with the prompt", m)
	}
	return req
}

// logged checks the step's log holds the request line to url and the
// reply's SIGNAL BLOCK, and never key.
func logged(t testing.TB, inv runner.Invocation, url, key string) {
	t.Helper()
	log, err := os.ReadFile(inv.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(log), "POST "+url) || !strings.Contains(string(log), "SIGNAL BLOCK") {
		t.Errorf("log lacks the request line or the reply:\n%s", log)
	}
	if key != "" && strings.Contains(string(log), key) {
		t.Errorf("the API key is in the log:\n%s", log)
	}
}

// Route is where a step goes and what it carries: the runner built from S
// (its URL the fake API's, followed by Suffix), its key variables Vars,
// given a step asking StepModel, sends to WantPath (b.Path when empty)
// asking WantModel, with the key header WantKey (none when empty).
type Route struct {
	Name      string
	S         runner.Settings
	Suffix    string
	Vars      map[string]string
	StepModel string
	WantPath  string
	WantModel string
	WantKey   string
}

// Routes checks each route; keyHeader is the header that carries the key,
// answer the fake API's reply.
func (b Builder) Routes(t *testing.T, keyHeader, answer string, routes ...Route) {
	for _, tt := range routes {
		t.Run(tt.Name, func(t *testing.T) {
			srv, got := b.Serve(t, 200, nil, answer)
			s := tt.S
			s.URL = srv.URL + tt.Suffix
			inv := Invocation(t, "coder", "Do it.\n")
			inv.Model = tt.StepModel
			if _, err := b.Build(t, s, httpapi.Deps{Getenv: Env(tt.Vars)}).Run(t.Context(), inv); err != nil {
				t.Fatalf("Run: %v", err)
			}
			req := (*got)[0]
			path := cmp.Or(tt.WantPath, b.Path)
			keys := req.Header.Values(keyHeader)
			if req.Path != path || req.Body["model"] != tt.WantModel || tt.WantKey == "" && len(keys) != 0 ||
				tt.WantKey != "" && (len(keys) != 1 || keys[0] != tt.WantKey) {
				t.Errorf("sent %s model %v %s %q; want %s model %s %s %q", req.Path, req.Body["model"], keyHeader, keys,
					path, tt.WantModel, keyHeader, tt.WantKey)
			}
		})
	}
}

// MissingKey checks a runner of s, whose endpoint needs a key, does not
// send a step without one: an auth error holding each of want.
func (b Builder) MissingKey(t *testing.T, s runner.Settings, want ...string) {
	t.Helper()
	r := b.Build(t, s, httpapi.Deps{Client: &http.Client{Transport: NoNetwork{T: t}}, Getenv: Env(nil)})
	_, err := r.Run(t.Context(), Invocation(t, "coder", "Do it.\n"))
	if runner.KindOf(err) != runner.KindAuth {
		t.Fatalf("error %v, want an auth error", err)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q lacks %q", err, w)
		}
	}
}

// Refusal is an answer a fake API gives and the error the step must end
// in: of Kind, retried after After, one line containing Msg.
type Refusal struct {
	Name    string
	Status  int
	Headers map[string]string
	Body    string
	Kind    runner.Kind
	After   time.Duration
	Msg     string
}

// Refusals checks the error each refusal makes a runner of s (its URL the
// fake API's) end in, and that the step's log holds the HTTP status.
func (b Builder) Refusals(t *testing.T, s runner.Settings, refusals ...Refusal) {
	for _, tt := range refusals {
		t.Run(tt.Name, func(t *testing.T) {
			srv, _ := b.Serve(t, tt.Status, tt.Headers, tt.Body)
			s := s
			s.URL = srv.URL
			inv := Invocation(t, "coder", "Do it.\n")
			_, err := b.Build(t, s, httpapi.Deps{}).Run(t.Context(), inv)
			var re *runner.Error
			if !errors.As(err, &re) {
				t.Fatalf("error %v, want a *runner.Error", err)
			}
			if re.Kind != tt.Kind || re.RetryAfter != tt.After {
				t.Errorf("kind %s retry-after %s, want %s %s (%v)", re.Kind, re.RetryAfter, tt.Kind, tt.After, err)
			}
			if !strings.Contains(err.Error(), tt.Msg) || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q: want one line containing %q", err, tt.Msg)
			}
			if log, _ := os.ReadFile(inv.LogPath); !strings.Contains(string(log), fmt.Sprintf("HTTP %d", tt.Status)) {
				t.Errorf("log lacks the HTTP status:\n%s", log)
			}
		})
	}
}

// Suite is what every API runner passes alike, told how its API answers.
type Suite struct {
	// S are the settings of the runners the suite builds; their URL is
	// the fake API's.
	S runner.Settings
	// Answer is the API's reply of text, ended for the reason end: Done
	// (finished) or Cut (cut off at the output limit); it reports Tokens
	// output tokens.
	Answer    func(text, end string) string
	Done, Cut string
	Tokens    int64
	// BadURL is a base URL New must refuse.
	BadURL string
	// Modelsim is how the API meets modelsim.
	Modelsim Modelsim
}

// Suite runs su: a reply cut off before it finished fails the step as a
// turn limit, keeping the partial reply and its usage; New refuses a base
// URL that is no http(s) URL; the conformance suite's part that applies
// (Conformance); and a run against modelsim (AgainstModelsim).
func (b Builder) Suite(t *testing.T, su Suite) {
	t.Run("cut reply", func(t *testing.T) { b.cutReply(t, su) })
	t.Run("bad url", func(t *testing.T) {
		_, err := b.NewWith(runner.Settings{Name: b.Name, URL: su.BadURL}, httpapi.Deps{})
		if want := "runners." + b.Name + ".url"; err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("error %v, want one naming %s", err, want)
		}
	})
	t.Run("conformance", func(t *testing.T) {
		Conformance(t, func(reply string) string { return su.Answer(reply, su.Done) }, func(t *testing.T, url string) runner.Runner {
			s := su.S
			s.URL = url
			return b.Build(t, s, httpapi.Deps{})
		})
	})
	t.Run("modelsim", func(t *testing.T) { AgainstModelsim(t, b.NewWith, su.Modelsim) })
}

func (b Builder) cutReply(t *testing.T, su Suite) {
	srv, _ := b.Serve(t, 200, nil, su.Answer("and then", su.Cut))
	s := su.S
	s.URL = srv.URL
	res, err := b.Build(t, s, httpapi.Deps{}).Run(t.Context(), Invocation(t, "coder", "Do it.\n"))
	if runner.KindOf(err) != runner.KindTurnLimit {
		t.Fatalf("error %v, want a turn-limit error", err)
	}
	if !strings.HasSuffix(res.Output, "and then") || res.Usage.OutputTokens != su.Tokens {
		t.Errorf("result %+v, want the partial reply and its usage kept", res)
	}
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

// AgainstModelsim runs the runner newWith builds, sent to cadre's scripted
// model server, asking for sim-model and with no key: a plan comes back
// with its signal and usage, and a busy server is a rate limit.
func AgainstModelsim(t *testing.T, newWith func(runner.Settings, httpapi.Deps) (runner.Runner, error), m Modelsim) {
	sc, err := modelsim.Parse("scenario.yaml", fmt.Appendf(nil, simScenario, m.API, m.Busy))
	if err != nil {
		t.Fatal(err)
	}
	var requests bytes.Buffer
	srv := httptest.NewServer(modelsim.New(sc, &requests))
	t.Cleanup(srv.Close)
	r, err := newWith(runner.Settings{Name: "sim", URL: srv.URL, Model: "sim-model"}, httpapi.Deps{Getenv: Env(nil)})
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
