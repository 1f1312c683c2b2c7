package reply

import (
	"errors"
	"fmt"
	"math"

	"github.com/cadre-dev/cadre/internal/eval"
	"github.com/cadre-dev/cadre/internal/signal"
)

// JudgeRole scores work against a rubric (docs/evaluation.md).
const JudgeRole = "judge"

// Judged is a judge's reply as read: its signal, its judgement when it
// gave a usable one, Err when the reply cannot be used, and Reask when
// its judgement is there but unusable (a score out of range, a criterion
// missing), for the one re-ask (ReaskJudgement).
type Judged struct {
	Signal    signal.Signal
	Judgement *eval.Judgement
	Err       error
	Reask     error
}

// Judge reads a judge's reply: output, its SIGNAL BLOCK sig and the
// block's error perr (as Check gives them). Its JSON judgement, when it
// gave one, is its Rating, and stands in for a missing SIGNAL BLOCK: PASS
// when the overall score reaches pass, the workflow's pass rating. A
// reply with only a usable SIGNAL BLOCK is taken as it is.
func Judge(output string, sig signal.Signal, perr error, rubric eval.Rubric, pass int) Judged {
	j, jerr := eval.ParseJudgement(output, rubric)
	switch {
	case jerr == nil:
		overall := int(math.Round(j.Overall))
		if perr != nil {
			sig = signal.Signal{Agent: JudgeRole, Result: signal.Insufficient, LoopSummary: fmt.Sprintf("overall %d/10", overall),
				Context: j.Reasoning}
			if overall >= pass {
				sig.Result = signal.Pass
			}
		}
		sig.Rating = &overall
		return Judged{Signal: sig, Judgement: &j}
	case errors.Is(jerr, eval.ErrNoJudgement):
		return Judged{Signal: sig, Err: perr}
	}
	return Judged{Signal: sig, Err: jerr, Reask: jerr}
}
