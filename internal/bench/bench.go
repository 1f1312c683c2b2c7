package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/cadre-dev/cadre/agent"
	"github.com/cadre-dev/cadre/eval"
	"github.com/cadre-dev/cadre/internal/store"
)

// Contestant is a runner as the benchmark reaches it.
type Contestant struct {
	Runner  agent.Runner
	Model   string        // "" for the runner's default
	Timeout time.Duration // per ask; 0 for none
}

// Bench runs benchmark jobs and records their evaluations.
type Bench struct {
	Store *store.Store
	// Runners are the contestants by name; every runner a job names must
	// be here.
	Runners map[string]Contestant
	// Judge scores the responses that pass the gatekeeper.
	Judge Contestant
	// RoleDir holds role overrides (a repository's .cadre/roles); "" for
	// the built-in roles only.
	RoleDir string
	// CommandTimeout bounds each case command; 0 for none.
	CommandTimeout time.Duration
	// Progress, when set, is called after each job, from the goroutine
	// that called Execute.
	Progress func(Progress)
	// Crash, when set, is called at the named points "bench-recorded" (a
	// job's evaluation is in the score store, its step not yet completed)
	// and "bench-finished", so tests can kill cadre there and resume.
	Crash func(point string)
}

// Progress reports one finished (or failed) job.
type Progress struct {
	Done, Total int
	Job         Job
	Outcome     Outcome
	Err         error // the job could not be evaluated (the judge failed); it stays unfinished
}

// Outcome is one job's evaluation.
type Outcome struct {
	Passed    bool          // the gatekeeper's verdict
	Score     float64       // the judge's overall/10; 0 when the gatekeeper failed
	Model     string        // the model that answered, when known
	Usage     agent.Usage   // the agent's
	AgentTime time.Duration // the agent's asks
	JudgeTime time.Duration // the judge's asks
	Total     time.Duration // the whole job, cadre's own work included
	Detail    Detail
}

// Detail is the JSON detail of a bench evaluation and the result of its
// journal step.
type Detail struct {
	Case    string       `json:"case"`
	Rep     int          `json:"rep"`
	Checks  []eval.Check `json:"checks"`
	Skipped []string     `json:"skipped_commands,omitempty"` // required, but the case defines no such command
	Error   string       `json:"error,omitempty"`            // the agent failed
	Judge   *JudgeDetail `json:"judge,omitempty"`
}

// JudgeDetail is the judge's part of a Detail.
type JudgeDetail struct {
	Scores    map[string]float64 `json:"scores"`
	Overall   float64            `json:"overall"`
	Reasoning string             `json:"reasoning"`
}

// Summary says how an Execute went.
type Summary struct {
	Total, Skipped, Ran int // Skipped: done before this Execute (a resume)
	Failed              int // jobs that could not be evaluated
}

// Execute runs every job of jobs the journal of run does not record as
// completed, one after another. Cancelling ctx stops after the running
// job's agent ends (its step stays unfinished, to run again on resume)
// and returns ctx's error.
func (b *Bench) Execute(ctx context.Context, runID string, jobs []Job) (Summary, error) {
	todo, done, err := pending(ctx, b.Store, runID, jobs)
	if err != nil {
		return Summary{}, err
	}
	sum := Summary{Total: len(jobs), Skipped: done}
	parent, err := os.MkdirTemp("", "cadre-bench-")
	if err != nil {
		return sum, fmt.Errorf("bench directory: %w", err)
	}
	defer os.RemoveAll(parent)
	tpl := newTemplates(parent)
	interrupted := func() (Summary, error) {
		if err := b.Store.SetRunStatus(context.WithoutCancel(ctx), runID, store.RunInterrupted, os.Getpid()); err != nil {
			return sum, errors.Join(ctx.Err(), err)
		}
		return sum, ctx.Err()
	}
	for _, j := range todo {
		if ctx.Err() != nil {
			return interrupted()
		}
		out, err := b.run(ctx, runID, tpl, parent, j)
		if ctx.Err() != nil {
			return interrupted()
		}
		sum.Ran++
		if err == nil {
			done++
		} else {
			sum.Failed++
		}
		if b.Progress != nil {
			b.Progress(Progress{Done: done, Total: len(jobs), Job: j, Outcome: out, Err: err})
		}
	}
	status := store.RunCompleted
	if sum.Failed > 0 {
		status = store.RunFailed // cadre bench resumes it all the same
	}
	if err := b.Store.SetRunStatus(context.WithoutCancel(ctx), runID, status, os.Getpid()); err != nil {
		return sum, err
	}
	return sum, nil
}

