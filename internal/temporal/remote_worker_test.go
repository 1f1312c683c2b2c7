package temporal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/cadre-dev/cadre/internal/engine"
	"github.com/cadre-dev/cadre/internal/store"
	flow "github.com/cadre-dev/cadre/internal/workflow"
)

// fakeReplica records hydrations and hands out its pending changes; a
// snapshot is {"seq":N}, the batches the home applied.
type fakeReplica struct {
	hydrated []string
	pending  string
	seq      int64
	known    bool
}

func (r *fakeReplica) Hydrate(ctx context.Context, snap json.RawMessage) error {
	var s struct{ Seq int64 }
	if err := json.Unmarshal(snap, &s); err != nil {
		return err
	}
	r.hydrated = append(r.hydrated, string(snap))
	r.pending, r.seq, r.known = "", s.Seq, true
	return nil
}

func (r *fakeReplica) Take(ctx context.Context, _ *engine.ItemSteps) (json.RawMessage, error) {
	r.seq++
	b := r.pending
	r.pending = ""
	return json.RawMessage(fmt.Sprintf(`{"seq":%d,"ops":%q}`, r.seq, b)), nil
}

func (r *fakeReplica) Seq(ctx context.Context, run, item string) (int64, error) {
	if !r.known {
		return 0, fmt.Errorf("replica of %s: %w", item, store.ErrNotFound)
	}
	return r.seq, nil
}

func remoteRef(fresh []string, snap string, at int, seq int64) ItemRef {
	s := &Sync{Home: "home:/x", Fresh: fresh, At: at, Seq: seq}
	if snap != "" {
		s.Snap = json.RawMessage(snap)
	}
	return ItemRef{Run: "r1", Item: "t1", Sync: s}
}

// A worker whose replica is not fresh refuses a step without a snapshot
// (cold), hydrates from one, and does not hydrate again from an older or
// the same export; a worker named fresh whose batch never reached home is
// not.
func TestWorkerHydration(t *testing.T) {
	rep := &fakeReplica{}
	a := &Activities{Home: "me:/y", ID: "w1", Replica: rep, Origin: true}
	ctx := context.Background()
	cold := func(ref ItemRef) {
		t.Helper()
		var ae *temporal.ApplicationError
		if err := a.hydrate(ctx, ref); !errors.As(err, &ae) || ae.Type() != ErrTypeCold {
			t.Fatalf("err %v, want cold", err)
		}
	}
	ok := func(ref ItemRef) {
		t.Helper()
		if err := a.hydrate(ctx, ref); err != nil {
			t.Fatal(err)
		}
	}
	cold(remoteRef([]string{"w2"}, "", 0, 0))
	cold(remoteRef([]string{"w1"}, "", 0, 0)) // fresh by name, never hydrated here
	ok(remoteRef(nil, `{"seq":3}`, 3, 3))
	ok(remoteRef(nil, `{"seq":3}`, 3, 3))
	ok(remoteRef([]string{"w1"}, "", 0, 3))
	if len(rep.hydrated) != 1 {
		t.Fatalf("hydrations %q, want one", rep.hydrated)
	}
	rep.Take(ctx, nil) // a batch whose step's result was lost: home still has 3
	cold(remoteRef([]string{"w1"}, "", 0, 3))
	ok(remoteRef(nil, `{"seq":3}`, 3, 3)) // the same export as before, yet hydrated again
	if len(rep.hydrated) != 2 || rep.seq != 3 {
		t.Fatalf("hydrations %q, seq %d: want a second hydration back to 3", rep.hydrated, rep.seq)
	}
	ok(remoteRef(nil, `{"seq":5}`, 5, 5))
	if len(rep.hydrated) != 3 || rep.hydrated[2] != `{"seq":5}` {
		t.Errorf("hydrations %q, want the newer export third", rep.hydrated)
	}
}

// A remote step's end takes its batch into its result, or into its
// failure when it ended the item; a failure Temporal retries leaves the
// changes for the next take. A step on the home's journal sends nothing.
func TestRemoteStepEnd(t *testing.T) {
	rep := &fakeReplica{}
	a := &Activities{Home: "me:/y", ID: "w1", Queue: "q1", Replica: rep}
	ctx := context.Background()
	span := func(remote bool) *span {
		a.inflight.Add(1)
		return &span{a: a, s: &engine.ItemSteps{}, ref: ItemRef{Run: "r1", Item: "t1"}, remote: remote, stop: func() { a.inflight.Done() }}
	}
	rep.pending = "a"
	sy, err := span(true).end(ctx, nil)
	if err != nil || string(sy.Batch) != `{"seq":1,"ops":"a"}` || sy.Worker != "w1" || sy.Queue != "q1" {
		t.Fatalf("success: %+v, %v", sy, err)
	}
	rep.pending = "b"
	if _, err := span(true).end(ctx, errors.New("journal busy")); err == nil || rep.pending != "b" {
		t.Fatalf("retryable failure: err %v, pending %q: want the changes kept", err, rep.pending)
	}
	_, err = span(true).end(ctx, fmt.Errorf("quota: %w", flow.ErrPaused))
	var ae *temporal.ApplicationError
	var got Synced
	if !errors.As(err, &ae) || ae.Type() != ErrTypePaused || ae.Details(&got) != nil || string(got.Batch) != `{"seq":2,"ops":"b"}` {
		t.Fatalf("pause: err %v, details %+v: want paused carrying the batch", err, got)
	}
	rep.pending = "c"
	if sy, err := span(false).end(ctx, nil); err != nil || sy.Batch != nil || rep.pending == "" {
		t.Errorf("home step: %+v, %v: want nothing taken", sy, err)
	}
}

// A worker whose clone has no origin refuses a step of a run from
// elsewhere for good, saying what to do, rather than Temporal retrying it.
func TestRemoteStepWithoutOrigin(t *testing.T) {
	a := &Activities{Home: "me:/y", ID: "w1", Replica: &fakeReplica{}}
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestActivityEnvironment()
	env.RegisterActivity(a.Begin)
	_, err := env.ExecuteActivity(a.Begin, remoteRef(nil, `{"seq":0}`, 0, 0))
	var ae *temporal.ApplicationError
	if !errors.As(err, &ae) || !ae.NonRetryable() || ae.Type() != ErrTypeNoOrigin || !strings.Contains(err.Error(), "git remote add origin") {
		t.Fatalf("err %v, want a non-retryable refusal naming git remote add origin", err)
	}
}

// Processes starting together in one repository (a run and its workers)
// name the same home: the id is never seen half written.
func TestHomeOfAgreesAcrossStarts(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".cadre")
	const n = 16
	got := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() { defer wg.Done(); got[i] = HomeOf(dir) }()
	}
	wg.Wait()
	for _, h := range got {
		if h != got[0] || !strings.Contains(h, "#") {
			t.Fatalf("homes %q, want one, the same", got)
		}
	}
	if HomeOf(dir) != got[0] {
		t.Error("a later start names another home")
	}
	if other := HomeOf(filepath.Join(t.TempDir(), ".cadre")); other == got[0] {
		t.Error("another state directory names the same home")
	}
}
