package temporal

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	"go.temporal.io/sdk/workflow"

	"github.com/cadre-dev/cadre/internal/executor"
	flow "github.com/cadre-dev/cadre/internal/workflow"
)

// An item's workflow history grows with every step: a remote worker's
// step puts its batch in the history twice (its result, the Apply's
// input), a cold step its snapshot twice (the Export's result, the step's
// input). Temporal refuses a history past 50 MB or 51,200 events (and
// warns past 10 MB or 10,240). So between two steps, once the history is
// large, the workflow continues as new: the same workflow id, a new run,
// whose input carries what the workflow holds in memory. The item's
// journal at its home stays the truth; what is carried only spares the
// new run from asking it again.

// HistoryLimits say when an item's workflow continues as new: when the
// server suggests it, or when its history reaches Events events or Bytes
// bytes, whichever comes first. Every worker of a task queue must use the
// same ones: a history replays only against the limits it was made with.
type HistoryLimits struct {
	Events int
	Bytes  int
}

// DefaultHistoryLimits are well under the limits at which Temporal warns
// (10,240 events, 10 MB), so that the steps under way when the limit is
// reached (a fan-out's branches, each up to two payloads of at most
// MaxPayload, twice) still end far from the hard limits. The server's own
// suggestion (by default at 4,096 events or 4 MB on servers that make it)
// usually comes first; these hold where the server makes none or was
// configured higher.
var DefaultHistoryLimits = HistoryLimits{Events: 8000, Bytes: 8 << 20}

// versionContinue marks the workflows that continue as new when their
// history is large: histories recorded before it grew past the limits in
// one run, and replay so.
const versionContinue = "continue-as-new"

// Carry is what an item's workflow hands to its next run when it
// continues as new.
type Carry struct {
	// Begun is the item's Begin: the next run does not begin it again
	// (Begin starts the item's cycle log anew).
	Begun executor.Begun `json:"begun"`

	// The interpreter's: the outcomes of the steps done so far and the
	// answers given, by call id, which the next run's interpreter is
	// given again as it decides its way back to where this one stopped
	// (it is pure: the same outcomes, the same decisions); the questions
	// journaled and still unanswered; each role's visits so far; the
	// warnings for the item's end.
	Done     map[string]flow.Outcome `json:"done,omitempty"`
	Answered map[string]flow.Answer  `json:"answered,omitempty"`
	Asked    []string                `json:"asked,omitempty"`
	Visits   map[string]int          `json:"visits,omitempty"`
	Warnings []string                `json:"warnings,omitempty"`

	// The stage pipeline's: its state and the decision to carry out
	// next, and whether the run halted.
	State    *flow.State    `json:"state,omitempty"`
	Decision *flow.Decision `json:"decision,omitempty"`
	Halted   bool           `json:"halted,omitempty"`

	// The item's journal on workers elsewhere (home.go).
	By      []string       `json:"by,omitempty"`
	At      map[string]int `json:"at,omitempty"`
	Sticky  string         `json:"sticky,omitempty"`
	Applied int64          `json:"applied,omitempty"`

	// Signals taken and not acted on yet: approvals no question waited
	// for, a stop, another item's halt.
	Early    []Approval        `json:"early,omitempty"`
	Stopping bool              `json:"stopping,omitempty"`
	Halt     *executor.RunHalt `json:"halt,omitempty"`

	// Runs is how many runs of the workflow came before.
	Runs int `json:"runs"`
}

// errContinue ends the item's flow in this run: it continues as new. It
// wraps flow.ErrPaused, so a fan-out lets its running siblings finish
// (their outcomes are carried) instead of cancelling them.
var errContinue = errors.Join(errors.New("continuing as new"), flow.ErrPaused)

// restore takes up the state a previous run carried.
func (x *exec) restore(c *Carry) {
	x.carried = c
	if c.Done != nil {
		x.done = c.Done
	}
	if c.Answered != nil {
		x.answered = c.Answered
	}
	for _, id := range c.Asked {
		x.asked[id] = true
	}
	if c.Visits != nil {
		x.visits = c.Visits
	}
	x.warnings = c.Warnings
	x.by, x.at, x.sticky, x.applied = c.By, c.At, c.Sticky, c.Applied
	x.early, x.stopping, x.halt = c.Early, c.Stopping, c.Halt
}

