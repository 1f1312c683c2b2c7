package workflow

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cadre-dev/cadre/internal/signal"
)

func TestRejection(t *testing.T) {
	tests := []struct {
		name string
		role string
		sig  signal.Signal
		want string // substring of the reason; "" = accepted
	}{
		{"pass with a high rating", "judge", signal.Signal{Result: signal.Pass, Rating: signal.Int(9)}, ""},
		{"pass at the threshold", "critic", signal.Signal{Result: signal.Pass, Rating: signal.Int(8)}, ""},
		{"pass without a rating", "verifier", signal.Signal{Result: signal.Pass}, ""},
		{"insufficient", "critic", signal.Signal{Result: signal.Insufficient, Rating: signal.Int(9)}, "Result INSUFFICIENT"},
		{"fail", "gatekeeper", signal.Signal{Result: signal.Fail, Rating: signal.Int(0)}, "Result FAIL, Rating 0/10 (pass is 8)"},
		{"low rating with PASS", "judge", signal.Signal{Result: signal.Pass, Rating: signal.Int(1)}, "Rating 1/10"},
		{"needs fixes", "code-reviewer", signal.Signal{Result: signal.Success, Verdict: signal.VerdictNeedsFixes, Rating: signal.Int(9)}, "Verdict needs-fixes"},
		{"auditor below", "auditor", signal.Signal{Result: signal.Success, Rating: signal.Int(7)}, "Rating 7/10"},
		{"tester fail", "tester", signal.Signal{Result: signal.Fail}, "Result FAIL"},
		{"a worker's FAIL is not a verdict", "executor", signal.Signal{Result: signal.Fail, Rating: signal.Int(1)}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Rejection(tt.role, tt.sig, 8)
			if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
				t.Errorf("Rejection = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestEscalation(t *testing.T) {
	tests := []struct {
		name string
		sig  signal.Signal
		want string
	}{
		{"confident", signal.Signal{Result: signal.Success, Confidence: signal.Int(5), Next: "critic"}, ""},
		{"no confidence given", signal.Signal{Result: signal.Success}, ""},
		{"low confidence", signal.Signal{Result: signal.Success, Confidence: signal.Int(4)}, "confidence 4 is below 5"},
		{"clarification", signal.Signal{Result: signal.ClarificationNeeded, Confidence: signal.Int(9), Context: "which API?"}, "needs clarification: which API?"},
		{"next human", signal.Signal{Result: signal.Pass, Confidence: signal.Int(9), Next: " human ", LoopSummary: "goal met"}, "Next: Human"},
		{"next done", signal.Signal{Result: signal.Pass, Confidence: signal.Int(9), Next: "Done"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Escalation("executor", tt.sig, 5)
			if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
				t.Errorf("Escalation = %q, want %q", got, tt.want)
			}
		})
	}
}

// Every reviewing role of every built-in workflow gates: a rejection that
// never clears ends the item without a commit; one that clears after a fix
// round completes it, the fixer having been handed the rejection.
func TestEveryReviewerGates(t *testing.T) {
	cases := []struct {
		wf, reviewer string
		reject       func(*signal.Signal)
		fixer        string // "" when the workflow has no fix round
		failed       string // the item's result when the rejection never clears
	}{
		{"full", "critic", func(s *signal.Signal) { s.Result = signal.Insufficient }, "executor", ResultFailed},
		{"full", "gatekeeper", func(s *signal.Signal) { s.Result, s.Rating = signal.Fail, signal.Int(0) }, "executor", ResultFailed},
		{"full", "judge", func(s *signal.Signal) { s.Rating = signal.Int(1) }, "executor", ResultFailed},
		{"standard", "critic", func(s *signal.Signal) { s.Result = signal.Insufficient }, "executor", ResultFailed},
		{"review", "critic", func(s *signal.Signal) { s.Result = signal.Insufficient }, "", ResultFailed},
		{"review", "gatekeeper", func(s *signal.Signal) { s.Result = signal.Fail }, "", ResultFailed},
		{"review", "judge", func(s *signal.Signal) { s.Rating = signal.Int(1) }, "", ResultFailed},
		{"moa", "gatekeeper", func(s *signal.Signal) { s.Result = signal.Fail }, "architect", ResultFailed},
		{"moa", "judge", func(s *signal.Signal) { s.Rating = signal.Int(2) }, "architect", ResultFailed},
		{"debug", "verifier", func(s *signal.Signal) { s.Result = signal.Fail }, "executor", ResultFailed},
		{"test", "verifier", func(s *signal.Signal) { s.Rating = signal.Int(3) }, "executor", ResultFailed},
		{"test", "tester", func(s *signal.Signal) { s.Result = signal.Fail }, "", ResultFailed},
		{"moa", "critic", func(s *signal.Signal) { s.Result = signal.Insufficient }, "architect", ResultFailed},
		{"cadre", "code-reviewer", func(s *signal.Signal) { s.Verdict = signal.VerdictNeedsFixes }, "fix-surgeon", ResultFailed},
	}
	// The gatekeeper is a deterministic step, the others agents.
	script := func(f *fakeExec, reviewer string, reject func(*signal.Signal), times int) {
		rejected := 0
		f.agent = func(c AgentCall, n int) Outcome {
			o := okOutcome(c.Role)
			if c.Role == reviewer && (times < 0 || n < times) {
				reject(&o.Signal)
				o.Signal.Context = "the fix: handle nil"
			}
			return o
		}
		f.action = func(c ActionCall) Outcome {
			o := Outcome{Signal: signal.Signal{Result: signal.Pass, Rating: signal.Int(10)}}
			if c.Kind == "gatekeeper" && reviewer == "gatekeeper" && (times < 0 || rejected < times) {
				rejected++
				reject(&o.Signal)
				o.Signal.Context = "the fix: handle nil"
			}
			return o
		}
	}
	for _, tc := range cases {
		t.Run(tc.wf+"/"+tc.reviewer+"/always", func(t *testing.T) {
			f := newFake()
			script(f, tc.reviewer, tc.reject, -1)
			res, err := runWF(t, tc.wf, f)
			if err != nil || res.Status != tc.failed || !strings.Contains(res.Reason, tc.reviewer) {
				t.Errorf("result %+v err %v, want %s naming %s", res, err, tc.failed, tc.reviewer)
			}
			for _, c := range f.calls {
				if strings.HasPrefix(c, "run:commit") && tc.wf != "cadre" {
					t.Errorf("rejected work was committed: %v", f.calls)
				}
			}
			if tc.wf == "cadre" && (contains(f.calls, "run:commit@b") || contains(f.calls, "pr-composer")) {
				t.Errorf("a rejected task was committed or its PR composed: %v", f.calls)
			}
		})
		if tc.fixer == "" {
			continue
		}
		t.Run(tc.wf+"/"+tc.reviewer+"/once", func(t *testing.T) {
			f := newFake()
			script(f, tc.reviewer, tc.reject, 1)
			res, err := runWF(t, tc.wf, f)
			if err != nil || res.Status != ResultCompleted {
				t.Fatalf("result %+v err %v, calls %v", res, err, f.calls)
			}
			fixed := false
			for id, note := range f.notes {
				if strings.Contains(id, "/"+tc.fixer+"#") && strings.Contains(note, "the fix: handle nil") {
					fixed = true
				}
			}
			if !fixed {
				t.Errorf("no %s got the review: %v", tc.fixer, f.notes)
			}
		})
	}
}

// A rejection in a round stops the round: later reviewers are not paid for.
func TestRejectionEndsTheRound(t *testing.T) {
	f := newFake()
	f.agent = func(c AgentCall, n int) Outcome {
		o := okOutcome(c.Role)
		if c.Role == "critic" && n == 0 {
			o.Signal.Result = signal.Insufficient
		}
		return o
	}
	res, _ := runWF(t, "full", f)
	want := "planner architect executor critic executor critic run:gatekeeper judge run:commit"
	if got := strings.Join(f.calls, " "); got != want || res.Status != ResultCompleted {
		t.Errorf("calls %s (%s), want %s", got, res.Status, want)
	}
}

// A workflow's pass_rating replaces limits.audit_pass_rating for its reviewers.
func TestPassRatingPerWorkflow(t *testing.T) {
	def := &Def{Name: "lenient", PassRating: 5, Phases: []Phase{{Name: "work", Critical: true,
		Steps: []Node{{Role: "executor"}, {Role: "judge"}, {Run: "commit"}}}}}
	for _, tc := range []struct {
		rating int
		want   string
	}{{5, ResultCompleted}, {4, ResultFailed}} {
		f := newFake()
		f.agent = func(c AgentCall, n int) Outcome {
			o := okOutcome(c.Role)
			if c.Role == "judge" {
				o.Signal.Rating = signal.Int(tc.rating)
			}
			return o
		}
		in := &Interp{Item: "42", Defs: defs(t), Exec: f, Lim: testLim}
		res, _ := in.Run(t.Context(), def)
		if res.Status != tc.want {
			t.Errorf("rating %d: %s, want %s", tc.rating, res.Status, tc.want)
		}
	}
}

// A reviewer is told the workflow's pass rating; a working role is not.
func TestReviewerCallCarriesPassRating(t *testing.T) {
	def := &Def{Name: "lenient", PassRating: 5, Phases: []Phase{{Name: "work", Critical: true,
		Steps: []Node{{Role: "executor"}, {Role: "judge"}}}}}
	f := newFake()
	got := map[string]int{}
	f.agent = func(c AgentCall, n int) Outcome {
		got[c.Role] = c.PassRating
		o := okOutcome(c.Role)
		o.Signal.Rating = signal.Int(9)
		return o
	}
	in := &Interp{Item: "42", Defs: defs(t), Exec: f, Lim: testLim}
	in.Run(t.Context(), def)
	if got["executor"] != 0 || got["judge"] != 5 {
		t.Errorf("pass ratings %v, want the judge's 5 alone", got)
	}
}

// A rating-pass loop gate passes at the workflow's pass_rating too.
func TestRatingPassGateUsesPassRating(t *testing.T) {
	def := &Def{Name: "lenient", PassRating: 5, Phases: []Phase{{Name: "work", Critical: true,
		Steps: []Node{{Loop: &Loop{Until: "rating-pass", Max: "2", Do: []Node{{Role: "executor"}}}}, {Run: "commit"}}}}}
	f := newFake()
	f.agent = func(c AgentCall, n int) Outcome {
		o := okOutcome(c.Role)
		o.Signal.Rating = signal.Int(6)
		return o
	}
	in := &Interp{Item: "42", Defs: defs(t), Exec: f, Lim: testLim}
	res, _ := in.Run(t.Context(), def)
	if got := strings.Join(f.calls, " "); got != "executor run:commit" || res.Status != ResultCompleted {
		t.Errorf("calls %s (%s), want one round and the commit", got, res.Status)
	}
}

// A rejection fails the item even in a non-critical phase.
func TestRejectionInNonCriticalPhaseFailsTheItem(t *testing.T) {
	def := &Def{Name: "x", Phases: []Phase{
		{Name: "work", Critical: true, Steps: []Node{{Role: "executor"}}},
		{Name: "check", Steps: []Node{{Role: "critic"}}},
		{Name: "ship", Critical: true, Steps: []Node{{Run: "commit"}}}}}
	f := newFake()
	f.agent = func(c AgentCall, n int) Outcome {
		o := okOutcome(c.Role)
		if c.Role == "critic" {
			o.Signal.Result = signal.Insufficient
		}
		return o
	}
	in := &Interp{Item: "42", Defs: defs(t), Exec: f, Lim: testLim}
	res, _ := in.Run(t.Context(), def)
	if res.Status != ResultFailed || contains(f.calls, "run:commit") {
		t.Errorf("%+v %v", res, f.calls)
	}
}

// Every workflow escalates: low confidence, CLARIFICATION_NEEDED and
// Next: Human pause the item.
func TestEveryWorkflowEscalates(t *testing.T) {
	askers := map[string]func(*signal.Signal){
		"low confidence": func(s *signal.Signal) { s.Confidence = signal.Int(2) },
		"clarification":  func(s *signal.Signal) { s.Result = signal.ClarificationNeeded },
		"next human":     func(s *signal.Signal) { s.Next = "Human" },
	}
	first := map[string]string{"simple": "executor", "standard": "architect", "full": "planner", "review": "critic",
		"debug": "debugger", "test": "tester", "research": "researcher", "moa": "architect", "loop": "planner",
		"cadre": "issue-analyst", "auto": "triage"}
	for wf, role := range first {
		for name, ask := range askers {
			t.Run(wf+"/"+name, func(t *testing.T) {
				f := newFake()
				f.agent = func(c AgentCall, n int) Outcome {
					o := okOutcome(c.Role)
					if c.Role == role {
						ask(&o.Signal)
					}
					return o
				}
				_, err := runWF(t, wf, f)
				if !errors.Is(err, ErrPaused) || !contains(f.calls, "human") || contains(f.calls, "run:commit") {
					t.Errorf("err %v calls %v", err, f.calls)
				}
			})
		}
	}
}

// CLARIFICATION_NEEDED asks the same role again with the human's answer.
func TestClarificationAsksAgain(t *testing.T) {
	f := newFake()
	f.agent = func(c AgentCall, n int) Outcome {
		o := okOutcome(c.Role)
		if c.Role == "executor" && n == 0 {
			o.Signal.Result = signal.ClarificationNeeded
			o.Signal.Context = "tabs or spaces?"
		}
		return o
	}
	f.human = func(HumanCall) (Answer, error) { return Answer{Approved: true, Note: "tabs"}, nil }
	res, _ := runWF(t, "simple", f)
	if got := strings.Join(f.calls, " "); got != "executor human executor run:commit" || res.Status != ResultCompleted {
		t.Fatalf("calls %s (%+v)", got, res)
	}
	if n := f.notes["42/work/executor#2"]; !strings.Contains(n, "Human clarification: tabs") || !strings.Contains(n, "tabs or spaces?") {
		t.Errorf("executor#2 note %q", n)
	}
}

func TestValidateRefusesUngatedLoops(t *testing.T) {
	bad := []struct {
		name string
		loop Loop
		want string
	}{
		{"continue over a reviewer", Loop{Until: "result-pass", Max: "2", Exhausted: "continue", Do: []Node{{Role: "executor"}, {Role: "judge"}}}, "would commit work the judge rejected"},
		{"max_between without between", Loop{Until: "review-pass", MaxBetween: "2", Do: []Node{{Role: "critic"}}}, "there are none"},
		{"review-pass without a reviewer", Loop{Until: "review-pass", Max: "2", Do: []Node{{Role: "executor"}}}, "needs a reviewing role"},
	}
	for _, tt := range bad {
		d := &Def{Name: "x", Source: "x.yaml", Phases: []Phase{{Name: "p", Steps: []Node{{Loop: &tt.loop}}}}}
		err := d.Validate(nil)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.want)
		}
	}
	d := &Def{Name: "x", Source: "x.yaml", PassRating: 11, Phases: []Phase{{Name: "p", Steps: []Node{{Role: "executor"}}}}}
	if err := d.Validate(nil); err == nil || !strings.Contains(err.Error(), "pass_rating 11") {
		t.Errorf("pass_rating 11: %v", err)
	}
}

