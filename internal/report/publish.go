package report

import (
	"encoding/json"
	"regexp"
	"strconv"

	"github.com/cadre-dev/cadre/internal/store"
)

// Where an item's work is published, as the journal records it: the
// worktree step names the item's branch once its worktree exists (so
// status can point at unpublished work too), the push and pull-request
// steps of publishing name the branch they pushed and the pull request.

// Kinds of the steps that record where an item's work is.
const (
	KindWorktree = "worktree" // its branch, once its worktree exists
	KindPush     = "push"     // the branch publishing pushed
	KindPR       = "pr"       // its pull request
)

// PublishRecord is the journaled result of the worktree, push and pr
// steps. Output keeps the key the pr step always used for the URL, so
// journals written before the other fields existed still read.
type PublishRecord struct {
	Branch string `json:"branch,omitempty"`
	Output string `json:"output,omitempty"` // the pull request's URL
	Number int    `json:"number,omitempty"` // the pull request's number
	Title  string `json:"title,omitempty"`  // the pull request's title
}

// PRStepID is the id of the step that opens an item's pull request.
func PRStepID(item string) string { return item + "/publish/pr#1" }

var pullNumberRE = regexp.MustCompile(`/pull/([0-9]+)/?$`)

// ReadPublishRecord decodes a worktree, push or pr step's result. A pr
// step journaled before numbers were recorded has only the URL, which
// holds it.
func ReadPublishRecord(rec store.Step) PublishRecord {
	var r PublishRecord
	if json.Unmarshal(rec.Result, &r) != nil {
		return PublishRecord{}
	}
	if r.Number == 0 && r.Output != "" {
		if m := pullNumberRE.FindStringSubmatch(r.Output); m != nil {
			r.Number, _ = strconv.Atoi(m[1])
		}
	}
	return r
}

// addPublishing fills in the items' branches and pull requests from their
// journaled steps.
func addPublishing(byItem map[string]*ItemSummary, steps []store.Step) {
	for _, st := range steps {
		is := byItem[st.ItemID]
		if is == nil || st.Status != store.StepCompleted {
			continue
		}
		switch st.Kind {
		case KindWorktree, KindPush, KindPR:
		default:
			continue
		}
		r := ReadPublishRecord(st)
		if r.Branch != "" && (is.Branch == "" || st.Kind == KindPR) {
			is.Branch = r.Branch // the pushed branch is the one the pull request has
		}
		if st.Kind == KindPR && r.Output != "" {
			is.PR, is.PRNumber = r.Output, r.Number
		}
	}
}
