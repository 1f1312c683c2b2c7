package engine

import (
	"context"

	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/store"
)

// Summarize reads a run's outcome from the journal.
func Summarize(ctx context.Context, st *store.Store, runID string) (Summary, error) {
	r, err := st.GetRun(ctx, runID)
	if err != nil {
		return Summary{}, err
	}
	items, err := st.Items(ctx, runID)
	if err != nil {
		return Summary{}, err
	}
	steps, err := st.Steps(ctx, runID)
	if err != nil {
		return Summary{}, err
	}
	return SummarizeRows(r, items, steps), nil
}

// SummarizeRows is Summarize of rows already read from the journal: a
// reader that needs the steps too reads them once.
func SummarizeRows(r store.Run, items []store.Item, steps []store.Step) Summary {
	sum := Summary{Run: r.ID, Status: r.Status, Started: r.StartedAt, Updated: r.UpdatedAt}
	byItem := map[string]*ItemSummary{}
	for _, it := range items {
		sum.Items = append(sum.Items, ItemSummary{ID: it.ID, Title: it.Title, Stage: it.Stage, Status: it.Status, Reason: it.Error,
			Attempts: it.Attempts, CurrentStep: it.CurrentStep})
	}
	for i := range sum.Items {
		byItem[sum.Items[i].ID] = &sum.Items[i]
	}
	for _, st := range steps {
		is := byItem[st.ItemID]
		if is != nil && st.Kind == "select" && st.Status == store.StepCompleted {
			addPick(is, st)
		}
		if is == nil || st.Kind != "agent" {
			continue
		}
		is.Steps++
		if st.Status == store.StepStarted && is.Status == store.ItemRunning {
			is.CurrentStep = st.ID // the journal's last started step is the running one
		}
		u := fromStoreUsage(st.Usage)
		is.Usage = is.Usage.Add(u)
		sum.Usage = sum.Usage.Add(u)
	}
	addPublishing(byItem, steps)
	return sum
}

func fromStoreUsage(u store.Usage) event.Usage {
	return event.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CacheReadTokens: u.CacheReadTokens,
		CacheWriteTokens: u.CacheWriteTokens, CostUSD: u.CostUSD, CostEstimated: u.CostEstimated}
}

func toStoreUsage(u event.Usage) store.Usage {
	return store.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CacheReadTokens: u.CacheReadTokens,
		CacheWriteTokens: u.CacheWriteTokens, CostUSD: u.CostUSD, CostEstimated: u.CostEstimated}
}
