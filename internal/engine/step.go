package engine

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/cadre-dev/cadre/internal/cyclelog"
	"github.com/cadre-dev/cadre/internal/eval"
	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/item/taskfile"
	"github.com/cadre-dev/cadre/internal/promptlog"
	"github.com/cadre-dev/cadre/internal/redact"
	"github.com/cadre-dev/cadre/internal/reply"
	"github.com/cadre-dev/cadre/internal/role"
	"github.com/cadre-dev/cadre/internal/runner"
	"github.com/cadre-dev/cadre/internal/safefile"
	"github.com/cadre-dev/cadre/internal/signal"
	"github.com/cadre-dev/cadre/internal/store"
	"github.com/cadre-dev/cadre/internal/workflow"
)

// agentSpec is one agent step, whatever the workflow.
type agentSpec struct {
	ID, Role, Phase string
	Workflow        string
	Attempt         int            // the n of the step id
	Visit           int            // nth invocation of the role for the item (0: Attempt)
	Work            *workflow.Work // a reviewer's: the work it reviews
	Inputs          []string
	Review          string         // stage pipeline: the rejecting audit the coder addresses
	Note            string         // hand-off note (judge's discrepancy, human feedback)
	Signature, Goal string         // goal:loop:step; the goal cycle's goal when the item has several
	TaskID          string         // context file taskId
	Payload         map[string]any // context file payload additions
	PayloadJSON     string         // the plan task: pasted into the prompt of an agent that cannot read files
	PassRating      int            // a reviewer's pass rating (0: limits.audit_pass_rating)
}

// passRating is the Rating the work sp reviews needs to pass.
func (e *Engine) passRating(sp agentSpec) int {
	if sp.PassRating > 0 {
		return sp.PassRating
	}
	return e.d.Config.Limits.AuditPassRating
}

// agentOut is a finished (or replayed) agent step.
type agentOut struct {
	sig     signal.Signal
	output  string // output file
	text    string // its content
	failure string // non-empty when the step failed
	paused  string // non-empty when the step could not run for now (quota)
	usage   event.Usage
}

// cycleEntry is an agent step's entry in the item's cycle log.
func cycleEntry(sp agentSpec, out agentOut) cyclelog.Entry {
	return cyclelog.Entry{Step: sp.ID, Role: sp.Role, Attempt: sp.Attempt, Signature: sp.Signature, Goal: sp.Goal, Text: out.text, Output: out.output}
}

// agentStep performs one agent step, or replays it from the journal when it
// already completed. The error is only for ctx cancellation or a journal
// failure; agent failures are in agentOut.failure.
//
// Its phases run in turn, and each may end the step with its outcome:
// replay, choose the runner, prepare the step's files, run the agent, and
// settle its outcome. The order of their side effects (journal writes,
// crash points, events, files) is what lets a crashed run resume without
// running a completed step again.
func (e *Engine) agentStep(ctx context.Context, ir *itemRun, sp agentSpec) (agentOut, error) {
	// A step whose FAIL ended the item runs again once it is retried: a
	// new attempt, under its own id; the FAIL stays journaled.
	id, err := e.attemptOf(ctx, ir, sp.ID)
	if err != nil {
		return agentOut{}, err
	}
	sp.ID = id
	sr := &stepRun{ir: ir, sp: sp}
	if out, done, err := e.replayStep(ctx, sr); done || err != nil {
		return out, err
	}
	if msg := e.unconfinedRefusal(ir.it); msg != "" {
		return agentOut{failure: msg}, nil
	}
	if out, done, err := e.chooseRunner(ctx, sr); done || err != nil {
		return out, err
	}
	if out, done, err := e.prepareStep(sr); done || err != nil {
		return out, err
	}
	// An agent slot, held until the step is settled.
	if err := sr.enter(ctx); err != nil {
		return agentOut{}, err
	}
	defer sr.leave()
	got, err := e.runStep(ctx, sr)
	if err != nil {
		return agentOut{}, err
	}
	return e.settleStep(ctx, sr, got)
}

// stepRun is an agent step's working state, filled in phase by phase.
type stepRun struct {
	ir *itemRun
	sp agentSpec

	// replayStep's: the output file of the step's last attempt, when the
	// journal has the step started but not finished
	lastOutput string

	// chooseRunner's
	runnerName, model string
	picked            string // why runner auto chose the runner: the start event's message
	rn                runner.Runner

	// prepareStep's
	ctxPath, outPath, logPath string
	prompt                    role.Prompt
	rubric                    eval.Rubric // a judge's

	// runStep's
	rec   store.Step  // the step's journal record
	base  event.Event // what the step's events share
	began time.Time   // the file system's time when its agent started: the images it wrote are not older
}

