package engine

import (
	"fmt"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// stderrLead introduces, at the end of a step's failure, the last line of
// the agent's stderr: the part of a failure that is the agent's text, not
// cadre's, and so is said on the terminal and in the journal but never on
// the code host (publicReason).
const stderrLead = "; its stderr ends: "

// stderrNote is the failure's note of an agent's stderr: its last line, at
// most 200 bytes of its end, after stderrLead; "" when it printed nothing.
// tail must be masked already: cutting it could hide a secret's spelling
// from a mask applied after.
func stderrNote(tail string) string {
	s := strings.TrimSpace(tail)
	if s == "" {
		return ""
	}
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	if len(s) > 200 {
		i := len(s) - 200
		for i < len(s) && !utf8.RuneStart(s[i]) {
			i++
		}
		s = s[i:]
	}
	return stderrLead + s
}

// publicReason is an item's failure as cadre says it on the code host:
// masked, without the agent's stderr, the repository's own paths relative
// to it (the host's layout is nobody's business), on one line.
func (e *Engine) publicReason(reason string) string {
	reason = e.d.Mask.String(reason)
	if i := strings.Index(reason, stderrLead); i >= 0 {
		reason = reason[:i]
	}
	if e.d.Root != "" {
		reason = strings.ReplaceAll(reason, strings.TrimSuffix(e.d.Root, "/")+"/", "")
	}
	return oneLine(reason)
}

// logPointer says where an item's step logs are, for a comment on its
// issue: relative to the repository, on the machine that ran cadre.
func (e *Engine) logPointer(ir *itemRun) string {
	dir := filepath.Join(ir.outDir, "logs")
	if rel, err := filepath.Rel(e.d.Root, dir); err == nil && !strings.HasPrefix(rel, "..") {
		dir = rel
	}
	return fmt.Sprintf("The steps' logs are in `%s/` where cadre ran; `cadre status %s` gives the run's account.", dir, ir.run)
}
