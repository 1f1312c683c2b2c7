package workflow

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cadre-dev/cadre/internal/signal"
)

// fakeExec plays scripted outcomes and records every call.
type fakeExec struct {
	mu       sync.Mutex
	calls    []string // "role" or "run:kind", with "@task" inside foreach
	ids      []string
	notes    map[string]string   // step id → note it got
	inputs   map[string][]string // step id → inputs it got
	warnings []string
	agent    func(c AgentCall, n int) Outcome // n: how many times this role ran before (per task)
	action   func(c ActionCall) Outcome
	human    func(c HumanCall) (Answer, error)
	seen     map[string]int
}

func newFake() *fakeExec {
	return &fakeExec{notes: map[string]string{}, inputs: map[string][]string{}, seen: map[string]int{}}
}

func (f *fakeExec) Agent(_ context.Context, c AgentCall) (Outcome, error) {
	f.mu.Lock()
	name := c.Role
	if c.Task != nil {
		name += "@" + c.Task.ID
	}
	f.calls = append(f.calls, name)
	f.ids = append(f.ids, c.ID)
	f.notes[c.ID] = c.Note
	f.inputs[c.ID] = c.Inputs
	n := f.seen[name]
	f.seen[name]++
	f.mu.Unlock()
	if f.agent != nil {
		return f.agent(c, n), nil
	}
	return okOutcome(c.Role), nil
}

func (f *fakeExec) Action(_ context.Context, c ActionCall) (Outcome, error) {
	f.mu.Lock()
	name := "run:" + c.Kind
	if c.Task != nil {
		name += "@" + c.Task.ID
	}
	f.calls = append(f.calls, name)
	f.ids = append(f.ids, c.ID)
	f.mu.Unlock()
	if f.action != nil {
		return f.action(c), nil
	}
	return Outcome{}, nil
}

func (f *fakeExec) Human(_ context.Context, c HumanCall) (Answer, error) {
	f.mu.Lock()
	f.calls = append(f.calls, "human")
	f.mu.Unlock()
	if f.human != nil {
		return f.human(c)
	}
	return Answer{}, fmt.Errorf("item waits: %w", ErrPaused)
}

func (f *fakeExec) Warn(msg string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.warnings = append(f.warnings, msg)
}

const twoTaskPlan = "```json\n" + `{"tasks":[{"id":"a","files":["a.go"]},{"id":"b","files":["b.go"],"depends_on":["a"]}]}` + "\n```"

func okOutcome(role string) Outcome {
	o := Outcome{Output: "/out/" + role + ".md", Signal: signal.Signal{Agent: role, Result: signal.Success, Confidence: signal.Int(9)}}
	switch role {
	case "implementation-planner":
		o.Text = twoTaskPlan
		o.Signal.Result = signal.PlanCreated
	case "code-reviewer":
		o.Signal.Verdict = signal.VerdictPass
		o.Signal.Rating = signal.Int(9)
	case "judge", "critic":
		o.Signal.Result = signal.Pass
		o.Signal.Rating = signal.Int(9)
	case "triage":
		o.Text = "```json\n{\"workflow\":\"standard\",\"roles\":[\"architect\",\"executor\",\"critic\"],\"reasoning\":\"r\",\"answer\":null}\n```"
	}
	return o
}

var testLim = FlowLimits{AuditPassRating: 8, EscalateBelowConfidence: 5, MaxReviewRounds: 2, MaxInsufficientLoops: 3, MaxIterations: 2, MaxAttempts: 2, ParallelAgents: 3}

