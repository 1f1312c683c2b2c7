package engine

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cadre-dev/cadre/internal/cyclelog"
	"github.com/cadre-dev/cadre/internal/eval"
	"github.com/cadre-dev/cadre/internal/safefile"
	"github.com/cadre-dev/cadre/internal/signal"
	"github.com/cadre-dev/cadre/internal/store"
	"github.com/cadre-dev/cadre/internal/workflow"
)

// gatekeep checks the work before it without a model (the gatekeeper):
// the role's built-in requirements, overridden per role in
// cadre.yaml, against the agent's output, the files changed in the item's
// tree and the project's commands. It writes a Markdown report ending with
// a SIGNAL BLOCK (PASS or FAIL, Rating = share of checks passed) so the
// next agent and the cycle log read it like any review.
func (fx *flowExec) gatekeep(ctx context.Context, c workflow.ActionCall) (signal.Signal, string, error) {
	e, ir := fx.e, fx.ir
	w := c.Work
	req := fx.e.requirements(w.Role)
	if c.Task != nil && len(c.Task.Files) > 0 && req.AllowedFiles == nil {
		req.AllowedFiles = slices.Clone(c.Task.Files)
	}
	files, err := ir.repo.Changed(ctx)
	if err != nil {
		return signal.Signal{}, "", fmt.Errorf("list changed files: %w", err)
	}
	if rel, ok := ir.taskFileInTree(); ok {
		// In place the task file is cadre's board, not the agent's work.
		files = slices.DeleteFunc(files, func(f string) bool { return f == rel })
	}
	var skipped []string
	cmds := e.d.Config.Commands.ByName()
	req.Commands = slices.DeleteFunc(slices.Clone(req.Commands), func(name string) bool {
		if strings.TrimSpace(cmds[name]) == "" {
			skipped = append(skipped, name)
			return true
		}
		return false
	})
	exits, cmdSummary, outPath, err := fx.runCommands(ctx, c.ID, req.Commands)
	if err != nil {
		return signal.Signal{}, "", err
	}
	if ctx.Err() != nil {
		return signal.Signal{}, "", ctx.Err()
	}
	res := eval.Gatekeeper{}.Validate(eval.Response{Text: w.Text, Files: files, Commands: exits}, req)
	score := res.Score()
	e.evaluate(ctx, ir, verdict{kind: store.KindGatekeeper, step: w.Step, passed: &res.Passed, score: &score,
		detail: map[string]any{"step": c.ID, "checks": res.Checks}})
	sig := signal.Signal{Agent: "gatekeeper", Result: signal.Pass, LoopSummary: res.Summary(),
		Confidence: signal.Int(10), Rating: signal.Int(int(math.Round(res.Score() * 10)))}
	var failed []string
	for _, ch := range res.Checks {
		if !ch.Passed {
			failed = append(failed, ch.Name+": "+ch.Reason)
		}
	}
	if !res.Passed {
		sig.Result = signal.Fail
		sig.Context = "The gatekeeper's checks failed: " + strings.Join(failed, "; ")
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Gatekeeper: %s (%s)\n\n| check | result | detail |\n| --- | --- | --- |\n", w.Role, w.Step)
	for _, ch := range res.Checks {
		mark := "pass"
		if !ch.Passed {
			mark = "FAIL"
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", ch.Name, mark, strings.ReplaceAll(ch.Reason, "|", "\\|"))
	}
	if len(skipped) > 0 {
		fmt.Fprintf(&b, "\nNot checked (no command configured in cadre.yaml): %s\n", strings.Join(skipped, ", "))
	}
	if len(req.Commands) > 0 {
		b.WriteString("\n#" + cmdSummary)
	}
	b.WriteString("\n" + signal.Format(sig))
	if err := writeStepFile(ir.outDir, outPath, []byte(b.String())); err != nil {
		return signal.Signal{}, "", err
	}
	fx.ir.cycle.Add(cyclelog.Entry{Step: c.ID, Role: "gatekeeper", Signature: fmt.Sprintf("1:%d:0", max(c.Round, 1)), Text: b.String()})
	return sig, outPath, nil
}

// requirements are the gatekeeper's requirements for role's work: the
// built-in ones with cadre.yaml's roles.<role>.requirements over them.
// After a reviewer the gatekeeper checks the work it reviewed as well as
// its verdict: that work must build and pass its tests.
func (e *Engine) requirements(role string) eval.Requirements {
	req := eval.DefaultRequirements(role)
	if workflow.ChangesNothing(role) && req.Commands == nil {
		req.Commands = []string{"build", "test"}
	}
	if over := e.d.Config.Roles[role].Requirements; over != nil {
		req = eval.Merge(req, *over)
	}
	return req
}

// taskFileInTree is the item's task file relative to the tree the agents
// work in, when it lies inside it (in place).
func (ir *itemRun) taskFileInTree() (string, bool) {
	rel, err := filepath.Rel(ir.dir, ir.task.Path)
	if err != nil || strings.HasPrefix(rel, "..") {
		return "", false
	}
	return rel, true
}

// readText reads a step file under root (the item's step directory),
// never through a link an agent planted there.
func readText(root, path string) (string, error) {
	data, err := safefile.ReadFile(root, path)
	return string(data), err
}
