package app

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/cadre-dev/cadre/internal/engine"
	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/follow"
	"github.com/cadre-dev/cadre/internal/safefile"
	"github.com/cadre-dev/cadre/internal/store"
	"github.com/cadre-dev/cadre/internal/workspace"
)

// Following is cadre watch's follower of ws's pull requests, wired to the
// engine that performs its agent steps and the journal they go in.
type Following struct {
	*follow.Follower
	Engine *engine.Engine
	Bus    *event.Bus
	// Host is the follower's code host, whose answers to conditional
	// requests are kept in the state directory between processes.
	Host Host
}

// NewFollowing wires the follower of ws's pull requests; close it with
// the returned function. say hears what it does.
func NewFollowing(ctx context.Context, ws Workspace, st *store.Store, o Options, say follow.Say) (*Following, func(), error) {
	p, err := build(ctx, ws, st, o)
	if err != nil {
		return nil, nil, err
	}
	p.host.KeepAnswersIn(filepath.Join(ws.Root, workspace.StateDir, answersFile(ws.Config)))
	repo, err := workspace.Open(ctx, ws.Root)
	if err != nil {
		p.close()
		return nil, nil, err
	}
	trees := followTrees{repo: repo, wts: workspace.NewWorktrees(repo), base: ws.Config.BaseBranch, auth: p.host.RemoteAuth}
	steps := followSteps{p.e, st}
	f := &follow.Follower{Store: st, Host: p.host, Steps: steps, Verify: steps, Trees: trees, Config: ws.Config.Follow,
		Base: ws.Config.BaseBranch, Say: say, Crash: o.Crash, Memory: fileMemory(filepath.Join(ws.Root, workspace.StateDir, "follow.json"))}
	f.Warn = func(it follow.Item, msg string) {
		p.bus.Publish(event.Event{Run: it.Run, Item: it.ID, Type: event.Warning, Message: msg})
	}
	p.host.SetWarn(func(msg string) { say(follow.Item{}, msg) })
	f.Ending = trackerEnding(p.tracker, ws.Config.Tracker.States.Done, st, f.Warn)
	f.Paused = func(ctx context.Context, it follow.Item) (bool, error) {
		rec, err := st.GetItem(ctx, it.Run, it.ID)
		if err != nil {
			return false, fmt.Errorf("journal: %w", err)
		}
		return rec.Status == store.ItemPaused, nil
	}
	f.Pause = func(ctx context.Context, it follow.Item, reason string) error {
		status := store.ItemPaused
		if err := st.UpdateItem(ctx, it.Run, it.ID, store.ItemUpdate{Status: &status, Error: &reason}); err != nil {
			return fmt.Errorf("journal: %w", err)
		}
		p.bus.Publish(event.Event{Run: it.Run, Item: it.ID, Type: event.ItemPaused, Message: reason})
		trackerPaused(ctx, p.tracker, st, it, reason, f.Warn)
		return nil
	}
	f.Unpause = func(ctx context.Context, it follow.Item) error {
		status, none := store.ItemCompleted, ""
		if err := st.UpdateItem(ctx, it.Run, it.ID, store.ItemUpdate{Status: &status, Error: &none}); err != nil {
			return fmt.Errorf("journal: %w", err)
		}
		p.bus.Publish(event.Event{Run: it.Run, Item: it.ID, Type: event.ItemResumed, Message: "a human granted more rounds"})
		return nil
	}
	return &Following{Follower: f, Engine: p.e, Bus: p.bus, Host: p.host}, p.close, nil
}

// followSteps performs a reaction's agent and commit steps through the
// engine, as steps of the item that opened the pull request.
type followSteps struct {
	e  *engine.Engine
	st *store.Store
}

func (s followSteps) Fix(ctx context.Context, it follow.Item, id, note string, fb follow.Feedback) (follow.Fixed, error) {
	agent, visit, commit, err := follow.FixCalls(ctx, s.st, it, id, note, fb)
	if err != nil {
		return follow.Fixed{}, err
	}
	rs, err := s.e.OpenRun(ctx, it.Run)
	if err != nil {
		return follow.Fixed{}, err
	}
	is, err := rs.OpenItem(ctx, it.ID)
	if err != nil {
		return follow.Fixed{}, err
	}
	defer is.Close()
	out, err := is.Agent(ctx, agent, visit)
	if err != nil {
		return follow.Fixed{}, err
	}
	if follow.Commits(out) {
		if _, err := is.Action(ctx, commit); err != nil {
			return follow.Fixed{}, err
		}
	}
	return follow.FixedOf(ctx, s.st, it, id, out)
}

// Verify runs follow.verify's commands in the item's tree, confined as
// its agents, as step id of the item.
func (s followSteps) Verify(ctx context.Context, it follow.Item, id string, names []string) (string, error) {
	rs, err := s.e.OpenRun(ctx, it.Run)
	if err != nil {
		return "", err
	}
	is, err := rs.OpenItem(ctx, it.ID)
	if err != nil {
		return "", err
	}
	defer is.Close()
	return is.Verify(ctx, id, names)
}

// followTrees gives followed items their worktrees.
type followTrees struct {
	repo *workspace.Repo
	wts  *workspace.Worktrees
	base string
	auth func(ctx context.Context, dir, remote string) (target, header string, err error)
}

// BaseHead fetches origin's base branch (into refs/remotes/origin/, with
// the token as a push has it) and returns its commit: git's own
// protocol, no API request.
func (t followTrees) BaseHead(ctx context.Context) (string, error) {
	remote, header, err := t.auth(ctx, t.repo.Dir, "origin")
	if err != nil {
		return "", err
	}
	heads, err := t.repo.FetchBranches(ctx, remote, header, "origin", t.base)
	if err != nil {
		return "", err
	}
	if heads[t.base] == "" {
		return "", fmt.Errorf("origin has no branch %s", t.base)
	}
	return heads[t.base], nil
}

// Mergeable merges head into base in memory (git merge-tree): whether
// they merge without conflict, as GitHub's mergeable says, at no request.
// A head not here is fetched from origin's branch first.
func (t followTrees) Mergeable(ctx context.Context, branch, head, base string) (bool, error) {
	if _, err := t.repo.Git(ctx, "cat-file", "-e", head+"^{commit}"); err != nil {
		remote, header, err := t.auth(ctx, t.repo.Dir, "origin")
		if err != nil {
			return false, err
		}
		if _, err := t.repo.FetchBranches(ctx, remote, header, "origin", branch); err != nil {
			return false, err
		}
	}
	// The branch's attributes may be a stranger's: no driver of theirs runs.
	return t.repo.Untrusted().MergesCleanly(ctx, head, base)
}

func (t followTrees) Tree(ctx context.Context, it follow.Item) (*workspace.Repo, error) {
	// Untrusted: no filter driver of the branch runs on the checkout.
	return t.wts.Ensure(ctx, it.ID, it.Branch, t.base, workspace.EnsureOptions{AllowDirty: true, Untrusted: true})
}

func (t followTrees) Remove(ctx context.Context, it follow.Item) error {
	// Merged: everything it had is in the base; squash merges leave the
	// branch unmerged to git, so it goes by force.
	return t.wts.Remove(ctx, workspace.Worktree{Item: it.ID, Path: t.wts.Path(it.ID), Branch: it.Branch}, true, true)
}

// fileMemory keeps the follower's memory of its passes in a file of the
// state directory.
type fileMemory string

func (m fileMemory) Load() ([]byte, error)  { return os.ReadFile(string(m)) }
func (m fileMemory) Save(data []byte) error { return safefile.Replace(string(m), data) }
