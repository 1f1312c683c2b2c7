package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/cadre-dev/cadre/internal/evalstore"
	"github.com/cadre-dev/cadre/internal/runlock"
	"github.com/cadre-dev/cadre/internal/runspec"
	"github.com/cadre-dev/cadre/internal/store"
	"github.com/cadre-dev/cadre/internal/workspace"
)

// WorktreesOptions are the arguments of cadre worktrees.
type WorktreesOptions struct {
	Prune bool
	Force bool
}

// NewCmdWorktrees builds cadre worktrees list|prune.
func NewCmdWorktrees(f *Factory, runF func(context.Context, *Factory, *WorktreesOptions) error) *cobra.Command {
	run := func(opts *WorktreesOptions) func(*cobra.Command, []string) error {
		return func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(cmd.Context(), f, opts)
			}
			return runWorktrees(cmd.Context(), f, opts)
		}
	}
	listOpts, pruneOpts := &WorktreesOptions{}, &WorktreesOptions{Prune: true}
	cmd := &cobra.Command{
		Use:   "worktrees [list|prune]",
		Short: "List or prune the items' worktrees",
		Long: `Each item works in .cadre/worktrees/<item> on branch cadre/<item>-<title>. list shows
them with their branch, commits not yet in base_branch, and uncommitted files, and any other
directory there, which git does not know as a worktree, with its files.` + exitStatusSimple,
		Example: `  cadre worktrees list
  cadre worktrees prune           # remove worktrees with nothing unmerged
  cadre worktrees prune --force   # remove every worktree (branches with commits are kept)`,
		Args: cobra.NoArgs,
		RunE: run(listOpts),
	}
	prune := &cobra.Command{
		Use:   "prune [--force]",
		Short: "Remove worktrees whose work is merged or empty",
		Long: `Remove the worktrees (and branches) of items whose branch has no commit outside
base_branch and no uncommitted change, or whose pull request was merged (branch deleted) or
closed (branch kept); the pull requests are looked up when the GitHub token is set. Other
worktrees with unmerged commits or uncommitted changes are kept unless --force; even then
their branches (and commits) are kept. A directory there that git does not know as a worktree
is removed when empty, and otherwise kept and reported, even with --force: git cannot tell
whether its files are work.` + exitStatusSimple,
		Example: "  cadre worktrees prune",
		Args:    cobra.NoArgs,
		RunE:    run(pruneOpts),
	}
	prune.Flags().BoolVar(&pruneOpts.Force, "force", false, "also remove worktrees with unmerged or uncommitted work")
	cmd.AddCommand(&cobra.Command{Use: "list", Short: "List item worktrees", Args: cobra.NoArgs,
		Long: "List item worktrees." + exitStatusSimple, Example: "  cadre worktrees list", RunE: run(listOpts)}, prune)
	return cmd
}