func defs(t *testing.T) *Registry {
	t.Helper()
	r, err := LoadDefs("", nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func runWF(t *testing.T, name string, f *fakeExec) (Result, error) {
	t.Helper()
	return runWFLim(t, name, f, testLim)
}

func runWFLim(t *testing.T, name string, f *fakeExec, lim FlowLimits) (Result, error) {
	t.Helper()
	r := defs(t)
	d, ok := r.Get(name)
	if !ok {
		t.Fatalf("no workflow %s", name)
	}
	in := &Interp{Item: "42", Defs: r, Exec: f, Lim: lim, Roles: func(s string) bool { return s != "nobody" }}
	return in.Run(context.Background(), d)
}

func TestCadreWorkflowHappyPath(t *testing.T) {
	f := newFake()
	res, err := runWF(t, "cadre", f)
	if err != nil || res.Status != ResultCompleted || len(res.PhaseFailures) != 0 {
		t.Fatalf("%+v %v", res, err)
	}
	// The two analysts run in parallel: either order.
	first := f.calls[:2]
	if !(first[0] == "issue-analyst" && first[1] == "codebase-scout") && !(first[1] == "issue-analyst" && first[0] == "codebase-scout") {
		t.Errorf("phase 1 = %v", first)
	}
	want := []string{"implementation-planner", "adjudicator", "run:baseline",
		"code-writer@a", "test-writer@a", "code-reviewer@a", "run:commit@a",
		"code-writer@b", "test-writer@b", "code-reviewer@b", "run:commit@b",
		"run:checks", "pr-composer"}
	if diff := cmp.Diff(want, f.calls[2:]); diff != "" {
		t.Error(diff)
	}
	if !contains(f.ids, "42/implementation/a/code-writer#1") || !contains(f.ids, "42/analysis/issue-analyst#1") {
		t.Errorf("ids %v", f.ids)
	}
}

func TestReviewRounds(t *testing.T) {
	for _, tt := range []struct {
		name        string
		passAt      int // reviewer run (0-based) that passes; -1 never
		wantStatus  string
		wantFixes   int
		wantReviews int
	}{
		{"pass first", 0, ResultCompleted, 0, 1},
		{"pass after one fix", 1, ResultCompleted, 1, 2},
		{"pass after two fixes", 2, ResultCompleted, 2, 3},
		{"never passes: critical failure", -1, ResultFailed, 2, 3},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake()
			f.agent = func(c AgentCall, n int) Outcome {
				o := okOutcome(c.Role)
				if c.Role == "code-reviewer" && c.Task.ID == "a" && n != tt.passAt {
					o.Signal.Verdict = signal.VerdictNeedsFixes
				}
				return o
			}
			res, _ := runWF(t, "cadre", f)
			if res.Status != tt.wantStatus {
				t.Errorf("status %s (%s)", res.Status, res.Reason)
			}
			if got := f.seen["fix-surgeon@a"]; got != tt.wantFixes {
				t.Errorf("fix-surgeon ran %d times", got)
			}
			if got := f.seen["code-reviewer@a"]; got != tt.wantReviews {
				t.Errorf("reviewer ran %d times", got)
			}
			if tt.passAt < 0 {
				if !strings.Contains(res.Reason, "phase implementation: task a: verdict-pass not reached after 3 round(s)") {
					t.Errorf("reason %q", res.Reason)
				}
				if f.seen["code-writer@b"] != 0 || f.seen["pr-composer"] != 0 {
					t.Error("the pipeline went on after a critical failure")
				}
			}
		})
	}
}

func TestCriticalAndNonCriticalPhases(t *testing.T) {
	t.Run("analysis failure aborts", func(t *testing.T) {
		f := newFake()
		f.agent = func(c AgentCall, n int) Outcome {
			if c.Role == "codebase-scout" {
				return Outcome{Failed: true, Reason: "exit 1"}
			}
			return okOutcome(c.Role)
		}
		res, _ := runWF(t, "cadre", f)
		if res.Status != ResultFailed || !strings.Contains(res.Reason, "phase analysis: codebase-scout: exit 1") || f.seen["implementation-planner"] != 0 {
			t.Errorf("%+v %v", res, f.calls)
		}
	})
	t.Run("regressions that stay are recorded, pr still composed", func(t *testing.T) {
		f := newFake()
		f.action = func(c ActionCall) Outcome {
			if c.Kind == "checks" {
				return Outcome{Regressions: []string{"test"}}
			}
			return Outcome{}
		}
		res, _ := runWF(t, "cadre", f)
		if res.Status != ResultCompleted || len(res.PhaseFailures) != 1 || !strings.HasPrefix(res.PhaseFailures[0], "integration: checks-pass not reached after 3") {
			t.Errorf("%+v", res)
		}
		if f.seen["integration-checker"] != 2 || f.seen["pr-composer"] != 1 {
			t.Errorf("calls %v", f.calls)
		}
		if !strings.Contains(f.notes[f.ids[indexOf(f.calls, "integration-checker")]], `"regressions":["test"]`) {
			t.Error("the integration-checker did not get the regressions")
		}
	})
	t.Run("regression fixed in the second round", func(t *testing.T) {
		f := newFake()
		checks := 0
		f.action = func(c ActionCall) Outcome {
			if c.Kind == "checks" {
				checks++
				if checks == 1 {
					return Outcome{Regressions: []string{"build"}}
				}
			}
			return Outcome{}
		}
		res, _ := runWF(t, "cadre", f)
		if res.Status != ResultCompleted || len(res.PhaseFailures) != 0 || checks != 2 {
			t.Errorf("%+v checks %d", res, checks)
		}
	})
	t.Run("pr-composer failure is recorded", func(t *testing.T) {
		f := newFake()
		f.agent = func(c AgentCall, n int) Outcome {
			if c.Role == "pr-composer" {
				return Outcome{Failed: true, Reason: "no SIGNAL BLOCK"}
			}
			return okOutcome(c.Role)
		}
		res, _ := runWF(t, "cadre", f)
		if res.Status != ResultCompleted || len(res.PhaseFailures) != 1 || len(f.warnings) != 1 {
			t.Errorf("%+v %v", res, f.warnings)
		}
	})
}

func indexOf(list []string, s string) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	return -1
}

