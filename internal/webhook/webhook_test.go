package webhook_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cadre-dev/cadre/internal/webhook"
)

const secret = "It's a Secret to Everybody"

// recorder collects the events a handler hands on.
type recorder struct {
	mu     sync.Mutex
	events []webhook.Event
}

func (r *recorder) on(e webhook.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

func (r *recorder) got() []webhook.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]webhook.Event(nil), r.events...)
}

func newHandler(t *testing.T, o webhook.Options) (*webhook.Handler, *recorder) {
	t.Helper()
	rec := &recorder{}
	if o.Forge == "" {
		o.Forge = webhook.GitHub
	}
	if o.Secret == nil {
		o.Secret = []byte(secret)
	}
	if o.Base == "" {
		o.Base = "main"
	}
	o.OnEvent = rec.on
	h, err := webhook.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return h, rec
}

// github is a delivery as GitHub sends it: JSON, signed, with an id.
func github(event, delivery, body string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/webhooks/github", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("User-Agent", "GitHub-Hookshot/044aadd")
	r.Header.Set("X-GitHub-Event", event)
	r.Header.Set("X-GitHub-Delivery", delivery)
	r.Header.Set("X-GitHub-Hook-ID", "292430182")
	r.Header.Set("X-Hub-Signature-256", webhook.Sign([]byte(secret), []byte(body)))
	return r
}

// gitlab is a delivery as GitLab sends it.
func gitlab(event, uuid, body string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/webhooks/gitlab", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("User-Agent", "GitLab/17.6.0")
	r.Header.Set("X-Gitlab-Event", event)
	r.Header.Set("X-Gitlab-Event-UUID", uuid)
	r.Header.Set("X-Gitlab-Instance", "https://gitlab.example.com")
	r.Header.Set("X-Gitlab-Token", secret)
	return r
}

func serve(h http.Handler, r *http.Request) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

const checkRunFailed = `{"action":"completed","check_run":{"id":4,"head_sha":"ce587453ced02b1526dfb4cb910479d431683101",
 "status":"completed","conclusion":"failure","name":"test","pull_requests":[{"url":"https://api.github.com/repos/acme/widgets/pulls/2",
 "id":279147437,"number":2,"head":{"ref":"cadre/2-x","sha":"ce587453ced02b1526dfb4cb910479d431683101"},"base":{"ref":"main"}}]},
 "repository":{"id":186853002,"name":"widgets","full_name":"acme/widgets"},"sender":{"login":"Codertocat"}}`

// A signed delivery is handed on once, answered 202; one not signed with
// the secret, or not signed at all, is answered 401 and handed on never.
func TestGitHubSignature(t *testing.T) {
	h, rec := newHandler(t, webhook.Options{})
	bad := github("check_run", "d-bad", checkRunFailed)
	bad.Header.Set("X-Hub-Signature-256", webhook.Sign([]byte("another secret"), []byte(checkRunFailed)))
	none := github("check_run", "d-none", checkRunFailed)
	none.Header.Del("X-Hub-Signature-256")
	sha1 := github("check_run", "d-sha1", checkRunFailed)
	sha1.Header.Set("X-Hub-Signature-256", "sha1="+strings.TrimPrefix(webhook.Sign([]byte(secret), []byte(checkRunFailed)), "sha256="))
	tampered := github("check_run", "d-tampered", checkRunFailed)
	tampered.Body = io.NopCloser(strings.NewReader(strings.Replace(checkRunFailed, "failure", "success", 1)))
	for name, r := range map[string]*http.Request{"bad": bad, "none": none, "sha1": sha1, "tampered": tampered} {
		if w := serve(h, r); w.Code != http.StatusUnauthorized {
			t.Errorf("%s signature: %d, want 401", name, w.Code)
		}
	}
	if got := rec.got(); len(got) != 0 {
		t.Fatalf("unauthenticated deliveries were handed on: %+v", got)
	}
	if w := serve(h, github("check_run", "d-good", checkRunFailed)); w.Code != http.StatusAccepted {
		t.Fatalf("signed delivery: %d %s, want 202", w.Code, w.Body)
	}
	want := webhook.Event{Forge: "github", Kind: "check_run", Action: "completed", State: "failure", Delivery: "d-good",
		Repo: "acme/widgets", PR: 2, Head: "ce587453ced02b1526dfb4cb910479d431683101",
		Check: &webhook.Check{ID: 4, Name: "test", Status: "completed", Conclusion: "failure"}}
	if got := rec.got(); len(got) != 1 || !reflect.DeepEqual(got[0], want) {
		t.Errorf("events %+v, want [%+v]", got, want)
	}
}

