package report

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/cadre-dev/cadre/internal/store"
)

// TestAddPublishing: status learns an item's branch from its worktree step,
// the pushed branch and pull request from publishing; a pull request
// journaled with its URL only (before numbers were kept) still gives its
// number; failed steps say nothing.
func TestAddPublishing(t *testing.T) {
	step := func(item, kind, status, result string) store.Step {
		return store.Step{ItemID: item, ID: item + "/" + kind, Kind: kind, Status: status, Result: json.RawMessage(result)}
	}
	steps := []store.Step{
		step("a", "worktree", store.StepCompleted, `{"branch":"cadre/a-old"}`),
		step("a", "agent", store.StepCompleted, `{"branch":"not-a-branch"}`),
		step("a", "push", store.StepCompleted, `{"branch":"cadre/a-x"}`),
		step("a", "pr", store.StepCompleted, `{"branch":"cadre/a-x","output":"https://github.com/o/r/pull/7","number":7,"title":"X"}`),
		step("b", "worktree", store.StepCompleted, `{"branch":"cadre/b-y"}`),
		step("b", "pr", store.StepCompleted, `{"output":"https://github.com/o/r/pull/12"}`),
		step("c", "worktree", store.StepCompleted, `{"branch":"cadre/c-z"}`),
		step("c", "pr", store.StepFailed, `{"output":"https://github.com/o/r/pull/9","number":9}`),
	}
	byItem := map[string]*ItemSummary{"a": {ID: "a"}, "b": {ID: "b"}, "c": {ID: "c"}, "d": {ID: "d"}}
	addPublishing(byItem, steps)
	want := map[string]ItemSummary{
		"a": {ID: "a", Branch: "cadre/a-x", PR: "https://github.com/o/r/pull/7", PRNumber: 7},
		"b": {ID: "b", Branch: "cadre/b-y", PR: "https://github.com/o/r/pull/12", PRNumber: 12},
		"c": {ID: "c", Branch: "cadre/c-z"},
		"d": {ID: "d"},
	}
	for id, w := range want {
		if got := *byItem[id]; !reflect.DeepEqual(got, w) {
			t.Errorf("item %s: %+v, want %+v", id, got, w)
		}
	}
}