func TestPlanning(t *testing.T) {
	for _, tt := range []struct{ name, plan, adj, want string }{
		{"no plan json", "I will do it.", "", "implementation-planner: plan: no ```json block"},
		{"cycle", "```json\n{\"tasks\":[{\"id\":\"x\",\"depends_on\":[\"y\"]},{\"id\":\"y\",\"depends_on\":[\"x\"]}]}\n```", "", "cycle: x, y"},
		{"unknown dependency", "```json\n{\"tasks\":[{\"id\":\"x\",\"depends_on\":[\"q\"]}]}\n```", "", `depends on unknown task "q"`},
		{"adjudicator replaces the plan", twoTaskPlan, "```json\n{\"tasks\":[{\"id\":\"only\"}]}\n```", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake()
			f.agent = func(c AgentCall, n int) Outcome {
				o := okOutcome(c.Role)
				if c.Role == "implementation-planner" {
					o.Text = tt.plan
				}
				if c.Role == "adjudicator" && tt.adj != "" {
					o.Text = tt.adj
				}
				return o
			}
			res, _ := runWF(t, "cadre", f)
			if tt.want == "" {
				if res.Status != ResultCompleted || f.seen["code-writer@only"] != 1 || f.seen["code-writer@a"] != 0 {
					t.Errorf("%+v %v", res, f.calls)
				}
				return
			}
			if res.Status != ResultFailed || !strings.Contains(res.Reason, "phase planning") || !strings.Contains(res.Reason, tt.want) {
				t.Errorf("%+v", res)
			}
		})
	}
}

func TestFanOutWavesAndOwnership(t *testing.T) {
	f := newFake()
	var mu sync.Mutex
	others := map[string][]string{}
	f.agent = func(c AgentCall, n int) Outcome {
		o := okOutcome(c.Role)
		if c.Role == "implementation-planner" {
			o.Text = "```json\n" + `{"tasks":[{"id":"a","files":["a.go"]},{"id":"b","files":["b.go"]},{"id":"c","files":["c.go"],"depends_on":["a","b"]}]}` + "\n```"
		}
		return o
	}
	f.action = func(c ActionCall) Outcome {
		if c.Kind == "commit" {
			mu.Lock()
			others[c.Task.ID] = append([]string(nil), c.Others...)
			mu.Unlock()
		}
		return Outcome{}
	}
	if res, _ := runWF(t, "cadre", f); res.Status != ResultCompleted {
		t.Fatalf("%+v", res)
	}
	// c runs only after both a and b committed.
	ic := indexOf(f.calls, "code-writer@c")
	if ic < indexOf(f.calls, "run:commit@a") || ic < indexOf(f.calls, "run:commit@b") {
		t.Errorf("c started before its dependencies ended: %v", f.calls)
	}
	// A task's commit leaves the files of unfinished tasks alone; c is last.
	if !contains(others["a"], "c.go") || contains(others["a"], "a.go") || len(others["c"]) != 0 {
		t.Errorf("others %v", others)
	}
}

