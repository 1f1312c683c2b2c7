package workflow

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cadre-dev/cadre/internal/signal"
)

var lim = Limits{AuditPassRating: 8, MaxAttempts: 2}

func rating(n int) *int { return &n }

func TestNextTable(t *testing.T) {
	tests := []struct {
		name      string
		state     State
		ev        Event
		wantKind  DecisionKind
		wantStep  string // step id when RunStep
		wantStage string
		wantAtt   int
	}{
		{"start in plan runs planner", Initial("t", StagePlan, 0), Event{Kind: Start}, RunStep, "t/plan/planner#1", StagePlan, 0},
		{"start in code runs coder", Initial("t", StageCode, 0), Event{Kind: Start}, RunStep, "t/code/coder#1", StageCode, 0},
		{"start in audit runs auditor", Initial("t", StageAudit, 1), Event{Kind: Start}, RunStep, "t/audit/auditor#1", StageAudit, 1},
		{"start in audit with attempts used hard-stops", Initial("t", StageAudit, 2), Event{Kind: Start}, HardStop, "", StageAudit, 2},
		{"completed is skipped", Initial("t", StageCompleted, 0), Event{Kind: Start}, Skip, "", StageCompleted, 0},
		{"backlog is skipped", Initial("t", StageBacklog, 0), Event{Kind: Start}, Skip, "", StageBacklog, 0},
		{"failed is skipped", Initial("t", StageFailed, 0), Event{Kind: Start}, Skip, "", StageFailed, 0},
		{"unknown stage is skipped", Initial("t", "weird", 0), Event{Kind: Start}, Skip, "", "weird", 0},
		{"planner done goes to code", State{Item: "t", Stage: StagePlan, Visits: [3]int{1, 0, 0}}, Event{Kind: StepDone, Signal: signal.Signal{Result: "PLAN_CREATED"}, Role: RolePlanner, Output: "p.md"}, RunStep, "t/code/coder#1", StageCode, 0},
		{"coder done goes to audit", State{Item: "t", Stage: StageCode, Visits: [3]int{0, 1, 0}}, Event{Kind: StepDone, Signal: signal.Signal{Result: "SUCCESS"}, Role: RoleCoder}, RunStep, "t/audit/auditor#1", StageAudit, 0},
		{"audit 8 completes", State{Item: "t", Stage: StageAudit, Visits: [3]int{0, 1, 1}}, Event{Kind: StepDone, Signal: signal.Signal{Result: "PASS", Rating: rating(8)}, Role: RoleAuditor}, Complete, "", StageCompleted, 0},
		{"audit 10 completes", State{Item: "t", Stage: StageAudit}, Event{Kind: StepDone, Signal: signal.Signal{Rating: rating(10)}, Role: RoleAuditor}, Complete, "", StageCompleted, 0},
		{"audit 7 first attempt back to code", State{Item: "t", Stage: StageAudit, Visits: [3]int{0, 1, 1}}, Event{Kind: StepDone, Signal: signal.Signal{Result: "INSUFFICIENT", Rating: rating(7)}, Role: RoleAuditor, Output: "r.md"}, RunStep, "t/code/coder#2", StageCode, 1},
		{"audit 0 second attempt hard-stops in audit", State{Item: "t", Stage: StageAudit, Attempts: 1}, Event{Kind: StepDone, Signal: signal.Signal{Rating: rating(0)}, Role: RoleAuditor}, HardStop, "", StageAudit, 2},
		{"audit without rating hard-stops", State{Item: "t", Stage: StageAudit}, Event{Kind: StepDone, Role: RoleAuditor}, HardStop, "", StageAudit, 0},
		{"agent crash hard-stops at once", State{Item: "t", Stage: StageCode}, Event{Kind: StepFailed, Role: RoleCoder, Reason: "exit 1"}, HardStop, "", StageCode, 0},
		{"coder FAIL hard-stops", State{Item: "t", Stage: StageCode}, Event{Kind: StepDone, Signal: signal.Signal{Result: "FAIL"}, Role: RoleCoder}, HardStop, "", StageCode, 0},
		{"planner FAIL hard-stops", State{Item: "t", Stage: StagePlan}, Event{Kind: StepDone, Signal: signal.Signal{Result: "FAIL"}, Role: RolePlanner}, HardStop, "", StagePlan, 0},
		{"auditor FAIL with low rating is an audit failure", State{Item: "t", Stage: StageAudit, Visits: [3]int{0, 1, 1}}, Event{Kind: StepDone, Signal: signal.Signal{Result: "FAIL", Rating: rating(3)}, Role: RoleAuditor}, RunStep, "t/code/coder#2", StageCode, 1},
		{"stop waits for the running step", State{Item: "t", Stage: StageCode}, Event{Kind: Stop}, Wait, "", StageCode, 0},
		{"stopping starts no new stage", State{Item: "t", Stage: StageCode, Stopping: true}, Event{Kind: StepDone, Role: RoleCoder}, Stopped, "", StageCode, 0},
		{"stopping before start", State{Item: "t", Stage: StagePlan, Stopping: true}, Event{Kind: Start}, Stopped, "", StagePlan, 0},
		{"stopping still completes a passing audit", State{Item: "t", Stage: StageAudit, Stopping: true}, Event{Kind: StepDone, Signal: signal.Signal{Rating: rating(9)}, Role: RoleAuditor}, Complete, "", StageCompleted, 0},
		{"unknown role hard-stops", State{Item: "t", Stage: StageCode}, Event{Kind: StepDone, Role: "judge"}, HardStop, "", StageCode, 0},
		{"unknown event hard-stops", State{Item: "t", Stage: StageCode}, Event{Kind: EventKind(99)}, HardStop, "", StageCode, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, d := Next(lim, tt.state, tt.ev)
			if d.Kind != tt.wantKind {
				t.Fatalf("decision = %v (%s), want %v", d.Kind, d.Reason, tt.wantKind)
			}
			if d.Step.ID != tt.wantStep {
				t.Errorf("step = %q, want %q", d.Step.ID, tt.wantStep)
			}
			if got.Stage != tt.wantStage || got.Attempts != tt.wantAtt {
				t.Errorf("state = %s/%d, want %s/%d", got.Stage, got.Attempts, tt.wantStage, tt.wantAtt)
			}
			if (d.Kind == HardStop || d.Kind == Skip) && d.Reason == "" {
				t.Error("a hard stop or skip must say why")
			}
		})
	}
}

