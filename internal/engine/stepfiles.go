package engine

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/cadre-dev/cadre/internal/contextfile"
	"github.com/cadre-dev/cadre/internal/promptlog"
	"github.com/cadre-dev/cadre/internal/role"
	"github.com/cadre-dev/cadre/internal/safefile"
)

// prepareStep writes the step's files before its agent runs: the context
// file, the outputs directory, and (writePrompt) the prompt.
func (e *Engine) prepareStep(sr *stepRun) (out agentOut, done bool, err error) {
	ir := sr.ir
	sr.ctxPath, sr.outPath, sr.logPath = ir.stepFiles(sr.sp.ID)
	sr.outPath = attemptOutput(sr.outPath, sr.lastOutput)
	cf := e.stepContext(ir, sr.sp, sr.outPath)
	// Compact: the context file is read by agents, and every byte of it is
	// a token of every step.
	cfData, err := json.Marshal(cf)
	if err != nil {
		return agentOut{}, true, fmt.Errorf("write context file: %w", err)
	}
	if err := writeStepFile(ir.outDir, sr.ctxPath, append(cfData, '\n')); err != nil {
		return agentOut{}, true, err
	}
	// The agent may write its output file itself, and some CLIs refuse a
	// directory they are granted that does not exist yet.
	if err := os.MkdirAll(filepath.Dir(sr.outPath), 0o755); err != nil {
		return agentOut{}, true, fmt.Errorf("create outputs dir: %w", err)
	}
	return e.writePrompt(sr)
}

// stepContext is the step's context file, whose output is outPath.
func (e *Engine) stepContext(ir *itemRun, sp agentSpec, outPath string) contextfile.File {
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
	return contextfile.File{SchemaVersion: contextfile.SchemaVersion, Agent: sp.Role, ProjectName: project, Repository: e.d.Config.Repository, IssueNumber: issueNumber,
		WorktreePath: ir.dir, Phase: e.phaseNumber(sp.Workflow, sp.Phase), PhaseName: sp.Phase, TaskID: sp.TaskID,
		Config:     contextfile.Config{Commands: cmds.ByName()},
		InputFiles: append([]string{}, sp.Inputs...), OutputPath: outPath, Payload: payload}
}

// writePrompt renders the step's prompt and keeps it with the step's
// files. An agent that edits files reads the item's text from a file; one
// that cannot gets its inputs' text in the prompt.
func (e *Engine) writePrompt(sr *stepRun) (out agentOut, done bool, err error) {
	ir, sp := sr.ir, sr.sp
	inline := !sr.rn.Capabilities().EditsFiles
	taskFile := ir.task.Path
	if ir.it.Source == "github" {
		taskFile = "" // an issue's text reaches the agent only fenced as data, in the prompt
	}
	data := role.Data{Item: ir.it.ID, Title: ir.task.Title, TaskFile: taskFile, WorkDir: ir.dir,
		ContextPath: sr.ctxPath, OutputPath: sr.outPath, Inputs: sp.Inputs, Review: sp.Review, Automated: true,
		Workflow: sp.Workflow, Phase: sp.Phase, Body: ir.task.Body, Inline: inline, Payload: sp.PayloadJSON,
		Note: sp.Note, Signature: sp.Signature}
	if sp.Role == roleJudge {
		sr.rubric = e.rubric(sp.Work)
		data.Rubric = rubricLines(sr.rubric)
	}
	if !inline && taskFile == "" && ir.task.Body != "" {
		// An agent that reads files reads the item's text from one file
		// beside its context file (readable under the sandbox too), not
		// from a copy in every step's prompt.
		data.ItemFile = filepath.Join(filepath.Dir(sr.ctxPath), itemTextFile)
		// Written once per item: rewritten only when missing or changed
		// (an agent may have edited it), not at every step.
		text := []byte(itemText(ir.task.Body))
		if old, err := safefile.ReadFile(ir.outDir, data.ItemFile); err != nil || !bytes.Equal(old, text) {
			if err := writeStepFile(ir.outDir, data.ItemFile, text); err != nil {
				return agentOut{}, true, err
			}
		}
	}
	if inline {
		for _, in := range sp.Inputs {
			// An input is an earlier agent's output: a link there would
			// send a host file to the model in this prompt.
			text, err := readText(ir.outDir, in)
			if errors.Is(err, safefile.ErrUnsafe) {
				return agentOut{failure: fmt.Sprintf("input %s refused: %v", in, err)}, true, nil
			}
			data.InputTexts = append(data.InputTexts, text)
		}
	}
	sr.prompt, err = e.d.Roles.RenderParts(sp.Role, data)
	if err != nil {
		return agentOut{failure: err.Error()}, true, nil
	}
	// Kept beside the step's other files: what the agent was asked is part
	// of its record (the board shows it), instructions included.
	if err := promptlog.Append(ir.outDir, stepStem(ir.it.ID, sp.ID), sr.prompt.Whole()); err != nil {
		return agentOut{}, true, err
	}
	return agentOut{}, false, nil
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

// attemptOutput is the output file of one attempt of a step whose files
// are named after first: first's name with a token no earlier process
// could know, never the last attempt's (last). A process an earlier
// attempt or step left behind (one that left its process group, where no
// sandbox ends it with the step) cannot write this attempt's result, as it
// could a name made of the step id and a try number. The token begins
// with the time, so an item's outputs list in the order they were made.
// The journal records the name with the step.
func attemptOutput(first, last string) string {
	stem := strings.TrimSuffix(first, ".md")
	for {
		var b [8]byte
		_, _ = rand.Read(b[:]) // crypto/rand never fails on Linux
		p := fmt.Sprintf("%s.%016x%s.md", stem, uint64(time.Now().UnixNano()), hex.EncodeToString(b[:]))
		if p != last {
			return p
		}
	}
}
