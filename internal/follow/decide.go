// Package follow follows the pull requests cadre opened until they are
// merged or closed: it reads where each stands, decides the one thing to
// do next (Decide, pure) and performs it as journaled steps of the item
// that opened it (Follower), so a crash in the middle of a reaction is
// taken up where it stopped and nothing is done twice.
package follow

import (
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
	Pending   bool // some check has not finished
	Checked   bool // the head has a check or status at all
	Approved  bool // approved, no change request outstanding
	Changes   []Review
	Comments  []Comment
}

// Past is what the journal says was done for the item already.
type Past struct {
	// Rounds counts each reaction's rounds so far, granted ones
	// subtracted (a human's approve gives a reaction its rounds again).
	Rounds map[Kind]int
	// Heads are the head commits a ci_failed reaction already answered:
	// their checks are not acted on twice.
	Heads map[string]bool
	// Reviews and Comments are those already answered.
	Reviews  map[int64]bool
	Comments map[int64]bool
}

// Action is what to do next.
type Action struct {
	Do   Do
	Kind Kind // for React and Pause
	// Feedback is what the reaction's fix-surgeon gets, for React.
	Feedback Feedback
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
// checks, requested changes; a reaction out of rounds asks a human;
// else merge when configured, approved, green and mergeable; else wait.
func Decide(v View, p Past, cfg config.Follow) Action {
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
		if p.Rounds[k] >= Rounds(cfg, k) {
			return Action{Do: Pause, Kind: k, Feedback: fb}
		}
		return Action{Do: React, Kind: k, Feedback: fb}
	}
	if cfg.Merge != "" && cfg.Merge != config.MergeOff && v.Approved && !v.Pending && len(v.Failed) == 0 &&
		len(v.Changes) == 0 && v.Mergeable != nil && *v.Mergeable {
		return Action{Do: Merge}
	}
	return Action{Do: Wait}
}

// need says whether v calls for reaction k that p has not answered yet,
// and with what feedback.
func need(v View, p Past, k Kind) (Feedback, bool) {
	fb := Feedback{Kind: k, Head: v.Head}
	switch k {
	case Conflict:
		if v.Mergeable == nil || *v.Mergeable {
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
