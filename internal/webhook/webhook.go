// Package webhook receives the forge's webhooks for cadre watch --listen:
// POST /webhooks/github (X-Hub-Signature-256) and POST /webhooks/gitlab
// (X-Gitlab-Token). A delivery is authenticated before its body is
// parsed, acted on once however often it is sent (its id is kept in the
// state directory), and handed on as a small Event; the handler never
// does the work itself, so the forge is answered at once.
package webhook

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"time"
)

// Forges, as cadre.yaml's sections name them.
const (
	GitHub = "github"
	GitLab = "gitlab"
)

// MaxBody is the largest body read: GitHub caps its payloads at 25 MB,
// but the events cadre acts on are a few KiB, and a big push's is
// nothing cadre needs whole.
const MaxBody = 1 << 20

// Event is what a delivery says, as much as cadre watch acts on.
type Event struct {
	Forge    string // github or gitlab
	Kind     string // check_run, pull_request, push; pipeline, merge_request, note
	Action   string // the event's action (labeled, completed, merge), or its status for GitLab's pipelines and jobs
	State    string // a check's conclusion, a review's state, a pull request's merged or closed
	Delivery string // the forge's id of the delivery
	Repo     string // owner/name, or GitLab's path_with_namespace
	PR       int    // the pull (merge) request's number, 0 when none is named
	Head     string // the commit concerned: a check's head, a push's new tip
	Issue    int    // the issue's number, for issue events
	Labels   []string
	// Pull is the pull request as a pull_request delivery shows it, and
	// Check the check run, commit status or job a delivery is about:
	// what the watch can take as it stands instead of asking (nil when
	// the delivery has none).
	Pull  *Pull
	Check *Check
}

// Pull is a pull request as a delivery shows it.
type Pull struct {
	State   string // open or closed
	Merged  bool
	Head    string // the head commit
	Base    string // the base branch
	Title   string
	Updated time.Time
}

// Check is a check run, commit status or job as a delivery shows it. Its
// texts come from CI: untrusted.
type Check struct {
	ID         int64  // the run's, status's or job's id: a later one of a name is greater
	Name       string // the check run's or job's name, the status's context
	Status     string // queued, in_progress or completed; a status's own state
	Conclusion string // once completed: success, failure…; a status's state
	Title      string // the check run's output, or a status's description
	Summary    string
	Text       string
	App        string // the check run's app ("github-actions" for a workflow job)
	URL        string
}

// Options configure a Handler.
type Options struct {
	Forge  string // the forge watched: the other one's route is answered 404
	Secret []byte // GitHub's HMAC key, or GitLab's secret token
	Base   string // the base branch: pushes to other branches are ignored
	Repo   string // owner/name; a delivery about another repository is ignored ("" takes any)
	// StateFile keeps the deliveries seen, so that a restarted watch does
	// not act on a redelivery twice; "" keeps them in memory only.
	StateFile string
	// Rate and Burst bound the requests served, authenticated or not
	// (zero: 20 a second, 40 at once).
	Rate  float64
	Burst int
	// OnEvent hears each accepted event, on the request's goroutine: it
	// must not block for long.
	OnEvent func(Event)
	// Warn hears what goes wrong beside a request's answer (nil: nothing).
	Warn func(msg string)
	Now  func() time.Time // nil: time.Now
}

// Handler serves the webhook routes.
type Handler struct {
	o    Options
	seen *Deliveries
	rate *bucket
}

// New makes a Handler, reading the deliveries seen before.
func New(o Options) (*Handler, error) {
	if o.Forge != GitHub && o.Forge != GitLab {
		return nil, fmt.Errorf("webhook: forge %q: want github or gitlab", o.Forge)
	}
	if len(o.Secret) == 0 {
		return nil, errors.New("webhook: no secret")
	}
	if o.Rate <= 0 {
		o.Rate = 20
	}
	if o.Burst <= 0 {
		o.Burst = 40
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	seen, err := OpenDeliveries(o.StateFile, MaxDeliveries)
	if err != nil {
		return nil, err
	}
	return &Handler{o: o, seen: seen, rate: newBucket(o.Rate, o.Burst, o.Now)}, nil
}

// Path is the route of forge's webhooks.
func Path(forge string) string { return "/webhooks/" + forge }

// ServeHTTP answers one delivery: 202 when it is taken (acted on or
// ignored), 200 when it was seen before, 401 when it is not the forge's.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != Path(h.o.Forge) {
		// The other forge's route too: its secret is not configured.
		http.NotFound(w, r)
		return
	}
	// Before any other work: an unauthenticated flood costs no more
	// than this.
	if ok, wait := h.rate.take(); !ok {
		w.Header().Set("Retry-After", strconv.Itoa(int(wait/time.Second)+1))
		http.Error(w, "too many requests", http.StatusTooManyRequests)
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "only POST", http.StatusMethodNotAllowed)
		return
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		http.Error(w, "content type must be application/json", http.StatusUnsupportedMediaType)
		return
	}
	if r.ContentLength > MaxBody {
		http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, "unreadable body", http.StatusBadRequest)
		return
	}
	h.deliver(w, r.Header, body)
}

// deliver authenticates a read body, then parses and hands it on once.
func (h *Handler) deliver(w http.ResponseWriter, hdr http.Header, body []byte) {
	var ev Event
	var ok bool
	var err error
	switch h.o.Forge {
	case GitHub:
		if !verifyGitHub(h.o.Secret, hdr.Get("X-Hub-Signature-256"), body) {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		if hdr.Get("X-GitHub-Event") == "ping" {
			io.WriteString(w, "pong\n")
			return
		}
		ev, ok, err = parseGitHub(hdr.Get("X-GitHub-Event"), body, h.o.Base)
		ev.Delivery = hdr.Get("X-GitHub-Delivery")
	case GitLab:
		if !verifyGitLab(h.o.Secret, hdr.Get("X-Gitlab-Token")) {
			http.Error(w, "bad token", http.StatusUnauthorized)
			return
		}
		ev, ok, err = parseGitLab(hdr.Get("X-Gitlab-Event"), body, h.o.Base)
		ev.Delivery = gitlabDelivery(hdr)
	}
	if err != nil {
		http.Error(w, "bad payload", http.StatusBadRequest)
		return
	}
	if !ok || h.o.Repo != "" && ev.Repo != "" && !sameRepo(ev.Repo, h.o.Repo) {
		w.WriteHeader(http.StatusAccepted)
		io.WriteString(w, "ignored\n")
		return
	}
	ev.Forge = h.o.Forge
	fresh, err := h.seen.Mark(ev.Delivery)
	if err != nil && h.o.Warn != nil {
		// Still acted on: only a restart's redelivery would be acted on again.
		h.o.Warn("webhook: " + err.Error())
	}
	if !fresh {
		io.WriteString(w, "seen before\n")
		return
	}
	if h.o.OnEvent != nil {
		h.o.OnEvent(ev)
	}
	w.WriteHeader(http.StatusAccepted)
	io.WriteString(w, "accepted\n")
}
