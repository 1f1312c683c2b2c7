package runspec

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/cadre-dev/cadre/internal/signal"
	"github.com/cadre-dev/cadre/internal/store"
	"github.com/cadre-dev/cadre/internal/workflow"
)

// ErrNotRetryable is wrapped when cadre retry names an item that did not
// fail or stop: there is nothing to go on from.
var ErrNotRetryable = errors.New("nothing to retry")

// A retry gives a failed or hard-stopped item its attempts again, in the
// same run: its completed steps stay journaled and are replayed, and the
// decisions that had used the attempts up now find more (the pipeline's
// max_attempts, once more per retry). Each retry is a completed step of
// kind retry in the journal, so every process reading the run, and every
// resume, sees the same grant.
//
// A working agent whose FAIL ended the item is asked again: the retry
// names it (retryRecord), and its step runs anew under the id
// AgainID(step, n), n the retry's number, while the FAIL stays journaled
// under its own. (A step the journal holds failed runs again anyway.)
const kindRetry = "retry"

// retryRecord is a retry step's result: the steps whose agents it asks
// again, by the id of their first attempt.
type retryRecord struct {
	Again []string `json:"again,omitempty"`
}

// GrantRetry journals a retry of item in run and makes the item pending
// again, its reason cleared, for the next resume of the run to take up.
// A retry asked of a watch (AskRetry) is the one it grants. The engine
// grants the retries a resume carries (Overrides.Retry) once it holds the
// run lock, so a retry refused the lock changes nothing.
func GrantRetry(ctx context.Context, st *store.Store, run, item string) error {
	rec, steps, err := retryStep(ctx, st, run, item)
	if err != nil {
		return err
	}
	if again := endingFailures(steps); len(again) > 0 {
		rec.Result, _ = json.Marshal(retryRecord{Again: again})
	}
	if err := st.StartStep(ctx, rec); err != nil {
		return fmt.Errorf("journal the retry of item %s: %w", item, err)
	}
	rec.Status = store.StepCompleted
	if err := st.FinishStep(ctx, rec); err != nil {
		return fmt.Errorf("journal the retry of item %s: %w", item, err)
	}
	pending, none := store.ItemPending, ""
	if err := st.UpdateItem(ctx, run, item, store.ItemUpdate{Status: &pending, Error: &none}); err != nil {
		return fmt.Errorf("journal the retry of item %s: %w", item, err)
	}
	return nil
}

// CheckRetry says whether item of run can be retried (ErrNotRetryable if
// not), changing nothing.
func CheckRetry(ctx context.Context, st *store.Store, run, item string) error {
	_, _, err := retryStep(ctx, st, run, item)
	return err
}

// AskRetry journals that cadre retry asked for a retry of item in run
// while a watch holds the repository: the retry's step, started, which
// the watch takes up at its next pass (Asked) and the engine completes
// when it grants the retry; the item is left as it is. Asking again
// before then changes nothing (asked: false).
func AskRetry(ctx context.Context, st *store.Store, run, item string) (asked bool, err error) {
	rec, _, err := retryStep(ctx, st, run, item)
	if err != nil {
		return false, err
	}
	if prev, err := st.GetStep(ctx, run, rec.ID); err == nil && prev.Status == store.StepStarted {
		return false, nil
	}
	if err := st.StartStep(ctx, rec); err != nil {
		return false, fmt.Errorf("journal the retry asked of item %s: %w", item, err)
	}
	return true, nil
}

// Asked lists the retries asked (AskRetry) and not yet granted, across
// every run, oldest first: each step's RunID and ItemID name the item.
func Asked(ctx context.Context, st *store.Store) ([]store.Step, error) {
	return st.StartedOfKind(ctx, kindRetry)
}

// Drop ends the asked retry s that cannot be granted (the item is no
// longer failed, say), with why: no one takes it up again.
func Drop(ctx context.Context, st *store.Store, s store.Step, why error) error {
	s.Status, s.Error, s.EndedAt = store.StepFailed, why.Error(), nil
	if err := st.FinishStep(ctx, s); err != nil {
		return fmt.Errorf("journal the retry of item %s: %w", s.ItemID, err)
	}
	return nil
}

