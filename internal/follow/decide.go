// Package follow follows the pull requests cadre opened until they are
// merged or closed: it reads where each stands, decides the one thing to
// do next (Decide, pure) and performs it as journaled steps of the item
// that opened it (Follower), so a crash in the middle of a reaction is
// taken up where it stopped and nothing is done twice.
package follow

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cadre-dev/cadre/internal/config"
)

// Kind is a reaction: what cadre does about a pull request that cannot be
// merged as it stands.
type Kind string

// The reactions, as follow: in cadre.yaml names them.
const (
	CIFailed         Kind = "ci_failed"         // a check on the head failed
	ChangesRequested Kind = "changes_requested" // a reviewer asked for changes
	Conflict         Kind = "conflict"          // the head no longer merges with the base
)

// Check is a check run or commit status of the head that failed. Its
// texts come from CI: untrusted.
type Check struct {
	Name       string `json:"name"`
	Conclusion string `json:"conclusion"`
	Summary    string `json:"summary"`
	LogTail    string `json:"log_tail,omitempty"`
	// Text is the check run's own output.text (its last lines): where CI
	// apps other than Actions put their details.
	Text string `json:"text,omitempty"`
	// JobID is the GitHub Actions job whose log the tail is read from.
	JobID int64 `json:"-"`
}

// Comment is a review comment a reviewer left on a line. Untrusted.
type Comment struct {
	ID     int64  `json:"id"`
	Path   string `json:"path"`
	Line   int    `json:"line"`
	Author string `json:"author"`
	Body   string `json:"body"`
}

// Review is a review asking for changes. Untrusted.
type Review struct {
	ID     int64  `json:"-"`
	Author string `json:"author"`
	Body   string `json:"body"`
}

// View is a pull request as a poll saw it, its reviews and comments
// already narrowed to the permitted reviewers'.
type View struct {
	State     string // open, merged or closed
	Head      string // the head commit
	Base      string // the base branch
	Title     string // what a squash merge's commit is titled
	Mergeable *bool  // nil while GitHub computes it
	Failed    []Check
	Pending   bool     // some check is queued or in progress
	Running   []string // the names of those, where known
	Checked   bool     // the head has a check or status at all
	Passed    []string // the checks of the head that succeeded
	// BaseNeeded says the code host merges the head only once the base is
	// in it and could not bring it in itself (a GitLab project that merges
	// fast-forward only, whose rebase failed): the conflict reaction
	// merges the base in, however cleanly it merges.
	BaseNeeded bool
	// Required are the checks the base's protection requires, as far as
	// they can be read.
	Required []string
	Approved bool // approved, no change request outstanding
	// ApprovedHead says a standing approval is of the head commit itself,
	// not an earlier one.
	ApprovedHead bool
	Changes      []Review
	Comments     []Comment
}

// Past is what the journal says was done for the item already.
type Past struct {
	// Rounds counts each reaction's rounds so far, granted ones
	// subtracted (a human's approve gives a reaction its rounds again).
	Rounds map[Kind]int
	// Heads are the head commits a ci_failed reaction already answered:
	// no head gets two rounds.
	Heads map[string]bool
	// Reviews and Comments are those already answered.
	Reviews  map[int64]bool
	Comments map[int64]bool
	// Failed holds, by Feedback.Key, why a round on that very input
	// failed: the same input is not tried again without a human.
	Failed map[string]string
}

// Action is what to do next.
type Action struct {
	Do   Do
	Kind Kind // for React and Pause
	// Feedback is what the reaction's fix-surgeon gets, for React.
	Feedback Feedback
	// Why says, for Pause, what the human is asked about; for Wait, why
	// a pull request that could be merged is not (follow.merge off, an
	// approval of an earlier commit…), "" when nothing is in question.
	Why string
}

// Do is an action's verb.
type Do string

const (
	Wait   Do = "wait"   // nothing to do now
	React  Do = "react"  // run the reaction Kind
	Pause  Do = "pause"  // Kind is out of rounds: ask a human
	Merge  Do = "merge"  // approved and green: merge
	Merged Do = "merged" // the pull request was merged: end the item
	Closed Do = "closed" // closed unmerged: end the item
)

// NoChecks is the kind of a pause for a head that no check reported on
// within follow.checks_timeout.
const NoChecks Kind = "no_checks"

// Feedback is a reaction's input, as fix-surgeon's context file has it
// (payload.feedback).
type Feedback struct {
	Kind     Kind      `json:"kind"`
	Head     string    `json:"head,omitempty"` // the head it answers
	Checks   []Check   `json:"checks,omitempty"`
	Comments []Comment `json:"comments,omitempty"`
	Review   *Review   `json:"review,omitempty"`
	Reviews  []int64   `json:"reviews,omitempty"` // the change requests it answers
	Base     *BaseRef  `json:"base,omitempty"`
	// Conflicted are the files merging the base left conflicted.
	Conflicted []string `json:"conflicted,omitempty"`
	// Note is what a person said when granting more rounds (cadre
	// approve --note), given to fix-surgeon as said.
	Note string `json:"note,omitempty"`
}

// Key names the feedback's input: a round that failed on it is not
// tried on the same input again. A ci_failed round's is its head alone:
// no head gets two rounds, whichever of its checks failed.
func (fb Feedback) Key() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s@%s", fb.Kind, fb.Head)
	switch fb.Kind {
	case ChangesRequested:
		for _, id := range fb.Reviews {
			fmt.Fprintf(&b, " r%d", id)
		}
		for _, c := range fb.Comments {
			fmt.Fprintf(&b, " c%d", c.ID)
		}
	case Conflict:
		if fb.Base != nil {
			b.WriteString(" " + fb.Base.SHA)
		}
	}
	return b.String()
}

