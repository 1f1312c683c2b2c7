package intake

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/cadre-dev/cadre/internal/item/taskfile"
	"github.com/cadre-dev/cadre/internal/report"
	"github.com/cadre-dev/cadre/internal/store"
)

// Followed is a run's refusal to start when every issue it names already
// has its pull request, open or merged: Lines say which (one per issue).
// Nothing failed; nothing ran.
type Followed struct{ Lines []string }

func (f *Followed) Error() string { return strings.Join(f.Lines, "; ") }

// prOwner is a code host that reports a head branch's pull request.
type prOwner interface {
	PRState(ctx context.Context, branch string) (found, merged, closed bool, err error)
}

// Published drops the issues whose pull request an earlier run opened and
// which is still open, or was merged: their work is done (cadre watch
// follows an open one), and a run would pay for it again. It returns the
// rest and a line for each dropped. A pull request closed unmerged is
// worked on again; one whose state cannot be read counts as open.
func (l *Loader) Published(ctx context.Context, st *store.Store, tasks []*taskfile.Task) ([]*taskfile.Task, []string, error) {
	var keep []*taskfile.Task
	var said []string
	for _, t := range tasks {
		if l.Source(t) != SourceGitHub {
			keep = append(keep, t)
			continue
		}
		rec, err := st.LastCompleted(ctx, report.PRStepID(t.ID))
		if errors.Is(err, store.ErrNotFound) {
			keep = append(keep, t)
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		pr := report.ReadPublishRecord(rec)
		state := "is open (cadre watch follows it)"
		if ps, ok := l.Forge.(prOwner); ok && pr.Branch != "" {
			found, merged, closed, err := ps.PRState(ctx, pr.Branch)
			switch {
			case err == nil && merged:
				state = "was merged"
			case err == nil && (closed || !found):
				keep = append(keep, t)
				continue
			}
		}
		said = append(said, fmt.Sprintf("%s: pull request #%d %s", t.ID, pr.Number, state))
		// Its task file was written under this run's directory: the run
		// does not take it.
		if dir := filepath.Dir(t.Path); strings.HasPrefix(dir, l.StateDir+string(filepath.Separator)) {
			os.RemoveAll(dir)
		}
	}
	return keep, said, nil
}