// continues says whether the item's flow stops here, between steps, to
// continue as new: the history is large, this run did a step of its own
// (a run that cannot make its history smaller does not continue for
// ever), nothing halts the item, and what it would carry fits a payload.
func (x *exec) continues(ctx workflow.Context) bool {
	if x.continuing {
		return true
	}
	if x.noContinue || x.live == 0 || x.stopping || x.paused != "" || x.tampered != "" || x.planted != "" {
		return false
	}
	info := workflow.GetInfo(ctx)
	lim := x.limits
	if !info.GetContinueAsNewSuggested() && info.GetCurrentHistoryLength() < lim.Events && info.GetCurrentHistorySize() < lim.Bytes {
		return false
	}
	if workflow.GetVersion(ctx, versionContinue, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		x.noContinue = true
		return false
	}
	in := x.in
	in.Carry = x.carry(nil, nil)
	if n := payloadSize(in); n > MaxPayload {
		// The steps' outcomes are too large to carry: the history goes
		// on growing in this run, which its limit may still hold.
		x.noContinue = true
		x.Warn(fmt.Sprintf("item %s: its workflow history is large (%d events, %d bytes) but its state (%s) is over what one Temporal payload carries (%s): it does not continue as new",
			x.ref.Item, info.GetCurrentHistoryLength(), info.GetCurrentHistorySize(), sizeOf(n), sizeOf(MaxPayload)))
		return false
	}
	x.continuing = true
	return true
}

// carry is the state to hand to the next run; s and d are the runner
// workflow's.
func (x *exec) carry(s *flow.State, d *flow.Decision) *Carry {
	c := &Carry{Done: x.done, Answered: x.answered, Visits: x.visits, Warnings: x.warnings,
		State: s, Decision: d, Halted: x.halted, Sticky: x.sticky, Applied: x.applied,
		Early: x.early, Stopping: x.stopping, Halt: x.halt, Runs: 1}
	if x.carried != nil {
		c.Runs = x.carried.Runs + 1
	}
	if x.begun != nil {
		c.Begun = *x.begun
	}
	for _, id := range slices.Sorted(maps.Keys(x.asked)) {
		if _, ok := x.answered[id]; !ok {
			c.Asked = append(c.Asked, id)
		}
	}
	// Only the changes since the oldest replica's update matter to
	// fresh(): the rest is dropped, the marks moved with it.
	base := len(x.by)
	for _, at := range x.at {
		base = min(base, at)
	}
	c.By = x.by[base:]
	if len(x.at) > 0 {
		c.At = map[string]int{}
		for w, at := range x.at {
			c.At[w] = at - base
		}
	}
	return c
}

// continueAsNew ends this run, the next one taking up the carried state.
// The signals received since the last of them were taken go with it.
func (x *exec) continueAsNew(ctx workflow.Context, s *flow.State, d *flow.Decision) (executor.Ended, error) {
	for {
		var a Approval
		if !workflow.GetSignalChannel(ctx, SignalApprove).ReceiveAsync(&a) {
			break
		}
		x.early = append(x.early, a)
	}
	if workflow.GetSignalChannel(ctx, SignalStop).ReceiveAsync(nil) {
		x.stopping = true
	}
	var h executor.RunHalt
	if workflow.GetSignalChannel(ctx, SignalHalt).ReceiveAsync(&h) {
		x.halt, x.stopping = &h, true
	}
	in := x.in
	in.Carry = x.carry(s, d)
	return executor.Ended{}, workflow.NewContinueAsNewError(ctx, WorkflowName, in)
}

// payloadSize is v's size in a Temporal payload: the SDK's default data
// converter encodes it as JSON.
func payloadSize(v any) int {
	data, err := json.Marshal(v)
	if err != nil {
		return 0
	}
	return len(data)
}
