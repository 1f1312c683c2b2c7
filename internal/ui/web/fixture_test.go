package web_test

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/store"
	"github.com/cadre-dev/cadre/internal/ui/web"
)

const testToken = "0123456789abcdef0123456789abcdef"

// journal is a store with a run written the way the engine writes one.
type journal struct {
	t   testing.TB
	st  *store.Store
	dir string
	run string
}

func newJournal(t testing.TB) *journal {
	t.Helper()
	return newJournalOf(t, "20261124-100000-ab12")
}

// newJournalOf is a journal in a directory of its own with run.
func newJournalOf(t testing.TB, run string) *journal {
	t.Helper()
	dir := t.TempDir()
	st, err := store.Open(context.Background(), filepath.Join(dir, "cadre.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	j := &journal{t: t, st: st, dir: dir, run: run}
	if err := st.CreateRun(context.Background(), store.Run{ID: j.run, Repo: dir, Workflow: "runner"}); err != nil {
		t.Fatal(err)
	}
	return j
}

func (j *journal) item(id, title, status string) {
	j.t.Helper()
	if err := j.st.AddItem(context.Background(), store.Item{RunID: j.run, ID: id, Title: title, Stage: "code", Status: status}); err != nil {
		j.t.Fatal(err)
	}
}

// step records a completed agent step of item with output as its output file.
func (j *journal) step(item, id, role, output string, cost float64) {
	j.t.Helper()
	out := filepath.Join(j.dir, "runs", j.run, "items", item, "outputs", id+".md")
	os.MkdirAll(filepath.Dir(out), 0o755)
	if err := os.WriteFile(out, []byte(output), 0o644); err != nil {
		j.t.Fatal(err)
	}
	ctx := context.Background()
	st := store.Step{RunID: j.run, ItemID: item, ID: item + "/" + id, Role: role, Runner: "script", Model: "m1", Kind: "agent", OutputPath: out}
	if err := j.st.StartStep(ctx, st); err != nil {
		j.t.Fatal(err)
	}
	st.Status = store.StepCompleted
	st.Signal = json.RawMessage(`{"result":"SUCCESS"}`)
	st.Usage = store.Usage{InputTokens: 100, OutputTokens: 20, CostUSD: cost}
	if err := j.st.FinishStep(ctx, st); err != nil {
		j.t.Fatal(err)
	}
}

func (j *journal) set(item, status string) {
	j.t.Helper()
	if err := j.st.UpdateItem(context.Background(), j.run, item, store.ItemUpdate{Status: &status}); err != nil {
		j.t.Fatal(err)
	}
}

// emit journals e now, as the engine's journal sink does.
func (j *journal) emit(e event.Event) {
	j.t.Helper()
	e.Run = j.run
	if e.Time.IsZero() {
		e.Time = time.Now().UTC()
	}
	data, _ := json.Marshal(e)
	if err := j.st.AppendEvent(context.Background(), store.Event{RunID: j.run, Time: e.Time, Type: e.Type, ItemID: e.Item, Data: data}); err != nil {
		j.t.Fatal(err)
	}
}

// recorder is an Actions that records what the buttons asked.
type recorder struct {
	mu       sync.Mutex
	approved []string // RUN/ITEM
	stopped  []string
}

func (r *recorder) Approve(_ context.Context, run, item string, ok bool, note string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.approved = append(r.approved, run+"/"+item)
	return nil
}

func (r *recorder) Stop(_ context.Context, run string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stopped = append(r.stopped, run)
	return nil
}

// log is what was approved (RUN/ITEM) and stopped so far.
func (r *recorder) log() (approved, stopped []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.approved), slices.Clone(r.stopped)
}

func (r *recorder) calls() (int, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.approved), len(r.stopped)
}

// serve starts a board over j on addr ("127.0.0.1:0" for any port) and
// returns its base URL and a function that stops it and waits.
func serve(t testing.TB, j *journal, acts web.Actions, addr string) (string, func()) {
	t.Helper()
	return serveOptions(t, web.Options{Store: j.st, Actions: acts}, addr)
}

// serveRepos starts a board of several repositories on any port.
func serveRepos(t testing.TB, repos ...web.Repo) string {
	t.Helper()
	base, _ := serveOptions(t, web.Options{Repos: repos}, "127.0.0.1:0")
	return base
}

func serveOptions(t testing.TB, o web.Options, addr string) (string, func()) {
	t.Helper()
	o.Token, o.Poll = testToken, 20*time.Millisecond
	srv, err := web.New(o)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("serve: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return "http://" + ln.Addr().String(), stop
}

func mustJSON(v any) []byte {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return data
}
