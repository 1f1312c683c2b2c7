// Package workflow holds cadre's workflow definitions as pure state machines:
// given the state of one item and what just happened, Next says what to do.
// Nothing here does I/O, so every rule is table-tested.
package workflow

import (
	"fmt"

	"github.com/cadre-dev/cadre/internal/signal"
)

// Task stages: a task file's frontmatter stage.
const (
	StageBacklog   = "backlog"
	StagePlan      = "plan"
	StageCode      = "code"
	StageAudit     = "audit"
	StageCompleted = "completed"
	StageFailed    = "failed"
)

// Roles of the stage pipeline.
const (
	RolePlanner = "planner"
	RoleCoder   = "coder"
	RoleAuditor = "auditor"
)

// Limits are the knobs of the stage pipeline (cadre.yaml limits).
type Limits struct {
	AuditPassRating         int // rating at or above which an audit passes
	MaxAttempts             int // audit failures that hard-stop the run
	EscalateBelowConfidence int // a Confidence below this asks a human
}

// State is one item's position in the stage pipeline.
type State struct {
	Item     string
	Stage    string
	Attempts int
	Stopping bool     // stop() was called: start no new stage
	Review   string   // output path of the last rejecting audit, handed to the coder
	Inputs   []string // outputs of earlier steps, in order
	Visits   [3]int   // invocations so far of planner, coder, auditor
	// Pending is a finished step's event held while a human is asked about
	// it; Note is the human's feedback for the next step.
	Pending *Event
	Note    string
}

// EventKind says what happened to an item.
type EventKind int

// Event kinds.
const (
	Start      EventKind = iota // the item is picked up
	StepDone                    // the step's agent exited 0 with a usable signal
	StepFailed                  // the agent crashed, exited non-zero or never gave a usable signal
	Stop                        // stop() was called; the running step may finish
	Answered                    // a human answered an AskHuman decision
)

// Event is the input of Next.
type Event struct {
	Kind   EventKind
	Role   string
	Step   string        // the step's id
	Signal signal.Signal // the step's SIGNAL BLOCK
	Output string        // output file of the step
	Reason string        // why a step failed
	Human  *Answer       // Answered: the human's answer
}

// DecisionKind says what the engine must do next.
type DecisionKind int

// Decision kinds.
const (
	Wait     DecisionKind = iota // nothing new; a running step continues
	RunStep                      // run Decision.Step
	Complete                     // the task reached completed: commit it
	HardStop                     // stop the whole run, leave the tree as it is
	Stopped                      // stop() honoured before a new stage
	Skip                         // nothing to do for this item
	AskHuman                     // pause for a human's answer to Decision.Human
)

// Step is an agent step to run.
type Step struct {
	ID      string // stable: <item>/<stage>/<role>#<n>
	Note    string // a human's feedback or answer for this step
	Role    string
	Stage   string
	Mode    string // the task frontmatter's mode while the step runs
	Attempt int    // n of the step id
	Inputs  []string
	Review  string // the rejecting review the coder must address, if any
}

// Decision is the output of Next.
type Decision struct {
	Kind   DecisionKind
	Step   Step
	Human  HumanCall // AskHuman: what to ask
	Reason string
}

func (k DecisionKind) String() string {
	return [...]string{"wait", "run", "complete", "hard-stop", "stopped", "skip", "ask-human"}[k]
}

// roleFor maps a working stage to the role that works it, and its mode.
var roleFor = map[string]string{StagePlan: RolePlanner, StageCode: RoleCoder, StageAudit: RoleAuditor}

// StageRole names the role that works a stage ("Done" for the others).
func StageRole(stage string) string {
	if r, ok := roleFor[stage]; ok {
		return r
	}
	return "Done"
}

func visitIndex(role string) int {
	switch role {
	case RolePlanner:
		return 0
	case RoleCoder:
		return 1
	default:
		return 2
	}
}

// Remaining lists the stages a task still goes through from stage, assuming
// every audit passes (plan → code → audit, code → audit, audit).
func Remaining(stage string) []string {
	switch stage {
	case StagePlan:
		return []string{StagePlan, StageCode, StageAudit}
	case StageCode:
		return []string{StageCode, StageAudit}
	case StageAudit:
		return []string{StageAudit}
	}
	return nil
}

// Initial is the state of an item as read from its task file.
func Initial(item, stage string, attempts int) State {
	return State{Item: item, Stage: stage, Attempts: attempts}
}