func TestLoopWorkflow(t *testing.T) {
	t.Run("insufficient then pass, planner gets the discrepancy", func(t *testing.T) {
		f := newFake()
		f.agent = func(c AgentCall, n int) Outcome {
			o := okOutcome(c.Role)
			if c.Role == "judge" && n < 2 {
				o.Signal.Result = signal.Insufficient
				o.Signal.Context = fmt.Sprintf("discrepancy %d", n)
			}
			return o
		}
		res, _ := runWF(t, "loop", f)
		want := []string{"planner", "actor", "judge", "planner", "actor", "judge", "planner", "actor", "judge", "run:commit"}
		if diff := cmp.Diff(want, f.calls); diff != "" || res.Status != ResultCompleted {
			t.Errorf("%s %+v", diff, res)
		}
		if !strings.HasSuffix(f.notes["42/loop/planner#2"], "discrepancy 0") || !strings.HasSuffix(f.notes["42/loop/planner#3"], "discrepancy 1") {
			t.Errorf("notes %v", f.notes)
		}
	})
	t.Run("max consecutive insufficient is incomplete", func(t *testing.T) {
		f := newFake()
		f.agent = func(c AgentCall, n int) Outcome {
			o := okOutcome(c.Role)
			if c.Role == "judge" {
				o.Signal.Result = signal.Insufficient
			}
			return o
		}
		_, err := runWF(t, "loop", f)
		if !errors.Is(err, ErrPaused) || f.seen["judge"] != 3 || contains(f.calls, "run:commit") || f.calls[len(f.calls)-1] != "human" {
			t.Errorf("%v %v", err, f.calls)
		}
		// Rejected by the human: the item ends incomplete.
		f = newFake()
		f.agent = func(c AgentCall, n int) Outcome {
			o := okOutcome(c.Role)
			if c.Role == "judge" {
				o.Signal.Result = signal.Insufficient
			}
			return o
		}
		var asked HumanCall
		f.human = func(c HumanCall) (Answer, error) { asked = c; return Answer{Note: "enough"}, nil }
		res, _ := runWF(t, "loop", f)
		if res.Status != ResultIncomplete || asked.Kind != HumanIncomplete || asked.ID != "42/loop/incomplete#1" || contains(f.calls, "run:commit") {
			t.Errorf("%+v %+v %v", res, asked, f.calls)
		}
	})
	t.Run("approved after incomplete runs as many rounds again with the note", func(t *testing.T) {
		f := newFake()
		f.agent = func(c AgentCall, n int) Outcome {
			o := okOutcome(c.Role)
			if c.Role == "judge" && n < 4 {
				o.Signal.Result = signal.Insufficient
			}
			return o
		}
		f.human = func(c HumanCall) (Answer, error) { return Answer{Approved: true, Note: "try the cache"}, nil }
		res, _ := runWF(t, "loop", f)
		if res.Status != ResultCompleted || f.seen["judge"] != 5 || !contains(f.calls, "run:commit") {
			t.Errorf("%+v %v", res, f.calls)
		}
		if !strings.HasPrefix(f.notes["42/loop/planner#4"], "Human feedback: try the cache") {
			t.Errorf("planner#4 note %q", f.notes["42/loop/planner#4"])
		}
	})
	t.Run("an actor FAIL goes to the diagnoser, whose diagnosis the planner reads", func(t *testing.T) {
		f := newFake()
		f.agent = func(c AgentCall, n int) Outcome {
			o := okOutcome(c.Role)
			if c.Role == "actor" && n == 0 {
				o.Signal.Result = signal.Fail
				o.Signal.LoopSummary = "blocked by a missing fixture"
			}
			if c.Role == "diagnoser" {
				o.Signal.Context = "root cause: the fixture loader skips testdata/"
			}
			return o
		}
		res, _ := runWF(t, "loop", f)
		want := []string{"planner", "actor", "diagnoser", "planner", "actor", "judge", "run:commit"}
		if diff := cmp.Diff(want, f.calls); diff != "" || res.Status != ResultCompleted {
			t.Errorf("%s %+v", diff, res)
		}
		if n := f.notes["42/loop/diagnoser#1"]; !strings.Contains(n, "actor reported FAIL: blocked by a missing fixture") {
			t.Errorf("diagnoser note %q", n)
		}
		if n := f.notes["42/loop/planner#2"]; !strings.HasPrefix(n, "root cause: the fixture loader skips testdata/") || !strings.Contains(n, "actor reported FAIL") {
			t.Errorf("planner#2 note %q", n)
		}
		if in := f.inputs["42/loop/planner#2"]; !contains(in, "/out/diagnoser.md") || !contains(in, "/out/actor.md") {
			t.Errorf("planner#2 inputs %v", in)
		}
	})
	t.Run("an actor's FAIL inside a foreach goes to the diagnoser too", func(t *testing.T) {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "plan-loop.yaml"), []byte(`name: plan-loop
description: a loop whose round runs the plan's tasks
phases:
  - name: planning
    steps:
      - role: implementation-planner
  - name: loop
    steps:
      - loop:
          until: result-pass
          max: max_insufficient_loops
          do:
            - foreach: plan
              do:
                - role: actor
            - role: judge
          on_fail:
            - role: diagnoser
`), 0o644)
		r, err := LoadDefs(dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		d, _ := r.Get("plan-loop")
		f := newFake()
		failed := false
		f.agent = func(c AgentCall, n int) Outcome {
			o := okOutcome(c.Role)
			if c.Role == "actor" && !failed {
				o.Signal.Result, failed = signal.Fail, true
			}
			return o
		}
		in := &Interp{Item: "42", Defs: r, Exec: f, Lim: testLim, Roles: func(string) bool { return true }}
		res, err := in.Run(context.Background(), d)
		if err != nil || res.Status != ResultCompleted || f.seen["diagnoser"] != 1 {
			t.Errorf("%+v %v %v, want the diagnoser once", res, err, f.calls)
		}
	})
	t.Run("a judge's INSUFFICIENT is no FAIL: no diagnoser", func(t *testing.T) {
		f := newFake()
		f.agent = func(c AgentCall, n int) Outcome {
			o := okOutcome(c.Role)
			if c.Role == "judge" && n == 0 {
				o.Signal.Result = signal.Insufficient
			}
			return o
		}
		runWF(t, "loop", f)
		if contains(f.calls, "diagnoser") {
			t.Errorf("calls %v", f.calls)
		}
	})
	t.Run("low confidence pauses for a human", func(t *testing.T) {
		f := newFake()
		f.agent = func(c AgentCall, n int) Outcome {
			o := okOutcome(c.Role)
			if c.Role == "actor" {
				o.Signal.Confidence = signal.Int(4)
			}
			return o
		}
		_, err := runWF(t, "loop", f)
		if !errors.Is(err, ErrPaused) || f.calls[len(f.calls)-1] != "human" {
			t.Errorf("err %v calls %v", err, f.calls)
		}
	})
	t.Run("approved with a note goes on and hands the note over", func(t *testing.T) {
		f := newFake()
		f.agent = func(c AgentCall, n int) Outcome {
			o := okOutcome(c.Role)
			if c.Role == "actor" && n == 0 {
				o.Signal.Confidence = signal.Int(2)
			}
			return o
		}
		f.human = func(c HumanCall) (Answer, error) {
			if c.ID != "42/loop/actor#1/human" {
				t.Errorf("human id %s", c.ID)
			}
			return Answer{Approved: true, Note: "use the v2 API"}, nil
		}
		res, _ := runWF(t, "loop", f)
		if res.Status != ResultCompleted || !strings.HasPrefix(f.notes["42/loop/judge#1"], "Human feedback: use the v2 API") {
			t.Errorf("%+v %q", res, f.notes["42/loop/judge#1"])
		}
	})
	t.Run("rejected fails the item", func(t *testing.T) {
		f := newFake()
		f.agent = func(c AgentCall, n int) Outcome {
			o := okOutcome(c.Role)
			o.Signal.Confidence = signal.Int(1)
			return o
		}
		f.human = func(HumanCall) (Answer, error) { return Answer{Note: "wrong goal"}, nil }
		res, _ := runWF(t, "loop", f)
		if res.Status != ResultFailed || !strings.Contains(res.Reason, "rejected by a human: wrong goal") {
			t.Errorf("%+v", res)
		}
	})

}