// retryStep is the journal record of the next retry of item in run and
// the item's steps, or ErrNotRetryable when the item did not fail or stop.
func retryStep(ctx context.Context, st *store.Store, run, item string) (store.Step, []store.Step, error) {
	it, err := st.GetItem(ctx, run, item)
	if err != nil {
		return store.Step{}, nil, fmt.Errorf("%w: %w", ErrNotRetryable, err)
	}
	if it.Status != store.ItemFailed && it.Status != store.ItemStopped {
		return store.Step{}, nil, fmt.Errorf("%w: item %s of run %s is %s", ErrNotRetryable, item, run, it.Status)
	}
	steps, err := st.ItemSteps(ctx, run, item)
	if err != nil {
		return store.Step{}, nil, fmt.Errorf("item %s: %w", item, err)
	}
	n := retries(steps)
	return store.Step{RunID: run, ItemID: item, ID: fmt.Sprintf("%s/retry#%d", item, n+1), Kind: kindRetry}, steps, nil
}

// Grants are the retries the journal grants an item.
type Grants struct {
	N int // how many
	// Again maps the first attempt's id of each step a retry asks again
	// to the id of its latest attempt (AgainID).
	Again map[string]string
}

// Step is the id under which the step whose first attempt is id runs now:
// id itself unless a retry asked its agent again.
func (g Grants) Step(id string) string {
	if again, ok := g.Again[id]; ok {
		return again
	}
	return id
}

// Granted reads the retries the journal grants item in run.
func Granted(ctx context.Context, st *store.Store, run, item string) (Grants, error) {
	steps, err := st.ItemSteps(ctx, run, item)
	if err != nil {
		return Grants{}, fmt.Errorf("item %s: %w", item, err)
	}
	var g Grants
	for _, s := range steps {
		if s.Kind != kindRetry || s.Status != store.StepCompleted {
			continue
		}
		g.N++
		var rec retryRecord
		if len(s.Result) > 0 {
			if err := json.Unmarshal(s.Result, &rec); err != nil {
				return Grants{}, fmt.Errorf("item %s: retry %s: %w", item, s.ID, err)
			}
		}
		for _, id := range rec.Again {
			if g.Again == nil {
				g.Again = map[string]string{}
			}
			g.Again[id] = AgainID(id, g.N)
		}
	}
	return g, nil
}

// retries counts the completed retry steps among steps.
func retries(steps []store.Step) int {
	n := 0
	for _, s := range steps {
		if s.Kind == kindRetry && s.Status == store.StepCompleted {
			n++
		}
	}
	return n
}

// AgainID is the id of the attempt that retry n makes of the step whose
// first attempt is id.
func AgainID(id string, n int) string { return id + "/retry" + strconv.Itoa(n) }

// againSuffix is AgainID's part after the first attempt's id.
var againSuffix = regexp.MustCompile(`/retry[0-9]+$`)

// endingFailures are the agent steps among an item's steps (in the order
// they were started) whose FAIL ended it, by their first attempt's id: a
// working role's FAIL (a reviewer's is a verdict on the work, which the
// attempts a retry grants answer), after which no other step of the item
// started. A FAIL the workflow went on from (a loop's round, a phase that
// is not critical) is part of the item's history, replayed as journaled.
func endingFailures(steps []store.Step) []string {
	var ids []string
	for i, s := range steps {
		if s.Kind != "agent" || s.Status != store.StepCompleted || s.EndedAt == nil || workflow.IsReviewing(s.Role) {
			continue
		}
		var sig signal.Signal
		if json.Unmarshal(s.Signal, &sig) != nil || sig.Result != signal.Fail {
			continue
		}
		if wentOn(s, steps[i+1:]) {
			continue
		}
		if id := againSuffix.ReplaceAllString(s.ID, ""); !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	return ids
}

// wentOn says whether the workflow went on after s: whether one of
// later, the steps first started after s, is a step of the workflow (an
// agent's, an action's, a question to a human other than about s) and was
// started once s had ended (one started before ran beside it). What cadre
// does around an item's workflow (its worktree, its comments on the
// issue, a retry) is not.
func wentOn(s store.Step, later []store.Step) bool {
	for _, l := range later {
		_, action := workflow.Actions[l.Kind]
		if !action && l.Kind != "agent" && l.Kind != "human" || strings.HasPrefix(l.ID, s.ID+"/") {
			continue
		}
		if !l.StartedAt.Before(*s.EndedAt) {
			return true
		}
	}
	return false
}
