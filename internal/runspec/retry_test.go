package runspec

import (
	"slices"
	"testing"
	"time"

	"github.com/cadre-dev/cadre/internal/store"
)

// A retry asks again the working agents whose FAIL ended the item, not a
// FAIL the workflow went on from, nor a reviewer's verdict, nor a step
// that succeeded.
func TestEndingFailures(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	step := func(id, role, result string, start, end int) store.Step {
		s := store.Step{ID: id, Role: role, Kind: "agent", Status: store.StepCompleted, StartedAt: at(start)}
		ended := at(end)
		s.EndedAt = &ended
		if result != "" {
			s.Signal = []byte(`{"Result":"` + result + `"}`)
		}
		return s
	}
	retry := func(id string, s int) store.Step {
		r := step(id, "", "", s, s)
		r.Kind = kindRetry
		return r
	}
	tests := []struct {
		name  string
		steps []store.Step
		want  []string
	}{
		{"the last step's FAIL", []store.Step{
			step("a/plan/planner#1", "planner", "SUCCESS", 0, 1),
			step("a/code/coder#1", "coder", "FAIL", 2, 3),
		}, []string{"a/code/coder#1"}},
		{"a FAIL the workflow went on from", []store.Step{
			step("a/loop/actor#1", "actor", "FAIL", 0, 1),
			step("a/loop/diagnoser#1", "diagnoser", "SUCCESS", 2, 3),
			step("a/loop/critic#1", "critic", "FAIL", 4, 5),
		}, nil},
		{"a reviewer's FAIL is a verdict", []store.Step{
			step("a/code/coder#1", "coder", "SUCCESS", 0, 1),
			step("a/audit/auditor#1", "auditor", "FAIL", 2, 3),
		}, nil},
		{"a step beside it that ended later", []store.Step{
			step("a/work/scout#1", "codebase-scout", "FAIL", 0, 1),
			step("a/work/researcher#1", "researcher", "SUCCESS", 0, 2),
		}, []string{"a/work/scout#1"}},
		{"asked again and failed again: the first attempt's id once", []store.Step{
			step("a/code/coder#1", "coder", "FAIL", 0, 1),
			retry("a/retry#1", 2),
			step("a/code/coder#1/retry1", "coder", "FAIL", 3, 4),
		}, []string{"a/code/coder#1"}},
		{"asked again, succeeded, and the item failed later", []store.Step{
			step("a/code/coder#1", "coder", "FAIL", 0, 1),
			retry("a/retry#1", 2),
			step("a/code/coder#1/retry1", "coder", "SUCCESS", 3, 4),
			step("a/work/tester#1", "tester", "FAIL", 5, 6),
		}, nil},
		{"what cadre does around the workflow is no step of it", []store.Step{
			{ID: "a/worktree", Kind: "worktree", Status: store.StepCompleted, StartedAt: at(0)},
			step("a/work/executor#1", "executor", "FAIL", 1, 2),
			{ID: "a/publish/comment-failed", Kind: "comment", Status: store.StepCompleted, StartedAt: at(3)},
		}, []string{"a/work/executor#1"}},
		{"an action the workflow went on to", []store.Step{
			step("a/work/executor#1", "executor", "FAIL", 0, 1),
			{ID: "a/work/commit#1", Kind: "commit", Status: store.StepCompleted, StartedAt: at(2)},
		}, nil},
		{"a step that failed runs again anyway", []store.Step{
			{ID: "a/code/coder#1", Role: "coder", Kind: "agent", Status: store.StepFailed, StartedAt: at(0)},
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := endingFailures(tt.steps); !slices.Equal(got, tt.want) {
				t.Errorf("endingFailures = %q, want %q", got, tt.want)
			}
		})
	}
}

// Each retry's attempt of a step has an id of its own, the latest one
// the step's id from then on.
func TestGrantsStep(t *testing.T) {
	g := Grants{N: 2, Again: map[string]string{"a/code/coder#1": AgainID("a/code/coder#1", 2)}}
	if got := g.Step("a/code/coder#1"); got != "a/code/coder#1/retry2" {
		t.Errorf("Step = %q", got)
	}
	if got := g.Step("a/plan/planner#1"); got != "a/plan/planner#1" {
		t.Errorf("Step of a step no retry asks again = %q", got)
	}
}
