package engine

import (
	"fmt"
	"path/filepath"

	"github.com/cadre-dev/cadre/internal/item/intake"
	"github.com/cadre-dev/cadre/internal/sandbox"
	"github.com/cadre-dev/cadre/internal/store"
)

// trustsRepo says whether an item's tree may keep the configuration that
// makes programs run (sandbox.trust_repo), given whether the item came
// from a stranger (intake.Stranger).
func (e *Engine) trustsRepo(it store.Item) bool {
	return e.d.Config.Sandbox.TrustsRepo(intake.Stranger(it, e.d.Config.Host().Authors))
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

// unconfinedRefusal says why item it may not run here, or "": it is
// untrusted, its confinement cannot work here (sandbox.mode auto where
// bubblewrap does not work), and sandbox.allow_unconfined does not let it
// run unconfined. An explicit sandbox.mode none is a choice to confine
// nothing, not confinement failing; mode bwrap never starts unconfined.
func (e *Engine) unconfinedRefusal(it store.Item) string {
	return e.refusesUnconfined(it.ID, e.trustsRepo(it))
}

// refusesUnconfined is unconfinedRefusal for item id of the trust given.
func (e *Engine) refusesUnconfined(id string, trusted bool) string {
	c := e.d.Config.Sandbox
	if e.d.Sandbox != nil || c.Mode != sandbox.ModeAuto || !c.RefusesUnconfined(trusted) {
		return ""
	}
	untrusted := "its author is not in " + e.d.Config.HostKey() + ".authors"
	if c.TrustRepo != nil {
		untrusted = "sandbox.trust_repo: false"
	}
	return fmt.Sprintf("item %s is untrusted (%s) and nothing would confine it (sandbox.mode auto, and bubblewrap does not work here): "+
		"make bubblewrap work here, or set sandbox.allow_unconfined: true to run it unconfined", id, untrusted)
}
