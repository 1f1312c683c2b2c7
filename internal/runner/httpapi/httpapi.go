// Package httpapi is the plumbing the model-API runners (anthropic, openai,
// ollama) share: the runner itself, built from its settings (New, Runner),
// one step sent and its answer read (Step), checking the base URL, one
// logged JSON exchange bounded by the step's timeout, the error of a
// refused or missing key, and keeping the reply, the log and error messages
// within bounds. What each API sends, answers and means by its errors
// stays in its own package (API).
package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/proc"
	"github.com/cadre-dev/cadre/internal/runner"
	"github.com/cadre-dev/cadre/internal/runner/cliutil"
	"github.com/cadre-dev/cadre/internal/runner/price"
)

// What bounds one exchange with a model API.
const (
	maxBody   = 64 << 20 // far beyond any model's reply; past it the answer is refused
	maxErrMsg = 300      // bytes of a server's error message kept in an error
)

// BaseURL checks a configured base URL (def when raw is empty) and drops its
// trailing slash. The error names runners.NAME.url and shows def.
func BaseURL(name, raw, def string) (string, error) {
	if raw == "" {
		raw = def
	}
	if err := cliutil.CheckURL(name, raw, def); err != nil {
		return "", err
	}
	return strings.TrimRight(raw, "/"), nil
}

// KeyEnv is the variable holding the API key: the first of the settings'
// env, else def.
func KeyEnv(env []string, def string) string {
	if len(env) > 0 && env[0] != "" {
		return env[0]
	}
	return def
}

// Deps are a model-API runner's outside dependencies; the zero value is
// production.
type Deps struct {
	// Client sends the requests; nil means a client without an overall
	// timeout, since the step's own timeout bounds each request (a local
	// model may take minutes).
	Client *http.Client
	// Getenv reads the API key when a step runs; nil means os.Getenv.
	Getenv func(string) string
	// Now dates a retry-after given as an HTTP date; nil means time.Now.
	Now func() time.Time
}