// The judge's Next routes a passing round: planner starts the next round
// on a new subordinate goal, Done ends the goal, which a human approves
// unless approve_goal is off.
func TestLoopRoutes(t *testing.T) {
	approving := testLim
	approving.ApproveGoal = true
	// judge plays the judge's signals in turn: "P:planner" is PASS with
	// Next: planner, "I" INSUFFICIENT.
	judge := func(f *fakeExec, plays ...string) {
		f.agent = func(c AgentCall, n int) Outcome {
			o := okOutcome(c.Role)
			if c.Role == "judge" {
				play := plays[min(n, len(plays)-1)]
				switch {
				case play == "I":
					o.Signal.Result = signal.Insufficient
				case strings.HasPrefix(play, "L:"): // a pass at low confidence
					o.Signal.Next, o.Signal.Confidence = strings.TrimPrefix(play, "L:"), signal.Int(1)
				default:
					o.Signal.Next = strings.TrimPrefix(play, "P:")
				}
				o.Signal.LoopSummary = fmt.Sprintf("judgement %d", n+1)
			}
			return o
		}
	}
	t.Run("planner goes on, Done ends the goal, a human approves it", func(t *testing.T) {
		f := newFake()
		judge(f, "P:planner", "P:Done")
		var asked []HumanCall
		f.human = func(c HumanCall) (Answer, error) { asked = append(asked, c); return Answer{Approved: true}, nil }
		res, err := runWFLim(t, "loop", f, approving)
		want := []string{"planner", "actor", "judge", "planner", "actor", "judge", "human", "run:commit"}
		if diff := cmp.Diff(want, f.calls); diff != "" || err != nil || res.Status != ResultCompleted {
			t.Errorf("%s %+v %v", diff, res, err)
		}
		if len(asked) != 1 || asked[0].Kind != HumanGoal || asked[0].ID != "42/loop/goal#1" || asked[0].Step != "42/loop/judge#2" || asked[0].Role != "judge" ||
			!strings.Contains(asked[0].Reason, "the goal is met (judgement 2)") {
			t.Errorf("asked %+v", asked)
		}
	})
	t.Run("unanswered, the goal pauses the item before its commit", func(t *testing.T) {
		f := newFake()
		judge(f, "P:Done")
		_, err := runWFLim(t, "loop", f, approving)
		if !errors.Is(err, ErrPaused) || contains(f.calls, "run:commit") {
			t.Errorf("%v %v", err, f.calls)
		}
	})
	t.Run("rejected with a note, the note goes to the planner verbatim", func(t *testing.T) {
		f := newFake()
		judge(f, "P:Done")
		f.human = func(c HumanCall) (Answer, error) {
			if c.ID == "42/loop/goal#1" {
				return Answer{Note: "also cover the CLI flag"}, nil
			}
			return Answer{Approved: true}, nil
		}
		res, _ := runWFLim(t, "loop", f, approving)
		if res.Status != ResultCompleted || f.seen["planner"] != 2 || !strings.HasPrefix(f.notes["42/loop/planner#2"], "Human feedback: also cover the CLI flag") {
			t.Errorf("%+v %v %q", res, f.calls, f.notes["42/loop/planner#2"])
		}
	})
	t.Run("rejected without a note ends the item", func(t *testing.T) {
		f := newFake()
		judge(f, "P:Done")
		f.human = func(HumanCall) (Answer, error) { return Answer{}, nil }
		res, _ := runWFLim(t, "loop", f, approving)
		if res.Status != ResultFailed || contains(f.calls, "run:commit") || !strings.Contains(res.Reason, "rejected by a human") {
			t.Errorf("%+v %v", res, f.calls)
		}
	})
	t.Run("approve_goal off: Done ends the goal unattended", func(t *testing.T) {
		f := newFake()
		judge(f, "P:planner", "P:Done")
		res, _ := runWF(t, "loop", f)
		if res.Status != ResultCompleted || contains(f.calls, "human") || f.seen["judge"] != 2 {
			t.Errorf("%+v %v", res, f.calls)
		}
	})
	t.Run("Next: Human approved is the goal's approval, not asked twice", func(t *testing.T) {
		f := newFake()
		judge(f, "P:Human")
		var kinds []string
		f.human = func(c HumanCall) (Answer, error) { kinds = append(kinds, c.Kind); return Answer{Approved: true}, nil }
		res, _ := runWFLim(t, "loop", f, approving)
		if res.Status != ResultCompleted || !cmp.Equal(kinds, []string{HumanEscalation}) {
			t.Errorf("%+v %v", res, kinds)
		}
	})
	t.Run("approving a low-confidence judgement is not the goal's approval", func(t *testing.T) {
		f := newFake()
		judge(f, "L:Done")
		var kinds []string
		f.human = func(c HumanCall) (Answer, error) { kinds = append(kinds, c.Kind); return Answer{Approved: true}, nil }
		res, _ := runWFLim(t, "loop", f, approving)
		if res.Status != ResultCompleted || !cmp.Equal(kinds, []string{HumanEscalation, HumanGoal}) {
			t.Errorf("%+v asked %v, want the escalation and then the goal", res, kinds)
		}
	})
	t.Run("more rounds a human granted do not outlast the next pass", func(t *testing.T) {
		f := newFake()
		judge(f, "I", "I", "I", "P:planner", "I", "I", "I", "P:Done")
		var asked []HumanCall
		f.human = func(c HumanCall) (Answer, error) { asked = append(asked, c); return Answer{Approved: true}, nil }
		res, _ := runWF(t, "loop", f)
		if res.Status != ResultCompleted || len(asked) != 2 || asked[1].Kind != HumanIncomplete ||
			!strings.Contains(asked[1].Reason, "after 3 round(s)") {
			t.Errorf("%+v asked %+v, want a second pause after three failed rounds in a row", res, asked)
		}
	})
	t.Run("subordinate goals are bounded, then the goal goes to the human", func(t *testing.T) {
		f := newFake()
		judge(f, "P:planner")
		var asked []string
		f.human = func(c HumanCall) (Answer, error) { asked = append(asked, c.Kind); return Answer{Approved: true}, nil }
		res, _ := runWFLim(t, "loop", f, approving)
		// max_insufficient_loops is 3 here: three more rounds, then a human.
		if res.Status != ResultCompleted || f.seen["judge"] != 4 || !cmp.Equal(asked, []string{HumanGoal}) || len(f.warnings) != 1 {
			t.Errorf("%+v judge×%d asked %v warnings %v", res, f.seen["judge"], asked, f.warnings)
		}
	})
	t.Run("a passing round starts the count of INSUFFICIENT in a row again", func(t *testing.T) {
		f := newFake()
		judge(f, "I", "I", "P:planner", "I", "I", "P:Done")
		res, err := runWF(t, "loop", f)
		if res.Status != ResultCompleted || err != nil || f.seen["judge"] != 6 {
			t.Errorf("%+v %v judge×%d", res, err, f.seen["judge"])
		}
	})
}

