package engine

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/cadre-dev/cadre/internal/eval"
	"github.com/cadre-dev/cadre/internal/signal"
	"github.com/cadre-dev/cadre/internal/workflow"
)

// roleJudge scores work against a rubric (docs/evaluation.md).
const roleJudge = "judge"

// rubric is the judge's criteria for the work it reviews: cadre.yaml's
// roles.<role>.rubric, else the built-in rubric of the work's role.
func (e *Engine) rubric(w *workflow.Work) eval.Rubric {
	role := ""
	if w != nil {
		role = w.Role
	}
	if r := e.d.Config.Roles[role].Rubric; len(r) > 0 {
		return eval.Rubric(r)
	}
	return eval.DefaultRubric(role)
}

// rubricLines renders a rubric for the judge's prompt.
func rubricLines(r eval.Rubric) string {
	var b strings.Builder
	for _, name := range r.Criteria() {
		fmt.Fprintf(&b, "- %s: %s\n", name, r[name])
	}
	return b.String()
}

// judged reads a judge's reply: its JSON judgement, when it gave one, is
// its Rating (and stands in for a missing SIGNAL BLOCK: PASS when the
// overall score reaches pass, the workflow's pass rating); a reply with
// only a usable SIGNAL BLOCK is taken as it is. A judgement that is there but unusable (a score
// out of range, a criterion missing) is returned as jerr, for one re-ask.
func judged(output string, sig signal.Signal, perr error, rubric eval.Rubric, pass int) (signal.Signal, *eval.Judgement, error, error) {
	j, jerr := eval.ParseJudgement(output, rubric)
	switch {
	case jerr == nil:
		overall := int(math.Round(j.Overall))
		if perr != nil {
			sig = signal.Signal{Agent: roleJudge, Result: signal.Insufficient, LoopSummary: fmt.Sprintf("overall %d/10", overall),
				Context: j.Reasoning}
			if overall >= pass {
				sig.Result = signal.Pass
			}
		}
		sig.Rating = &overall
		return sig, &j, nil, nil
	case errors.Is(jerr, eval.ErrNoJudgement):
		return sig, nil, perr, nil
	}
	return sig, nil, jerr, jerr
}