// GitLab's token is the secret, or the delivery is refused.
func TestGitLabToken(t *testing.T) {
	h, rec := newHandler(t, webhook.Options{Forge: webhook.GitLab})
	body := `{"object_kind":"pipeline","object_attributes":{"id":31,"ref":"cadre/2-x","sha":"bcbb5ec396a2c0f828686f14fac9b80b780504f2","status":"failed"},
	 "merge_request":{"id":1,"iid":2,"source_branch":"cadre/2-x","target_branch":"main"},"project":{"id":1,"path_with_namespace":"acme/widgets"}}`
	for name, token := range map[string]string{"wrong": "It's a secret to nobody", "missing": "", "prefix": secret[:5]} {
		r := gitlab("Pipeline Hook", "u-"+name, body)
		r.Header.Set("X-Gitlab-Token", token)
		if w := serve(h, r); w.Code != http.StatusUnauthorized {
			t.Errorf("%s token: %d, want 401", name, w.Code)
		}
	}
	if got := rec.got(); len(got) != 0 {
		t.Fatalf("unauthenticated deliveries were handed on: %+v", got)
	}
	if w := serve(h, gitlab("Pipeline Hook", "u-1", body)); w.Code != http.StatusAccepted {
		t.Fatalf("good token: %d %s", w.Code, w.Body)
	}
	if got := rec.got(); len(got) != 1 || got[0].PR != 2 || got[0].State != "failed" || got[0].Delivery != "u-1" {
		t.Errorf("events %+v", got)
	}
}

// A delivery sent again (the forge retried it, or a person pressed
// Redeliver) is answered 200 and acted on once, by this handler and by
// one made after a restart, which reads the ids kept in the state file.
func TestRepeatedDeliveryActedOnOnce(t *testing.T) {
	state := filepath.Join(t.TempDir(), "webhook-deliveries.json")
	h, rec := newHandler(t, webhook.Options{StateFile: state})
	for i, want := range []int{http.StatusAccepted, http.StatusOK, http.StatusOK} {
		if w := serve(h, github("check_run", "72d3162e-cc78-11e3-81ab-4c9367dc0958", checkRunFailed)); w.Code != want {
			t.Errorf("sending %d: %d, want %d", i+1, w.Code, want)
		}
	}
	if n := len(rec.got()); n != 1 {
		t.Fatalf("acted on %d times, want once", n)
	}
	again, rec2 := newHandler(t, webhook.Options{StateFile: state})
	if w := serve(again, github("check_run", "72d3162e-cc78-11e3-81ab-4c9367dc0958", checkRunFailed)); w.Code != http.StatusOK {
		t.Errorf("after a restart: %d, want 200", w.Code)
	}
	if w := serve(again, github("check_run", "another", checkRunFailed)); w.Code != http.StatusAccepted {
		t.Errorf("a new delivery after a restart: %d, want 202", w.Code)
	}
	if got := rec2.got(); len(got) != 1 || got[0].Delivery != "another" {
		t.Errorf("after a restart the events are %+v, want only the new delivery", got)
	}
	// GitLab's retries keep their Idempotency-Key where no event UUID is sent.
	gl, rec3 := newHandler(t, webhook.Options{Forge: webhook.GitLab})
	for range 2 {
		r := gitlab("Push Hook", "", `{"object_kind":"push","ref":"refs/heads/main","after":"da1560886d4f094c3e6c9ef40349f7d38b5d27d7"}`)
		r.Header.Del("X-Gitlab-Event-UUID")
		r.Header.Set("Idempotency-Key", "908a6d9e-45fd-46c8-97e6-c4f350f219dd")
		serve(gl, r)
	}
	if n := len(rec3.got()); n != 1 {
		t.Errorf("a GitLab retry acted on %d times, want once", n)
	}
	// Its id is the Idempotency-Key, which a resend keeps, not the event
	// UUID, which it does not (and which the deliveries of one request a
	// webhook's receiver made share).
	gl, rec4 := newHandler(t, webhook.Options{Forge: webhook.GitLab})
	for _, ids := range [][2]string{{"e-1", "k-1"}, {"e-2", "k-1"}, {"e-2", "k-2"}} {
		r := gitlab("Push Hook", ids[0], `{"object_kind":"push","ref":"refs/heads/main","after":"da1560886d4f094c3e6c9ef40349f7d38b5d27d7"}`)
		r.Header.Set("Idempotency-Key", ids[1])
		serve(gl, r)
	}
	if got := rec4.got(); len(got) != 2 || got[0].Delivery != "k-1" || got[1].Delivery != "k-2" {
		t.Errorf("GitLab deliveries by Idempotency-Key: %+v, want k-1 and k-2 once each", got)
	}
}