// A task's ordered goals run as goal cycles, in order: each goal's rounds
// count from 1 and its steps are signed N:L:S; each met goal goes to the
// human.
func TestGoalCycles(t *testing.T) {
	f := newFake()
	sigs, goals := map[string]string{}, map[string]string{}
	f.agent = func(c AgentCall, n int) Outcome {
		sigs[c.ID], goals[c.ID] = c.Signature, c.Goal
		o := okOutcome(c.Role)
		if c.Role == "judge" && n == 1 {
			o.Signal.Result = signal.Insufficient // goal 2's first round
		}
		return o
	}
	var asked []string
	f.human = func(c HumanCall) (Answer, error) { asked = append(asked, c.ID); return Answer{Approved: true}, nil }
	r := defs(t)
	d, _ := r.Get("loop")
	lim := testLim
	lim.ApproveGoal = true
	in := &Interp{Item: "42", Defs: r, Exec: f, Lim: lim, Goals: []string{"Parse the flag.", "Use it."}}
	res, err := in.Run(context.Background(), d)
	if err != nil || res.Status != ResultCompleted {
		t.Fatalf("%+v %v", res, err)
	}
	want := map[string]string{"42/loop/planner#1": "1:1:1", "42/loop/judge#1": "1:1:3", "42/loop/planner#2": "2:1:1",
		"42/loop/judge#2": "2:1:3", "42/loop/planner#3": "2:2:1", "42/loop/judge#3": "2:2:3"}
	for id, sig := range want {
		if sigs[id] != sig {
			t.Errorf("%s signed %q, want %q", id, sigs[id], sig)
		}
	}
	if goals["42/loop/actor#1"] != "Parse the flag." || goals["42/loop/actor#3"] != "Use it." {
		t.Errorf("goals %v", goals)
	}
	if n := f.notes["42/loop/planner#2"]; !strings.HasPrefix(n, "Goal 2 of 2: Use it.") {
		t.Errorf("goal 2's planner note %q", n)
	}
	if !cmp.Equal(asked, []string{"42/loop/goal#1", "42/loop/goal#2"}) || f.calls[len(f.calls)-1] != "run:commit" {
		t.Errorf("asked %v, calls %v", asked, f.calls)
	}
}

