package engine

import (
	"fmt"

	"github.com/cadre-dev/cadre/internal/safefile"
)

// outsideLinks refuses a commit whose changes hold a symbolic link
// pointing outside the item's tree. git commits a link, not what it points
// at, but the link travels in the branch and the pull request: whoever
// checks it out (a reviewer, CI, the next agent, cadre reading a file back)
// reads the host file it names. The changes are what the commit adds and
// what the item's branch made since the base (an agent may commit itself):
// workspace.Repo.Commit lists both in one diff and hands them here.
func outsideLinks(ir *itemRun) func(paths []string) error {
	return func(paths []string) error {
		for _, p := range paths {
			if target, bad := safefile.OutsideLink(ir.dir, p); bad {
				return fmt.Errorf("commit refused: %s is a symbolic link to %s, outside the worktree (remove it or point it inside)", p, target)
			}
		}
		return nil
	}
}
