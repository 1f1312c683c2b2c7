// Package temporal runs cadre's workflows on Temporal: one Temporal
// workflow per item runs the same decision code as the embedded engine
// (internal/workflow: the interpreter of declarative workflows, or the
// stage pipeline's workflow.Next), and each of its effects (an agent
// step, an action, a stage of the stage pipeline, journaling a question
// to a human, the item's end) is an activity that
// calls the embedded engine's own effect code (engine.ItemSteps) against
// the shared journal. One implementation of the state machine, two
// executors: Temporal only decides where and when each step runs.
package temporal

import (
	"time"

	"github.com/cadre-dev/cadre/internal/executor"
	flow "github.com/cadre-dev/cadre/internal/workflow"
)

// Names registered with Temporal. They are part of recorded histories:
// renaming one breaks the replay of workflows already running.
const (
	WorkflowName = "cadre.Item"
	ActBegin     = "cadre.Begin"
	ActAgent     = "cadre.Agent"
	ActAction    = "cadre.Action"
	ActStage     = "cadre.Stage"
	ActAsk       = "cadre.Ask"
	ActAnswer    = "cadre.Answer"
	ActEnd       = "cadre.End"

	// SignalApprove answers an item waiting for a human (an Approval).
	SignalApprove = "approve"
	// SignalStop asks an item to start no new step (cadre stop): running
	// steps finish, then the item ends stopped, resumable.
	SignalStop = "stop"
	// SignalHalt tells an item that another item's end halted the run
	// (an executor.RunHalt: a hard stop, a tampered tree, the runner
	// workflow's budget): it starts no new step and ends stopped, the run
	// ending with the halt's status. The halting item's workflow sends it,
	// so it needs neither the process that started the run nor the run's
	// halt file.
	SignalHalt = "halt"
	// QueryPending returns the questions an item waits on ([]flow.HumanCall).
	QueryPending = "pending"
)

// Error types of activity failures the workflow must not retry.
const (
	ErrTypePaused   = "paused"   // a runner's quota: the item waits, resumable later
	ErrTypeTampered = "tampered" // the item's tree was tampered with: the run stops
	ErrTypePlanted  = "planted"  // an agent planted a link among its item's files: the item fails alone
	// ErrTypeStopping: the step was refused, cadre stop (its stop file)
	// or another item's hard stop (the run's halt file) having come; the
	// item ends stopped, as on the stop signal.
	ErrTypeStopping = "stopping"
	// ErrTypeBudget: a stage-pipeline stage found the run's budget
	// spent (executor.BudgetPause); the item pauses and so does the run.
	ErrTypeBudget = "budget"
	// ErrTypeSetup: the step failed on the setup of the repository or
	// the worker (an unknown runner, a program not installed, missing
	// credentials): no retry can cure it, the item fails at once saying
	// what to fix.
	ErrTypeSetup = "setup"
)

// WorkflowID is an item's workflow id: starting the item again attaches to
// its workflow instead of running it twice.
func WorkflowID(run, item string) string { return "cadre-" + run + "-" + item }

// ItemInput starts an item's workflow.
type ItemInput struct {
	Run  string `json:"run"`
	Item string `json:"item"`
	// StepTimeout bounds one agent step (defaults.timeout or --timeout).
	StepTimeout time.Duration `json:"step_timeout"`
	// Heartbeat is how long a step may go without a heartbeat before
	// Temporal gives it to another worker (0: DefaultHeartbeat).
	Heartbeat time.Duration `json:"heartbeat,omitempty"`
	// Grace is what a step may take beyond its agent's or commands'
	// timeouts: the journal, the prompt, the output (0: DefaultGrace).
	Grace time.Duration `json:"grace,omitempty"`
	// Home names the journal of truth, the starter's (HomeOf); "" in runs
	// recorded before workers could work elsewhere.
	Home string `json:"home,omitempty"`
	// Carry is the state of the workflow's previous run, when this one
	// continues it (continue.go).
	Carry *Carry `json:"carry,omitempty"`
}

// DefaultGrace is a step's time beyond its timeouts.
const DefaultGrace = 2 * time.Minute

// DefaultHeartbeat is how long a silent worker keeps a step.
const DefaultHeartbeat = 30 * time.Second

// ItemRef names an item of a run, and says where its journal stands.
type ItemRef struct {
	Run  string `json:"run"`
	Item string `json:"item"`
	Sync *Sync  `json:"sync,omitempty"`
}

// key is the item, whatever its journal's state.
func (r ItemRef) key() ItemRef { return ItemRef{Run: r.Run, Item: r.Item} }

// The results of the item's activities: the engine's, and what the step
// changed in the item's journal. Synced's fields sit beside the engine's
// in the recorded JSON, so histories recorded without them still decode.
type (
	BeginResult struct {
		executor.Begun
		Synced
	}
	StepResult struct {
		flow.Outcome
		Synced
	}
	StageResult struct {
		executor.Staged
		Synced
	}
	EndResult struct {
		executor.Ended
		Synced
	}
	AnswerResult struct{ Synced }
)

// AgentInput is one agent step, its role's visit-th for the item.
type AgentInput struct {
	ItemRef
	Call  flow.AgentCall `json:"call"`
	Visit int            `json:"visit"`
}

// ActionInput is one deterministic step.
type ActionInput struct {
	ItemRef
	Call flow.ActionCall `json:"call"`
}

// StageInput is a step of the stage pipeline: the decision workflow.Next
// made in state State.
type StageInput struct {
	ItemRef
	State    flow.State    `json:"state"`
	Decision flow.Decision `json:"decision"`
}

// HumanInput is a question to a human.
type HumanInput struct {
	ItemRef
	Call flow.HumanCall `json:"call"`
}

// Asked is the journal's answer to a question, when it has one.
type Asked struct {
	Answered bool        `json:"answered"`
	Answer   flow.Answer `json:"answer"`
	Synced
}

// AnswerInput journals a human's answer.
type AnswerInput struct {
	ItemRef
	Call   flow.HumanCall `json:"call"`
	Answer flow.Answer    `json:"answer"`
}

// EndInput journals how the item's workflow ended.
type EndInput struct {
	ItemRef
	Ending   executor.Ending `json:"ending"`
	Warnings []string        `json:"warnings,omitempty"`
}

// Approval is the approve signal's payload. Call, when set, names the
// question it answers; otherwise it answers the oldest one waiting.
type Approval struct {
	Approved bool   `json:"approved"`
	Note     string `json:"note,omitempty"`
	Call     string `json:"call,omitempty"`
}
