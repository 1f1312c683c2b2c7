package eval

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cadre-dev/cadre/agent"
	ieval "github.com/cadre-dev/cadre/internal/eval"
)

// Judge scores a response against a rubric through a runner: the second,
// model-based stage of an evaluation.
type Judge struct {
	runner  agent.Runner
	model   string
	dir     string
	timeout time.Duration
}

// JudgeOption configures a Judge.
type JudgeOption func(*Judge)

// WithModel sets the judge's model (default: the runner's).
func WithModel(model string) JudgeOption { return func(j *Judge) { j.model = model } }

// WithDir sets the judge's working directory (default: the current one).
func WithDir(dir string) JudgeOption { return func(j *Judge) { j.dir = dir } }

// WithTimeout bounds each ask of the judge.
func WithTimeout(d time.Duration) JudgeOption { return func(j *Judge) { j.timeout = d } }

// NewJudge returns a judge reached through r.
func NewJudge(r agent.Runner, opts ...JudgeOption) *Judge {
	j := &Judge{runner: r}
	for _, o := range opts {
		o(j)
	}
	return j
}

// ErrNoJudgement is wrapped by Evaluate when the judge's answer could not
// be used even after the corrective re-ask.
var ErrNoJudgement = errors.New("unusable judgement")

// Evaluate asks the judge to score response, written for prompt, against
// every criterion of rubric, and reads its JSON answer
// {"scores":{criterion:0-10},"overall":0-10,"reasoning":"..."}. An answer
// that cannot be used (no JSON, a score out of range, a criterion missing)
// is asked once more with what was wrong; still unusable is an error
// wrapping ErrNoJudgement and the parse error.
func (j *Judge) Evaluate(ctx context.Context, response, prompt string, rubric Rubric) (Judgement, error) {
	req := agent.Request{Role: "judge", Item: "judgement", Prompt: ieval.RenderRubricPrompt(prompt, response, rubric),
		Dir: j.dir, Model: j.model, Timeout: j.timeout}
	var perr error
	for ask := 1; ask <= 2; ask++ {
		rep, err := j.runner.Run(ctx, req)
		if err != nil {
			return Judgement{}, fmt.Errorf("judge: %w", err)
		}
		jd, err := ieval.ParseJudgement(rep.Text, rubric)
		if err == nil {
			return jd, nil
		}
		perr = err
		req.Reask, req.Session = true, rep.Session
		req.Prompt += "\n\n" + ieval.ReaskPrompt(err) + "\n"
	}
	return Judgement{}, fmt.Errorf("judge %s: %w after a re-ask: %w", j.runner.Name(), ErrNoJudgement, perr)
}
