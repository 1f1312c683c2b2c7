// Package reply holds the engine-independent rules for an agent's reply:
// which text is the step's output, whether its SIGNAL BLOCK is usable,
// the corrective prompt for the one re-ask an unusable reply gets (a reply
// still without one fails its step), and the text an output leaves for
// people once its block is removed (a pull request's, a review's).
// The engine and the public Go API (package agent) both follow them, so an
// agent behaves the same whether cadre drives it or a Go program does.
package reply

import (
	"errors"
	"fmt"
	"strings"

	"github.com/cadre-dev/cadre/internal/eval"
	"github.com/cadre-dev/cadre/internal/signal"
	"github.com/cadre-dev/cadre/internal/workflow"
)

// Output is the step's output given what the agent wrote to its output
// file (file, "" when it wrote none) and its final reply. The file wins when
// it has text, since agents that write files put their result there; when
// only the reply carries the SIGNAL BLOCK it is appended, so the block is
// not lost. merged reports that the reply was appended.
func Output(file, reply string) (out string, merged bool) {
	if strings.TrimSpace(file) == "" {
		return reply, false
	}
	if _, perr := signal.Parse(file); errors.Is(perr, signal.ErrNoBlock) {
		if _, rerr := signal.Parse(reply); rerr == nil {
			return strings.TrimRight(file, "\n") + "\n\n" + reply, true
		}
	}
	return file, false
}

// Check reads output's SIGNAL BLOCK and refuses one that role cannot act on
// (an auditor's block without a Rating). A block whose text appears in one
// of quoted — the text the agent was given that is not its own, the item's
// text and feedback — is not its verdict and does not count
// (signal.ParseOwn).
func Check(role, output string, quoted ...string) (signal.Signal, error) {
	sig, err := signal.ParseOwn(output, quoted...)
	if err == nil {
		err = workflow.Usable(role, sig.Rating)
	}
	return sig, err
}

// Reask is what is appended to the prompt to ask once more after err made
// the reply's SIGNAL BLOCK unusable.
func Reask(err error) string {
	return fmt.Sprintf("\n\nYour previous reply could not be used: %v. Reply again and end it with the SIGNAL BLOCK exactly as specified above.\n", err)
}

// ReaskJudgement is what is appended to a judge's prompt after its
// judgement could not be used (err from eval.ParseJudgement).
func ReaskJudgement(err error) string {
	return "\n\n" + eval.ReaskPrompt(err) + " Then end your reply with the SIGNAL BLOCK as specified above.\n"
}