// The set of ids kept is bounded: the oldest go first.
func TestDeliveriesBounded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "d.json")
	d, err := webhook.OpenDeliveries(path, 3)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if fresh, err := d.Mark(fmt.Sprint(i)); !fresh || err != nil {
			t.Fatalf("mark %d: %v %v", i, fresh, err)
		}
	}
	d, err = webhook.OpenDeliveries(path, 3)
	if err != nil {
		t.Fatal(err)
	}
	// The newest three were kept (asked first: a new id drops the oldest).
	for _, tt := range []struct {
		id   int
		want bool
	}{{4, false}, {3, false}, {2, false}, {1, true}} {
		if fresh, _ := d.Mark(fmt.Sprint(tt.id)); fresh != tt.want {
			t.Errorf("id %d new: %v, want %v", tt.id, fresh, tt.want)
		}
	}
	os.WriteFile(path, []byte("{not json"), 0o644)
	if _, err := webhook.OpenDeliveries(path, 3); err == nil {
		t.Error("a damaged state file was read as an empty set")
	}
}

// A body over 1 MiB is refused 413: at once when its length says so,
// else once that much was read.
func TestOversizeBody(t *testing.T) {
	h, rec := newHandler(t, webhook.Options{})
	big := `{"action":"completed","pad":"` + strings.Repeat("x", webhook.MaxBody) + `"}`
	if w := serve(h, github("check_run", "big", big)); w.Code != http.StatusRequestEntityTooLarge {
		t.Errorf("declared oversize: %d, want 413", w.Code)
	}
	r := github("check_run", "big2", big)
	r.ContentLength = -1 // chunked: no length said
	r.Body = io.NopCloser(io.MultiReader(strings.NewReader(big), endless{}))
	if w := serve(h, r); w.Code != http.StatusRequestEntityTooLarge {
		t.Errorf("chunked oversize: %d, want 413", w.Code)
	}
	if len(rec.got()) != 0 {
		t.Error("an oversize body was acted on")
	}
}

// endless is a body that never ends: the handler must stop reading it.
type endless struct{}

func (endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	return len(p), nil
}

// Requests beyond the rate are answered 429 with a Retry-After, before
// anything else is done; tokens come back with time.
func TestRateLimit(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	h, _ := newHandler(t, webhook.Options{Rate: 2, Burst: 3, Now: func() time.Time { return now }})
	codes := []int{}
	for range 4 {
		codes = append(codes, serve(h, github("ping", "p", `{"zen":"Keep it logically awesome."}`)).Code)
	}
	if want := []int{200, 200, 200, 429}; !reflect.DeepEqual(codes, want) {
		t.Fatalf("codes %v, want %v", codes, want)
	}
	w := serve(h, httptest.NewRequest(http.MethodGet, "/webhooks/github", nil))
	if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") != "1" {
		t.Errorf("over the rate: %d Retry-After %q, want 429 and 1", w.Code, w.Header().Get("Retry-After"))
	}
	now = now.Add(time.Second)
	if w := serve(h, github("ping", "p", `{}`)); w.Code != http.StatusOK {
		t.Errorf("a second later: %d, want 200", w.Code)
	}
}

// Only POST of JSON to the watched forge's route is served.
func TestMethodRouteAndType(t *testing.T) {
	h, rec := newHandler(t, webhook.Options{})
	get := github("check_run", "g", checkRunFailed)
	get.Method = http.MethodGet
	if w := serve(h, get); w.Code != http.StatusMethodNotAllowed || w.Header().Get("Allow") != "POST" {
		t.Errorf("GET: %d Allow %q, want 405 POST", w.Code, w.Header().Get("Allow"))
	}
	if w := serve(h, gitlab("Push Hook", "x", `{}`)); w.Code != http.StatusNotFound {
		t.Errorf("GitLab's route on a GitHub watch: %d, want 404", w.Code)
	}
	other := github("check_run", "o", checkRunFailed)
	other.URL.Path = "/webhooks/bitbucket"
	if w := serve(h, other); w.Code != http.StatusNotFound {
		t.Errorf("unknown route: %d, want 404", w.Code)
	}
	form := github("check_run", "f", "payload="+checkRunFailed)
	form.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if w := serve(h, form); w.Code != http.StatusUnsupportedMediaType {
		t.Errorf("form-encoded: %d, want 415", w.Code)
	}
	if w := serve(h, github("check_run", "j", `{"action":`)); w.Code != http.StatusBadRequest {
		t.Errorf("broken JSON: %d, want 400", w.Code)
	}
	if len(rec.got()) != 0 {
		t.Errorf("events %+v, want none", rec.got())
	}
}

// A delivery about another repository (an organization's webhook) is
// taken and ignored.
func TestOtherRepositoryIgnored(t *testing.T) {
	h, rec := newHandler(t, webhook.Options{Repo: "acme/gadgets"})
	w := serve(h, github("check_run", "r", checkRunFailed))
	if w.Code != http.StatusAccepted || !bytes.Contains(w.Body.Bytes(), []byte("ignored")) || len(rec.got()) != 0 {
		t.Errorf("another repository's delivery: %d %q, %d events", w.Code, w.Body, len(rec.got()))
	}
}
