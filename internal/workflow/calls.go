package workflow

import (
	"context"
	"errors"
	"strconv"

	"github.com/cadre-dev/cadre/internal/signal"
)

// Exec performs the interpreter's effects.
type Exec interface {
	// Agent runs one agent step (or replays it from the journal).
	Agent(ctx context.Context, c AgentCall) (Outcome, error)
	// Action runs one deterministic step (or replays it).
	Action(ctx context.Context, c ActionCall) (Outcome, error)
	// Human returns a human's answer to an escalation, or an error
	// wrapping ErrPaused while there is none.
	Human(ctx context.Context, c HumanCall) (Answer, error)
	// Warn reports something the user should know; the run goes on.
	Warn(msg string)
}

// AgentCall is one agent step.
type AgentCall struct {
	ID        string // stable: <item>/<phase>[/<task>]/<role>#<n>
	Role      string
	Workflow  string
	Phase     string
	Task      *signal.PlanTask // the plan task, inside foreach
	Inputs    []string         // outputs of earlier steps this one should read
	Note      string           // hand-off from the previous agent or a human
	Signature string           // goal:loop:step, as the cycle log signs steps
	// Goal is the goal cycle's goal when the item has several (a task
	// file's ordered ## Goals); "" for one.
	Goal  string
	Round int   // loop round, 1-based; 0 outside loops
	Work  *Work // a reviewing role's: the work it reviews
	// PassRating is a reviewing role's: the Rating the work needs to pass
	// (the workflow's pass_rating, else limits.audit_pass_rating).
	PassRating int
	// Payload is added to the step's context file payload (cadre
	// watch's reactions give fix-surgeon its feedback so).
	Payload map[string]any
}

// Work is the last working (not reviewing) agent step in scope: what a
// reviewer rates and a gatekeeper checks.
type Work struct {
	Step, Role string
	Output     string // its output file
	Text       string // its output
}

// ActionCall is one deterministic step.
type ActionCall struct {
	ID    string
	Kind  string // baseline | checks | commit | answer
	Phase string
	Task  *signal.PlanTask
	Text  string // the answer, for "answer"; the message, for a "commit" (else the item's)
	// Owned, for a task's commit while other tasks work in the same tree:
	// files that other unfinished tasks declared, which this commit must
	// leave alone.
	Others []string
	Work   *Work // gatekeeper: the work it checks
	Round  int   // loop round, 1-based; 0 outside loops
}

// Outcome is what a step produced.
type Outcome struct {
	Step        string // the step's id
	Role        string // the agent's role (set by the interpreter)
	Failed      bool   // the step failed (crash, no signal, FAIL result, ...)
	Reason      string // why, when Failed
	Signal      signal.Signal
	Output      string   // path of the step's output file
	Text        string   // the output's text (plans and triage are read from it)
	Regressions []string // checks: commands that pass at the baseline and fail now
}

// HumanCall is an escalation to a human.
type HumanCall struct {
	ID     string // stable, like step ids
	Kind   string // HumanEscalation, HumanIncomplete or HumanGoal
	Step   string // the step that asked for it ("" for HumanIncomplete)
	Role   string
	Reason string
}

// Kinds of human escalation.
const (
	// HumanEscalation: an agent's signal asked for a human (low confidence,
	// CLARIFICATION_NEEDED, Next: Human). Approve goes on; reject ends the item.
	HumanEscalation = "escalation"
	// HumanIncomplete: a loop ran out of rounds with exhausted: incomplete
	// (five consecutive INSUFFICIENT by default). Approve runs another set of
	// rounds with the human's note; reject ends the item incomplete.
	HumanIncomplete = "incomplete"
	// HumanGoal: a routed loop found its goal met, and a human approves
	// it before it is committed (limits.approve_goal). Approve completes
	// the goal; reject with a note sends the note to the loop's first role
	// (the planner); without one it ends the item.
	HumanGoal = "goal"
)

// Answer is a human's decision.
type Answer struct {
	Approved bool
	Note     string
}

// ErrPaused is wrapped when the item waits for a human.
var ErrPaused = errors.New("waiting for a human")

// Item results.
const (
	ResultCompleted  = "completed"
	ResultFailed     = "failed"
	ResultIncomplete = "incomplete" // a loop ran out of rounds with exhausted: incomplete
	ResultAnswered   = "answered"   // quick: answered, no code change
)

// Result is how an item's workflow ended.
type Result struct {
	Status        string
	Reason        string
	PhaseFailures []string // non-critical phases that failed, "phase: reason"
}

// FlowLimits are the cadre.yaml limits the interpreter uses.
type FlowLimits struct {
	AuditPassRating         int
	EscalateBelowConfidence int
	MaxReviewRounds         int
	MaxInsufficientLoops    int
	MaxIterations           int
	MaxAttempts             int
	ParallelAgents          int
	// ApproveGoal has a goal a routed loop finds met wait for a human's
	// approval (limits.approve_goal).
	ApproveGoal bool
}

func (l FlowLimits) bound(s string) int {
	if n, err := strconv.Atoi(s); err == nil {
		return n
	}
	switch s {
	case "max_review_rounds":
		return l.MaxReviewRounds
	case "max_insufficient_loops":
		return l.MaxInsufficientLoops
	case "max_iterations":
		return l.MaxIterations
	case "max_attempts":
		return l.MaxAttempts
	}
	return 1
}
