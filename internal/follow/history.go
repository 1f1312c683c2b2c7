package follow

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/cadre-dev/cadre/internal/store"
)

// The kinds of the steps a follower journals beside the engine's.
const (
	KindReaction = "reaction"   // a reaction, started when it begins
	KindFeedback = "feedback"   // what a reaction answers, recorded first
	KindEnd      = "follow-end" // the item's end: merged or closed
)

// reactionResult is a completed reaction's journaled result.
type reactionResult struct {
	Feedback Feedback `json:"feedback"`
	Commit   string   `json:"commit,omitempty"` // fix-surgeon's commit
	Pushed   string   `json:"pushed,omitempty"` // the head pushed
	Output   string   `json:"-"`
}

// endResult is the end step's journaled result.
type endResult struct {
	State string `json:"state"` // merged or closed
	PR    int    `json:"pr"`
	Why   string `json:"why,omitempty"`
}

func endID(it Item) string { return it.ID + "/follow/end" }

// Ended is how cadre watch ended an item's following, as the journal has
// it: "merged" or "closed", or "" while it goes on (or never began).
func Ended(ctx context.Context, st *store.Store, run, item string) string {
	rec, err := st.GetStep(ctx, run, endID(Item{ID: item}))
	if err != nil || rec.Status != store.StepCompleted {
		return ""
	}
	var end endResult
	if json.Unmarshal(rec.Result, &end) != nil {
		return ""
	}
	return end.State
}

// history is what the journal says of an item's following.
type history struct {
	past         Past
	tries        map[Kind]int // reactions begun, by kind: the next one's number
	open         *store.Step  // a reaction begun and not finished (a crash)
	openFeedback Feedback
	asking       string // a human step waiting for its answer
	asked        int    // human steps so far
	rejected     bool   // a human rejected going on
	rejectNote   string // what they said
	unpause      bool   // the latest human step was answered: the item goes on
	// note is what the person who granted more rounds said, for the
	// reaction that follows.
	note string
}

// history reads it's following from the journal.
func (f *Follower) history(ctx context.Context, it Item) (history, error) {
	steps, err := f.Store.ItemSteps(ctx, it.Run, it.ID)
	if err != nil {
		return history{}, journalErr(err)
	}
	h := history{tries: map[Kind]int{}, past: Past{Rounds: map[Kind]int{}, Heads: map[string]bool{},
		Reviews: map[int64]bool{}, Comments: map[int64]bool{}, Failed: map[string]string{}}}
	feedback := map[string]Feedback{}
	prefix := it.ID + "/follow/"
	for _, st := range steps {
		if !strings.HasPrefix(st.ID, prefix) {
			continue
		}
		switch st.Kind {
		case KindFeedback:
			var fb Feedback
			if json.Unmarshal(st.Result, &fb) == nil {
				feedback[strings.TrimSuffix(st.ID, "/feedback")] = fb
			}
		case KindReaction:
			fb := feedback[st.ID]
			h.tries[fb.Kind]++
			h.note = ""
			switch st.Status {
			case store.StepStarted:
				st := st
				h.open, h.openFeedback = &st, fb
			case store.StepFailed:
				h.past.Rounds[fb.Kind]++
				h.past.Failed[fb.Key()] = st.Error
			case store.StepCompleted:
				h.past.Rounds[fb.Kind]++
				var r reactionResult
				json.Unmarshal(st.Result, &r)
				h.answered(fb, r)
			}
		case "human":
			h.asked++
			h.unpause = false
			if st.Status != store.StepCompleted {
				h.asking = st.ID
				continue
			}
			var ans struct {
				Approved *bool  `json:"approved"`
				Note     string `json:"note"`
			}
			json.Unmarshal(st.Result, &ans)
			if ans.Approved == nil || !*ans.Approved {
				h.rejected, h.rejectNote = true, ans.Note
				continue
			}
			// Approved: the reaction gets its rounds again, and may try
			// again what failed.
			k := Kind(strings.SplitN(strings.TrimPrefix(st.ID, prefix), "/", 2)[0])
			h.past.Rounds[k] = 0
			for key := range h.past.Failed {
				if strings.HasPrefix(key, string(k)+"@") {
					delete(h.past.Failed, key)
				}
			}
			h.unpause, h.note = true, ans.Note
		}
	}
	return h, nil
}

// answered notes what a completed reaction answered.
func (h *history) answered(fb Feedback, r reactionResult) {
	switch fb.Kind {
	case CIFailed:
		h.past.Heads[fb.Head] = true
	case ChangesRequested:
		for _, id := range fb.Reviews {
			h.past.Reviews[id] = true
		}
		for _, c := range fb.Comments {
			h.past.Comments[c.ID] = true
		}
	}
}

// record journals a step of the follower's own that has a result and
// no duration: feedback, the end. Recorded once.
func (f *Follower) record(ctx context.Context, it Item, id, kind string, v any) error {
	rec := store.Step{RunID: it.Run, ItemID: it.ID, ID: id, Kind: kind}
	if err := f.Store.StartStep(ctx, rec); errors.Is(err, store.ErrCompleted) {
		return nil
	} else if err != nil {
		return journalErr(err)
	}
	rec.Status = store.StepCompleted
	rec.Result, _ = json.Marshal(v)
	if err := f.Store.FinishStep(ctx, rec); err != nil {
		return journalErr(err)
	}
	return nil
}

// JournalError is a journal write that failed: following stops.
type JournalError struct{ Err error }

func (e *JournalError) Error() string { return "journal: " + e.Err.Error() }
func (e *JournalError) Unwrap() error { return e.Err }

func journalErr(err error) error { return &JournalError{err} }

func isJournal(err error) bool {
	var je *JournalError
	return errors.As(err, &je)
}
