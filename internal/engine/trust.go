package engine

import (
	"strings"

	"github.com/cadre-dev/cadre/internal/store"
)

// trustsRepo says whether an item's tree may keep the configuration that
// makes programs run (sandbox.trust_repo): an issue counts as from a
// stranger unless github.authors names its author, and an issue item whose
// record cannot be read is treated as one.
func (e *Engine) trustsRepo(it store.Item) bool {
	stranger := false
	if it.Source == "github" {
		stranger = true
		if is, ok := e.issueOf(it); ok && is.Author != "" {
			for _, a := range e.d.Config.GitHub.Authors {
				if strings.EqualFold(a, is.Author) {
					stranger = false
				}
			}
		}
	}
	return e.d.Config.Sandbox.TrustsRepo(stranger)
}
