package store_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/cadre-dev/cadre/internal/store"
)

// The journal's free text (a step's error, signal and result, an item's
// error, an event's data) is masked before it is written, tapped for
// another journal, or applied from one: a secret in it reaches no row.
func TestMaskedTextReachesNoRow(t *testing.T) {
	ctx := context.Background()
	const secret = "SECRET-value"
	mask := func(s string) string { return strings.ReplaceAll(s, secret, "[M]") }
	a, b := journalPair(t)
	a.SetMask(mask)
	take := tapped(a)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	step := store.Step{RunID: "r", ItemID: "i", ID: "i/publish/pr#1", Kind: "pr"}
	must(a.StartStep(ctx, step))
	failed := step
	failed.Status, failed.Error = store.StepFailed, "422 Authorization: Bearer "+secret
	failed.Signal = json.RawMessage(`{"LoopSummary":"used ` + secret + `","Rating":7}`)
	failed.Result = json.RawMessage(`{"title":"<` + secret + `>","number":12345678901234567890}`)
	must(a.FinishStep(ctx, failed))
	reason := "publish: " + secret
	must(a.UpdateItem(ctx, "r", "i", store.ItemUpdate{Error: &reason}))
	must(a.AppendEvents(ctx, []store.Event{{RunID: "r", ItemID: "i", Type: "stepFailed", Data: json.RawMessage(`{"error":"` + secret + `"}`)}}))
	if reason != "publish: "+secret {
		t.Errorf("the caller's text was changed: %q", reason)
	}

	got, err := a.GetStep(ctx, "r", step.ID)
	must(err)
	if got.Error != "422 Authorization: Bearer [M]" || string(got.Signal) != `{"LoopSummary":"used [M]","Rating":7}` ||
		string(got.Result) != `{"number":12345678901234567890,"title":"<[M]>"}` {
		t.Errorf("step as journaled: error %q, signal %s, result %s", got.Error, got.Signal, got.Result)
	}
	item, err := a.GetItem(ctx, "r", "i")
	must(err)
	events, _, err := a.Events(ctx, "r", 0)
	must(err)
	if item.Error != "publish: [M]" || len(events) != 1 || string(events[0].Data) != `{"error":"[M]"}` {
		t.Errorf("item error %q, events %+v", item.Error, events)
	}
	ops := take()
	data, err := store.EncodeOps(ops)
	must(err)
	if strings.Contains(string(data), secret) || len(ops) != 4 {
		t.Errorf("%d ops tapped: %s", len(ops), data)
	}

	// Ops of another journal that did not mask are masked where applied.
	c, _ := open(t)
	mustRun(t, c, "r", t0)
	must(c.AddItem(ctx, store.Item{RunID: "r", ID: "i", Stage: "code", UpdatedAt: t0}))
	take = tapped(c)
	must(c.StartStep(ctx, step))
	must(c.FinishStep(ctx, failed))
	must(c.UpdateItem(ctx, "r", "i", store.ItemUpdate{Error: &reason}))
	must(c.AppendEvents(ctx, []store.Event{{RunID: "r", ItemID: "i", Type: "stepFailed", Data: json.RawMessage(`{"error":"` + secret + `"}`)}}))
	b.SetMask(mask)
	if _, err := b.ApplyOps(ctx, store.BatchKey{Run: "r", Item: "i", Seq: 1}, "d", take(), nil); err != nil {
		t.Fatal(err)
	}
	got, err = b.GetStep(ctx, "r", step.ID)
	must(err)
	item, err = b.GetItem(ctx, "r", "i")
	must(err)
	events, _, err = b.Events(ctx, "r", 0)
	must(err)
	if all := got.Error + string(got.Signal) + string(got.Result) + item.Error + string(events[0].Data); strings.Contains(all, secret) || !strings.Contains(all, "[M]") {
		t.Errorf("applied: %s", all)
	}
}
