package workflow

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cadre-dev/cadre/internal/signal"
)

// The loop workflow's round, and a routed round with a reviewer and a
// check between the work and the judge.
var (
	loopRound    = []Node{{Role: "planner"}, {Role: "actor"}, {Role: "judge"}}
	guardedRound = []Node{{Role: "planner"}, {Role: "actor"}, {Role: "executor"}, {Role: "critic"}, {Run: "gatekeeper"}, {Role: "judge"}}
)

func TestRoundHop(t *testing.T) {
	tests := []struct {
		name string
		do   []Node
		i    int
		next string
		want hop
		warn string // in the refusal; "" when followed
	}{
		{"no Next goes on", loopRound, 0, "", hop{}, ""},
		{"the next step goes on", loopRound, 0, "actor", hop{}, ""},
		{"any case and spacing", loopRound, 0, "  Actor ", hop{}, ""},
		{"Human goes on (it was put to a person)", loopRound, 1, "Human", hop{}, ""},
		{"planner to judge skips the actor", loopRound, 0, "judge", hop{kind: hopSkip, to: 2}, ""},
		{"actor to planner sends the round back", loopRound, 1, "planner", hop{kind: hopBack, to: 0}, ""},
		{"actor to itself runs it again in a new round", loopRound, 1, "actor", hop{kind: hopBack, to: 1}, ""},
		{"planner to itself plans again", loopRound, 0, "Planner", hop{kind: hopBack, to: 0}, ""},
		{"the last step is left to the gate", loopRound, 2, "planner", hop{}, ""},
		{"the last step's unknown Next is left to the gate", loopRound, 2, "wizard", hop{}, ""},
		{"working steps may be skipped", guardedRound, 0, "executor", hop{kind: hopSkip, to: 2}, ""},
		{"Done before the last step is refused", loopRound, 1, "Done", hop{}, "Done ends only a round's last step, judge"},
		{"a role of no step is refused", loopRound, 0, "auditor", hop{}, "no step of the round (the round allows planner, actor, judge, Done after the judge, or Human)"},
		{"a reviewer is never skipped", guardedRound, 1, "judge", hop{}, "the critic is never skipped"},
		{"a check is never skipped", guardedRound, 3, "judge", hop{}, "the gatekeeper is never skipped"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := roundHop(tt.do, tt.i, tt.next)
			if got.kind != tt.want.kind || got.to != tt.want.to {
				t.Errorf("roundHop = %+v, want %+v", got, tt.want)
			}
			if (tt.warn == "") != (got.warn == "") || !strings.Contains(got.warn, tt.warn) {
				t.Errorf("warning %q, want one containing %q", got.warn, tt.warn)
			}
		})
	}
}

func TestRestartAt(t *testing.T) {
	tests := []struct {
		next string
		want int
		warn string
	}{
		{"", 0, ""},
		{"planner", 0, ""},
		{"Actor", 1, ""},
		{"judge", 2, ""},
		{"Human", 0, ""},
		{"Done", 0, "did not pass, so the goal is not done"},
		{"diagnoser", 0, "no step of the round; the next round starts at the planner"},
	}
	for _, tt := range tests {
		t.Run(tt.next, func(t *testing.T) {
			got, warn := restartAt(loopRound, tt.next)
			if got != tt.want || (tt.warn == "") != (warn == "") || !strings.Contains(warn, tt.warn) {
				t.Errorf("restartAt(%q) = %d, %q; want %d, %q", tt.next, got, warn, tt.want, tt.warn)
			}
		})
	}
}

func TestPassedNext(t *testing.T) {
	tests := []struct {
		next  string
		again bool
		warn  string
	}{
		{"planner", true, ""},
		{" PLANNER", true, ""},
		{"Done", false, ""},
		{"", false, ""},
		{"Human", false, ""},
		{"actor", false, "may name the planner (a new subordinate goal), Done or Human"},
		{"wizard", false, "the goal is taken as met"},
	}
	for _, tt := range tests {
		t.Run(tt.next, func(t *testing.T) {
			again, warn := passedNext(loopRound, tt.next)
			if again != tt.again || (tt.warn == "") != (warn == "") || !strings.Contains(warn, tt.warn) {
				t.Errorf("passedNext(%q) = %v, %q; want %v, %q", tt.next, again, warn, tt.again, tt.warn)
			}
		})
	}
}

