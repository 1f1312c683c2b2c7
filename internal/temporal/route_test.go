package temporal

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/workflow"

	"github.com/cadre-dev/cadre/internal/executor"
	"github.com/cadre-dev/cadre/internal/signal"
	flow "github.com/cadre-dev/cadre/internal/workflow"
)

// The route workflow (testdata/route.yaml) is a loop with next: route,
// planner → actor → judge, then a commit. Its agents, as routeAgent
// answers them, route its rounds: the planner sends the first round to
// the judge (Next: judge), past the actor; the judge fails that round and
// has the next one start at the actor (Next: actor), whose Next: Done is
// refused with a warning (only the round's last step ends it), then
// passes it (Next: Done).

// routeAgent is the outcome of the route workflow's step c, its role's
// visit.
func routeAgent(c flow.AgentCall, visit int) flow.Outcome {
	conf := 9
	sig := signal.Signal{Agent: c.Role, Result: signal.Success, Confidence: &conf}
	switch {
	case c.Role == "planner":
		sig.Next = "judge"
	case c.Role == "actor":
		sig.Next = "Done"
	case c.Role == "judge" && visit == 1:
		sig.Result, sig.Next, sig.LoopSummary = signal.Fail, "actor", "the plan is not carried out"
	case c.Role == "judge":
		sig.Result, sig.Next = signal.Pass, "Done"
	}
	return flow.Outcome{Signal: sig, Output: "out/" + c.ID}
}

// routedSteps are the route workflow's steps for item as Next routes
// them, each agent's with its signature: the actor is skipped in the
// first round, and the second starts at it.
func routedSteps(item string) []string {
	return []string{
		"agent " + item + "/loop/planner#1 visit 1 signed 1:1:1",
		"agent " + item + "/loop/judge#1 visit 1 signed 1:1:3",
		"agent " + item + "/loop/actor#1 visit 1 signed 1:2:2",
		"agent " + item + "/loop/judge#2 visit 2 signed 1:2:3",
		"action " + item + "/finish/commit#1",
	}
}

// routeSteps wraps fakeSteps' agent steps with routeAgent, and lists
// every step as embedded.steps does.
type routeSteps struct {
	*fakeSteps
	mu    sync.Mutex
	calls []flow.AgentCall
	steps []string
}

func newRouteSteps() *routeSteps {
	r := &routeSteps{}
	r.fakeSteps = &fakeSteps{workflow: "route", agent: func(_ context.Context, in AgentInput) (flow.Outcome, error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.calls = append(r.calls, in.Call)
		r.steps = append(r.steps, fmt.Sprintf("agent %s visit %d signed %s", in.Call.ID, in.Visit, in.Call.Signature))
		return routeAgent(in.Call, in.Visit), nil
	}}
	return r
}

func (r *routeSteps) Action(ctx context.Context, in ActionInput) (StepResult, error) {
	r.mu.Lock()
	r.steps = append(r.steps, "action "+in.Call.ID)
	r.mu.Unlock()
	return r.fakeSteps.Action(ctx, in)
}

// embedded runs a workflow as the embedded engine does, its interpreter
// acting itself: each agent step answered by routeAgent, each action done.
type embedded struct {
	visits   map[string]int
	calls    []flow.AgentCall
	steps    []string
	warnings []string
}

func (e *embedded) Agent(_ context.Context, c flow.AgentCall) (flow.Outcome, error) {
	e.visits[c.Role]++
	e.calls = append(e.calls, c)
	e.steps = append(e.steps, fmt.Sprintf("agent %s visit %d signed %s", c.ID, e.visits[c.Role], c.Signature))
	return routeAgent(c, e.visits[c.Role]), nil
}

func (e *embedded) Action(_ context.Context, c flow.ActionCall) (flow.Outcome, error) {
	e.steps = append(e.steps, "action "+c.ID)
	return flow.Outcome{}, nil
}

func (e *embedded) Human(context.Context, flow.HumanCall) (flow.Answer, error) {
	return flow.Answer{}, errors.New("the route workflow asks no human")
}

func (e *embedded) Warn(msg string) { e.warnings = append(e.warnings, msg) }

