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
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/cadre-dev/cadre/internal/codehost"
	"github.com/cadre-dev/cadre/internal/store"
	"github.com/cadre-dev/cadre/internal/workspace"
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
	// Store, Actions and Redact describe the one repository of a board
	// without Repos.
	Store   *store.Store
	Actions Actions // nil: the actions answer 501
	// Redact masks secrets in the step files served (agent output, logs).
	Redact func(string) string
	// Repos are the repositories of a board that shows several; the
	// first is the one the page opens on.
	Repos []Repo
	Token string // required by the actions; New refuses an empty one
	// Poll is how often the journal is read for new events (50ms).
	Poll time.Duration
}

// Repo is one repository a board shows: its journal and what its buttons
// do there.
type Repo struct {
	Name    string // shown in the page's picker; its key in the API is a slug of it
	Dir     string // shown as the picker's hint
	Store   *store.Store
	Actions Actions             // nil: the actions answer 501
	Redact  func(string) string // nil: nothing masked
	// PRs tells where the items' pull requests stand (GitHub); nil: the
	// cards show the link alone.
	PRs PRStatuses
	// Changes tells what an item's branch changed; nil: the item page
	// shows no diff.
	Changes Changes
}

// Changes tells what a branch changed since its base: the diff and the
// commits, newest first.
type Changes interface {
	Changes(ctx context.Context, branch string) (diff string, commits []workspace.LogCommit, err error)
}

// PRStatuses tells where a pull request stands.
type PRStatuses interface {
	PRStatus(ctx context.Context, number int) (codehost.PRStatus, error)
}

// repo is a Repo as served: its key in the API's paths and the hub that
// follows its journal.
type repo struct {
	Repo
	key string
	hub *hub

	prMu sync.Mutex
	prs  map[int]keptPR // what PRs answered lately, by number
}

// keptPR is a pull request's state as GitHub told it, and when.
type keptPR struct {
	st *codehost.PRStatus
	at time.Time
}

// prAge is how long the board shows a pull request's state before it
// asks GitHub again: every board load would otherwise cost requests.
const prAge = 30 * time.Second

// prStatus is where pull request number stands, asked at most every
// prAge; nil when the board cannot ask or GitHub did not answer.
func (rp *repo) prStatus(ctx context.Context, number int) *codehost.PRStatus {
	if rp.PRs == nil {
		return nil
	}
	rp.prMu.Lock()
	defer rp.prMu.Unlock()
	if k, ok := rp.prs[number]; ok && time.Since(k.at) < prAge {
		return k.st
	}
	var st *codehost.PRStatus
	if ps, err := rp.PRs.PRStatus(ctx, number); err == nil {
		st = &ps
	}
	if rp.prs == nil {
		rp.prs = map[int]keptPR{}
	}
	rp.prs[number] = keptPR{st: st, at: time.Now()}
	return st
}

// Server is the dashboard.
type Server struct {
	o     Options
	repos []*repo
	byKey map[string]*repo
	mux   *http.ServeMux
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
	repos := o.Repos
	switch {
	case len(repos) == 0 && o.Store == nil:
		return nil, errors.New("web board: no journal to show")
	case len(repos) == 0:
		repos = []Repo{{Name: "repository", Store: o.Store, Actions: o.Actions, Redact: o.Redact}}
	case o.Store != nil:
		return nil, errors.New("web board: give either Store or Repos, not both")
	}
	s := &Server{o: o, byKey: map[string]*repo{}, mux: http.NewServeMux()}
	for _, r := range repos {
		if r.Store == nil {
			return nil, fmt.Errorf("web board: repository %s has no journal", r.Name)
		}
		if r.Redact == nil {
			r.Redact = func(s string) string { return s }
		}
		// The key is made here, never taken from a request: a request can
		// only pick one of these repositories, not name a directory.
		key := slug(r.Name)
		for n := 2; s.byKey[key] != nil; n++ {
			key = fmt.Sprintf("%s-%d", slug(r.Name), n)
		}
		rp := &repo{Repo: r, key: key, hub: newHub(r.Store, o.Poll)}
		s.repos = append(s.repos, rp)
		s.byKey[key] = rp
	}
	static, _ := fs.Sub(staticFS, "static")
	s.mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	s.mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		http.ServeFileFS(w, r, static, "index.html")
	})
	s.mux.HandleFunc("GET /api/repos", s.listRepos)
	// /api/repos/KEY/… is a repository of the board; /api/… without a
	// key is the first one, as on a board of one repository.
	for _, pre := range []string{"/api", "/api/repos/{repo}"} {
		s.mux.HandleFunc("GET "+pre+"/runs", s.inRepo(s.listRuns))
		s.mux.HandleFunc("GET "+pre+"/runs/{run}", s.inRepo(s.board))
		s.mux.HandleFunc("GET "+pre+"/runs/{run}/items/{item}", s.inRepo(s.item))
		s.mux.HandleFunc("GET "+pre+"/runs/{run}/items/{item}/assets", s.inRepo(s.assets))
		s.mux.HandleFunc("GET "+pre+"/runs/{run}/items/{item}/assets/{name}", s.inRepo(s.asset))
		s.mux.HandleFunc("GET "+pre+"/runs/{run}/file", s.inRepo(s.file))
		s.mux.HandleFunc("GET "+pre+"/runs/{run}/cost", s.inRepo(s.cost))
		s.mux.HandleFunc("GET "+pre+"/events", s.inRepo(s.events))
		s.mux.HandleFunc("POST "+pre+"/runs/{run}/items/{item}/approve", s.authorized(s.inRepo(s.approve)))
		s.mux.HandleFunc("POST "+pre+"/runs/{run}/stop", s.authorized(s.inRepo(s.stop)))
	}
	return s, nil
}

// slug is name as a short path segment: lower-case letters, digits and
// dashes.
func slug(name string) string {
	var b strings.Builder
	dash := false
	for _, c := range strings.ToLower(name) {
		if (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') {
			b.WriteRune(c)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	out := strings.TrimSuffix(b.String(), "-")
	if len(out) > 40 {
		out = strings.TrimSuffix(out[:40], "-")
	}
	if out == "" {
		return "repo"
	}
	return out
}

// inRepo resolves the request's repository key to one of the board's
// repositories (404 for any other) before next handles it.
func (s *Server) inRepo(next func(http.ResponseWriter, *http.Request, *repo)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		rp := s.repos[0]
		if key := r.PathValue("repo"); key != "" {
			if rp = s.byKey[key]; rp == nil {
				http.Error(w, "this board shows no such repository", http.StatusNotFound)
				return
			}
		}
		next(w, r, rp)
	}
}

// Clients is how many pages follow an event stream now.
func (s *Server) Clients() int {
	n := 0
	for _, rp := range s.repos {
		n += rp.hub.clients()
	}
	return n
}

// Flush waits (until ctx ends) for the pages to have been sent every
// event journaled so far: a run --serve about to exit lets its board
// show how the run ended.
func (s *Server) Flush(ctx context.Context) {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for _, rp := range s.repos {
		seq, err := rp.Store.LastEventSeq(ctx)
		if err != nil {
			return
		}
		for !rp.hub.delivered(seq) {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
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
	for _, rp := range s.repos {
		g.Go(func() error {
			// A read cut short by the shutdown is no error.
			if err := rp.hub.run(hubCtx); err != nil && hubCtx.Err() == nil {
				return fmt.Errorf("follow the journal of %s: %w", rp.Name, err)
			}
			return nil
		})
	}
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
