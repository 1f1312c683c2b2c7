package cli

import (
	"context"
	"fmt"

	"github.com/cadre-dev/cadre/internal/runlock"
	"github.com/cadre-dev/cadre/internal/workspace"
)

// runLock is the run lock file of the repository whose checkout is at
// root: one for all its checkouts (see runlock).
func runLock(ctx context.Context, root string) (string, error) {
	repo, err := workspace.Open(ctx, root)
	if err != nil {
		return "", usageErr(err)
	}
	return repo.RunLock(ctx)
}

// holder is the live run holding the repository of the checkout at root,
// whichever checkout it works from; none when the lock cannot be read.
func holder(ctx context.Context, root string) (runlock.Info, bool) {
	path, err := runLock(ctx, root)
	if err != nil {
		return runlock.Info{}, false
	}
	return runlock.Holder(path)
}

// elsewhere says whether h works from another checkout than the one whose
// state directory is stateDir: its journal and stop requests are there.
func elsewhere(h runlock.Info, stateDir string) bool {
	return h.State != "" && h.State != stateDir
}

// who names the run h, and the checkout it works from when that is not
// the one whose state directory is stateDir.
func who(h runlock.Info, stateDir string) string {
	if elsewhere(h, stateDir) {
		return fmt.Sprintf("run %s (pid %d) of the checkout %s", h.Run, h.PID, h.Checkout())
	}
	return fmt.Sprintf("run %s (pid %d)", h.Run, h.PID)
}
