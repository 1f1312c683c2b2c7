package engine

import (
	"path/filepath"

	"github.com/cadre-dev/cadre/internal/item/intake"
	"github.com/cadre-dev/cadre/internal/sandbox"
	"github.com/cadre-dev/cadre/internal/store"
)

// trustsRepo says whether an item's tree may keep the configuration that
// makes programs run (sandbox.trust_repo), given whether the item came
// from a stranger (intake.Stranger).
func (e *Engine) trustsRepo(it store.Item) bool {
	return e.d.Config.Sandbox.TrustsRepo(intake.Stranger(it, e.d.Config.GitHub.Authors))
}

// itemSandbox is the run's sandbox policy as it applies to an item: an
// untrusted item's agents get the untrusted network (model-only unless
// sandbox.network says otherwise), and its build caches are its own, so
// none of its agents can plant build output another item would use; a
// trusted item shares the repository's. Nil without a sandbox.
func (e *Engine) itemSandbox(ir *itemRun) *sandbox.Policy {
	if e.d.Sandbox == nil {
		return nil
	}
	dir := filepath.Join(e.StateDir(), "cache", "repo")
	if !ir.trusted {
		dir = filepath.Join(e.StateDir(), "cache", "items", ir.run, ir.it.ID)
	}
	return e.d.Sandbox.ForItem(ir.trusted, dir)
}
