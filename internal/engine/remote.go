package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/executor"
	"github.com/cadre-dev/cadre/internal/remote"
	"github.com/cadre-dev/cadre/internal/workspace"
)

// isRemoteErr says whether err is a remote item's failed fetch or push:
// the step is retried (the remote may be back, another worker may take
// it) rather than failing the item.
func isRemoteErr(err error) bool { return remote.IsErr(err) }

// checkRemote refuses a remote this repository does not have, and a run
// in place, whose items have no worktree to move between machines: a
// person must fix either (executor.ErrPermanent).
func (e *Engine) checkRemote(ctx context.Context, opts Options, name string) error {
	if opts.InPlace {
		return executor.Permanent(errors.New("its items work in place: only items in worktrees can work through a remote"))
	}
	if strings.HasPrefix(name, "-") {
		return executor.Permanent(fmt.Errorf("remote %q is not a remote's name", name))
	}
	if _, err := e.repo.Git(ctx, "remote", "get-url", name); err != nil {
		err = fmt.Errorf("remote %q: %w (add it with git remote add)", name, err)
		if ctx.Err() != nil {
			return err // git was cut short, not refused
		}
		return executor.Permanent(err)
	}
	return nil
}

// remoteAuther is a Forge whose credential goes with the requests to the
// remote: it returns the URL to use (the remote's, read once) and the
// header, or remote itself and "" when the remote takes none from it.
type remoteAuther interface {
	RemoteAuth(ctx context.Context, dir, remote string) (target, header string, err error)
}

// remoteItem is what this process knows of ir's branch travelling through
// the git remote name.
func (e *Engine) remoteItem(ir *itemRun, name string) *remote.Item {
	d := &remote.Deps{Store: e.d.Store, Repo: e.repo, Worktrees: e.wts, Base: e.d.Config.BaseBranch,
		Crash: func(point string) { e.d.Crash(point) }, // read when called: tests replace it
		Warn:  e.warnItem, Mask: e.commitMask()}
	if ra, ok := e.d.Forge.(remoteAuther); ok {
		d.Auth = func(ctx context.Context, name string) (string, string, error) {
			return ra.RemoteAuth(ctx, e.d.Root, name)
		}
	}
	return remote.New(d, name, ir.run, ir.it.ID, func() *workspace.Repo { return ir.repo }, &ir.gitMu)
}

// committedBefore returns the commit of step mark the item's tree has,
// "" when none, for a commit step about to commit; tried says the
// journal has the step started before. A remote item's tree is brought to
// what other workers pushed first, and searched whenever its head came
// from the remote (see remote.Item.Ready). The caller holds ir.gitMu.
func (e *Engine) committedBefore(ctx context.Context, ir *itemRun, mark workspace.Mark, tried bool) (string, error) {
	tried, err := ir.remote.Ready(ctx, mark, tried)
	if err != nil || !tried {
		return "", err
	}
	return ir.repo.FindStepCommit(ctx, mark)
}

// warnItem publishes a warning of item of run.
func (e *Engine) warnItem(run, item, msg string) {
	e.d.Bus.Publish(event.Event{Run: run, Item: item, Type: event.Warning, Message: msg})
}