func runWorktrees(ctx context.Context, f *Factory, opts *WorktreesOptions) error {
	ws, err := f.workspace(ctx)
	if err != nil {
		return err
	}
	repo, err := workspace.Open(ctx, ws.root)
	if err != nil {
		return usageErr(err)
	}
	wts := workspace.NewWorktrees(repo)
	list, err := wts.List(ctx, ws.cfg.BaseBranch)
	if err != nil {
		return err
	}
	if !opts.Prune {
		if len(list) == 0 {
			fmt.Fprintln(f.IO.ErrOut, "no item worktrees")
			return nil
		}
		idW, branchW := 24, 40 // wider for long names: the columns stay in line
		for _, wt := range list {
			idW, branchW = max(idW, utf8.RuneCountInString(wt.Item)), max(branchW, utf8.RuneCountInString(wt.Branch))
		}
		fmt.Fprintf(f.IO.Out, "%-*s %-*s %6s %s\n", idW, "ITEM", branchW, "BRANCH", "AHEAD", "UNCOMMITTED")
		for _, wt := range list {
			if wt.Unregistered {
				fmt.Fprintf(f.IO.Out, "%-*s %-*s %6s %s\n", idW, wt.Item, branchW, "(not a git worktree)", "-", dirtySummary(wt.Dirty))
				continue
			}
			fmt.Fprintf(f.IO.Out, "%-*s %-*s %6d %s\n", idW, wt.Item, branchW, wt.Branch, wt.Ahead, dirtySummary(wt.Dirty))
		}
		return nil
	}
	stateDir := filepath.Join(ws.root, workspace.StateDir)
	lock, err := repo.RunLock(ctx)
	if err != nil {
		return err
	}
	if h, active := runlock.Holder(lock); active {
		return usageErr(fmt.Errorf("%s is active and may be using its worktrees: stop it first", who(h, stateDir)))
	}
	if hasJournal(ws.root) {
		// A run on Temporal goes on in its workflows once the process
		// that started it is gone.
		st, err := openStore(ctx, ws.root)
		if err != nil {
			return err
		}
		run, item, _, err := runspec.DetachedTemporal(ctx, st, lock)
		st.Close()
		if err != nil {
			return err
		}
		if run != "" {
			return usageErr(fmt.Errorf("run %s is on Temporal and its item %s may still run there, in its worktree: stop it (cadre stop %s) or let it end (cadre resume %s) first", run, item, run, run))
		}
	}
	// With GitHub access, a branch whose pull request was merged or closed
	// is done with, whatever its local state.
	gh := f.newForge(ws)
	for _, wt := range list {
		if wt.Unregistered {
			if err := pruneUnregistered(f, wt); err != nil {
				return err
			}
			continue
		}
		unmerged := wt.Ahead > 0 && !wt.Merged
		if unmerged && !opts.Force && ws.cfg.Host().TokenEnv != "" && f.Getenv(ws.cfg.Host().TokenEnv) != "" {
			if found, merged, closed, err := gh.PRState(ctx, wt.Branch); err == nil && found && (merged || closed) {
				if err := wts.Remove(ctx, wt, true, merged); err != nil {
					return fmt.Errorf("prune %s: %w", wt.Item, err)
				}
				state := map[bool]string{true: "merged", false: "closed"}[merged]
				fmt.Fprintf(f.IO.ErrOut, "removed %s (pull request %s)\n", wt.Path, state)
				f.recordPullRequest(ctx, ws.root, wt.Item, merged)
				continue
			}
		}
		if (unmerged || len(wt.Dirty) > 0) && !opts.Force {
			var why []string
			if unmerged {
				why = append(why, fmt.Sprintf("%d unmerged commit(s)", wt.Ahead))
			}
			if len(wt.Dirty) > 0 {
				why = append(why, "uncommitted changes in "+dirtySummary(wt.Dirty))
			}
			fmt.Fprintf(f.IO.ErrOut, "kept %s: %s (use --force)\n", wt.Item, strings.Join(why, ", "))
			continue
		}
		if err := wts.Remove(ctx, wt, opts.Force, !unmerged); err != nil {
			return fmt.Errorf("prune %s: %w", wt.Item, err)
		}
		fmt.Fprintf(f.IO.ErrOut, "removed %s\n", wt.Path)
	}
	return nil
}

// pruneUnregistered removes a directory of the worktrees directory that
// git does not know when it holds nothing, and otherwise keeps it, even
// with --force, saying what to do: git cannot tell whether its files are
// work, so only the user can decide to delete them.
func pruneUnregistered(f *Factory, wt workspace.Worktree) error {
	if len(wt.Dirty) == 0 {
		os.Remove(filepath.Join(wt.Path, ".git")) // a pointer to a registration that is gone
		if err := os.Remove(wt.Path); err != nil {
			return fmt.Errorf("prune %s: %w", wt.Item, err)
		}
		fmt.Fprintf(f.IO.ErrOut, "removed %s (an empty directory git did not know)\n", wt.Path)
		return nil
	}
	fmt.Fprintf(f.IO.ErrOut, "kept %s: %s is not a git worktree, and holds %s: copy out what you need, then delete it (rm -rf %s)\n",
		wt.Item, wt.Path, dirtySummary(wt.Dirty), wt.Path)
	return nil
}

func dirtySummary(paths []string) string {
	switch len(paths) {
	case 0:
		return "-"
	case 1, 2, 3:
		return strings.Join(paths, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(paths[:3], ", "), len(paths)-3)
}

// recordPullRequest tells the score store what became of an item's pull
// request; a failure to record is reported, and loses no work.
func (f *Factory) recordPullRequest(ctx context.Context, root, item string, merged bool) {
	if !hasJournal(root) {
		return
	}
	st, err := openStore(ctx, root)
	if err == nil {
		defer st.Close()
		_, err = evalstore.RecordPullRequest(ctx, st, item, merged)
	}
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		fmt.Fprintf(f.IO.ErrOut, "cadre: warning: score store: %v\n", err)
	}
}
