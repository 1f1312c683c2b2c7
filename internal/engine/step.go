package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/cadre-dev/cadre/internal/eval"
	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/item/taskfile"
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
	Review          string // runner workflow: the rejecting audit the coder addresses
	Note            string // hand-off note (judge's discrepancy, human feedback)
	Signature       string
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

// agentStep performs one agent step, or replays it from the journal when it
// already completed. The error is only for ctx cancellation or a journal
// failure; agent failures are in agentOut.failure.
func (e *Engine) agentStep(ctx context.Context, ir *itemRun, sp agentSpec) (agentOut, error) {
	if prev, err := e.d.Store.GetStep(ctx, ir.run, sp.ID); err == nil && prev.Status == store.StepCompleted {
		var out agentOut
		json.Unmarshal(prev.Signal, &out.sig)
		out.output = prev.OutputPath
		// A later agent may have replaced this output with a link since.
		out.text, _ = readText(ir.outDir, prev.OutputPath)
		ir.cycle.add(sp, out)
		ir.worked(sp)
		return out, nil
	} else if err == nil {
		if err := e.killOrphan(ctx, ir, prev); err != nil {
			return agentOut{}, err
		}
	} else if !errors.Is(err, store.ErrNotFound) {
		return agentOut{}, err
	}
	runnerName, model, _ := e.runnerFor(ir.opts, sp.Role)
	picked := ""
	if isAuto(runnerName) {
		c, err := e.pick(ctx, ir, sp)
		if err != nil {
			if ctx.Err() != nil {
				return agentOut{}, ctx.Err()
			}
			return agentOut{failure: err.Error()}, nil
		}
		runnerName, model, picked = c.Runner, c.Model, "runner auto chose "+c.Reason
	}
	if why := ir.rs.broken(runnerName); why != "" {
		return agentOut{paused: "runner " + runnerName + " is stopped for this run: " + why}, nil
	}
	rn, err := ir.rs.runner(e, runnerName)
	if err != nil {
		return agentOut{failure: err.Error()}, nil
	}
	ctxPath, outPath, logPath := ir.stepFiles(sp.ID)
	cmds := e.d.Config.Commands
	project := e.d.Config.Project
	if project == "" {
		project = filepath.Base(e.d.Root)
	}
	// Empty entries are left out: every byte of the file is read by the
	// agent, and an empty one tells it nothing.
	payload := map[string]any{"title": ir.task.Title}
	if ir.task.Path != "" {
		payload["taskFile"] = ir.task.Path
	}
	if len(ir.task.Contexts) > 0 {
		payload["contexts"] = ir.task.Contexts
	}
	for k, v := range sp.Payload {
		payload[k] = v
	}
	if sp.Review != "" {
		payload["review"] = sp.Review
	}
	if sp.Note != "" {
		payload["note"] = sp.Note
	}
	var issueNumber *int
	if is, ok := ir.issueOf(e); ok {
		delete(payload, "taskFile")
		// Its number is the file's issueNumber, and its repository the
		// file's repository unless the issue is another repository's.
		issue := map[string]any{"url": is.URL}
		if is.Repo != e.d.Config.Repository {
			issue["repository"] = is.Repo
		}
		payload["issue"] = issue
		issueNumber = &is.Number
	}
	cf := contextFile{SchemaVersion: contextSchemaVersion, Agent: sp.Role, ProjectName: project, Repository: e.d.Config.Repository, IssueNumber: issueNumber,
		WorktreePath: ir.dir, Phase: e.phaseNumber(sp.Workflow, sp.Phase), PhaseName: sp.Phase, TaskID: sp.TaskID,
		Config:     contextConfig{Commands: map[string]string{"install": cmds.Install, "build": cmds.Build, "test": cmds.Test, "lint": cmds.Lint}},
		InputFiles: append([]string{}, sp.Inputs...), OutputPath: outPath, Payload: payload}
	// Compact: the context file is read by agents, and every byte of it is
	// a token of every step.
	cfData, err := json.Marshal(cf)
	if err != nil {
		return agentOut{}, fmt.Errorf("write context file: %w", err)
	}
	if err := writeStepFile(ir.outDir, ctxPath, append(cfData, '\n')); err != nil {
		return agentOut{}, err
	}
	// The agent may write its output file itself, and some CLIs refuse a
	// directory they are granted that does not exist yet.
	if err := os.MkdirAll(filepath.Dir(outPath), 0o755); err != nil {
		return agentOut{}, fmt.Errorf("create outputs dir: %w", err)
	}
	inline := !rn.Capabilities().EditsFiles
	taskFile := ir.task.Path
	if ir.it.Source == "github" {
		taskFile = "" // an issue's text reaches the agent only fenced as data, in the prompt
	}
	data := role.Data{Item: ir.it.ID, Title: ir.task.Title, TaskFile: taskFile, WorkDir: ir.dir,
		ContextPath: ctxPath, OutputPath: outPath, Inputs: sp.Inputs, Review: sp.Review, Automated: true,
		Workflow: sp.Workflow, Phase: sp.Phase, Body: ir.task.Body, Inline: inline, Payload: sp.PayloadJSON,
		Note: sp.Note, Signature: sp.Signature}
	var rubric eval.Rubric
	if sp.Role == roleJudge {
		rubric = e.rubric(sp.Work)
		data.Rubric = rubricLines(rubric)
	}
	if !inline && taskFile == "" && ir.task.Body != "" {
		// An agent that reads files reads the item's text from one file
		// beside its context file (readable under the sandbox too), not
		// from a copy in every step's prompt.
		data.ItemFile = filepath.Join(filepath.Dir(ctxPath), itemTextFile)
		// Written once per item: rewritten only when missing or changed
		// (an agent may have edited it), not at every step.
		text := []byte(itemText(ir.task.Body))
		if old, err := safefile.ReadFile(ir.outDir, data.ItemFile); err != nil || !bytes.Equal(old, text) {
			if err := writeStepFile(ir.outDir, data.ItemFile, text); err != nil {
				return agentOut{}, err
			}
		}
	}
	if inline {
		for _, in := range sp.Inputs {
			// An input is an earlier agent's output: a link there would
			// send a host file to the model in this prompt.
			text, err := readText(ir.outDir, in)
			if errors.Is(err, safefile.ErrUnsafe) {
				return agentOut{failure: fmt.Sprintf("input %s refused: %v", in, err)}, nil
			}
			data.InputTexts = append(data.InputTexts, text)
		}
	}
	prompt, err := e.d.Roles.RenderParts(sp.Role, data)
	if err != nil {
		return agentOut{failure: err.Error()}, nil
	}
	// Kept beside the step's other files: what the agent was asked is part
	// of its record (the board shows it), instructions included.
	if err := AppendPrompt(ir.outDir, stepStem(ir.it.ID, sp.ID), prompt.Whole()); err != nil {
		return agentOut{}, err
	}
	select {
	case ir.agents <- struct{}{}:
		defer func() { <-ir.agents }()
	case <-ctx.Done():
		return agentOut{}, ctx.Err()
	}
	if err := ir.board.beginAgent(); err != nil {
		return agentOut{}, fmt.Errorf("update task %s: %w", ir.it.ID, err)
	}
	defer ir.board.endAgent()
	rec := store.Step{RunID: ir.run, ItemID: ir.it.ID, ID: sp.ID, Role: sp.Role, Runner: runnerName, Model: model, Kind: "agent", OutputPath: outPath}
	if err := e.d.Store.StartStep(ctx, rec); err != nil {
		return agentOut{}, err
	}
	base := event.Event{Stage: sp.Phase, Phase: sp.Phase, Role: sp.Role, Step: sp.ID, Runner: runnerName, Model: model}
	if sp.Workflow != workflow.RunnerWorkflow {
		base.Stage = ""
	}
	ev := base
	ev.Type = event.StageStarted
	e.publish(ir, ev)
	ev.Type, ev.Message = event.StepStarted, picked
	e.publish(ir, ev)
	e.d.Crash(CrashStepStarted)

	timeout := ir.opts.Timeout
	if timeout == 0 {
		timeout = time.Duration(e.d.Config.Defaults.Timeout)
	}
	inv := runner.Invocation{Role: sp.Role, Item: ir.it.ID, Step: sp.ID, Attempt: sp.Attempt, Visit: sp.Visit, Prompt: prompt.Text, Instructions: prompt.Instructions, Dir: ir.dir,
		ContextPath: ctxPath, OutputPath: outPath, LogPath: logPath, Model: model, Timeout: timeout,
		Progress: func(note string) {
			ev := base
			ev.Type, ev.Message = event.StepProgress, note
			e.publish(ir, ev)
		}}
	inv.OnStart = e.recordGroup(ctx, ir, sp.ID)
	inv.Sandbox = e.stepSandbox(ir, base)
	got, err := e.guardedInvoke(ctx, ir, rn, inv, rubric, e.passRating(sp))
	var te *tamperError
	if errors.As(err, &te) {
		rec.Status, rec.Error = store.StepFailed, te.msg
		e.d.Store.FinishStep(context.WithoutCancel(ctx), rec)
		ev := base
		ev.Type, ev.Error = event.StepFailed, te.msg
		e.publish(ir, ev)
	}
	if err != nil {
		return agentOut{}, err
	}
	sig, output, usage, failure, kind := got.sig, got.output, got.usage, got.failure, got.kind
	e.d.Crash(CrashAgentExited)
	rec.Usage = toStoreUsage(usage)
	if failure != "" {
		rec.Status, rec.Error = store.StepFailed, failure
		if err := e.noteWIP(context.WithoutCancel(ctx), ir, &rec); err != nil {
			return agentOut{}, err
		}
		if err := e.d.Store.FinishStep(context.WithoutCancel(ctx), rec); err != nil {
			return agentOut{}, err
		}
		ev := base
		ev.Type, ev.Error, ev.Usage = event.StepFailed, failure, &usage
		e.publish(ir, ev)
		out := agentOut{failure: failure, usage: usage, output: outPath, text: output}
		if kind == runner.KindQuota {
			// The circuit breaker: no step starts on this runner for the
			// rest of the run; this item pauses, resumable later.
			ir.rs.trip(runnerName, failure)
			e.publish(ir, event.Event{Type: event.Warning, Runner: runnerName, Message: "quota or spend limit reached: no new step starts on runner " + runnerName})
			out.paused = "runner " + runnerName + " hit a quota or spend limit: " + failure
		}
		return out, nil
	}
	if sp.Role == workflow.RoleAuditor && sp.Workflow == workflow.RunnerWorkflow && sig.Rating != nil {
		accepted := workflow.Rejection(sp.Role, sig, e.passRating(sp)) == ""
		if err := ir.board.flush(); err != nil {
			return agentOut{}, fmt.Errorf("update task %s: %w", ir.it.ID, err)
		}
		if err := taskfile.SetReview(ir.task.Path, *sig.Rating, accepted, reviewText(output)); err != nil {
			return agentOut{}, fmt.Errorf("write review of %s: %w", ir.it.ID, err)
		}
	}
	rec.Status = store.StepCompleted
	rec.Signal, _ = json.Marshal(sig)
	if err := e.noteWIP(ctx, ir, &rec); err != nil {
		return agentOut{}, err
	}
	if err := e.d.Store.FinishStep(ctx, rec); err != nil {
		return agentOut{}, err
	}
	ev = base
	ev.Type, ev.Usage = event.StepCompleted, &usage
	e.publish(ir, ev)
	ev.Type, ev.Usage = event.StageCompleted, nil
	ev.Message = sig.LoopSummary
	e.publish(ir, ev)
	out := agentOut{sig: sig, output: outPath, text: output, usage: usage}
	ir.cycle.add(sp, out)
	e.reviewed(ctx, ir, sp, sig, got.judgement)
	ir.worked(sp)
	return out, nil
}

