package web

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/cadre-dev/cadre/internal/store"
)

//go:embed static
var staticFS embed.FS

// ErrConflict is wrapped by an action's error when the run or item is not
// in a state the action applies to (answered with 409).
var ErrConflict = errors.New("conflict")

// Actions are what the board's buttons do. The command line implements
// them: in the process of a run, or in a cadre serve that resumes a run
// nobody runs.
type Actions interface {
	// Approve answers item's waiting escalation in run.
	Approve(ctx context.Context, run, item string, approved bool, note string) error
	// Stop asks run to start no new step.
	Stop(ctx context.Context, run string) error
}

// Options configure a Server.
type Options struct {
	Store   *store.Store
	Token   string  // required by the actions; New refuses an empty one
	Actions Actions // nil: the actions answer 501
	// Redact masks secrets in the step files served (agent output, logs).
	Redact func(string) string
	// Poll is how often the journal is read for new events (50ms).
	Poll time.Duration
}

// Server is the dashboard.
type Server struct {
	o   Options
	hub *hub
	mux *http.ServeMux
}

// NewToken returns a fresh random action token.
func NewToken() string {
	var b [24]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// New builds a server over o.Store.
func New(o Options) (*Server, error) {
	if len(o.Token) < 16 {
		return nil, errors.New("web board: the action token must have at least 16 characters")
	}
	if o.Poll <= 0 {
		o.Poll = 50 * time.Millisecond
	}
	if o.Redact == nil {
		o.Redact = func(s string) string { return s }
	}
	s := &Server{o: o, hub: newHub(o.Store, o.Poll), mux: http.NewServeMux()}
	static, _ := fs.Sub(staticFS, "static")
	s.mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	s.mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		http.ServeFileFS(w, r, static, "index.html")
	})
	s.mux.HandleFunc("GET /api/runs", s.listRuns)
	s.mux.HandleFunc("GET /api/runs/{run}", s.board)
	s.mux.HandleFunc("GET /api/runs/{run}/items/{item}", s.item)
	s.mux.HandleFunc("GET /api/runs/{run}/file", s.file)
	s.mux.HandleFunc("GET /api/runs/{run}/cost", s.cost)
	s.mux.HandleFunc("GET /api/events", s.events)
	s.mux.HandleFunc("POST /api/runs/{run}/items/{item}/approve", s.authorized(s.approve))
	s.mux.HandleFunc("POST /api/runs/{run}/stop", s.authorized(s.stop))
	return s, nil
}

// Clients is how many pages follow the event stream now.
func (s *Server) Clients() int { return s.hub.clients() }

// Flush waits (until ctx ends) for the pages to have been sent every
// event journaled so far: a run --serve about to exit lets its board
// show how the run ended.
func (s *Server) Flush(ctx context.Context) {
	seq, err := s.o.Store.LastEventSeq(ctx)
	if err != nil {
		return
	}
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for !s.hub.delivered(seq) {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
	// The streams write and flush what they took from their queue.
	select {
	case <-ctx.Done():
	case <-time.After(100 * time.Millisecond):
	}
}

// Handler is the server's HTTP handler, with its security headers.
func (s *Server) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !localHost(r.Host) {
			// A page of another site that rebound its name to 127.0.0.1
			// must not read the journal.
			http.Error(w, "cadre serve answers only requests for localhost or an IP address", http.StatusMisdirectedRequest)
			return
		}
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-store")
		s.mux.ServeHTTP(w, r)
	})
}

// localHost accepts localhost and IP addresses: a rebinding attack needs a
// domain name of its own, which is refused.
func localHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if host == "localhost" {
		return true
	}
	return net.ParseIP(host) != nil
}

// authorized lets a request through only with the server's token.
func (s *Server) authorized(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), []byte(s.o.Token)) != 1 {
			http.Error(w, "this action needs the board's token (printed by cadre serve, or in --token-file)", http.StatusForbidden)
			return
		}
		next(w, r)
	}
}

// Serve answers on ln until ctx ends, then shuts down gracefully: open
// event streams end, requests in flight get a few seconds to finish.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
	g, gctx := errgroup.WithContext(ctx)
	hubCtx, stopHub := context.WithCancel(gctx)
	defer stopHub()
	g.Go(func() error {
		// A read cut short by the shutdown is no error.
		if err := s.hub.run(hubCtx); err != nil && hubCtx.Err() == nil {
			return fmt.Errorf("follow the journal: %w", err)
		}
		return nil
	})
	g.Go(func() error {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("web board: %w", err)
		}
		return nil
	})
	g.Go(func() error {
		<-gctx.Done()
		stopHub() // ends the event streams, which would hold Shutdown up
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(sctx); err != nil {
			srv.Close()
		}
		return nil
	})
	return g.Wait()
}