func TestSignatures(t *testing.T) {
	f := newFake()
	sigs := map[string]string{}
	f.agent = func(c AgentCall, n int) Outcome {
		sigs[c.ID] = c.Signature
		o := okOutcome(c.Role)
		if c.Role == "judge" && n == 0 {
			o.Signal.Result = signal.Insufficient
		}
		return o
	}
	runWF(t, "loop", f)
	want := map[string]string{"42/loop/planner#1": "1:1:1", "42/loop/actor#1": "1:1:2", "42/loop/judge#1": "1:1:3", "42/loop/planner#2": "1:2:1", "42/loop/judge#2": "1:2:3"}
	for id, sig := range want {
		if sigs[id] != sig {
			t.Errorf("%s signature %q, want %q", id, sigs[id], sig)
		}
	}
}

func TestMoA(t *testing.T) {
	f := newFake()
	f.agent = func(c AgentCall, n int) Outcome {
		o := okOutcome(c.Role)
		if c.Role == "critic" {
			o.Signal.Result = signal.Insufficient
		}
		return o
	}
	res, _ := runWF(t, "moa", f)
	if res.Status != ResultFailed || f.seen["critic"] != testLim.MaxIterations || f.seen["architect"] != testLim.MaxIterations {
		t.Errorf("%+v %v", res, f.calls)
	}
}

func TestTriageRouting(t *testing.T) {
	for _, tt := range []struct {
		name, triage string
		want         []string
		status       string
		warn         bool
	}{
		{"quick answers", `{"workflow":"QUICK","roles":[],"reasoning":"math","answer":"4"}`, []string{"triage", "run:answer"}, ResultAnswered, false},
		{"standard", `{"workflow":"standard","roles":[],"reasoning":"","answer":null}`, []string{"triage", "architect", "executor", "critic", "run:commit"}, ResultCompleted, false},
		{"debug", `{"workflow":"debug","roles":[],"reasoning":"","answer":null}`, []string{"triage", "debugger", "executor", "verifier", "run:commit"}, ResultCompleted, false},
		{"custom roles", `{"workflow":"CUSTOM","roles":["researcher","executor"],"reasoning":"","answer":null}`, []string{"triage", "researcher", "executor", "run:commit"}, ResultCompleted, false},
		{"unknown role falls back", `{"workflow":"weird","roles":["nobody"],"reasoning":"","answer":null}`, []string{"triage", "architect", "executor", "critic", "run:commit"}, ResultCompleted, true},
		{"invalid json falls back", `not json`, []string{"triage", "architect", "executor", "critic", "run:commit"}, ResultCompleted, true},
		{"quick without answer falls back", `{"workflow":"quick","roles":[],"reasoning":"","answer":null}`, []string{"triage", "architect", "executor", "critic", "run:commit"}, ResultCompleted, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake()
			f.agent = func(c AgentCall, n int) Outcome {
				o := okOutcome(c.Role)
				if c.Role == "triage" {
					o.Text = tt.triage
				}
				return o
			}
			res, err := runWF(t, "auto", f)
			if err != nil || res.Status != tt.status {
				t.Errorf("%+v %v", res, err)
			}
			if diff := cmp.Diff(tt.want, f.calls); diff != "" {
				t.Error(diff)
			}
			if (len(f.warnings) > 0) != tt.warn {
				t.Errorf("warnings %v", f.warnings)
			}
		})
	}
}

func TestIDsAreDeterministic(t *testing.T) {
	run := func() []string {
		f := newFake()
		f.agent = func(c AgentCall, n int) Outcome {
			o := okOutcome(c.Role)
			if c.Role == "code-reviewer" && n == 0 {
				o.Signal.Verdict = signal.VerdictNeedsFixes
			}
			return o
		}
		runWF(t, "cadre", f)
		var sorted []string
		sorted = append(sorted, f.ids...)
		return sortStrings(sorted)
	}
	a, b := run(), run()
	if diff := cmp.Diff(a, b); diff != "" {
		t.Error(diff)
	}
	if !contains(a, "42/implementation/a/code-reviewer#2") || !contains(a, "42/implementation/a/fix-surgeon#1") {
		t.Errorf("ids %v", a)
	}
}

func sortStrings(s []string) []string {
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	return s
}