// drive runs a whole task through Next with scripted step outcomes and
// returns the roles invoked and the final decision.
func drive(t *testing.T, s State, outcome func(Step) Event) ([]string, Decision, State) {
	t.Helper()
	var roles []string
	s, d := Next(lim, s, Event{Kind: Start})
	for i := 0; d.Kind == RunStep; i++ {
		if i > 20 {
			t.Fatal("no end after 20 steps")
		}
		roles = append(roles, d.Step.Role)
		s, d = Next(lim, s, outcome(d.Step))
	}
	return roles, d, s
}

func pass(st Step) Event {
	ev := Event{Kind: StepDone, Signal: signal.Signal{Result: "SUCCESS"}, Role: st.Role, Output: st.ID + ".md"}
	if st.Role == RoleAuditor {
		ev.Signal.Rating = rating(9)
	}
	return ev
}

// The stage pipeline's required behaviours, at the state-machine level (the engine tests
// repeat them with real processes).
func TestStagePipelines(t *testing.T) {
	t.Run("code-stage task runs coder then auditor", func(t *testing.T) {
		roles, d, s := drive(t, Initial("t", StageCode, 0), pass)
		if diff := cmp.Diff([]string{RoleCoder, RoleAuditor}, roles); diff != "" || d.Kind != Complete || s.Stage != StageCompleted {
			t.Errorf("roles diff %s, decision %v, stage %s", diff, d.Kind, s.Stage)
		}
	})
	t.Run("plan-stage task runs planner, coder, auditor", func(t *testing.T) {
		roles, d, _ := drive(t, Initial("t", StagePlan, 0), pass)
		if diff := cmp.Diff([]string{RolePlanner, RoleCoder, RoleAuditor}, roles); diff != "" || d.Kind != Complete {
			t.Errorf("roles diff %s, decision %v", diff, d.Kind)
		}
	})
	t.Run("audit fail once then pass; coder gets the review", func(t *testing.T) {
		audits := 0
		var review string
		roles, d, s := drive(t, Initial("t", StageCode, 0), func(st Step) Event {
			if st.Role == RoleCoder && st.Attempt == 2 {
				review = st.Review
			}
			if st.Role == RoleAuditor {
				audits++
				if audits == 1 {
					return Event{Kind: StepDone, Signal: signal.Signal{Rating: rating(5)}, Role: st.Role, Output: "review1.md"}
				}
			}
			return pass(st)
		})
		if diff := cmp.Diff([]string{RoleCoder, RoleAuditor, RoleCoder, RoleAuditor}, roles); diff != "" {
			t.Error(diff)
		}
		if d.Kind != Complete || s.Attempts != 1 || review != "review1.md" {
			t.Errorf("decision %v attempts %d review %q", d.Kind, s.Attempts, review)
		}
	})
	t.Run("audit fail twice hard-stops in audit", func(t *testing.T) {
		roles, d, s := drive(t, Initial("t", StageCode, 0), func(st Step) Event {
			if st.Role == RoleAuditor {
				return Event{Kind: StepDone, Signal: signal.Signal{Rating: rating(3)}, Role: st.Role}
			}
			return pass(st)
		})
		if len(roles) != 4 || d.Kind != HardStop || s.Stage != StageAudit || s.Attempts != 2 {
			t.Errorf("roles %v decision %v stage %s attempts %d", roles, d.Kind, s.Stage, s.Attempts)
		}
	})
	t.Run("crash stops immediately", func(t *testing.T) {
		roles, d, _ := drive(t, Initial("t", StagePlan, 0), func(st Step) Event {
			return Event{Kind: StepFailed, Role: st.Role, Reason: "exit 1"}
		})
		if len(roles) != 1 || d.Kind != HardStop {
			t.Errorf("roles %v decision %v", roles, d.Kind)
		}
	})
	t.Run("stop cancels before next stage", func(t *testing.T) {
		s, d := Next(lim, Initial("t", StagePlan, 0), Event{Kind: Start})
		s, _ = Next(lim, s, Event{Kind: Stop})
		_, d = Next(lim, s, pass(d.Step))
		if d.Kind != Stopped {
			t.Errorf("decision %v, want stopped", d.Kind)
		}
	})
}

