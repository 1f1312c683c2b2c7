package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/cadre-dev/cadre/internal/codehost"
	"github.com/cadre-dev/cadre/internal/eval"
	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/workflow"
)

// guardSensitive makes pr a labelled draft with a warning at the top of its
// body when the item's branch changes sensitive paths (eval's default
// forbidden paths: CI workflows run with the repository's secrets, agent
// configuration steers the next agent, lockfiles pin what gets installed)
// that github.allow_sensitive does not allow. A merge button one click
// away from a workflow an agent wrote is what this prevents. When the
// changed files cannot be listed the pull request is not opened: the check
// fails closed.
func (e *Engine) guardSensitive(ctx context.Context, ir *itemRun, pr *codehost.PullRequest) error {
	out, err := ir.repo.Git(ctx, "diff", "--name-only", "-z", "--no-renames", e.baseRef(ctx)+"...HEAD", "--")
	if err != nil {
		return fmt.Errorf("list the pull request's files: %w", err)
	}
	files := strings.Split(strings.TrimRight(out, "\x00"), "\x00")
	touched := eval.Sensitive(slices.DeleteFunc(files, func(f string) bool { return f == "" }), e.d.Config.Host().AllowSensitive)
	if len(touched) == 0 {
		return nil
	}
	pr.Draft = true
	if !slices.Contains(pr.Labels, eval.SensitiveLabel) {
		pr.Labels = append(slices.Clone(pr.Labels), eval.SensitiveLabel)
	}
	pr.Body = eval.SensitiveWarning(touched) + "\n" + pr.Body
	e.publish(ir, event.Event{Type: event.Warning, Message: fmt.Sprintf("pull request opened as a draft labelled %s: it changes %s (allow with github.allow_sensitive)",
		eval.SensitiveLabel, strings.Join(touched, ", "))})
	return nil
}

// errCIDeclined is a person's no to pushing an untrusted item's CI
// configuration changes.
var errCIDeclined = errors.New("a person declined to push its changes to CI configuration")

// guardCI asks a person before an untrusted item's branch that changes CI
// configuration is pushed: a push alone can run a workflow (on: push) with
// the repository's secrets, before anyone reviews a pull request. An
// approval pushes it (its pull request a labelled draft, guardSensitive);
// a rejection pushes nothing. When the changed files cannot be listed
// nothing is pushed: the check fails closed.
func (e *Engine) guardCI(ctx context.Context, ir *itemRun) error {
	if ir.trusted {
		return nil
	}
	out, err := ir.repo.Git(ctx, "diff", "--name-only", "-z", "--no-renames", e.baseRef(ctx)+"...HEAD", "--")
	if err != nil {
		return fmt.Errorf("list the branch's files: %w", err)
	}
	files := strings.Split(strings.TrimRight(out, "\x00"), "\x00")
	ci := eval.CIConfig(slices.DeleteFunc(files, func(f string) bool { return f == "" }), e.d.Config.Host().AllowSensitive)
	if len(ci) == 0 {
		return nil
	}
	ans, err := e.askHuman(ctx, ir, workflow.HumanCall{ID: ir.it.ID + "/publish/ci-config", Kind: workflow.HumanEscalation,
		Reason: fmt.Sprintf("its branch changes CI configuration (%s), which a push alone can run: approving pushes it and opens a draft pull request, rejecting pushes nothing (github.allow_sensitive lets such changes through)",
			strings.Join(ci, ", "))})
	if err != nil {
		return err
	}
	if !ans.Approved {
		return errCIDeclined
	}
	return nil
}
