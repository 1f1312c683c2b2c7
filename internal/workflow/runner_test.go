package workflow

import (
	"testing"

	"github.com/google/go-cmp/cmp"
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
		{"planner done goes to code", State{Item: "t", Stage: StagePlan, Visits: [3]int{1, 0, 0}}, Event{Kind: StepDone, Role: RolePlanner, Result: "PLAN_CREATED", Output: "p.md"}, RunStep, "t/code/coder#1", StageCode, 0},
		{"coder done goes to audit", State{Item: "t", Stage: StageCode, Visits: [3]int{0, 1, 0}}, Event{Kind: StepDone, Role: RoleCoder, Result: "SUCCESS"}, RunStep, "t/audit/auditor#1", StageAudit, 0},
		{"audit 8 completes", State{Item: "t", Stage: StageAudit, Visits: [3]int{0, 1, 1}}, Event{Kind: StepDone, Role: RoleAuditor, Result: "PASS", Rating: rating(8)}, Complete, "", StageCompleted, 0},
		{"audit 10 completes", State{Item: "t", Stage: StageAudit}, Event{Kind: StepDone, Role: RoleAuditor, Rating: rating(10)}, Complete, "", StageCompleted, 0},
		{"audit 7 first attempt back to code", State{Item: "t", Stage: StageAudit, Visits: [3]int{0, 1, 1}}, Event{Kind: StepDone, Role: RoleAuditor, Result: "INSUFFICIENT", Rating: rating(7), Output: "r.md"}, RunStep, "t/code/coder#2", StageCode, 1},
		{"audit 0 second attempt hard-stops in audit", State{Item: "t", Stage: StageAudit, Attempts: 1}, Event{Kind: StepDone, Role: RoleAuditor, Rating: rating(0)}, HardStop, "", StageAudit, 2},
		{"audit without rating hard-stops", State{Item: "t", Stage: StageAudit}, Event{Kind: StepDone, Role: RoleAuditor}, HardStop, "", StageAudit, 0},
		{"agent crash hard-stops at once", State{Item: "t", Stage: StageCode}, Event{Kind: StepFailed, Role: RoleCoder, Reason: "exit 1"}, HardStop, "", StageCode, 0},
		{"coder FAIL hard-stops", State{Item: "t", Stage: StageCode}, Event{Kind: StepDone, Role: RoleCoder, Result: "FAIL"}, HardStop, "", StageCode, 0},
		{"planner FAIL hard-stops", State{Item: "t", Stage: StagePlan}, Event{Kind: StepDone, Role: RolePlanner, Result: "FAIL"}, HardStop, "", StagePlan, 0},
		{"auditor FAIL with low rating is an audit failure", State{Item: "t", Stage: StageAudit, Visits: [3]int{0, 1, 1}}, Event{Kind: StepDone, Role: RoleAuditor, Result: "FAIL", Rating: rating(3)}, RunStep, "t/code/coder#2", StageCode, 1},
		{"stop waits for the running step", State{Item: "t", Stage: StageCode}, Event{Kind: Stop}, Wait, "", StageCode, 0},
		{"stopping starts no new stage", State{Item: "t", Stage: StageCode, Stopping: true}, Event{Kind: StepDone, Role: RoleCoder}, Stopped, "", StageCode, 0},
		{"stopping before start", State{Item: "t", Stage: StagePlan, Stopping: true}, Event{Kind: Start}, Stopped, "", StagePlan, 0},
		{"stopping still completes a passing audit", State{Item: "t", Stage: StageAudit, Stopping: true}, Event{Kind: StepDone, Role: RoleAuditor, Rating: rating(9)}, Complete, "", StageCompleted, 0},
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
	ev := Event{Kind: StepDone, Role: st.Role, Result: "SUCCESS", Output: st.ID + ".md"}
	if st.Role == RoleAuditor {
		ev.Rating = rating(9)
	}
	return ev
}

// Seed 001's listed tests, at the state-machine level (the engine tests
// repeat them with real processes).
func TestSeed001Pipelines(t *testing.T) {
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
					return Event{Kind: StepDone, Role: st.Role, Rating: rating(5), Output: "review1.md"}
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
				return Event{Kind: StepDone, Role: st.Role, Rating: rating(3)}
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
			return Event{Kind: StepDone, Role: st.Role, Rating: rating(2), Output: "r"}
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
