package engine

import (
	"github.com/cadre-dev/cadre/internal/item/intake"
	"github.com/cadre-dev/cadre/internal/store"
)

// trustsRepo says whether an item's tree may keep the configuration that
// makes programs run (sandbox.trust_repo), given whether the item came
// from a stranger (intake.Stranger).
func (e *Engine) trustsRepo(it store.Item) bool {
	return e.d.Config.Sandbox.TrustsRepo(intake.Stranger(it, e.d.Config.GitHub.Authors))
}