// run does one job: journal it, make its work dir, run the agent, check
// the work, judge it if it passed, record the evaluation.
func (b *Bench) run(ctx context.Context, runID string, tpl *templates, parent string, j Job) (Outcome, error) {
	start := time.Now()
	c, ok := b.Runners[j.Runner]
	if !ok {
		return Outcome{}, fmt.Errorf("runner %q: not among the bench's runners", j.Runner)
	}
	step := store.Step{RunID: runID, ItemID: j.Case.ID(), ID: j.StepID(), Role: j.Case.Role, Runner: j.Runner, Model: c.Model, Kind: "bench"}
	if err := b.Store.StartStep(ctx, step); err != nil {
		return Outcome{}, err
	}
	out, err := b.evaluate(ctx, tpl, parent, j, c)
	out.Total = time.Since(start)
	if ctx.Err() != nil {
		return out, ctx.Err() // unfinished: the next cadre bench runs it again
	}
	step.Model = out.Model
	step.Usage = store.Usage{InputTokens: out.Usage.InputTokens, OutputTokens: out.Usage.OutputTokens,
		CacheReadTokens: out.Usage.CacheReadTokens, CacheWriteTokens: out.Usage.CacheWriteTokens,
		CostUSD: out.Usage.CostUSD, CostEstimated: out.Usage.Estimated}
	bg := context.WithoutCancel(ctx) // what was done is recorded, interrupt or not
	if err != nil {
		step.Status, step.Error = store.StepFailed, err.Error()
		if ferr := b.Store.FinishStep(bg, step); ferr != nil {
			return out, errors.Join(err, ferr)
		}
		return out, err
	}
	detail, err := json.Marshal(out.Detail)
	if err != nil {
		return out, fmt.Errorf("bench detail of %s: %w", j.StepID(), err)
	}
	passed, score := out.Passed, out.Score
	ev := store.Evaluation{Source: store.SourceBench, Kind: store.KindBench, RunID: runID, ItemID: j.Case.ID(),
		StepID: j.StepID(), Role: j.Case.Role, Runner: j.Runner, Model: out.Model, Passed: &passed, Score: &score,
		Detail: detail, Usage: &store.EvalUsage{CostUSD: out.Usage.CostUSD, LatencyMS: out.AgentTime.Milliseconds(),
			InputTokens: out.Usage.InputTokens, OutputTokens: out.Usage.OutputTokens}}
	// The evaluation first: should cadre die before the step is marked
	// done, the step runs again and its second evaluation, having the same
	// key, is ignored, so no job is ever counted twice.
	if err := b.Store.RecordEvaluations(bg, ev); err != nil {
		return out, err
	}
	b.crash("bench-recorded")
	step.Status, step.Result = store.StepCompleted, detail
	if err := b.Store.FinishStep(bg, step); err != nil {
		return out, err
	}
	b.crash("bench-finished")
	return out, nil
}

func (b *Bench) crash(point string) {
	if b.Crash != nil {
		b.Crash(point)
	}
}

// evaluate runs the agent on the case in a fresh work dir and evaluates
// its work. An agent that fails (exits non-zero, gives no usable SIGNAL
// BLOCK) fails the case; a judge that fails is an error, since the case
// then has no score through no fault of the runner.
func (b *Bench) evaluate(ctx context.Context, tpl *templates, parent string, j Job, c Contestant) (Outcome, error) {
	cs := j.Case
	out := Outcome{Model: c.Model, Detail: Detail{Case: cs.ID(), Rep: j.Rep}}
	dir, err := tpl.workDir(ctx, cs, parent)
	if err != nil {
		return out, err
	}
	defer os.RemoveAll(dir)
	opts := []agent.Option{agent.WithDir(dir), agent.WithItem(cs.Name), agent.WithModel(c.Model), agent.WithTimeout(c.Timeout)}
	if b.RoleDir != "" {
		opts = append(opts, agent.WithRoleDir(b.RoleDir))
	}
	a, err := agent.New(cs.Role, c.Runner, opts...)
	if err != nil {
		return out, err
	}
	resp, agentErr := a.Invoke(ctx, cs.Prompt, "")
	out.Usage, out.AgentTime = resp.Usage, resp.Duration
	if resp.Model != "" {
		out.Model = resp.Model
	}
	if ctx.Err() != nil {
		return out, ctx.Err()
	}
	files, err := changed(ctx, dir)
	if err != nil {
		return out, err
	}
	req := cs.Checks()
	exits, skipped := runCommands(ctx, dir, req.Commands, cs.Commands, b.CommandTimeout, io.Discard)
	out.Detail.Skipped = skipped
	req.Commands = slices.DeleteFunc(slices.Clone(req.Commands), func(n string) bool { return slices.Contains(skipped, n) })
	res := eval.Gatekeeper{}.ValidateWork(eval.Response{Text: resp.Text, Files: files, Commands: exits}, req)
	if agentErr != nil {
		out.Detail.Error = agentErr.Error()
		res.Passed = false
		res.Checks = append([]eval.Check{{Name: "agent", Reason: agentErr.Error()}}, res.Checks...)
	}
	out.Passed, out.Detail.Checks = res.Passed, res.Checks
	if !res.Passed {
		return out, nil // only work that passes the gatekeeper is judged; failed work scores 0
	}
	judgeStart := time.Now()
	jd, err := eval.NewJudge(b.Judge.Runner, eval.WithModel(b.Judge.Model), eval.WithDir(dir), eval.WithTimeout(b.Judge.Timeout)).
		Evaluate(ctx, resp.Text, cs.Prompt, cs.Criteria())
	out.JudgeTime = time.Since(judgeStart)
	if err != nil {
		return out, fmt.Errorf("judge %s: %w", cs.ID(), err)
	}
	out.Score = jd.Quality()
	out.Detail.Judge = &JudgeDetail{Scores: jd.Scores, Overall: jd.Overall, Reasoning: jd.Reasoning}
	return out, nil
}