// Next applies one event to the state of the stage pipeline. It never
// mutates s; the returned State is the new one.
func Next(lim Limits, s State, ev Event) (State, Decision) {
	s.Inputs = append([]string(nil), s.Inputs...)
	switch ev.Kind {
	case Start:
		switch s.Stage {
		case StagePlan, StageCode, StageAudit:
			if s.Attempts >= lim.MaxAttempts && s.Stage == StageAudit {
				return s, Decision{Kind: HardStop, Reason: fmt.Sprintf("%s: %d of %d audit attempts used; cadre retry gives it more", s.Item, s.Attempts, lim.MaxAttempts)}
			}
			return enter(s, s.Stage)
		case StageCompleted:
			return s, Decision{Kind: Skip, Reason: "already completed"}
		case StageBacklog:
			return s, Decision{Kind: Skip, Reason: "in backlog: move it to plan or code to run it"}
		case StageFailed:
			return s, Decision{Kind: Skip, Reason: "failed: set its stage to plan, code or audit to retry"}
		}
		return s, Decision{Kind: Skip, Reason: fmt.Sprintf("unknown stage %q", s.Stage)}
	case Stop:
		s.Stopping = true
		return s, Decision{Kind: Wait}
	case StepFailed:
		return s, Decision{Kind: HardStop, Reason: ev.Reason}
	case StepDone:
		if why := Escalation(ev.Role, ev.Signal, lim.EscalateBelowConfidence); why != "" {
			held := ev
			s.Pending = &held
			return s, Decision{Kind: AskHuman, Reason: why,
				Human: HumanCall{ID: ev.Step + "/human", Kind: HumanEscalation, Step: ev.Step, Role: ev.Role, Reason: why}}
		}
		return done(lim, s, ev)
	case Answered:
		return answered(lim, s, ev)
	}
	return s, Decision{Kind: HardStop, Reason: fmt.Sprintf("unknown event %d", ev.Kind)}
}

// enter moves s into stage and asks for that stage's step, unless stop() was
// called, in which case no new stage starts.
func enter(s State, stage string) (State, Decision) {
	if s.Stopping {
		return s, Decision{Kind: Stopped, Reason: "stopped before stage " + stage}
	}
	role := roleFor[stage]
	s.Stage = stage
	s.Visits[visitIndex(role)]++
	n := s.Visits[visitIndex(role)]
	st := Step{
		ID:      fmt.Sprintf("%s/%s/%s#%d", s.Item, stage, role, n),
		Role:    role,
		Stage:   stage,
		Mode:    stage,
		Attempt: n,
		Inputs:  append([]string(nil), s.Inputs...),
	}
	if role == RoleCoder {
		st.Review = s.Review
	}
	st.Note, s.Note = s.Note, ""
	return s, Decision{Kind: RunStep, Step: st}
}

// answered goes on from a step a human was asked about: a rejection stops,
// an answer to CLARIFICATION_NEEDED runs the role again with it, any other
// approval continues as the step's own signal says, with the human's note
// for the next step.
func answered(lim Limits, s State, ev Event) (State, Decision) {
	p := s.Pending
	if p == nil || ev.Human == nil {
		return s, Decision{Kind: HardStop, Reason: "a human's answer arrived with no question pending"}
	}
	s.Pending = nil
	if !ev.Human.Approved {
		return s, Decision{Kind: HardStop, Reason: fmt.Sprintf("%s: %s rejected by a human: %s", s.Item, p.Role, ev.Human.Note)}
	}
	if p.Signal.Result == signal.ClarificationNeeded {
		if p.Output != "" {
			s.Inputs = append(s.Inputs, p.Output)
		}
		s.Note = "Human clarification: " + ev.Human.Note + "\n\nYour question was: " + p.Signal.Context
		return enter(s, s.Stage)
	}
	if ev.Human.Note != "" {
		s.Note = "Human feedback: " + ev.Human.Note
	}
	return done(lim, s, *p)
}

func done(lim Limits, s State, ev Event) (State, Decision) {
	// An auditor's FAIL is a rejecting audit, decided by its rating below;
	// any other role's FAIL means it could not do its work.
	if ev.Signal.Result == signal.Fail && ev.Role != RoleAuditor {
		return s, Decision{Kind: HardStop, Reason: fmt.Sprintf("%s reported FAIL: %s", ev.Role, ev.Signal.LoopSummary)}
	}
	if ev.Output != "" {
		s.Inputs = append(s.Inputs, ev.Output)
	}
	switch ev.Role {
	case RolePlanner:
		return enter(s, StageCode)
	case RoleCoder:
		return enter(s, StageAudit)
	case RoleAuditor:
		if ev.Signal.Rating == nil {
			return s, Decision{Kind: HardStop, Reason: "auditor gave no Rating"}
		}
		why := Rejection(RoleAuditor, ev.Signal, lim.AuditPassRating)
		if why == "" {
			s.Stage = StageCompleted
			s.Review = ""
			return s, Decision{Kind: Complete}
		}
		s.Attempts++
		s.Review = ev.Output
		if s.Attempts >= lim.MaxAttempts {
			if *ev.Signal.Rating < lim.AuditPassRating {
				why = fmt.Sprintf("audit rated %d/10 (pass is %d)", *ev.Signal.Rating, lim.AuditPassRating)
			}
			return s, Decision{Kind: HardStop, Reason: fmt.Sprintf("%s: %s; %d of %d attempts used", s.Item, why, s.Attempts, lim.MaxAttempts)}
		}
		return enter(s, StageCode)
	}
	return s, Decision{Kind: HardStop, Reason: fmt.Sprintf("role %q is not part of the runner workflow", ev.Role)}
}

// Usable says whether a role's signal carries what the workflow needs, so the
// engine can re-ask once instead of failing on an incomplete reply.
func Usable(role string, rating *int) error {
	if role == RoleAuditor && rating == nil {
		return fmt.Errorf("the auditor's SIGNAL BLOCK has no Rating")
	}
	return nil
}
