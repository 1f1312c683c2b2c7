// Package report reads what a run's journal says: the run's summary and
// each item's (status, stage, usage, branch, pull request, the model
// selector's picks), and the account of its agent steps grouped by role,
// runner, model or item. It is a pure function of the journal, shared by
// the engine (a run's end), cadre status and report, and the web board.
// The journal records of publishing (PublishRecord) live here too: the
// engine writes them and the summary reads them.
package report

import (
	"context"
	"encoding/json"
	"github.com/cadre-dev/cadre/internal/workflow"
	"strings"
	"time"

	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/store"
)

// Summary is the outcome of a run.
type Summary struct {
	Run      string
	Status   string // a store run status
	Reason   string // why the run stopped, when it did not complete
	Items    []ItemSummary
	Usage    event.Usage
	Duration time.Duration
	Started  time.Time
	Updated  time.Time
}

// ItemSummary is one item's outcome.
type ItemSummary struct {
	ID, Title, Stage, Status, Reason string
	CurrentStep                      string
	Attempts                         int
	Steps                            int // agent steps, started or not
	// Done counts the completed steps a workflow is made of, agents and
	// actions (checks, commit, …) but not the bookkeeping around them
	// (model picks, pushes, comments): what the live view's bar counts.
	Done     int
	Usage    event.Usage
	Branch   string // the item's own branch; "" in place
	PR       string // its pull request's URL, once opened
	PRNumber int
	// Answer is a QUICK item's answer (its answer step's): its result.
	Answer string
	// Picks are the model selector's latest choice per role (runner auto).
	Picks []Pick
}

// Pick is one choice of the model selector, as journaled: the result of
// a select step holds its runner, model and reason under these keys.
type Pick struct {
	Step   string `json:"step"`
	Role   string `json:"role"`
	Runner string `json:"runner"`
	Model  string `json:"model"`
	Reason string `json:"reason"`
}

// KindAnswer is the kind of QUICK's answer step, whose result holds the
// answer under "answer".
const KindAnswer = "answer"

// KindSelect is the kind of the step that journals the model selector's
// choice for an agent step (its id is the agent step's and "/select").
const KindSelect = "select"

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
		if is != nil && st.Kind == KindSelect && st.Status == store.StepCompleted {
			addPick(is, st)
		}
		if _, action := workflow.Actions[st.Kind]; is != nil && st.Status == store.StepCompleted && (st.Kind == "agent" || action) {
			is.Done++
			if st.Kind == KindAnswer {
				var r struct{ Answer string }
				json.Unmarshal(st.Result, &r)
				is.Answer = r.Answer
			}
		}
		if is == nil || st.Kind != "agent" {
			continue
		}
		is.Steps++
		if st.Status == store.StepStarted && is.Status == store.ItemRunning {
			is.CurrentStep = st.ID // the journal's last started step is the running one
		}
		u := Usage(st.Usage)
		is.Usage = is.Usage.Add(u)
		sum.Usage = sum.Usage.Add(u)
	}
	addPublishing(byItem, steps)
	return sum
}

// addPick keeps a journaled choice as its role's latest.
func addPick(is *ItemSummary, st store.Step) {
	var p Pick
	if json.Unmarshal(st.Result, &p) != nil {
		return
	}
	p.Step, p.Role = strings.TrimSuffix(st.ID, "/"+KindSelect), st.Role
	for i := range is.Picks {
		if is.Picks[i].Role == p.Role {
			is.Picks[i] = p
			return
		}
	}
	is.Picks = append(is.Picks, p)
}

// Usage is a journaled step's usage as events carry it.
func Usage(u store.Usage) event.Usage {
	return event.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CacheReadTokens: u.CacheReadTokens,
		CacheWriteTokens: u.CacheWriteTokens, CostUSD: u.CostUSD, CostEstimated: u.CostEstimated}
}
