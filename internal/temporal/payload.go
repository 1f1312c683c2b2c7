package temporal

import (
	"fmt"

	"go.temporal.io/sdk/temporal"
)

// MaxPayload is the largest activity input or result, or workflow input,
// an item's workflow sends through Temporal. The server refuses a payload
// over 2 MB by default (limit.blobSize.error), and then not with an error
// naming the item: an activity result over it is refused as the worker
// reports it, so the step times out and is retried for ever, and a
// workflow command with an input over it terminates the workflow. A
// margin stays for the payload's metadata and for the several payloads
// one workflow task may send at once (a request is at most 4 MB).
//
// What travels past it is not cut: later steps need a step's output whole
// (the interpreter parses plans and triage from it, a reviewer is given
// the work it rates), as they need a snapshot's journal rows. Instead the
// item fails at once, saying which step's payload is how large and what
// to do; the step's work stays in the worktree of the worker that did it.
// Step logs, which no later step reads, are cut in batches (the engine
// keeps their last 256 KB) and left out of snapshots.
const MaxPayload = 1536 << 10

// ErrTypeTooLarge: a step's input or result is over MaxPayload; the item
// fails at once.
const ErrTypeTooLarge = "too large"

// sizeOf is n bytes for people.
func sizeOf(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// tooLarge is the one-line failure of an item whose step's payload (what,
// of n bytes) is over MaxPayload.
func tooLarge(item, step, what string, n int) string {
	return fmt.Sprintf("item %s: step %s: its %s is %s, over the %s a Temporal payload may carry here: make the step's output smaller (ask the agent for a shorter answer, or write large results to files in the worktree), or run the item without --temporal",
		item, step, what, sizeOf(n), sizeOf(MaxPayload))
}

// stepOf names the step an activity input is for, in a failure.
func stepOf(in any) string {
	switch in := in.(type) {
	case AgentInput:
		return in.Call.ID
	case ActionInput:
		return in.Call.ID
	case StageInput:
		return in.Decision.Step.ID
	case HumanInput:
		return in.Call.ID
	case AnswerInput:
		return in.Call.ID
	case EndInput:
		return "end"
	}
	return "begin"
}

// errTooLarge fails the item: a payload of it is over MaxPayload.
func errTooLarge(item, step, what string, n int) error {
	return temporal.NewNonRetryableApplicationError(tooLarge(item, step, what, n), ErrTypeTooLarge, nil, n)
}

// fits refuses an activity's result over MaxPayload: the server would
// refuse it without a word the workflow could pass on.
func fits(ref ItemRef, step string, res any, err error) error {
	if err != nil {
		return err
	}
	if n := payloadSize(res); n > MaxPayload {
		return errTooLarge(ref.Item, step, "result", n)
	}
	return nil
}
