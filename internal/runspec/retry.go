package runspec

import (
	"context"
	"errors"
	"fmt"

	"github.com/cadre-dev/cadre/internal/store"
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
const kindRetry = "retry"

// GrantRetry journals a retry of item in run and makes the item pending
// again, its reason cleared, for the next resume of the run to take up.
func GrantRetry(ctx context.Context, st *store.Store, run, item string) error {
	it, err := st.GetItem(ctx, run, item)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrNotRetryable, err)
	}
	if it.Status != store.ItemFailed && it.Status != store.ItemStopped {
		return fmt.Errorf("%w: item %s of run %s is %s", ErrNotRetryable, item, run, it.Status)
	}
	n, err := Retries(ctx, st, run, item)
	if err != nil {
		return err
	}
	rec := store.Step{RunID: run, ItemID: item, ID: fmt.Sprintf("%s/retry#%d", item, n+1), Kind: kindRetry}
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

// Retries counts the retries the journal grants item in run.
func Retries(ctx context.Context, st *store.Store, run, item string) (int, error) {
	steps, err := st.ItemSteps(ctx, run, item)
	if err != nil {
		return 0, fmt.Errorf("item %s: %w", item, err)
	}
	n := 0
	for _, s := range steps {
		if s.Kind == kindRetry && s.Status == store.StepCompleted {
			n++
		}
	}
	return n, nil
}
