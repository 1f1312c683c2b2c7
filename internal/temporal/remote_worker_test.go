package temporal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"go.temporal.io/sdk/temporal"

	flow "github.com/cadre-dev/cadre/internal/workflow"
)

// fakeReplica records hydrations and hands out its pending changes.
type fakeReplica struct {
	hydrated []string
	pending  string
}

func (r *fakeReplica) Hydrate(ctx context.Context, run, item string, snap json.RawMessage) error {
	r.hydrated = append(r.hydrated, fmt.Sprintf("%s/%s %s", run, item, snap))
	r.pending = ""
	return nil
}

func (r *fakeReplica) Take(ctx context.Context, run, item string) (json.RawMessage, error) {
	b := r.pending
	r.pending = ""
	if b == "" {
		return nil, nil
	}
	return json.RawMessage(b), nil
}

func remoteRef(fresh []string, snap string, at int) ItemRef {
	s := &Sync{Home: "home:/x", Fresh: fresh, At: at}
	if snap != "" {
		s.Snap = json.RawMessage(snap)
	}
	return ItemRef{Run: "r1", Item: "t1", Sync: s}
}

// A worker whose replica is not fresh refuses a step without a snapshot
// (cold), hydrates from one, and does not hydrate again from an older or
// the same export; a sibling step still running blocks a new hydration.
func TestWorkerHydration(t *testing.T) {
	rep := &fakeReplica{}
	a := &Activities{Home: "me:/y", ID: "w1", Replica: rep}
	ctx := context.Background()
	var ae *temporal.ApplicationError
	if err := a.hydrate(ctx, remoteRef([]string{"w2"}, "", 0)); !errors.As(err, &ae) || ae.Type() != ErrTypeCold {
		t.Fatalf("not fresh, no snapshot: err %v, want cold", err)
	}
	if err := a.hydrate(ctx, remoteRef(nil, `{"n":3}`, 3)); err != nil {
		t.Fatal(err)
	}
	if err := a.hydrate(ctx, remoteRef(nil, `{"n":3}`, 3)); err != nil {
		t.Fatal(err)
	}
	if err := a.hydrate(ctx, remoteRef([]string{"w1"}, "", 0)); err != nil {
		t.Fatalf("fresh: %v", err)
	}
	if len(rep.hydrated) != 1 {
		t.Fatalf("hydrations %q, want one", rep.hydrated)
	}
	a.count(ItemRef{Run: "r1", Item: "t1"}, 1)
	if err := a.hydrate(ctx, remoteRef(nil, `{"n":5}`, 5)); err == nil || errors.As(err, &ae) {
		t.Fatalf("hydration under a running step: err %v, want a retryable refusal", err)
	}
	a.count(ItemRef{Run: "r1", Item: "t1"}, -1)
	if err := a.hydrate(ctx, remoteRef(nil, `{"n":5}`, 5)); err != nil {
		t.Fatal(err)
	}
	if len(rep.hydrated) != 2 || rep.hydrated[1] != `r1/t1 {"n":5}` {
		t.Errorf("hydrations %q, want the newer export second", rep.hydrated)
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
		a.count(ItemRef{Run: "r1", Item: "t1"}, 1)
		return &span{a: a, ref: ItemRef{Run: "r1", Item: "t1"}, remote: remote, stop: func() { a.inflight.Done() }}
	}
	rep.pending = `{"a":1}`
	sy, err := span(true).end(ctx, nil)
	if err != nil || string(sy.Batch) != `{"a":1}` || sy.Worker != "w1" || sy.Queue != "q1" {
		t.Fatalf("success: %+v, %v", sy, err)
	}
	rep.pending = `{"b":2}`
	if _, err := span(true).end(ctx, errors.New("journal busy")); err == nil || rep.pending != `{"b":2}` {
		t.Fatalf("retryable failure: err %v, pending %q: want the changes kept", err, rep.pending)
	}
	_, err = span(true).end(ctx, fmt.Errorf("quota: %w", flow.ErrPaused))
	var ae *temporal.ApplicationError
	var got Synced
	if !errors.As(err, &ae) || ae.Type() != ErrTypePaused || ae.Details(&got) != nil || string(got.Batch) != `{"b":2}` {
		t.Fatalf("pause: err %v, details %+v: want paused carrying the batch", err, got)
	}
	rep.pending = `{"c":3}`
	if sy, err := span(false).end(ctx, nil); err != nil || sy.Batch != nil || rep.pending == "" {
		t.Errorf("home step: %+v, %v: want nothing taken", sy, err)
	}
}