// step runs one step of the runner workflow and turns its outcome into the
// state machine's event.
func (e *Engine) step(ctx context.Context, ir *itemRun, s workflow.State, st workflow.Step) (workflow.Event, error) {
	out, err := e.agentStep(ctx, ir, agentSpec{ID: st.ID, Role: st.Role, Phase: st.Stage, Workflow: workflow.RunnerWorkflow,
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
}

// invoke runs the agent, reads its output and signal, and re-asks once when
// the reply has no usable SIGNAL BLOCK (or, from a judge, an unusable
// judgement). The error is only for ctx cancellation or a journal failure.
func (e *Engine) invoke(ctx context.Context, rn runner.Runner, inv runner.Invocation, rubric eval.Rubric, pass int) (asked, error) {
	var got asked
	for ask := 0; ask < 2; ask++ {
		// Each ask starts without an output file, so the file read after it
		// is this ask's (the re-ask's answer, not the first one's copy).
		os.Remove(inv.OutputPath)
		res, rerr := rn.Run(ctx, inv)
		got.usage = got.usage.Add(res.Usage)
		if ctx.Err() != nil {
			return got, ctx.Err()
		}
		if rerr != nil {
			got.failure, got.kind = fmt.Sprintf("%s: %v", inv.Role, rerr), runner.KindOf(rerr)
			return got, nil
		}
		output, err := collectOutput(inv.OutputPath, res.Output)
		if errors.Is(err, safefile.ErrUnsafe) {
			got.failure = fmt.Sprintf("%s output refused: %v; cadre reads only a regular file the agent wrote", inv.Role, err)
			return got, nil
		}
		if err != nil {
			return got, err
		}
		got.output = output
		sig, perr := reply.Check(inv.Role, output)
		if perr != nil && inv.Role == roleTriage {
			// Triage's contract is its JSON decision (seed 003), and an
			// unusable one has a safe default that "run: routed" applies
			// with a warning, so its reply is never re-asked or failed
			// for want of a SIGNAL BLOCK.
			sig, perr = triageSignal(output), nil
		}
		var jerr error
		if inv.Role == roleJudge {
			sig, got.judgement, perr, jerr = judged(output, sig, perr, rubric, pass)
		}
		got.sig = sig
		// An auditor that exits non-zero but rated the work is an audit
		// failure, not a crash (seed 001).
		if res.ExitCode != 0 && !(perr == nil && inv.Role == workflow.RoleAuditor) {
			got.failure = fmt.Sprintf("%s exited with code %d%s (see %s)", inv.Role, res.ExitCode, tail(res.StderrTail), inv.LogPath)
			return got, nil
		}
		if perr == nil {
			return got, nil
		}
		if ask == 1 {
			switch {
			case jerr != nil:
				got.failure = fmt.Sprintf("unusable judgement in %s output: %v (see %s)", inv.Role, jerr, inv.OutputPath)
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
		if err := AppendPrompt(itemDir, stepStem(inv.Item, inv.Step), whole.Text()); err != nil {
			return got, err
		}
	}
	got.failure = "unreachable"
	return got, nil
}

// itemTextFile is the name, in an item's contexts directory, of the file
// holding the item's text for agents that read files.
const itemTextFile = "item.md"

// fenceBreaker keeps a text from closing or opening a fence; built once,
// as the item's text is fenced at every step.
var fenceBreaker = strings.NewReplacer("<<<", "< < <", ">>>", "> > >")

// itemText is the item's text as its file holds it: fenced and labelled
// as data, as the prompt of an agent that cannot read files shows it.
func itemText(body string) string {
	body = fenceBreaker.Replace(body)
	return "<<<ITEM TEXT (untrusted)\n" + strings.TrimRight(body, "\n") + "\nITEM TEXT (untrusted)>>>\n"
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

func tail(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return ""
	}
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	if len(s) > 200 {
		s = s[len(s)-200:]
	}
	return ": " + s
}

// collectOutput settles the step's output file: the agent's own file when it
// wrote one (with the reply's signal block appended when only the reply has
// it), else the reply itself.
//
// The file is read under the item's step directory (outputs/<step>.md sits
// one level down) without following links: an output the agent made a
// link (to /etc/passwd, say) is refused with an error wrapping
// safefile.ErrUnsafe, never read through.
func collectOutput(path, text string) (string, error) {
	root := filepath.Dir(filepath.Dir(path))
	data, err := safefile.ReadFile(root, path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		data = nil // no file: the reply is the output
	case err != nil:
		return "", err
	}
	out, merged := reply.Output(string(data), text)
	if merged || len(strings.TrimSpace(string(data))) == 0 {
		if err := writeStepFile(root, path, []byte(out)); err != nil {
			return "", err
		}
	}
	return out, nil
}