// replayStep reads a step that already completed back from the journal
// (done). A step the journal holds unfinished is run again, its process
// left by a crash (an orphan) killed first.
func (e *Engine) replayStep(ctx context.Context, sr *stepRun) (out agentOut, done bool, err error) {
	ir, sp := sr.ir, sr.sp
	prev, err := e.d.Store.GetStep(ctx, ir.run, sp.ID)
	switch {
	case err == nil && prev.Status == store.StepCompleted:
		json.Unmarshal(prev.Signal, &out.sig)
		out.output = prev.OutputPath
		// A later agent may have replaced this output with a link since.
		out.text, _ = readText(ir.outDir, prev.OutputPath)
		ir.cycle.Add(cycleEntry(sp, out))
		ir.worked(sp)
		return out, true, nil
	case err == nil:
		if err := e.killOrphan(ctx, ir, prev); err != nil {
			return agentOut{}, true, err
		}
		sr.lastOutput = prev.OutputPath
	case !errors.Is(err, store.ErrNotFound):
		return agentOut{}, true, err
	}
	return agentOut{}, false, nil
}

// chooseRunner settles the step's runner and model: the role's, or runner
// auto's choice. The step pauses when the circuit breaker stopped the
// runner, and fails when there is no runner to run it.
func (e *Engine) chooseRunner(ctx context.Context, sr *stepRun) (out agentOut, done bool, err error) {
	ir := sr.ir
	sr.runnerName, sr.model, _ = e.runnerFor(ir.opts, sr.sp.Role)
	if isAuto(sr.runnerName) {
		c, err := e.pick(ctx, ir, sr.sp)
		if err != nil {
			if ctx.Err() != nil {
				return agentOut{}, true, ctx.Err()
			}
			return agentOut{failure: err.Error()}, true, nil
		}
		sr.runnerName, sr.model, sr.picked = c.Runner, c.Model, "runner auto chose "+c.Reason
	}
	if why := ir.rs.broken(sr.runnerName); why != "" {
		return agentOut{paused: "runner " + sr.runnerName + " is stopped for this run: " + why}, true, nil
	}
	sr.rn, err = ir.rs.runner(e, sr.runnerName)
	if err != nil {
		return agentOut{failure: err.Error()}, true, nil
	}
	return agentOut{}, false, nil
}