func TestNextDoesNotMutateInput(t *testing.T) {
	s := State{Item: "t", Stage: StageCode, Inputs: []string{"a"}}
	before := s
	Next(lim, s, Event{Kind: StepDone, Role: RoleCoder, Output: "b"})
	if diff := cmp.Diff(before, s); diff != "" {
		t.Error(diff)
	}
}

func TestStepIDsAreStableAcrossReplay(t *testing.T) {
	outcome := func(st Step) Event {
		if st.Role == RoleAuditor && st.Attempt == 1 {
			return Event{Kind: StepDone, Signal: signal.Signal{Rating: rating(2)}, Role: st.Role, Output: "r"}
		}
		return pass(st)
	}
	ids := func() []string {
		var out []string
		s, d := Next(lim, Initial("x", StagePlan, 0), Event{Kind: Start})
		for d.Kind == RunStep {
			out = append(out, d.Step.ID)
			s, d = Next(lim, s, outcome(d.Step))
		}
		return out
	}
	want := []string{"x/plan/planner#1", "x/code/coder#1", "x/audit/auditor#1", "x/code/coder#2", "x/audit/auditor#2"}
	if diff := cmp.Diff(want, ids()); diff != "" {
		t.Error(diff)
	}
	if diff := cmp.Diff(ids(), ids()); diff != "" {
		t.Error(diff)
	}
}