// withDefaults fills in the production value of each dependency left nil:
// a client without an overall timeout, os.Getenv and time.Now.
func (d Deps) withDefaults() Deps {
	if d.Client == nil {
		d.Client = &http.Client{}
	}
	if d.Getenv == nil {
		d.Getenv = os.Getenv
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	return d
}

// Endpoint is what a model-API runner keeps of its settings, read alike
// for every API from its type's descriptor.
type Endpoint struct {
	Instance string // the runner's instance name (runners.NAME)
	Base     string // the base URL, without a trailing slash
	Model    string // the model of a step that names none
	// Prices turn the tokens the API reports into an estimated cost, for
	// an API that reports none (see API.Priced); nil means the built-in
	// prices.
	Prices *price.Table
	// KeyEnv names the variable of the API key; empty for none.
	KeyEnv string
	// Keyed says the endpoint always needs the key (the vendor's own);
	// another server (a proxy, a local one) is sent one only if set.
	Keyed bool
	Deps
}

// NewEndpoint reads a model API's settings with the defaults of d, its
// type's descriptor: URL (default d.BaseURL), Model (default defModel; a
// step's model wins) and Env[0], the variable holding the API key (default
// d.KeyEnv); the prices are s's. The dependencies left nil get their
// production value.
func NewEndpoint(s runner.Settings, d runner.Descriptor, defModel string, deps Deps) (Endpoint, error) {
	base, err := BaseURL(s.Name, s.URL, d.BaseURL)
	if err != nil {
		return Endpoint{}, err
	}
	model := s.Model
	if model == "" {
		model = defModel
	}
	return Endpoint{Instance: s.Name, Base: base, Model: model, KeyEnv: KeyEnv(s.Env, d.KeyEnv),
		Keyed: d.NeedsKey(base), Prices: s.Prices, Deps: deps.withDefaults()}, nil
}

// Runner is a model-API runner: its endpoint, and what a step sends to
// the API.
type Runner struct {
	Endpoint
	api func(e *Endpoint, inv runner.Invocation) API
}

// New builds a runner of the API of type d from its settings (see
// NewEndpoint); api says what a step sends to the API and how the answer
// reads.
func New(s runner.Settings, d runner.Descriptor, defModel string, deps Deps, api func(e *Endpoint, inv runner.Invocation) API) (runner.Runner, error) {
	e, err := NewEndpoint(s, d, defModel, deps)
	if err != nil {
		return nil, err
	}
	return &Runner{Endpoint: e, api: api}, nil
}

// Run sends the step to the API (see Step).
func (r *Runner) Run(ctx context.Context, inv runner.Invocation) (runner.Result, error) {
	return r.Step(ctx, inv, r.api(&r.Endpoint, inv))
}

// Message is one message of a chat.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Chat is the conversation of one step for an API that takes the role's
// instructions as a system message: those, then the step's prompt.
func Chat(inv runner.Invocation) []Message {
	var msgs []Message
	if inv.Instructions != "" {
		msgs = append(msgs, Message{Role: "system", Content: inv.Instructions})
	}
	return append(msgs, Message{Role: "user", Content: inv.UserText()})
}

// Name returns the configured instance name.
func (e *Endpoint) Name() string { return e.Instance }

// Capabilities of a model API: text only, any model; the cost, if any, is
// estimated from tokens.
func (e *Endpoint) Capabilities() runner.Caps { return runner.Caps{ModelChoice: true} }

// Begin opens a step's transcript and reads the API key. An endpoint that
// always needs the key is not sent the step without one: the error says
// to export it, provider naming whose key it is.
func (e *Endpoint) Begin(inv runner.Invocation, provider string) (log io.WriteCloser, key string, err error) {
	log, err = cliutil.OpenLog(inv.LogPath, inv.Mask)
	if err != nil {
		return nil, "", fmt.Errorf("runner %s: %w", e.Instance, err)
	}
	if e.KeyEnv != "" {
		key = e.Getenv(e.KeyEnv)
	}
	if key == "" && e.Keyed {
		err := MissingKey(log, e.Instance, e.KeyEnv, provider)
		log.Close()
		return nil, "", err
	}
	return log, key, nil
}

// API is what one model API is to Step: where a step goes, what it
// sends, how its answer reads and what its errors mean.
type API struct {
	// Name says what runners.NAME.url should point at, for the error of an
	// answer that is not the API's reply ("an Ollama server").
	Name string
	// Provider names whose key the API takes, for the error of a missing
	// key ("Anthropic").
	Provider string
	URL      string // the endpoint a step is posted to
	// Header is the API's headers for key (empty for none).
	Header func(key string) http.Header
	// Body is the request of the step asking model.
	Body func(model string) any
	// Hint is added to the error of an exchange that failed (Request.Hint).
	Hint string
	// NoModel says how to name a model, for a step that has none (an API
	// with no default model).
	NoModel string
	// Read reads an answer of status 200: a NotReply when it is valid JSON
	// but not the API's reply, another error when it is no JSON at all.
	Read func(body []byte, key string) (Reply, error)
	// Refused is the error of an answer of another status (see Refusal).
	Refused func(ans Answer, model, key string) *runner.Error
	// Priced says the API reports no cost: it is estimated from
	// the endpoint's Prices. A model that costs nothing per token (ollama)
	// is not.
	Priced bool
}

// Reply is what an API's answer said.
type Reply struct {
	Text  string
	Model string      // the model that answered, when the API says
	Usage event.Usage // the tokens, and a cost if the API reports one
	// Log is the transcript's line after "model=…": why the reply
	// ended, and the tokens as the API counts them.
	Log string
	// Cut, when set, says the reply was cut off before it finished: the
	// step fails as a turn limit with this message, its reply kept.
	Cut string
}

// NotReply is the error of an answer that is valid JSON but not the API's
// reply: it says what the answer lacks.
type NotReply string

func (e NotReply) Error() string { return string(e) }

// Step sends inv to api, asking the step's model (else the endpoint's),
// and returns the reply, its usage and the model that answered. The
// transcript holds the exchange, the reply and its tokens; an error
// answer is api.Refused's, an answer that is not a reply is Unreadable.
func (e *Endpoint) Step(ctx context.Context, inv runner.Invocation, api API) (runner.Result, error) {
	model := cliutil.Model(inv, e.Model)
	if model == "" {
		return runner.Result{}, fmt.Errorf("runner %s: no model: %s", e.Instance, api.NoModel)
	}
	log, key, err := e.Begin(inv, api.Provider)
	if err != nil {
		return runner.Result{}, err
	}
	defer log.Close()
	call := Request{
		Runner: e.Instance, Endpoint: api.URL, Header: api.Header(key), Key: key, Model: model, Prompt: inv.Instructions + inv.UserText(),
		Body: api.Body(model), Timeout: inv.Timeout, Progress: inv.Progress, Hint: api.Hint,
	}
	ans, err := Send(ctx, e.Client, log, call)
	if err != nil {
		return runner.Result{}, err
	}
	if ans.Status != http.StatusOK {
		return runner.Result{}, api.Refused(ans, model, key)
	}
	reply, err := api.Read(ans.Body, key)
	if err != nil {
		var what NotReply
		if errors.As(err, &what) {
			return runner.Result{}, Unreadable(log, call, ans, nil, string(what), api.Name)
		}
		return runner.Result{}, Unreadable(log, call, ans, err, "", api.Name)
	}
	if reply.Model == "" {
		reply.Model = model
	}
	if api.Priced {
		reply.Usage = cliutil.Estimate(e.Prices, reply.Model, reply.Usage)
	}
	fmt.Fprintf(log, "model=%s %s\n", reply.Model, reply.Log)
	LogText(log, reply.Text)
	res := runner.Result{Output: CapReply(reply.Text), Usage: reply.Usage, Model: reply.Model}
	if reply.Cut != "" {
		return res, &runner.Error{Kind: runner.KindTurnLimit, Runner: e.Instance, Msg: reply.Cut}
	}
	return res, nil
}

// Bearer is the header of an API that takes its key as a bearer token:
// none when key is empty.
func Bearer(key string) http.Header {
	h := http.Header{}
	if key != "" {
		h.Set("Authorization", "Bearer "+key)
	}
	return h
}

// Answer is an API's HTTP response, read whole.
type Answer struct {
	Status int
	Header http.Header
	Body   []byte
}

// Request is one step's exchange with an API.
type Request struct {
	Runner   string      // the runner's instance name, for errors
	Endpoint string      // the URL posted to
	Header   http.Header // the API's own headers (key, version)
	Key      string      // the API key, kept out of the log and errors
	Model    string      // the model asked, for the log and progress
	Prompt   string      // the prompt, whose size is logged
	Body     any         // the request, sent as JSON
	// Timeout is the step's; 0 means none beyond ctx.
	Timeout time.Duration
	// Progress, when set, is told which model is being asked.
	Progress func(string)
	// Hint is added to an error that is neither the step's timeout nor a
	// cancellation, to say what to check (is the server running?).
	Hint string
}

// Send posts req.Body within the step's timeout and reads the answer,
// writing the request, the outcome and the body of an error answer to log.
// An exchange that failed returns an error naming the runner; one that ran
// out of the step's timeout wraps context.DeadlineExceeded. Any HTTP status
// is an Answer, for the caller to read or classify.
func Send(ctx context.Context, c *http.Client, log io.Writer, req Request) (Answer, error) {
	if req.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, req.Timeout)
		defer cancel()
	}
	fmt.Fprintf(log, "POST %s model=%s prompt=%d bytes\n", req.Endpoint, req.Model, len(req.Prompt))
	if req.Progress != nil {
		req.Progress(fmt.Sprintf("asking %s", req.Model))
	}
	start := time.Now()
	ans, err := post(ctx, c, req.Endpoint, req.Header, req.Body)
	if err != nil {
		err = failed(ctx, req.Runner, req.Timeout, err)
		if req.Hint != "" && ctx.Err() == nil {
			err = fmt.Errorf("%w %s", err, req.Hint)
		}
		fmt.Fprintf(log, "failed: %s\n", Brief(err.Error(), req.Key))
		return Answer{}, err
	}
	fmt.Fprintf(log, "HTTP %d in %s\n", ans.Status, time.Since(start).Round(time.Millisecond))
	if ans.Status != http.StatusOK {
		LogBody(log, ans, req.Key)
	}
	return ans, nil
}

