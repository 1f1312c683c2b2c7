package modelsim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// maxBody bounds a request body; agent CLIs send well under 1 MiB.
const maxBody = 32 << 20

// LogEntry is one line of the request log: what was asked, which rule
// answered, and what it cost, so prompt sizes can be measured.
type LogEntry struct {
	Time         time.Time `json:"time"`
	API          string    `json:"api"`
	Path         string    `json:"path"`
	Model        string    `json:"model,omitempty"`
	Stream       bool      `json:"stream"`
	Rule         string    `json:"rule,omitempty"`
	Turn         int       `json:"turn"`
	Status       int       `json:"status"`
	RequestBytes int       `json:"request_bytes"`
	InputTokens  int       `json:"input_tokens"`
	OutputTokens int       `json:"output_tokens"`
	Error        string    `json:"error,omitempty"`
}

// handler serves the scenario over every API.
type handler struct {
	sc  Scenario
	mux *http.ServeMux
	seq atomic.Int64

	mu  sync.Mutex // serialises log lines
	log io.Writer
}

// New returns a handler that answers model API requests from sc and writes
// one JSON LogEntry line per request to log (nil discards them).
//
// Routes: POST /v1/messages (Anthropic; ?beta=true is ignored),
// POST /v1/messages/count_tokens, POST /v1/chat/completions (OpenAI),
// POST /v1/responses (OpenAI Responses), POST /v1beta/models/M:generateContent,
// :streamGenerateContent and :countTokens (Gemini, also under /v1/models/),
// POST /api/chat (Ollama); GET /v1/models (Anthropic and OpenAI) and
// GET /api/tags (Ollama) list one model, so `cadre runners check` finds
// the server as it would the real API.
func New(sc Scenario, log io.Writer) http.Handler {
	if log == nil {
		log = io.Discard
	}
	h := &handler{sc: sc, log: log, mux: http.NewServeMux()}
	h.mux.HandleFunc("POST /v1/messages", h.serve(apiAnthropic, parseAnthropic, writeAnthropic))
	h.mux.HandleFunc("POST /v1/messages/count_tokens", h.countTokens(apiAnthropic))
	h.mux.HandleFunc("POST /v1/chat/completions", h.serve(apiOpenAI, parseOpenAI, writeOpenAI))
	h.mux.HandleFunc("POST /v1/responses", h.serve(apiResponses, parseResponses, writeResponses))
	h.mux.HandleFunc("POST /v1beta/models/{action}", h.gemini)
	h.mux.HandleFunc("POST /v1/models/{action}", h.gemini)
	h.mux.HandleFunc("POST /api/chat", h.serve(apiOllama, parseOllama, writeOllama))
	h.mux.HandleFunc("GET /v1/models", h.models(map[string]any{"object": "list", "has_more": false,
		"data": []map[string]any{{"id": ModelName, "object": "model", "type": "model", "display_name": ModelName}}}))
	h.mux.HandleFunc("GET /api/tags", h.models(map[string]any{"models": []map[string]any{{"name": ModelName, "model": ModelName}}}))
	h.mux.HandleFunc("/", h.notFound)
	return h
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

// writer writes a reply to c in one API's format.
type writer func(w http.ResponseWriter, c *call, r *reply)

// serve reads, parses, answers and logs one request.
func (h *handler) serve(api string, parse func([]byte) (*call, error), write writer) http.HandlerFunc {
	return func(w http.ResponseWriter, req *http.Request) {
		e := LogEntry{Time: time.Now().UTC(), API: api, Path: req.URL.Path}
		body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, maxBody))
		e.RequestBytes = len(body)
		var c *call
		if err == nil {
			c, err = parse(body)
		}
		if err != nil {
			e.Status, e.Error = http.StatusBadRequest, err.Error()
			writeError(w, api, &APIError{Status: http.StatusBadRequest, Message: err.Error()})
			h.record(e)
			return
		}
		c.size = len(body)
		r := choose(&h.sc, c, h.seq.Add(1))
		e.Model, e.Stream, e.Rule, e.Turn = c.model, c.stream, r.rule, r.turn
		e.InputTokens, e.OutputTokens = r.usage.InputTokens, r.usage.OutputTokens
		if r.err != nil {
			e.Status, e.Error = r.err.Status, r.err.message()
			e.OutputTokens = 0
			writeError(w, api, r.err)
		} else {
			e.Status = http.StatusOK
			write(w, c, r)
		}
		h.record(e)
	}
}

// gemini routes /models/MODEL:ACTION.
func (h *handler) gemini(w http.ResponseWriter, req *http.Request) {
	model, action, ok := strings.Cut(req.PathValue("action"), ":")
	switch {
	case ok && action == "generateContent":
		h.serve(apiGemini, func(b []byte) (*call, error) { return parseGemini(b, model, false) }, writeGemini)(w, req)
	case ok && action == "streamGenerateContent":
		write := writeGemini
		if req.URL.Query().Get("alt") != "sse" {
			write = writeGeminiArray
		}
		h.serve(apiGemini, func(b []byte) (*call, error) { return parseGemini(b, model, true) }, write)(w, req)
	case ok && action == "countTokens":
		h.countTokens(apiGemini)(w, req)
	default:
		h.notFound(w, req)
	}
}