// TestInputsAreRelevant pins which earlier outputs each step is handed: all
// of the earlier phases, its own task's chain but no other task's, and in
// a review loop the round before (the review a fixer answers, the fix a
// reviewer checks) but not older, superseded rounds; the steps after the
// fan-out read every task's outputs, of its review loop the last review
// and the fix before it; the baseline's output goes to no agent (the
// checks' output carries its exit codes).
func TestInputsAreRelevant(t *testing.T) {
	f := newFake()
	var mu sync.Mutex
	got := map[string][]string{}
	short := func(id string) string { return strings.TrimPrefix(id, "42/") }
	f.agent = func(c AgentCall, n int) Outcome {
		mu.Lock()
		got[short(c.ID)] = c.Inputs
		mu.Unlock()
		o := okOutcome(c.Role)
		o.Output = short(c.ID)
		if c.Role == "code-reviewer" && c.Task.ID == "a" && n < 2 {
			o.Signal.Verdict = signal.VerdictNeedsFixes
		}
		return o
	}
	f.action = func(c ActionCall) Outcome {
		if c.Kind == "baseline" || c.Kind == "checks" {
			return Outcome{Output: short(c.ID)}
		}
		return Outcome{}
	}
	res, err := runWF(t, "cadre", f)
	if err != nil || res.Status != ResultCompleted {
		t.Fatalf("%+v %v", res, err)
	}
	analysis := []string{"analysis/issue-analyst#1", "analysis/codebase-scout#1"}
	planning := append(analysis[:2:2], "planning/implementation-planner#1", "planning/adjudicator#1")
	// The baseline reaches agents through the checks' output only.
	pre := planning
	with := func(base []string, more ...string) []string { return append(append([]string(nil), base...), more...) }
	const a, b = "implementation/a/", "implementation/b/"
	want := map[string][]string{
		"analysis/issue-analyst#1":          nil,
		"analysis/codebase-scout#1":         nil,
		"planning/implementation-planner#1": analysis,
		"planning/adjudicator#1":            with(analysis, "planning/implementation-planner#1"),
		a + "code-writer#1":                 pre,
		a + "test-writer#1":                 with(pre, a+"code-writer#1"),
		a + "code-reviewer#1":               with(pre, a+"code-writer#1", a+"test-writer#1"),
		a + "fix-surgeon#1":                 with(pre, a+"code-writer#1", a+"test-writer#1", a+"code-reviewer#1"),
		a + "code-reviewer#2":               with(pre, a+"code-writer#1", a+"test-writer#1", a+"code-reviewer#1", a+"fix-surgeon#1"),
		a + "fix-surgeon#2":                 with(pre, a+"code-writer#1", a+"test-writer#1", a+"code-reviewer#1", a+"fix-surgeon#1", a+"code-reviewer#2"),
		// The first round's review and fix are superseded by the second's.
		a + "code-reviewer#3": with(pre, a+"code-writer#1", a+"test-writer#1", a+"code-reviewer#2", a+"fix-surgeon#2"),
		// Task b depends on a, whose work is committed: none of a's outputs.
		b + "code-writer#1":   pre,
		b + "test-writer#1":   with(pre, b+"code-writer#1"),
		b + "code-reviewer#1": with(pre, b+"code-writer#1", b+"test-writer#1"),
		// After the loop: the last review and the fix before it.
		"pr/pr-composer#1": with(pre, a+"code-writer#1", a+"test-writer#1", a+"fix-surgeon#2", a+"code-reviewer#3",
			b+"code-writer#1", b+"test-writer#1", b+"code-reviewer#1", "integration/checks#1"),
	}
	for id, w := range want {
		if diff := cmp.Diff(w, got[id], cmpEmpty); diff != "" {
			t.Errorf("%s inputs (-want +got):\n%s", id, diff)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d agent steps, want %d: %v", len(got), len(want), got)
	}
}

// cmpEmpty takes a nil and an empty list as equal.
var cmpEmpty = cmp.FilterValues(func(x, y []string) bool { return len(x) == 0 && len(y) == 0 }, cmp.Ignore())

// TestInputsAfterIntegrationRounds: in the integration loop the checker
// and the fixer read each round's checks and the round before; the PR
// composer after it reads the passing checks and the diagnosis and fix
// before them, not the failed rounds they superseded.
func TestInputsAfterIntegrationRounds(t *testing.T) {
	f := newFake()
	var mu sync.Mutex
	got := map[string][]string{}
	short := func(id string) string { return strings.TrimPrefix(id, "42/") }
	f.agent = func(c AgentCall, n int) Outcome {
		mu.Lock()
		got[short(c.ID)] = c.Inputs
		mu.Unlock()
		o := okOutcome(c.Role)
		o.Output = short(c.ID)
		return o
	}
	checks := 0
	f.action = func(c ActionCall) Outcome {
		if c.Kind != "checks" {
			return Outcome{}
		}
		checks++
		o := Outcome{Output: short(c.ID)}
		if checks < 3 {
			o.Regressions = []string{"test"}
		}
		return o
	}
	res, err := runWF(t, "cadre", f)
	if err != nil || res.Status != ResultCompleted || len(res.PhaseFailures) != 0 {
		t.Fatalf("%+v %v", res, err)
	}
	const i = "integration/"
	first := got[i+"integration-checker#1"]
	if len(first) == 0 || first[len(first)-1] != i+"checks#1" {
		t.Fatalf("integration-checker#1 inputs %v: want the checks last", first)
	}
	before := first[:len(first)-1]
	with := func(more ...string) []string { return append(append([]string(nil), before...), more...) }
	want := map[string][]string{
		i + "integration-checker#1": with(i + "checks#1"),
		i + "fix-surgeon#1":         with(i+"checks#1", i+"integration-checker#1"),
		i + "integration-checker#2": with(i+"checks#1", i+"integration-checker#1", i+"fix-surgeon#1", i+"checks#2"),
		i + "fix-surgeon#2":         with(i+"checks#1", i+"integration-checker#1", i+"fix-surgeon#1", i+"checks#2", i+"integration-checker#2"),
		"pr/pr-composer#1":          with(i+"integration-checker#2", i+"fix-surgeon#2", i+"checks#3"),
	}
	for id, w := range want {
		if diff := cmp.Diff(w, got[id]); diff != "" {
			t.Errorf("%s inputs (-want +got):\n%s", id, diff)
		}
	}
}