func TestFixedNext(t *testing.T) {
	roles := []string{"architect", "executor", "critic"}
	for next, refusedWant := range map[string]bool{
		"": false, "executor": false, "Critic": false, "architect": false, "Done": false, "human": false,
		"planner": true, "judge": true, "next agent": true,
	} {
		why := fixedNext("standard", roles, next)
		if (why != "") != refusedWant {
			t.Errorf("fixedNext(%q) = %q, want refused %v", next, why, refusedWant)
		}
		if refusedWant && !strings.Contains(why, "standard runs its steps in order; a step's Next may name architect, executor, critic, Done or Human") {
			t.Errorf("fixedNext(%q) = %q", next, why)
		}
	}
}

// Each Next the loop workflow allows is followed, end to end through the
// interpreter; a refused one leaves the round to the definition with a
// warning naming the step.
func TestLoopFollowsNext(t *testing.T) {
	// plays maps "role#n" (n counting from 1) to its Next; a judge's
	// "I:" prefix makes it INSUFFICIENT.
	run := func(t *testing.T, plays map[string]string) (*fakeExec, Result) {
		t.Helper()
		f := newFake()
		f.agent = func(c AgentCall, n int) Outcome {
			o := okOutcome(c.Role)
			next := plays[c.Role+"#"+string(rune('1'+n))]
			if strings.HasPrefix(next, "I:") {
				next, o.Signal.Result = strings.TrimPrefix(next, "I:"), signal.Insufficient
			}
			o.Signal.Next = next
			return o
		}
		res, err := runWF(t, "loop", f)
		if err != nil {
			t.Fatal(err)
		}
		return f, res
	}
	tests := []struct {
		name  string
		plays map[string]string
		calls []string
		warn  string // in the only warning; "" for none
	}{
		{"the seed's order", map[string]string{"planner#1": "actor", "actor#1": "judge", "judge#1": "Done"},
			[]string{"planner", "actor", "judge", "run:commit"}, ""},
		{"a planner's Next: judge skips the actor", map[string]string{"planner#1": "judge"},
			[]string{"planner", "judge", "run:commit"}, ""},
		{"an actor's Next: planner plans again", map[string]string{"actor#1": "planner"},
			[]string{"planner", "actor", "planner", "actor", "judge", "run:commit"}, ""},
		{"a judge's INSUFFICIENT with Next: actor retries the plan", map[string]string{"judge#1": "I:actor"},
			[]string{"planner", "actor", "judge", "actor", "judge", "run:commit"}, ""},
		{"a judge's PASS with Next: planner sets a new subordinate goal", map[string]string{"judge#1": "planner", "judge#2": "Done"},
			[]string{"planner", "actor", "judge", "planner", "actor", "judge", "run:commit"}, ""},
		{"a planner's Done is refused", map[string]string{"planner#1": "Done"},
			[]string{"planner", "actor", "judge", "run:commit"}, "step 42/loop/planner#1 (planner): Next: Done is not followed: Done ends only"},
		{"an actor's unknown role is refused", map[string]string{"actor#1": "reviewer"},
			[]string{"planner", "actor", "judge", "run:commit"}, "step 42/loop/actor#1 (actor): Next: reviewer is not followed"},
		{"a judge's INSUFFICIENT with Done is refused", map[string]string{"judge#1": "I:Done"},
			[]string{"planner", "actor", "judge", "planner", "actor", "judge", "run:commit"}, "step 42/loop/judge#1 (judge): Next: Done is not followed: the round did not pass"},
		{"a judge's PASS with Next: actor is refused", map[string]string{"judge#1": "actor"},
			[]string{"planner", "actor", "judge", "run:commit"}, "step 42/loop/judge#1 (judge): Next: actor is not followed: after a passing round"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, res := run(t, tt.plays)
			if diff := cmp.Diff(tt.calls, f.calls); diff != "" || res.Status != ResultCompleted {
				t.Errorf("calls (-want +got):\n%s%+v", diff, res)
			}
			if tt.warn == "" && len(f.warnings) != 0 || tt.warn != "" && (len(f.warnings) != 1 || !strings.Contains(f.warnings[0], tt.warn)) {
				t.Errorf("warnings %q, want one containing %q", f.warnings, tt.warn)
			}
		})
	}
}

