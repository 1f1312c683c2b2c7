package engine

import (
	"context"
	"fmt"

	"github.com/cadre-dev/cadre/internal/replica"
)

// Items of a run on workers of other machines keep their journal in a
// replica (package replica): the engine's steps run against it unchanged,
// and what they change there is taken as a batch for the journal of truth.

// Replica is this engine's journal as the home of items run elsewhere and
// as a worker's replica of them.
func (e *Engine) Replica() *replica.Journal { return e.rep }

// TakeBatch takes what the item's steps changed in this replica since the
// item was hydrated or last taken (replica.Journal.Take), numbered one
// after the replica's last.
func (s *ItemSteps) TakeBatch(ctx context.Context) (replica.Batch, error) {
	ir := s.ir
	// The task file's frontmatter is written in the background.
	if err := ir.board.Flush(); err != nil {
		return replica.Batch{}, fmt.Errorf("take batch of item %s: %w", ir.it.ID, err)
	}
	return s.e.rep.Take(ctx, ir.run, ir.it.ID, ir.outDir, ir.it.Ref)
}