// runEmbedded runs the route workflow for item as the embedded engine
// does (ignoreNext: as a history recorded before Next routed replays).
func runEmbedded(t *testing.T, item string, ignoreNext bool) (*embedded, flow.Result) {
	t.Helper()
	wf := testWorkflows(t)
	def, ok := wf.Defs.Get("route")
	if !ok {
		t.Fatal("no route workflow in testdata")
	}
	e := &embedded{visits: map[string]int{}}
	in := &flow.Interp{Item: item, Defs: wf.Defs, Exec: e, Lim: fakeLimits, Roles: wf.Roles, IgnoreNext: ignoreNext}
	res, err := in.Run(t.Context(), def)
	if err != nil {
		t.Fatalf("embedded: %v", err)
	}
	return e, res
}

// checkAsEmbedded checks that the item's workflow ran r's steps, and
// ended, as the embedded engine runs and ends the same item.
func checkAsEmbedded(t *testing.T, r *routeSteps, item string, ignoreNext bool) {
	t.Helper()
	e, res := runEmbedded(t, item, ignoreNext)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fakeSteps.mu.Lock()
	defer r.fakeSteps.mu.Unlock()
	if diff := cmp.Diff(e.steps, r.steps); diff != "" {
		t.Errorf("steps (-embedded +temporal):\n%s", diff)
	}
	if diff := cmp.Diff(e.calls, r.calls); diff != "" {
		t.Errorf("agent calls (-embedded +temporal):\n%s", diff)
	}
	if len(r.ends) != 1 {
		t.Fatalf("endings %+v, want one", r.ends)
	}
	if diff := cmp.Diff(res, r.ends[0].Result); diff != "" {
		t.Errorf("result (-embedded +temporal):\n%s", diff)
	}
	if diff := cmp.Diff(e.warnings, r.warnings); diff != "" {
		t.Errorf("warnings (-embedded +temporal):\n%s", diff)
	}
}

// On Temporal a routed loop follows its steps' Next as the embedded
// engine does: the actor the planner sends its round past never runs in
// it, the judge's failed round is taken up again at the actor, the
// actor's Next: Done is refused with a warning, and the item completes
// with the same steps, calls, result and warnings. A workflow whose
// history has no route-next marker (recorded before Next routed) runs
// every step of each round, as it did then.
func TestLoopRoutesByNext(t *testing.T) {
	tests := []struct {
		name       string
		ignoreNext bool
		want       []string
		warnings   int // the actor's refused Next: Done
	}{
		{"routed", false, routedSteps("t1"), 1},
		{"before the marker", true, []string{
			"agent t1/loop/planner#1 visit 1 signed 1:1:1",
			"agent t1/loop/actor#1 visit 1 signed 1:1:2",
			"agent t1/loop/judge#1 visit 1 signed 1:1:3",
			"agent t1/loop/planner#2 visit 2 signed 1:2:1",
			"agent t1/loop/actor#2 visit 2 signed 1:2:2",
			"agent t1/loop/judge#2 visit 2 signed 1:2:3",
			"action t1/finish/commit#1",
		}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRouteSteps()
			env := newEnv(t, r)
			if tt.ignoreNext {
				env.OnGetVersion(versionRouteNext, workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
			}
			ended := runItem(t, env, input)
			if ended.Status != flow.ResultCompleted {
				t.Errorf("ended %+v, want completed", ended)
			}
			if diff := cmp.Diff(tt.want, r.steps); diff != "" {
				t.Errorf("steps (-want +got):\n%s", diff)
			}
			if len(r.warnings) != tt.warnings {
				t.Errorf("warnings %q, want %d", r.warnings, tt.warnings)
			}
			checkAsEmbedded(t, r, input.Item, tt.ignoreNext)
		})
	}
}

// On a server too a routed loop follows its steps' Next (the route-next
// marker, then the rounds as routeAgent routes them); the history is
// recorded.
func testNextRoutesTheLoop(t *testing.T, c client.Client) {
	r := newRouteSteps()
	serve(t, c, "route", r, "", nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	in := ItemInput{Run: "r1", Item: "t5", StepTimeout: time.Minute}
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: WorkflowID("r1", "t5"), TaskQueue: "route"}, WorkflowName, in)
	if err != nil {
		t.Fatal(err)
	}
	var ended executor.Ended
	if err := run.Get(ctx, &ended); err != nil {
		t.Fatal(err)
	}
	if ended.Status != flow.ResultCompleted {
		t.Errorf("ended %+v, want completed", ended)
	}
	r.mu.Lock()
	steps := slices.Clone(r.steps)
	r.mu.Unlock()
	if diff := cmp.Diff(routedSteps("t5"), steps); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
	checkAsEmbedded(t, r, "t5", false)
	record(t, c, run.GetID(), "history-route-next.json")
}
