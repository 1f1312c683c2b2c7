package runner

import (
	"errors"
	"fmt"
	"time"
)

// Kind classifies why an agent backend refused or stopped a step, so the
// engine can react the same way whichever CLI or API said it.
type Kind string

// Error kinds.
const (
	KindAuth        Kind = "auth"        // missing or rejected credentials: fix config, do not retry
	KindRateLimit   Kind = "rate-limit"  // 429/529, overloaded: retry this step after a pause
	KindUnavailable Kind = "unavailable" // connection refused, nothing sent (a server starting): retry after a pause
	KindQuota       Kind = "quota"       // quota or spend limit: stop using this runner for the run
	KindTurnLimit   Kind = "turn-limit"  // the agent ran out of turns or context before finishing
	KindBackend     Kind = "backend"     // any other error the backend reported
)

// Error is a classified backend error. Runners return it (wrapped or not)
// from Run when the backend reported one; errors.As finds it.
type Error struct {
	Kind       Kind
	Runner     string
	RetryAfter time.Duration // from retry-after, when the backend gave one
	Msg        string
}

func (e *Error) Error() string {
	s := fmt.Sprintf("runner %s: %s", e.Runner, e.Kind)
	if e.Msg != "" {
		s += ": " + e.Msg
	}
	if e.RetryAfter > 0 {
		s += fmt.Sprintf(" (retry after %s)", e.RetryAfter)
	}
	return s
}

// KindOf returns the kind of a classified error in err's chain, or "".
func KindOf(err error) Kind {
	var re *Error
	if errors.As(err, &re) {
		return re.Kind
	}
	return ""
}