func TestRemaining(t *testing.T) {
	for stage, want := range map[string][]string{
		StagePlan: {StagePlan, StageCode, StageAudit}, StageCode: {StageCode, StageAudit},
		StageAudit: {StageAudit}, StageCompleted: nil, StageBacklog: nil,
	} {
		if diff := cmp.Diff(want, Remaining(stage)); diff != "" {
			t.Errorf("%s: %s", stage, diff)
		}
	}
}

func TestUsable(t *testing.T) {
	if Usable(RoleAuditor, nil) == nil {
		t.Error("auditor without rating accepted")
	}
	if Usable(RoleAuditor, rating(3)) != nil || Usable(RoleCoder, nil) != nil {
		t.Error("usable signal refused")
	}
}

// The auditor's verdict gates on its Result and Verdict too, not only its
// Rating.
func TestAuditorResultGates(t *testing.T) {
	for _, sig := range []signal.Signal{
		{Result: signal.Insufficient, Rating: rating(9)},
		{Result: signal.Fail, Rating: rating(10)},
		{Result: signal.Success, Verdict: signal.VerdictNeedsFixes, Rating: rating(9)},
	} {
		s := State{Item: "t", Stage: StageAudit, Visits: [3]int{0, 1, 1}}
		got, d := Next(lim, s, Event{Kind: StepDone, Role: RoleAuditor, Signal: sig, Step: "t/audit/auditor#1"})
		if d.Kind != RunStep || d.Step.Role != RoleCoder || got.Attempts != 1 {
			t.Errorf("%+v: decision %v %s, attempts %d", sig, d.Kind, d.Step.ID, got.Attempts)
		}
	}
}

// The confidence escalation holds in the stage pipeline too.
func TestPipelineEscalates(t *testing.T) {
	elim := Limits{AuditPassRating: 8, MaxAttempts: 2, EscalateBelowConfidence: 5}
	coding := State{Item: "t", Stage: StageCode, Visits: [3]int{0, 1, 0}}
	ask := func(sig signal.Signal) (State, Decision) {
		return Next(elim, coding, Event{Kind: StepDone, Role: RoleCoder, Step: "t/code/coder#1", Signal: sig, Output: "c.md"})
	}
	for name, sig := range map[string]signal.Signal{
		"low confidence": {Result: signal.Success, Confidence: signal.Int(3)},
		"clarification":  {Result: signal.ClarificationNeeded, Context: "which file?"},
		"next human":     {Result: signal.Success, Next: "Human"},
	} {
		s, d := ask(sig)
		if d.Kind != AskHuman || d.Human.ID != "t/code/coder#1/human" || d.Human.Kind != HumanEscalation || s.Pending == nil {
			t.Errorf("%s: %v %+v", name, d.Kind, d.Human)
		}
	}
	t.Run("approved goes on with the note", func(t *testing.T) {
		s, _ := ask(signal.Signal{Result: signal.Success, Confidence: signal.Int(3)})
		s, d := Next(elim, s, Event{Kind: Answered, Human: &Answer{Approved: true, Note: "fine"}})
		if d.Kind != RunStep || d.Step.Role != RoleAuditor || d.Step.Note != "Human feedback: fine" || s.Pending != nil {
			t.Errorf("%v %+v", d.Kind, d.Step)
		}
	})
	t.Run("rejected hard-stops", func(t *testing.T) {
		s, _ := ask(signal.Signal{Result: signal.Success, Confidence: signal.Int(3)})
		_, d := Next(elim, s, Event{Kind: Answered, Human: &Answer{Note: "no"}})
		if d.Kind != HardStop || d.Reason != "t: coder rejected by a human: no" {
			t.Errorf("%v %q", d.Kind, d.Reason)
		}
	})
	t.Run("a clarification runs the role again with the answer", func(t *testing.T) {
		s, _ := ask(signal.Signal{Result: signal.ClarificationNeeded, Context: "which file?"})
		_, d := Next(elim, s, Event{Kind: Answered, Human: &Answer{Approved: true, Note: "main.go"}})
		if d.Kind != RunStep || d.Step.ID != "t/code/coder#2" || d.Step.Note != "Human clarification: main.go\n\nYour question was: which file?" {
			t.Errorf("%v %+v", d.Kind, d.Step)
		}
	})
}