// A skipped step does not shift the signatures of the steps after it,
// and a round sent back counts towards the loop's bound.
func TestLoopNextSignaturesAndBound(t *testing.T) {
	f := newFake()
	var sigs []string
	f.agent = func(c AgentCall, n int) Outcome {
		sigs = append(sigs, c.Role+"="+c.Signature)
		o := okOutcome(c.Role)
		switch c.Role {
		case "planner":
			o.Signal.Next = "judge"
		case "judge":
			o.Signal.Result, o.Signal.Next = signal.Insufficient, "actor"
		}
		return o
	}
	runWF(t, "loop", f)
	want := []string{"planner=1:1:1", "judge=1:1:3", "actor=1:2:2", "judge=1:2:3", "actor=1:3:2", "judge=1:3:3"}
	if diff := cmp.Diff(want, sigs); diff != "" {
		t.Errorf("signatures (-want +got):\n%s", diff)
	}
	f = newFake()
	f.agent = func(c AgentCall, n int) Outcome {
		o := okOutcome(c.Role)
		if c.Role == "actor" {
			o.Signal.Next = "planner"
		}
		return o
	}
	_, err := runWF(t, "loop", f)
	if f.seen["actor"] != 3 || f.seen["judge"] != 0 || f.calls[len(f.calls)-1] != "human" || err == nil {
		t.Errorf("calls %v err %v: want three rounds sent back, then a pause as incomplete", f.calls, err)
	}
}

// Outside a routed loop the definition decides; a Next naming no role of
// the workflow is refused with a warning, one naming a role is not.
func TestFixedOrderChecksNext(t *testing.T) {
	f := newFake()
	f.agent = func(c AgentCall, n int) Outcome {
		o := okOutcome(c.Role)
		switch c.Role {
		case "architect":
			o.Signal.Next = "executor"
		case "executor":
			o.Signal.Next = "planner"
		}
		return o
	}
	res, _ := runWF(t, "standard", f)
	want := []string{"architect", "executor", "critic", "run:commit"}
	if diff := cmp.Diff(want, f.calls); diff != "" || res.Status != ResultCompleted {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	if len(f.warnings) != 1 || !strings.HasPrefix(f.warnings[0], "step 42/work/executor#1 (executor): Next: planner is not followed: standard runs its steps in order") {
		t.Errorf("warnings %q", f.warnings)
	}
}

// A Temporal history recorded before Next routed replays as it ran.
func TestIgnoreNext(t *testing.T) {
	f := newFake()
	f.agent = func(c AgentCall, n int) Outcome {
		o := okOutcome(c.Role)
		if c.Role == "planner" {
			o.Signal.Next = "judge"
		}
		return o
	}
	r := defs(t)
	d, _ := r.Get("loop")
	in := &Interp{Item: "42", Defs: r, Exec: f, Lim: testLim, IgnoreNext: true}
	in.Run(t.Context(), d)
	if want := []string{"planner", "actor", "judge", "run:commit"}; !cmp.Equal(want, f.calls) || len(f.warnings) != 0 {
		t.Errorf("calls %v warnings %v", f.calls, f.warnings)
	}
}

// Triage names the first role of the workflow it chose, which its own
// workflow does not have: that is no refused Next.
func TestTriageNextIsNoRefusal(t *testing.T) {
	f := newFake()
	f.agent = func(c AgentCall, n int) Outcome {
		o := okOutcome(c.Role)
		if c.Role == "triage" {
			o.Signal.Next = "architect"
		}
		return o
	}
	res, _ := runWF(t, "auto", f)
	if res.Status != ResultCompleted || len(f.warnings) != 0 || f.calls[1] != "architect" {
		t.Errorf("%+v calls %v warnings %q", res, f.calls, f.warnings)
	}
}

// docs/workflows.md lists, per built-in workflow with a fixed order, the
// roles a step's Next may name: the list is the one the interpreter checks.
func TestNextRolesDocumented(t *testing.T) {
	data, err := os.ReadFile("../../docs/workflows.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	doc = doc[strings.Index(doc, "## Routing with Next:"):]
	r := defs(t)
	for _, name := range r.Names() {
		d, _ := r.Get(name)
		roles := nextRoles(d)
		if name == "loop" || name == "quick" || roles == nil {
			continue // loop has its own table; quick runs no agent; auto routes
		}
		row := fmt.Sprintf("| `%s` | %s |", name, strings.Join(roles, ", "))
		if !strings.Contains(doc, row) {
			t.Errorf("docs/workflows.md lacks the row %q", row)
		}
	}
}