// enter takes one of the item's agent slots, waiting for one, and counts
// the agent on the board; leave gives both back.
func (sr *stepRun) enter(ctx context.Context) error {
	ir := sr.ir
	select {
	case ir.agents <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	if err := ir.board.BeginAgent(); err != nil {
		err = fmt.Errorf("update task %s: %w", ir.it.ID, err)
		<-ir.agents
		return err
	}
	return nil
}

func (sr *stepRun) leave() {
	sr.ir.board.EndAgent()
	<-sr.ir.agents
}

// runStep journals the step's start, announces it, and runs its agent. A
// crash from here on leaves the step started in the journal: an orphan
// replayStep kills before the step runs again.
func (e *Engine) runStep(ctx context.Context, sr *stepRun) (asked, error) {
	ir, sp := sr.ir, sr.sp
	sr.rec = store.Step{RunID: ir.run, ItemID: ir.it.ID, ID: sp.ID, Role: sp.Role, Runner: sr.runnerName, Model: sr.model, Kind: "agent", OutputPath: sr.outPath}
	if err := e.d.Store.StartStep(ctx, sr.rec); err != nil {
		return asked{}, journalErr(ir.it.ID, err)
	}
	sr.base = event.Event{Stage: sp.Phase, Phase: sp.Phase, Role: sp.Role, Step: sp.ID, Runner: sr.runnerName, Model: sr.model}
	if sp.Workflow != workflow.PipelineWorkflow {
		sr.base.Stage = ""
	}
	ev := sr.base
	ev.Type = event.StageStarted
	e.publish(ir, ev)
	ev.Type, ev.Message = event.StepStarted, sr.picked
	e.publish(ir, ev)
	e.d.Crash(CrashStepStarted)

	// Read from the context file just written: a file's time lags
	// time.Now by up to a clock tick, and an image written right away
	// would seem older than the step.
	sr.began = time.Now()
	if fi, err := os.Stat(sr.ctxPath); err == nil {
		sr.began = fi.ModTime()
	}
	inv := e.invocation(ctx, sr)
	got, err := e.guardedInvoke(ctx, ir, sr.rn, inv, sr.rubric, e.passRating(sp), notOwn(ir, sp)...)
	var te *tamperError
	if errors.As(err, &te) {
		sr.rec.Error = te.msg
		if jerr := e.failStep(ctx, sr.rec, nil); jerr != nil {
			return asked{}, both(err, jerr) // the journal refused the failure too
		}
		ev := sr.base
		ev.Type, ev.Error = event.StepFailed, te.msg
		e.publish(ir, ev)
	}
	if err != nil && ctx.Err() != nil && got.usage != (event.Usage{}) {
		// An interrupted try spent what its agent used: it counts, though
		// the step runs again.
		sr.rec.Usage, sr.rec.Model = toStoreUsage(got.usage), cmp.Or(got.model, sr.rec.Model)
		if jerr := e.d.Store.NoteUsage(context.WithoutCancel(ctx), sr.rec); jerr != nil {
			err = both(err, journalErr(ir.it.ID, jerr))
		}
	}
	if err != nil {
		return asked{}, err
	}
	e.d.Crash(CrashAgentExited)
	return got, nil
}

// notOwn is the text an agent step is given that is not its own to
// answer with: the item's title and text (an issue's body and comments)
// and the step's hand-off note (a person's answer or review, a judge's
// discrepancy). A SIGNAL BLOCK copied from it is not the agent's verdict.
func notOwn(ir *itemRun, sp agentSpec) []string {
	return []string{ir.task.Title, ir.task.Body, sp.Note}
}

// invocation is what the step's runner is asked to run.
func (e *Engine) invocation(ctx context.Context, sr *stepRun) runner.Invocation {
	ir, sp, base := sr.ir, sr.sp, sr.base
	timeout := ir.set.Timeout
	inv := runner.Invocation{Role: sp.Role, Item: ir.it.ID, Step: sp.ID, Attempt: sp.Attempt, Visit: sp.Visit, Prompt: sr.prompt.Text, Instructions: sr.prompt.Instructions, Dir: ir.dir,
		ContextPath: sr.ctxPath, OutputPath: sr.outPath, LogPath: sr.logPath, Model: sr.model, Timeout: timeout,
		Progress: func(note string) {
			ev := base
			ev.Type, ev.Message = event.StepProgress, note
			e.publish(ir, ev)
		}}
	inv.OnStart = e.recordGroup(ctx, ir, sp.ID)
	inv.Grace = time.Duration(e.d.Config.Limits.KillGrace)
	inv.Sandbox = e.stepSandbox(ir, base)
	inv.Mask = e.d.Mask
	return inv
}

// settleStep journals the finish of a step whose agent exited, and
// announces it. A completed audit of the stage pipeline writes its
// rating to the task file first; a completed step then joins the item's
// cycle and review record.
func (e *Engine) settleStep(ctx context.Context, sr *stepRun, got asked) (agentOut, error) {
	ir, sp, sig, usage := sr.ir, sr.sp, got.sig, got.usage
	sr.rec.Usage, sr.rec.Model = toStoreUsage(usage), cmp.Or(got.model, sr.rec.Model) // the model as the backend reported it
	if got.failure != "" {
		return e.settleFailed(ctx, sr, got)
	}
	if sp.Role == workflow.RoleAuditor && sp.Workflow == workflow.PipelineWorkflow && sig.Rating != nil {
		accepted := workflow.Rejection(sp.Role, sig, e.passRating(sp)) == ""
		if err := ir.board.Flush(); err != nil {
			return agentOut{}, fmt.Errorf("update task %s: %w", ir.it.ID, err)
		}
		if err := taskfile.SetReview(ir.task.Path, *sig.Rating, accepted, reviewText(got.output)); err != nil {
			return agentOut{}, fmt.Errorf("write review of %s: %w", ir.it.ID, err)
		}
	}
	sr.rec.Status = store.StepCompleted
	sr.rec.Signal, _ = json.Marshal(sig)
	if err := ir.remote.NoteWIP(ctx, &sr.rec); err != nil {
		return agentOut{}, err
	}
	if err := e.finishStep(ctx, sr.rec); err != nil {
		return agentOut{}, err
	}
	ev := sr.base
	ev.Type, ev.Usage = event.StepCompleted, &usage
	ev.Model = sr.rec.Model // as the backend reported it: what the step cost went to
	e.publish(ir, ev)
	ev.Type, ev.Usage = event.StageCompleted, nil
	ev.Message = sig.LoopSummary
	e.publish(ir, ev)
	out := agentOut{sig: sig, output: sr.outPath, text: got.output, usage: usage}
	entry := cycleEntry(sp, out)
	entry.WorkDir, entry.Since = ir.dir, sr.began
	if signed := ir.cycle.Add(entry); signed != "" {
		e.publish(ir, event.Event{Type: event.Warning, Step: sp.ID, Message: "the agent signed " + signed + "; its step is " + sp.Signature})
	}
	e.reviewed(ctx, ir, sp, sig, got.judgement)
	ir.worked(sp)
	return out, nil
}

// settleFailed journals the finish of a step whose agent failed, even when
// ctx is cancelled by now, and announces it. A quota or spend limit trips
// the runner's circuit breaker.
func (e *Engine) settleFailed(ctx context.Context, sr *stepRun, got asked) (agentOut, error) {
	ir, runnerName, failure, usage := sr.ir, sr.runnerName, got.failure, got.usage
	sr.rec.Status, sr.rec.Error = store.StepFailed, failure
	if err := ir.remote.NoteWIP(context.WithoutCancel(ctx), &sr.rec); err != nil {
		return agentOut{}, err
	}
	if err := e.finishStep(context.WithoutCancel(ctx), sr.rec); err != nil {
		return agentOut{}, err
	}
	ev := sr.base
	ev.Type, ev.Error, ev.Usage = event.StepFailed, failure, &usage
	e.publish(ir, ev)
	out := agentOut{failure: failure, usage: usage, output: sr.outPath, text: got.output}
	if got.kind == runner.KindQuota {
		// The circuit breaker: no step starts on this runner for the
		// rest of the run; this item pauses, resumable later.
		ir.rs.trip(runnerName, failure)
		e.publish(ir, event.Event{Type: event.Warning, Runner: runnerName, Message: "quota or spend limit reached: no new step starts on runner " + runnerName})
		out.paused = "runner " + runnerName + " hit a quota or spend limit: " + failure
	}
	return out, nil
}

// step runs one step of the stage pipeline and turns its outcome into the
// state machine's event.
func (e *Engine) step(ctx context.Context, ir *itemRun, s workflow.State, st workflow.Step) (workflow.Event, error) {
	out, err := e.agentStep(ctx, ir, agentSpec{ID: st.ID, Role: st.Role, Phase: st.Stage, Workflow: workflow.PipelineWorkflow,
		Attempt: st.Attempt, Inputs: st.Inputs, Review: st.Review, Note: st.Note, TaskID: ir.it.ID,
		Payload: map[string]any{"stage": st.Stage, "attempts": s.Attempts}})
	if err != nil {
		return workflow.Event{}, err
	}
	if out.paused != "" {
		return workflow.Event{}, &pausedError{out.paused}
	}
	if out.failure != "" {
		return workflow.Event{Kind: workflow.StepFailed, Role: st.Role, Reason: out.failure}, nil
	}
	return workflow.Event{Kind: workflow.StepDone, Role: st.Role, Step: st.ID, Signal: out.sig, Output: out.output}, nil
}

// asked is what invoke got from an agent.
type asked struct {
	sig       signal.Signal
	output    string
	usage     event.Usage
	failure   string          // the step's error message when it failed
	kind      runner.Kind     // the runner's failure kind (quota, ...)
	judgement *eval.Judgement // a judge's scores, when it gave them
	model     string          // the model the backend said answered
}

// invoke runs the agent, reads its output and signal, and re-asks once when
// the reply has no usable SIGNAL BLOCK (or, from a judge, an unusable
// judgement). A block whose text appears in quoted (the item's text, the
// feedback the step was given) is not the agent's and does not count. The
// error is only for ctx cancellation or a journal failure.
func (e *Engine) invoke(ctx context.Context, rn runner.Runner, inv runner.Invocation, rubric eval.Rubric, pass int, quoted ...string) (asked, error) {
	var got asked
	for ask := 0; ask < 2; ask++ {
		// Each ask starts without an output file, so the file read after it
		// is this ask's (the re-ask's answer, not the first one's copy).
		os.Remove(inv.OutputPath)
		res, rerr := rn.Run(ctx, inv)
		got.usage, got.model = got.usage.Add(res.Usage), cmp.Or(res.Model, got.model)
		if ctx.Err() != nil {
			return got, ctx.Err()
		}
		if rerr != nil {
			got.failure, got.kind = fmt.Sprintf("%s: %v", inv.Role, rerr), runner.KindOf(rerr)
			return got, nil
		}
		output, err := collectOutput(inv.OutputPath, res.Output, inv.Mask)
		if errors.Is(err, safefile.ErrUnsafe) {
			got.failure = fmt.Sprintf("%s output refused: %v; cadre reads only a regular file the agent wrote", inv.Role, err)
			return got, nil
		}
		if err != nil {
			return got, err
		}
		got.output = output
		sig, perr := reply.Check(inv.Role, output, quoted...)
		if perr != nil && inv.Role == roleTriage {
			// Triage's contract is its JSON decision, not a SIGNAL BLOCK,
			// and an unusable one has a safe default that "run: routed"
			// applies with a warning, so its reply is never re-asked or
			// failed for want of a SIGNAL BLOCK.
			sig, perr = triageSignal(output), nil
		}
		var jerr error
		if inv.Role == roleJudge {
			sig, got.judgement, perr, jerr = judged(output, sig, perr, rubric, pass)
		}
		got.sig = sig
		// An auditor that exits non-zero but rated the work is an audit
		// failure, not a crash: its signal stands.
		if res.ExitCode != 0 && !(perr == nil && inv.Role == workflow.RoleAuditor) {
			got.failure = fmt.Sprintf("%s exited with code %d (see %s)%s", inv.Role, res.ExitCode, inv.LogPath, stderrNote(inv.Mask.String(res.StderrTail)))
			return got, nil
		}
		if perr == nil {
			return got, nil
		}
		if ask == 1 {
			switch {
			case jerr != nil:
				got.failure = fmt.Sprintf("unusable judgement in %s output: %v (see %s)", inv.Role, jerr, inv.OutputPath)
			case errors.Is(perr, signal.ErrQuoted):
				got.failure = fmt.Sprintf("the SIGNAL BLOCK in %s output is copied from the item's text or feedback, not the agent's own (see %s)", inv.Role, inv.OutputPath)
			case errors.Is(perr, signal.ErrNoBlock):
				got.failure = fmt.Sprintf("no SIGNAL BLOCK in %s output (see %s)", inv.Role, inv.OutputPath)
			default:
				got.failure = fmt.Sprintf("unusable SIGNAL BLOCK in %s output: %v (see %s)", inv.Role, perr, inv.OutputPath)
			}
			return got, nil
		}
		inv.Reask = true
		// The re-ask continues the agent's own session where the backend
		// keeps one, so it answers with its work in context. A sandboxed
		// CLI kept its session in a home that went with its process, so
		// there it is asked afresh: the prompt again, then the note.
		if inv.Sandbox == nil {
			inv.Session = res.SessionID
		}
		if jerr != nil {
			inv.Followup = reply.ReaskJudgement(jerr)
		} else {
			inv.Followup = reply.Reask(perr)
		}
		// The re-ask is a prompt the agent was given too: kept after the
		// step's first one, whole (a resumed session holds the rest of
		// it), so it is also the step's latest prompt.
		whole := inv
		whole.Session = ""
		itemDir := filepath.Dir(filepath.Dir(inv.OutputPath)) // outputs/STEM.md
		if err := promptlog.Append(itemDir, stepStem(inv.Item, inv.Step), whole.Text()); err != nil {
			return got, err
		}
	}
	got.failure = "unreachable"
	return got, nil
}

// roleTriage is the role whose reply is a routing decision.
const roleTriage = "triage"

// triageSignal stands in for the SIGNAL BLOCK a triage reply lacks: its
// decision summarised when the reply holds one, else no Result, so the
// journal does not claim a success the routing step then ignores.
func triageSignal(output string) signal.Signal {
	t, err := signal.ParseTriage(output)
	if err != nil {
		return signal.Signal{Agent: roleTriage, LoopSummary: "no usable routing decision", Context: err.Error()}
	}
	sum := "chose workflow " + t.Workflow
	if len(t.Roles) > 0 {
		sum += " (" + strings.Join(t.Roles, ", ") + ")"
	}
	return signal.Signal{Agent: roleTriage, Result: signal.Success, LoopSummary: sum, Context: t.Reasoning}
}

// collectOutput settles the step's output file: the agent's own file when it
// wrote one (with the reply's signal block appended when only the reply has
// it), else the reply itself; masked of mask's secrets, in the file too.
//
// The file is read under the item's step directory (outputs/<step>.md sits
// one level down) without following links: an output the agent made a
// link (to /etc/passwd, say) is refused with an error wrapping
// safefile.ErrUnsafe, never read through.
func collectOutput(path, text string, mask *redact.Redactor) (string, error) {
	root := filepath.Dir(filepath.Dir(path))
	data, err := safefile.ReadFile(root, path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		data = nil // no file: the reply is the output
	case err != nil:
		return "", err
	}
	out, merged := reply.Output(string(data), text)
	masked := mask.String(out)
	if merged || masked != out || len(strings.TrimSpace(string(data))) == 0 {
		if err := writeStepFile(root, path, []byte(masked)); err != nil {
			return "", err
		}
	}
	return masked, nil
}
