package engine

import (
	"github.com/cadre-dev/cadre/internal/eval"
	"github.com/cadre-dev/cadre/internal/reply"
	"github.com/cadre-dev/cadre/internal/signal"
	"github.com/cadre-dev/cadre/internal/workflow"
)

// roleJudge scores work against a rubric (docs/evaluation.md).
const roleJudge = reply.JudgeRole

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
func rubricLines(r eval.Rubric) string { return r.Lines() }

// judged reads a judge's reply (reply.Judge): its signal, judgement, the
// error that makes it unusable, and jerr for a judgement to re-ask.
func judged(output string, sig signal.Signal, perr error, rubric eval.Rubric, pass int) (signal.Signal, *eval.Judgement, error, error) {
	j := reply.Judge(output, sig, perr, rubric, pass)
	return j.Signal, j.Judgement, j.Err, j.Reask
}
