package report

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/store"
)

// Reaction counts what cadre watch did of one kind for a run's pull
// requests: its reactions, those that failed, and what their agent
// steps cost.
type Reaction struct {
	Kind   string      `json:"kind"`
	Count  int         `json:"count"`
	Failed int         `json:"failed"`
	Usage  event.Usage `json:"usage"`
}

// Reactions counts the run's reactions by kind (ci_failed,
// changes_requested, conflict), in name order.
func Reactions(ctx context.Context, st *store.Store, runID string) ([]Reaction, error) {
	steps, err := st.Steps(ctx, runID)
	if err != nil {
		return nil, fmt.Errorf("reactions of run %s: %w", runID, err)
	}
	by := map[string]*Reaction{}
	get := func(kind string) *Reaction {
		if by[kind] == nil {
			by[kind] = &Reaction{Kind: kind}
		}
		return by[kind]
	}
	for _, s := range steps {
		kind, whole, ok := reactionOf(s.ID)
		if !ok {
			continue
		}
		switch {
		case whole && s.Kind == "reaction":
			r := get(kind)
			r.Count++
			if s.Status == store.StepFailed {
				r.Failed++
			}
		case !whole && s.Role != "":
			r := get(kind)
			r.Usage = r.Usage.Add(Usage(s.Usage))
		}
	}
	var out []Reaction
	for _, r := range by {
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Kind < out[j].Kind })
	return out, nil
}

// reactionOf reads a step id ITEM/follow/KIND#N[/...]: the reaction's
// kind, and whether the id is the reaction's own (no part after it).
func reactionOf(id string) (kind string, whole, ok bool) {
	i := strings.Index(id, "/follow/")
	if i < 0 {
		return "", false, false
	}
	rest := id[i+len("/follow/"):]
	h := strings.IndexByte(rest, '#')
	if h <= 0 {
		return "", false, false
	}
	return rest[:h], !strings.Contains(rest[h:], "/"), true
}