// post sends body as JSON to endpoint with header and reads the answer.
func post(ctx context.Context, c *http.Client, endpoint string, header http.Header, body any) (Answer, error) {
	data, err := json.Marshal(body)
	if err != nil {
		return Answer{}, fmt.Errorf("encode request: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(data))
	if err != nil {
		return Answer{}, fmt.Errorf("build request: %w", err)
	}
	req.Header = header.Clone()
	if req.Header == nil {
		req.Header = http.Header{}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return Answer{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		return Answer{}, fmt.Errorf("read the response of %s: %w", endpoint, err)
	}
	if len(b) > maxBody {
		return Answer{}, fmt.Errorf("the response of %s is over %d MiB", endpoint, maxBody>>20)
	}
	return Answer{Status: resp.StatusCode, Header: resp.Header, Body: b}, nil
}

// failed is the error Send returns when post failed: the step's own timeout
// or cancellation stays recognisable with errors.Is.
func failed(ctx context.Context, name string, timeout time.Duration, err error) error {
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded) && timeout > 0:
		return fmt.Errorf("runner %s: no answer within the step timeout of %s: %w", name, timeout, context.DeadlineExceeded)
	case ctx.Err() != nil:
		return fmt.Errorf("runner %s: %w", name, ctx.Err())
	case errors.Is(err, syscall.ECONNREFUSED):
		// Nothing reached the server: the step is tried again after a
		// pause, as a rate limit is (a local model server may be starting).
		return &runner.Error{Kind: runner.KindUnavailable, Runner: name, Msg: err.Error()}
	}
	return fmt.Errorf("runner %s: %w", name, err)
}

// MissingKey is the error of a step not sent because keyEnv, the variable
// of the API key an endpoint always needs, is empty; provider names whose
// key it is. The log says why nothing was sent.
func MissingKey(log io.Writer, name, keyEnv, provider string) *runner.Error {
	fmt.Fprintf(log, "not sent: %s is not set\n", keyEnv)
	return &runner.Error{Kind: runner.KindAuth, Runner: name,
		Msg: fmt.Sprintf("%s is not set: export your %s API key in it, or name another variable in runners.%s.env", keyEnv, provider, name)}
}

// Refusal is the error of an error answer, of kind backend until the caller
// classifies it: "HTTP <status> <typ>: <msg>", without the type when typ is
// empty and with msg made one short line without key.
func Refusal(name string, status int, typ, msg, key string) *runner.Error {
	detail := fmt.Sprintf("HTTP %d", status)
	if typ != "" {
		detail += " " + typ
	}
	if m := Brief(msg, key); m != "" {
		detail += ": " + m
	}
	return &runner.Error{Kind: runner.KindBackend, Runner: name, Msg: detail}
}

// Unreadable is the error of an answer that is not the API's reply, logged
// with its body: decodeErr, the answer's JSON error, wins over what, which
// says what the answer lacks; api names what runners.NAME.url should point
// at ("an Ollama server").
func Unreadable(log io.Writer, req Request, ans Answer, decodeErr error, what, api string) *runner.Error {
	if decodeErr != nil {
		what = "malformed JSON: " + decodeErr.Error()
	}
	LogBody(log, ans, req.Key)
	return &runner.Error{Kind: runner.KindBackend, Runner: req.Runner,
		Msg: fmt.Sprintf("%s answered with %s; is runners.%s.url %s?", req.Endpoint, what, req.Runner, api)}
}

// LogBody writes an answer's body to the transcript as one short line.
func LogBody(w io.Writer, ans Answer, key string) {
	fmt.Fprintf(w, "%s\n", Brief(string(ans.Body), key))
}

// LogText writes text to the transcript, at most proc.DefaultMaxLog bytes of
// it, like the log of an agent process.
func LogText(w io.Writer, text string) {
	if len(text) > proc.DefaultMaxLog {
		fmt.Fprintf(w, "%s\n[output truncated after %d bytes]\n", text[:proc.DefaultMaxLog], proc.DefaultMaxLog)
		return
	}
	fmt.Fprintf(w, "%s\n", strings.TrimRight(text, "\n"))
}

// CapReply bounds the reply kept in the Result like an agent's stdout. It
// keeps the end, where the SIGNAL BLOCK is.
func CapReply(s string) string {
	const max = proc.DefaultMaxStdout
	if len(s) <= max {
		return s
	}
	const note = "[reply cut: only its end is kept]\n"
	i := len(s) - max + len(note)
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return note + s[i:]
}

// Brief makes a server's message fit in a one-line error, with the API key
// (should a server echo it) removed.
func Brief(s, key string) string {
	if len(key) >= 8 {
		s = strings.ReplaceAll(s, key, "[redacted]")
	}
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > maxErrMsg {
		i := maxErrMsg
		for i > 0 && !utf8.RuneStart(s[i]) {
			i--
		}
		s = s[:i] + "…"
	}
	return s
}