// countTokens answers token-counting endpoints with the bytes/4 estimate.
func (h *handler) countTokens(api string) http.HandlerFunc {
	return func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(http.MaxBytesReader(w, req.Body, maxBody))
		n := max(1, len(body)/4)
		if api == apiGemini {
			writeJSON(w, map[string]any{"totalTokens": n})
		} else {
			writeJSON(w, map[string]any{"input_tokens": n})
		}
		h.record(LogEntry{Time: time.Now().UTC(), API: api, Path: req.URL.Path, Status: http.StatusOK, RequestBytes: len(body), InputTokens: n})
	}
}

// ModelName is the one model the model lists show; any name is answered.
const ModelName = "modelsim"

// models answers a model list request with list.
func (h *handler) models(list map[string]any) http.HandlerFunc {
	return func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(list)
		h.record(LogEntry{Time: time.Now().UTC(), API: "models", Path: req.URL.Path, Status: http.StatusOK})
	}
}

func (h *handler) notFound(w http.ResponseWriter, req *http.Request) {
	msg := fmt.Sprintf("modelsim serves no %s %s", req.Method, req.URL.Path)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusNotFound)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": "not_found_error", "code": http.StatusNotFound}})
	h.record(LogEntry{Time: time.Now().UTC(), API: "unknown", Path: req.URL.Path, Status: http.StatusNotFound, Error: msg})
}

// record writes one log line; a failing log writer does not fail requests.
func (h *handler) record(e LogEntry) {
	b, err := json.Marshal(e)
	if err != nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.log.Write(append(b, '\n'))
}

func (e *APIError) message() string {
	if e.Message != "" {
		return e.Message
	}
	return http.StatusText(e.Status)
}

// writeError sends err in api's error format.
func writeError(w http.ResponseWriter, api string, err *APIError) {
	typ := err.Type
	if typ == "" {
		typ = errorType(api, err.Status)
	}
	var body any
	switch api {
	case apiAnthropic:
		body = map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": err.message()}}
	case apiGemini:
		status := err.Type
		if status == "" {
			status = googleStatus(err.Status)
		}
		body = map[string]any{"error": map[string]any{"code": err.Status, "message": err.message(), "status": status}}
	case apiOllama:
		body = map[string]any{"error": err.message()}
	default:
		body = map[string]any{"error": map[string]any{"message": err.message(), "type": typ, "param": nil, "code": typ}}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(err.Status)
	json.NewEncoder(w).Encode(body)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

// sse writes Server-Sent Events, flushing after each.
type sse struct {
	w http.ResponseWriter
	f http.Flusher
}

func newSSE(w http.ResponseWriter) *sse {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	return &sse{w: w, f: f}
}

// send writes one event; an empty name writes a data-only event.
func (s *sse) send(name string, data any) {
	b, err := json.Marshal(data)
	if err != nil {
		return
	}
	if name != "" {
		fmt.Fprintf(s.w, "event: %s\n", name)
	}
	fmt.Fprintf(s.w, "data: %s\n\n", b)
	if s.f != nil {
		s.f.Flush()
	}
}

// raw writes a data-only event with text as is (OpenAI's [DONE]).
func (s *sse) raw(text string) {
	fmt.Fprintf(s.w, "data: %s\n\n", text)
	if s.f != nil {
		s.f.Flush()
	}
}

// chunks splits text into pieces of at most n bytes on rune boundaries, so
// streaming clients see several deltas as they would from a model.
func chunks(text string, n int) []string {
	var out []string
	for len(text) > n {
		i := n
		for i > 0 && !utf8RuneStart(text[i]) {
			i--
		}
		if i == 0 {
			i = n
		}
		out = append(out, text[:i])
		text = text[i:]
	}
	if text != "" {
		out = append(out, text)
	}
	return out
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }

// Server is a modelsim serving on a local address.
type Server struct {
	// URL is the base URL clients use, e.g. http://127.0.0.1:41234.
	URL  string
	srv  *http.Server
	done chan struct{}
	err  error // why Serve returned; read after done is closed
}

// Start serves h on addr (e.g. "127.0.0.1:0" for a free port) until ctx is
// done or Close is called.
func Start(ctx context.Context, addr string, h http.Handler) (*Server, error) {
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	s := &Server{
		URL:  "http://" + ln.Addr().String(),
		srv:  &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second},
		done: make(chan struct{}),
	}
	stop := context.AfterFunc(ctx, func() { s.Close() })
	go func() {
		err := s.srv.Serve(ln)
		stop()
		if !errors.Is(err, http.ErrServerClosed) {
			s.err = err
		}
		close(s.done)
	}()
	return s, nil
}

// Close stops the server, letting requests in flight finish for up to five
// seconds.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.srv.Shutdown(ctx); err != nil {
		return s.srv.Close()
	}
	return nil
}

// Wait blocks until the server has stopped and returns why: nil after
// Close or the end of Start's context.
func (s *Server) Wait() error {
	<-s.done
	return s.err
}
