package workflow

import (
	"fmt"
	"strings"

	"github.com/cadre-dev/cadre/internal/signal"
)

// Reviewing roles judge work rather than do it. Their verdict gates in every
// workflow: a rejection sends the work back or ends the item, and is never
// committed as done. A reviewer's FAIL is a verdict, not a failure to do its
// job.
var Reviewing = []string{"auditor", "code-reviewer", "critic", "gatekeeper", "judge", "verifier", "tester", "comparator"}

// IsReviewing says whether role's verdict gates.
func IsReviewing(role string) bool { return contains(Reviewing, role) }

// verdictOnly are the reviewing agents whose work is their verdict alone:
// they read the work under review and never change it (a tester's tests
// are work).
var verdictOnly = []string{"auditor", "code-reviewer", "critic", "judge", "verifier", "comparator"}

// ChangesNothing says whether role's agent must leave the item's tree as
// it found it: what it edits is not the item's work.
func ChangesNothing(role string) bool { return contains(verdictOnly, role) }

// Rejection says why a reviewing role's signal rejects the work, or "" when
// it accepts it: Result FAIL or INSUFFICIENT, Verdict needs-fixes, or a
// Rating below passRating reject. A role that does not review never rejects.
func Rejection(role string, s signal.Signal, passRating int) string {
	if !IsReviewing(role) {
		return ""
	}
	var why []string
	switch s.Result {
	case signal.Fail, signal.Insufficient:
		why = append(why, "Result "+string(s.Result))
	}
	if s.Verdict == signal.VerdictNeedsFixes {
		why = append(why, "Verdict "+s.Verdict)
	}
	if s.Rating != nil && *s.Rating < passRating {
		why = append(why, fmt.Sprintf("Rating %d/10 (pass is %d)", *s.Rating, passRating))
	}
	if len(why) == 0 {
		return ""
	}
	msg := fmt.Sprintf("%s rejected the work: %s", role, strings.Join(why, ", "))
	if s.LoopSummary != "" {
		msg += ": " + s.LoopSummary
	}
	return msg
}

// Escalation says why an agent's signal asks for a human, or "" when it
// does not: Confidence below the threshold, Result
// CLARIFICATION_NEEDED, or Next: Human.
func Escalation(role string, s signal.Signal, below int) string {
	switch {
	case s.Result == signal.ClarificationNeeded:
		return fmt.Sprintf("%s needs clarification: %s", role, firstNonEmpty(s.Context, s.LoopSummary))
	case s.Confidence != nil && *s.Confidence < below:
		return fmt.Sprintf("%s's confidence %d is below %d", role, *s.Confidence, below)
	case strings.EqualFold(strings.TrimSpace(s.Next), "human"):
		return fmt.Sprintf("%s asks a human to decide (Next: Human): %s", role, firstNonEmpty(s.LoopSummary, s.Context))
	}
	return ""
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s = strings.TrimSpace(s); s != "" {
			if i := strings.IndexByte(s, '\n'); i >= 0 {
				s = s[:i]
			}
			return s
		}
	}
	return "(no reason given)"
}
