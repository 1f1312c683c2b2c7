package temporal

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cadre-dev/cadre/internal/executor"
	flow "github.com/cadre-dev/cadre/internal/workflow"
)

// remoteSteps are fakeSteps performed by workers on another machine than
// the run's home: a step whose worker's replica is not fresh and that
// brings no snapshot is cold; every step sends a batch home.
type remoteSteps struct {
	*fakeSteps
	mu          sync.Mutex
	worker      string // the worker taking the next steps
	switchAfter int    // after this many steps, w2 takes over (0: never)
	steps       int
	syncs       []string // per step: worker, fresh list, snapshot
	hydrate     []string
}

func (r *remoteSteps) enter(ref ItemRef) (Synced, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.switchAfter > 0 && r.steps == r.switchAfter {
		r.worker = "w2"
	}
	s := ref.Sync
	r.syncs = append(r.syncs, fmt.Sprintf("%s fresh=%v snap=%s", r.worker, s.Fresh, s.Snap))
	if !slices.Contains(s.Fresh, r.worker) {
		if s.Snap == nil {
			return Synced{}, errCold(ref.Item, "test")
		}
		r.hydrate = append(r.hydrate, fmt.Sprintf("%s from %s at %d", r.worker, s.Snap, s.At))
	}
	r.steps++
	return Synced{Worker: r.worker, Queue: "q-" + r.worker, Batch: json.RawMessage(fmt.Sprintf(`{"step":%d}`, r.steps))}, nil
}

func (r *remoteSteps) Begin(ctx context.Context, in ItemRef) (BeginResult, error) {
	sy, err := r.enter(in)
	if err != nil {
		return BeginResult{}, err
	}
	b, err := r.fakeSteps.Begin(ctx, in)
	b.Synced = sy
	return b, err
}

func (r *remoteSteps) Agent(ctx context.Context, in AgentInput) (StepResult, error) {
	sy, err := r.enter(in.ItemRef)
	if err != nil {
		return StepResult{}, err
	}
	out, err := r.fakeSteps.Agent(ctx, in)
	if err != nil {
		return out, stepFailure(err, &sy)
	}
	out.Synced = sy
	return out, nil
}

func (r *remoteSteps) Action(ctx context.Context, in ActionInput) (StepResult, error) {
	sy, err := r.enter(in.ItemRef)
	if err != nil {
		return StepResult{}, err
	}
	out, err := r.fakeSteps.Action(ctx, in)
	out.Synced = sy
	return out, err
}

func (r *remoteSteps) End(ctx context.Context, in EndInput) (EndResult, error) {
	sy, err := r.enter(in.ItemRef)
	if err != nil {
		return EndResult{}, err
	}
	out, err := r.fakeSteps.End(ctx, in)
	out.Synced = sy
	return out, err
}

// fakeHome is the home journal: it exports how many batches it applied
// and records each applied batch in order.
type fakeHome struct {
	mu      sync.Mutex
	applied map[int]string
	exports int
	fails   []FailInput
}

func (h *fakeHome) Export(ctx context.Context, in ItemRef) (json.RawMessage, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.exports++
	return json.RawMessage(fmt.Sprintf(`{"applied":%d}`, len(h.applied))), nil
}

func (h *fakeHome) Apply(ctx context.Context, in ApplyInput) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.applied == nil {
		h.applied = map[int]string{}
	}
	h.applied[len(h.applied)] = string(in.Batch)
	return nil
}

func (h *fakeHome) Fail(ctx context.Context, in FailInput) (executor.Ended, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.fails = append(h.fails, in)
	return executor.Ended{Status: "failed", Reason: in.Reason}, nil
}

func runRemote(t *testing.T, r *remoteSteps) *fakeHome {
	t.Helper()
	h := &fakeHome{}
	env := newEnv(t, r)
	RegisterHome(env, h)
	in := input
	in.Home = "elsewhere:/repo/.cadre"
	runItem(t, env, in)
	return h
}

// The first step on a worker of another machine is cold: the item is
// exported from its home once, the step runs again with it; the worker's
// replica is then fresh for every later step, and every step's batch is
// applied home once, in order.
func TestRemoteWorkerHydratesOnceAndSendsEveryBatchHome(t *testing.T) {
	r := &remoteSteps{fakeSteps: &fakeSteps{workflow: "fanout"}, worker: "w1"}
	h := runRemote(t, r)
	if h.exports != 1 {
		t.Errorf("exports = %d, want 1", h.exports)
	}
	if diff := cmp.Diff([]string{`w1 from {"applied":0} at 0`}, r.hydrate); diff != "" {
		t.Errorf("hydrations (-want +got):\n%s", diff)
	}
	want := map[int]string{}
	for i := range r.steps {
		want[i] = fmt.Sprintf(`{"step":%d}`, i+1)
	}
	if r.steps != 5 {
		t.Fatalf("steps = %d, want begin, two agents, commit, end", r.steps)
	}
	if diff := cmp.Diff(want, h.applied); diff != "" {
		t.Errorf("applied (-want +got):\n%s", diff)
	}
	for _, s := range r.syncs[2:] { // after the cold begin and its retry
		if s != "w1 fresh=[w1] snap=" {
			t.Errorf("step sync %q, want w1 fresh without a snapshot", s)
		}
	}
}

// When another worker takes the item over, its replica is behind: it is
// hydrated from the home, which by then holds every batch of the first
// worker, and the first worker is no longer fresh.
func TestRemoteItemMovingToAnotherWorkerHydratesItThere(t *testing.T) {
	r := &remoteSteps{fakeSteps: &fakeSteps{workflow: "simple"}, worker: "w1", switchAfter: 2}
	h := runRemote(t, r)
	want := []string{`w1 from {"applied":0} at 0`, `w2 from {"applied":2} at 2`}
	if diff := cmp.Diff(want, r.hydrate); diff != "" {
		t.Errorf("hydrations (-want +got):\n%s", diff)
	}
	if len(h.applied) != r.steps {
		t.Errorf("applied %d batches, want one per step (%d)", len(h.applied), r.steps)
	}
	last := r.syncs[len(r.syncs)-1]
	if last != "w2 fresh=[w2] snap=" {
		t.Errorf("last step's sync %q, want only w2 fresh", last)
	}
}

// A step that ends the item (a quota pause) still sends what it changed
// home, with its failure.
func TestRemotePausedStepSendsItsBatchHome(t *testing.T) {
	r := &remoteSteps{fakeSteps: &fakeSteps{workflow: "simple", agent: func(context.Context, AgentInput) (flow.Outcome, error) {
		return flow.Outcome{}, fmt.Errorf("runner claude hit a quota: %w", flow.ErrPaused)
	}}, worker: "w1"}
	h := runRemote(t, r)
	if got := h.applied[1]; got != `{"step":2}` {
		t.Errorf("the paused step's batch: applied %q, want {\"step\":2}; all %v", got, h.applied)
	}
	if len(r.ends) != 1 || r.ends[0].Paused == "" {
		t.Errorf("ends %+v, want paused", r.ends)
	}
}

// Without a home (runs recorded before workers could work elsewhere),
// steps carry no journal state and nothing is exported or applied.
func TestNoHomeNoSync(t *testing.T) {
	f := &fakeSteps{workflow: "simple"}
	env := newEnv(t, f)
	h := &fakeHome{}
	RegisterHome(env, h)
	runItem(t, env, input)
	if h.exports != 0 || len(h.applied) != 0 {
		t.Errorf("exports %d, applied %v: want none", h.exports, h.applied)
	}
}