// The gatekeeper checks, and the judge scores, the work before them: the
// executor's in full, the critic's review in review (no agent worked).
func TestGatekeeperAndJudgeCheckTheWork(t *testing.T) {
	for wf, want := range map[string]string{"full": "42/work/executor#1", "review": "42/work/critic#1"} {
		f := newFake()
		var gate, judge *Work
		f.action = func(c ActionCall) Outcome {
			if c.Kind == "gatekeeper" {
				gate = c.Work
			}
			return Outcome{}
		}
		f.agent = func(c AgentCall, n int) Outcome {
			if c.Role == "judge" {
				judge = c.Work
			}
			return okOutcome(c.Role)
		}
		if res, err := runWF(t, wf, f); err != nil || res.Status != ResultCompleted {
			t.Fatalf("%s: %+v %v", wf, res, err)
		}
		if gate == nil || gate.Step != want || judge == nil || judge.Step != want || gate.Output == "" {
			t.Errorf("%s: gatekeeper checked %+v, judge scored %+v; want %s", wf, gate, judge, want)
		}
	}
}

// ctxExec lets a test's agent see its context.
type ctxExec struct {
	*fakeExec
	agentCtx func(ctx context.Context, c AgentCall) Outcome
}

func (x *ctxExec) Agent(ctx context.Context, c AgentCall) (Outcome, error) {
	x.fakeExec.Agent(ctx, c) // records the call
	return x.agentCtx(ctx, c), nil
}

// A pause in one parallel branch lets its siblings finish their steps
// (paid for, journaled) instead of cancelling them.
func TestPauseDoesNotCancelSiblings(t *testing.T) {
	paused := make(chan struct{})
	var scoutCancelled bool
	f := newFake()
	f.human = func(HumanCall) (Answer, error) {
		close(paused)
		return Answer{}, fmt.Errorf("waits: %w", ErrPaused)
	}
	x := &ctxExec{fakeExec: f, agentCtx: func(ctx context.Context, c AgentCall) Outcome {
		o := okOutcome(c.Role)
		switch c.Role {
		case "issue-analyst":
			o.Signal.Confidence = signal.Int(1)
		case "codebase-scout":
			<-paused
			time.Sleep(10 * time.Millisecond) // a cancel would have landed by now
			scoutCancelled = ctx.Err() != nil
		}
		return o
	}}
	r := defs(t)
	d, _ := r.Get("cadre")
	_, err := (&Interp{Item: "42", Defs: r, Exec: x, Lim: testLim}).Run(context.Background(), d)
	if !errors.Is(err, ErrPaused) || scoutCancelled {
		t.Errorf("err %v, scout cancelled %v", err, scoutCancelled)
	}
}