// BaseRef is the base branch a conflict reaction merges in.
type BaseRef struct {
	Branch string `json:"branch"`
	SHA    string `json:"sha,omitempty"`
}

// Rounds is how many rounds cfg gives reaction k.
func Rounds(cfg config.Follow, k Kind) int {
	switch k {
	case CIFailed:
		return cfg.CIFailed.Rounds
	case ChangesRequested:
		return cfg.ChangesRequested.Rounds
	case Conflict:
		return cfg.Conflict.Rounds
	}
	return 0
}

// Decide is the one thing to do next for a pull request: end the item
// when it was merged or closed; else the first reaction it needs, in the
// order conflict (CI may not even run on a conflicted head), failed
// checks, requested changes; a reaction out of rounds, or whose last
// round failed on this very input, asks a human, and so does a head
// without checks past follow.checks_timeout (unchecked: how long it has
// been without); else merge when the gate (mergeGate) lets it; else wait.
// base is the base's commit now, for a conflict's input.
func Decide(v View, p Past, cfg config.Follow, base string, unchecked time.Duration) Action {
	switch v.State {
	case "merged":
		return Action{Do: Merged}
	case "closed":
		return Action{Do: Closed}
	}
	for _, k := range []Kind{Conflict, CIFailed, ChangesRequested} {
		fb, ok := need(v, p, k)
		if !ok {
			continue
		}
		if k == Conflict {
			fb.Base.SHA = base
		}
		if why, failed := p.Failed[fb.Key()]; failed {
			return Action{Do: Pause, Kind: k, Feedback: fb, Why: fmt.Sprintf("%s's last round on this input failed (%s)", k, why)}
		}
		if p.Rounds[k] >= Rounds(cfg, k) {
			return Action{Do: Pause, Kind: k, Feedback: fb, Why: fmt.Sprintf("%s is out of rounds (%d)", k, Rounds(cfg, k))}
		}
		return Action{Do: React, Kind: k, Feedback: fb}
	}
	if !v.Checked && !cfg.MergeWithoutChecks && unchecked >= time.Duration(cfg.ChecksTimeout) && cfg.ChecksTimeout > 0 {
		return Action{Do: Pause, Kind: NoChecks,
			Why: fmt.Sprintf("no check reported on the head %s within follow.checks_timeout (%s)", Short(v.Head), time.Duration(cfg.ChecksTimeout))}
	}
	if ok, why := mergeGate(v, cfg); !ok {
		return Action{Do: Wait, Why: why}
	}
	return Action{Do: Merge}
}

// mergeGate says whether v may be merged now, and why not: merging is
// on; a counted reviewer approved (the head itself, unless
// follow.stale_approvals) and no change request stands; the head has a
// check (unless follow.merge_without_checks), none pending or failed, and
// each required one succeeded; it merges cleanly. Only an approved pull
// request is given a reason: one nobody approved is simply waiting.
func mergeGate(v View, cfg config.Follow) (bool, string) {
	if !v.Approved || len(v.Changes) > 0 {
		return false, ""
	}
	var missing []string
	for _, name := range append(append([]string(nil), v.Required...), cfg.RequiredChecks...) {
		if !slices.Contains(v.Passed, name) && !slices.Contains(missing, name) {
			missing = append(missing, name)
		}
	}
	why := ""
	switch {
	case v.Pending:
		why = "checks of the head are still running"
	case len(v.Failed) > 0:
		why = "a check of the head failed"
	case !v.Checked && !cfg.MergeWithoutChecks:
		why = "no check has reported on the head yet (follow.merge_without_checks)"
	case len(missing) > 0:
		why = "required checks have not succeeded on the head: " + strings.Join(missing, ", ")
	case !v.ApprovedHead && !cfg.StaleApprovals:
		why = "the approval is of an earlier commit, not the head (follow.stale_approvals)"
	case v.Mergeable == nil:
		why = "the code host has not yet said whether it merges cleanly"
	case !*v.Mergeable:
		why = "it does not merge cleanly"
	case cfg.Merge == "" || cfg.Merge == config.MergeOff:
		why = "approved and green, but follow.merge is off"
	}
	return why == "", why
}

// need says whether v calls for reaction k that p has not answered yet,
// and with what feedback.
func need(v View, p Past, k Kind) (Feedback, bool) {
	fb := Feedback{Kind: k, Head: v.Head}
	switch k {
	case Conflict:
		if !v.BaseNeeded && (v.Mergeable == nil || *v.Mergeable) {
			return fb, false
		}
		fb.Base = &BaseRef{Branch: v.Base}
		return fb, true
	case CIFailed:
		if len(v.Failed) == 0 || p.Heads[v.Head] {
			return fb, false
		}
		fb.Checks = v.Failed
		return fb, true
	case ChangesRequested:
		for _, r := range v.Changes {
			if !p.Reviews[r.ID] {
				fb.Reviews = append(fb.Reviews, r.ID)
				if fb.Review == nil {
					r := r
					fb.Review = &r
				}
			}
		}
		for _, c := range v.Comments {
			if !p.Comments[c.ID] {
				fb.Comments = append(fb.Comments, c)
			}
		}
		return fb, fb.Review != nil || len(fb.Comments) > 0
	}
	return fb, false
}
