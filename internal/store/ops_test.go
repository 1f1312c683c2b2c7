package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cadre-dev/cadre/internal/store"
)

// randOp is a random op of any kind that passes the codec's checks.
func randOp(r *rand.Rand) store.Op {
	str := func() string {
		const chars = "abc/#-é\"\\\n<>&x0"
		rs := []rune(chars)
		b := make([]rune, r.Intn(12))
		for i := range b {
			b[i] = rs[r.Intn(len(rs))]
		}
		return string(b)
	}
	tm := func() time.Time { return time.Unix(r.Int63n(4e9), r.Int63n(1e9)).UTC() }
	run := "r" + str()
	op := store.Op{At: tm(), Run: run, Item: str()}
	js := func() json.RawMessage {
		if r.Intn(3) == 0 {
			return nil
		}
		b, _ := json.Marshal(map[string]any{"k": str(), "n": r.Intn(100)})
		return b
	}
	step := func() *store.Step {
		end := tm()
		st := &store.Step{RunID: run, ItemID: op.Item, ID: "s" + str(), Role: str(), Runner: str(), Model: str(), Kind: str(),
			Status: store.StepCompleted, Tries: r.Intn(5), ExitCode: r.Intn(3), OutputPath: str(), Signal: js(), Result: js(),
			Usage: store.Usage{InputTokens: r.Int63(), OutputTokens: r.Int63n(1000), CostUSD: r.Float64() * 10, CostEstimated: r.Intn(2) == 0},
			Error: str(), StartedAt: tm(), EndedAt: &end, Pgid: r.Intn(1 << 20), PgidStart: r.Uint64()}
		return st
	}
	sp := func() *string {
		if r.Intn(2) == 0 {
			return nil
		}
		s := str()
		return &s
	}
	switch r.Intn(8) {
	case 0:
		op.Kind, op.Step = store.OpStartStep, step()
	case 1:
		op.Kind, op.Step = store.OpFinishStep, step()
	case 2:
		op.Kind, op.Step = store.OpStepGroup, step()
	case 3:
		op.Kind, op.Update = store.OpUpdateItem, &store.ItemUpdate{Stage: sp(), Status: sp(), CurrentStep: sp(), Error: sp()}
		if r.Intn(2) == 0 {
			n := r.Intn(9)
			op.Update.Attempts = &n
		}
		op.Item = "i" + op.Item
	case 4:
		op.Kind = store.OpEvents
		for n := 1 + r.Intn(3); n > 0; n-- {
			op.Events = append(op.Events, store.Event{RunID: run, Time: tm(), Type: "t" + str(), ItemID: str(), Data: js()})
		}
	case 5:
		op.Kind = store.OpEvaluations
		pass, score := r.Intn(2) == 0, r.Float64()
		op.Evals = []store.Evaluation{{CreatedAt: tm(), Source: store.SourceRun, RunID: run, ItemID: str(), StepID: str(), Role: str(),
			Runner: str(), Model: str(), Kind: store.KindJudge, Passed: &pass, Score: &score, Detail: js(),
			Usage: &store.EvalUsage{CostUSD: r.Float64(), LatencyMS: r.Int63n(1e6), InputTokens: r.Int63n(1e6)}}}
	case 6:
		op.Kind, op.Status, op.PID = store.OpRunStatus, store.RunPaused, r.Intn(1<<22)
	default:
		op.Kind, op.Options = store.OpRunOptions, js()
	}
	return op
}

// Any sequence of valid ops decodes to what was encoded.
func TestOpCodecRoundTrip(t *testing.T) {
	seed := time.Now().UnixNano()
	r := rand.New(rand.NewSource(seed))
	for i := 0; i < 500; i++ {
		ops := make([]store.Op, r.Intn(6))
		for j := range ops {
			ops[j] = randOp(r)
		}
		data, err := store.EncodeOps(ops)
		if err != nil {
			t.Fatalf("seed %d: encode %+v: %v", seed, ops, err)
		}
		got, err := store.DecodeOps(data)
		if err != nil {
			t.Fatalf("seed %d: decode %s: %v", seed, data, err)
		}
		if len(ops) == 0 && len(got) == 0 {
			continue
		}
		if diff := cmp.Diff(ops, got); diff != "" {
			t.Fatalf("seed %d: round trip changed the ops (-sent +got):\n%s", seed, diff)
		}
	}
}

// DecodeOps refuses what no write makes, naming the op.
func TestDecodeOpsRefusesBadOps(t *testing.T) {
	at := `"at":"2025-01-01T00:00:00Z"`
	tests := []struct{ in, want string }{
		{`[{"op":"drop_table",` + at + `,"run":"r"}]`, `op 0: unknown op "drop_table"`},
		{`[{"op":"start_step",` + at + `}]`, "op 0: start_step: no run"},
		{`[{"op":"events","run":"r",` + at + `,"events":[]}]`, "op 0: events: no events"},
		{`[{"op":"finish_step","run":"r",` + at + `,"step":{"RunID":"r","ID":"s"}}]`, "finish_step s: no end time"},
		{`[{"op":"start_step","run":"r",` + at + `,"step":{"RunID":"other","ID":"s"}}]`, "want a step of run r"},
		{`[{"op":"update_item","run":"r","item":"i"}]`, "update_item: no time"},
		{`{"op":1}`, "decode ops: json"},
	}
	for _, tt := range tests {
		_, err := store.DecodeOps([]byte(tt.in))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("DecodeOps(%s) = %v, want containing %q", tt.in, err, tt.want)
		}
	}
}

// tapped records s's ops.
func tapped(s *store.Store) func() []store.Op {
	var mu sync.Mutex
	var ops []store.Op
	s.SetTap(func(op store.Op) { mu.Lock(); ops = append(ops, op); mu.Unlock() })
	return func() []store.Op {
		mu.Lock()
		defer mu.Unlock()
		out := ops
		ops = nil
		return out
	}
}

// The writes tapped in one journal, applied to another holding the same
// run, leave it answering as the first: steps (tries, usage per try),
// items, events, evaluations, totals. Applying the batch again changes
// nothing; a later batch before an earlier one, or the same number with
// other ops, is refused.
func TestApplyOpsMakesTheSameWritesOnce(t *testing.T) {
	ctx := context.Background()
	a, b := journalPair(t)
	take := tapped(a)
	u := store.Usage{InputTokens: 10, OutputTokens: 3, CostUSD: 0.25}
	step := store.Step{RunID: "r", ItemID: "i", ID: "i/code/coder#1", Role: "coder", Kind: "agent", OutputPath: "/o.md"}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(a.StartStep(ctx, step))
	must(a.SetStepGroup(ctx, "r", step.ID, 42, 7))
	failed := step
	failed.Status, failed.Usage, failed.Error = store.StepFailed, u, "boom"
	must(a.FinishStep(ctx, failed))
	must(a.StartStep(ctx, step))
	done := step
	done.Status, done.Usage, done.Signal = store.StepCompleted, u, json.RawMessage(`{"Result":"SUCCESS"}`)
	must(a.FinishStep(ctx, done))
	// An interrupted try: its usage noted, the step left started.
	cut := store.Step{RunID: "r", ItemID: "i", ID: "i/code/coder#2", Role: "coder", Kind: "agent"}
	must(a.StartStep(ctx, cut))
	cut.Usage, cut.Model = u, "m-reported"
	must(a.NoteUsage(ctx, cut))
	must(a.UpdateItem(ctx, "r", "i", store.ItemUpdate{Status: ptr(store.ItemRunning), Attempts: ptr(2)}))
	must(a.AppendEvents(ctx, []store.Event{{RunID: "r", ItemID: "i", Type: "stepStarted", Data: json.RawMessage(`{"x":1}`)}, {RunID: "r", ItemID: "i", Type: "stepCompleted"}}))
	pass := true
	must(a.RecordEvaluation(ctx, store.Evaluation{Source: store.SourceRun, RunID: "r", ItemID: "i", StepID: step.ID, Role: "coder", Runner: "fake", Kind: store.KindReview, Passed: &pass}))
	ops := take()
	kinds := []store.OpKind{}
	for _, op := range ops {
		kinds = append(kinds, op.Kind)
	}
	want := []store.OpKind{store.OpStartStep, store.OpStepGroup, store.OpFinishStep, store.OpStartStep, store.OpFinishStep, store.OpStartStep, store.OpNoteUsage, store.OpUpdateItem, store.OpEvents, store.OpEvents, store.OpEvaluations}
	if diff := cmp.Diff(want, kinds); diff != "" {
		t.Fatalf("tapped ops (-want +got):\n%s", diff)
	}
	data, err := store.EncodeOps(ops)
	must(err)
	ops, err = store.DecodeOps(data)
	must(err)
	key := store.BatchKey{Run: "r", Item: "i", Seq: 1}
	for i := 0; i < 2; i++ {
		ok, err := b.ApplyOps(ctx, key, "d1", ops, nil)
		if err != nil || ok != (i == 0) {
			t.Fatalf("apply #%d: %v, %v", i+1, ok, err)
		}
		if n := len(take()); n != 0 {
			t.Errorf("applying tapped %d ops of b? (a's tap only)", n)
		}
		answers := func(s *store.Store) []any {
			steps, err := s.Steps(ctx, "r")
			must(err)
			items, err := s.Items(ctx, "r")
			must(err)
			tot, err := s.Totals(ctx, "r")
			must(err)
			evs, _, err := s.Events(ctx, "r", 0)
			must(err)
			for i := range evs {
				evs[i].Seq = 0
			}
			stats, err := s.EvalStats(ctx, store.EvalFilter{RunID: "r"})
			must(err)
			return []any{steps, items, tot, evs, stats}
		}
		if diff := cmp.Diff(answers(a), answers(b)); diff != "" {
			t.Fatalf("after apply #%d, b answers otherwise than a (-a +b):\n%s", i+1, diff)
		}
	}
	if tot, _ := b.Totals(ctx, "r"); tot.CostUSD != 0.75 {
		t.Errorf("totals %+v: want the three tries counted once", tot)
	}
	if _, err := b.ApplyOps(ctx, key, "d2", ops, nil); !errors.Is(err, store.ErrBatchConflict) {
		t.Errorf("same number, other digest: %v, want ErrBatchConflict", err)
	}
	if _, err := b.ApplyOps(ctx, store.BatchKey{Run: "r", Item: "i", Seq: 3}, "d3", nil, nil); !errors.Is(err, store.ErrBatchGap) {
		t.Errorf("batch 3 after 1: %v, want ErrBatchGap", err)
	}
	// A batch failing half-way applies nothing, its key included.
	bad := []store.Op{{Kind: store.OpUpdateItem, At: t0, Run: "r", Item: "i", Update: &store.ItemUpdate{Stage: ptr("x")}},
		{Kind: store.OpFinishStep, At: t0, Run: "r", Item: "i", Step: &done}}
	bad[1].Step.EndedAt = &t0
	if _, err := b.ApplyOps(ctx, store.BatchKey{Run: "r", Item: "i", Seq: 2}, "d2", bad, nil); !errors.Is(err, store.ErrCompleted) {
		t.Errorf("finishing a completed step: %v", err)
	}
	if it, _ := b.GetItem(ctx, "r", "i"); it.Stage != "code" {
		t.Errorf("a failed batch changed the item: stage %q", it.Stage)
	}
	if seq, _ := b.AppliedSeq(ctx, "r", "i"); seq != 1 {
		t.Errorf("applied seq %d, want 1", seq)
	}
}

// A replica hydrated from an export answers for the item as the journal
// it came from, counts the rest of the run's spending in its totals, and
// hydrating it again (with what it spent since not yet applied) neither
// loses nor double-counts.
func TestHydrateFromExport(t *testing.T) {
	ctx := context.Background()
	truth, _ := open(t)
	mustRun(t, truth, "r", t0)
	for _, id := range []string{"i", "j"} {
		if err := truth.AddItem(ctx, store.Item{RunID: "r", ID: id, Ref: "/repo/tasks/" + id + ".md"}); err != nil {
			t.Fatal(err)
		}
		st := store.Step{RunID: "r", ItemID: id, ID: id + "/s"}
		if err := truth.StartStep(ctx, st); err != nil {
			t.Fatal(err)
		}
		st.Status, st.Usage = store.StepCompleted, store.Usage{InputTokens: 100, CostUSD: 1}
		if err := truth.FinishStep(ctx, st); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := truth.ApplyOps(ctx, store.BatchKey{Run: "r", Item: "i", Seq: 1}, "d", nil, nil); err != nil {
		t.Fatal(err)
	}
	x, err := truth.ExportItem(ctx, "r", "i")
	if err != nil {
		t.Fatal(err)
	}
	if x.Seq != 1 || len(x.Steps) != 1 || len(x.Usage) != 1 || len(x.Items) != 2 || x.Totals.CostUSD != 2 {
		t.Fatalf("export %+v", x)
	}
	rep, _ := open(t)
	for i := 0; i < 2; i++ {
		if err := rep.Hydrate(ctx, x); err != nil {
			t.Fatal(err)
		}
		if seq, err := rep.ReplicaSeq(ctx, "r", "i"); err != nil || seq != 1 {
			t.Errorf("replica seq %d, %v", seq, err)
		}
		for _, s := range []*store.Store{truth, rep} {
			if tot, _ := s.Totals(ctx, "r"); tot.CostUSD != 2 || tot.InputTokens != 200 {
				t.Errorf("totals %+v, want the run's", tot)
			}
		}
		a, _ := truth.ItemSteps(ctx, "r", "i")
		b, _ := rep.ItemSteps(ctx, "r", "i")
		if diff := cmp.Diff(a, b); diff != "" {
			t.Errorf("hydration %d: steps differ:\n%s", i+1, diff)
		}
	}
	st := store.Step{RunID: "r", ItemID: "i", ID: "i/t"}
	if err := rep.StartStep(ctx, st); err != nil {
		t.Fatal(err)
	}
	st.Status, st.Usage = store.StepCompleted, store.Usage{CostUSD: 0.5}
	if err := rep.FinishStep(ctx, st); err != nil {
		t.Fatal(err)
	}
	if tot, _ := rep.Totals(ctx, "r"); tot.CostUSD != 2.5 {
		t.Errorf("replica totals %v, want the snapshot's and its own", tot.CostUSD)
	}
	if seq, err := rep.NextReplicaSeq(ctx, "r", "i"); err != nil || seq != 2 {
		t.Errorf("next seq %d, %v", seq, err)
	}
	if _, err := rep.NextReplicaSeq(ctx, "r", "j"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("next seq of an item never hydrated: %v", err)
	}
	x.Steps[0].ItemID = "j"
	if err := rep.Hydrate(ctx, x); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("step %s belongs to item j", x.Steps[0].ID)) {
		t.Errorf("hydrate with another item's step: %v", err)
	}
}

// A question answered where the run started (cadre approve) and answered
// again by the replica that asked it applies: the answer journaled first
// stands. An agent step completed twice is still refused.
func TestApplyOpsKeepsAHumanAnswerGivenHere(t *testing.T) {
	ctx := context.Background()
	truth, replica := journalPair(t)
	for _, kind := range []string{"human", "agent"} {
		step := store.Step{RunID: "r", ItemID: "i", ID: "i/" + kind, Kind: kind}
		for _, s := range []*store.Store{truth, replica} {
			if err := s.StartStep(ctx, step); err != nil {
				t.Fatal(err)
			}
		}
		here := step
		here.Status, here.Result = store.StepCompleted, json.RawMessage(`{"approved":true,"note":"here"}`)
		if err := truth.FinishStep(ctx, here); err != nil {
			t.Fatal(err)
		}
		take := tapped(replica)
		there := step
		there.Status, there.Result = store.StepCompleted, json.RawMessage(`{"approved":true,"note":"there"}`)
		if err := replica.FinishStep(ctx, there); err != nil {
			t.Fatal(err)
		}
		seq := int64(1)
		if kind == "agent" {
			seq = 2
		}
		_, err := truth.ApplyOps(ctx, store.BatchKey{Run: "r", Item: "i", Seq: seq}, kind, take(), nil)
		switch {
		case kind == "human" && err != nil:
			t.Fatalf("the replica's answer to a question answered here: %v", err)
		case kind == "agent" && !errors.Is(err, store.ErrCompleted):
			t.Fatalf("an agent step completed twice: err %v, want ErrCompleted", err)
		}
		got, err := truth.GetStep(ctx, "r", step.ID)
		if err != nil || string(got.Result) != string(here.Result) {
			t.Errorf("%s step's result %s, %v; want the one journaled here", kind, got.Result, err)
		}
	}
}

// journalPair is two journals holding the same run r with item i: one of
// truth and a replica of it.
func journalPair(t *testing.T) (*store.Store, *store.Store) {
	t.Helper()
	a, _ := open(t)
	b, _ := open(t)
	for _, s := range []*store.Store{a, b} {
		mustRun(t, s, "r", t0)
		if err := s.AddItem(context.Background(), store.Item{RunID: "r", ID: "i", Stage: "code", UpdatedAt: t0}); err != nil {
			t.Fatal(err)
		}
	}
	return a, b
}

// Hydrating one item leaves the replica's own copy of another item alone:
// one mid-step here keeps its row, its steps and what they spent (not yet
// sent home), while a copy the export shows stale (its later batches
// applied there from elsewhere) takes the export's row. The run's row is
// the export's.
func TestHydrateKeepsAnotherItemsRows(t *testing.T) {
	ctx := context.Background()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	truth, _ := open(t)
	mustRun(t, truth, "r", t0)
	// k runs on other workers only: its spending reaches this replica
	// through the exports' totals.
	for id, cost := range map[string]float64{"i": 1, "j": 1, "k": 10} {
		must(truth.AddItem(ctx, store.Item{RunID: "r", ID: id, Ref: "/repo/tasks/" + id + ".md"}))
		st := store.Step{RunID: "r", ItemID: id, ID: id + "/s"}
		must(truth.StartStep(ctx, st))
		st.Status, st.Usage = store.StepCompleted, store.Usage{InputTokens: 100, CostUSD: cost}
		must(truth.FinishStep(ctx, st))
	}
	rep, _ := open(t)
	hydrate := func(item string) {
		t.Helper()
		x, err := truth.ExportItem(ctx, "r", item)
		must(err)
		must(rep.Hydrate(ctx, x))
	}
	hydrate("j")
	hydrate("i")
	// j's step here, its batch not taken yet.
	must(rep.UpdateItem(ctx, "r", "j", store.ItemUpdate{Stage: ptr("review"), Attempts: ptr(2), CurrentStep: ptr("j/t")}))
	st := store.Step{RunID: "r", ItemID: "j", ID: "j/t"}
	must(rep.StartStep(ctx, st))
	st.Status, st.Usage = store.StepCompleted, store.Usage{InputTokens: 5, CostUSD: 0.5}
	must(rep.FinishStep(ctx, st))
	must(truth.SetRunStatus(ctx, "r", store.RunPaused, 7))
	hydrate("i")
	j, err := rep.GetItem(ctx, "r", "j")
	must(err)
	if j.Stage != "review" || j.Attempts != 2 || j.CurrentStep != "j/t" {
		t.Errorf("j mid-step here: stage %q attempts %d step %q; want its own row kept", j.Stage, j.Attempts, j.CurrentStep)
	}
	if steps, _ := rep.ItemSteps(ctx, "r", "j"); len(steps) != 2 {
		t.Errorf("j's steps here: %d, want 2", len(steps))
	}
	if tot, _ := rep.Totals(ctx, "r"); tot.CostUSD != 12.5 || tot.InputTokens != 305 {
		t.Errorf("replica totals %+v: want the home's 12 and 305 plus j's 0.5 and 5 not sent", tot)
	}
	if r, _ := rep.GetRun(ctx, "r"); r.Status != store.RunPaused {
		t.Errorf("run status %q: want the export's", r.Status)
	}
	// j's step and the next one land at home from here and another worker:
	// the copy here is behind.
	must(truth.StartStep(ctx, st))
	must(truth.FinishStep(ctx, st))
	_, err = truth.ApplyOps(ctx, store.BatchKey{Run: "r", Item: "j", Seq: 1}, "d1", nil, nil)
	must(err)
	must(truth.UpdateItem(ctx, "r", "j", store.ItemUpdate{Stage: ptr("audit"), Attempts: ptr(3)}))
	st2 := store.Step{RunID: "r", ItemID: "j", ID: "j/u"}
	must(truth.StartStep(ctx, st2))
	st2.Status, st2.Usage = store.StepCompleted, store.Usage{CostUSD: 2}
	must(truth.FinishStep(ctx, st2))
	_, err = truth.ApplyOps(ctx, store.BatchKey{Run: "r", Item: "j", Seq: 2}, "d2", nil, nil)
	must(err)
	if seq, err := rep.NextReplicaSeq(ctx, "r", "j"); err != nil || seq != 1 {
		t.Fatalf("next seq of j: %d, %v", seq, err)
	}
	hydrate("i")
	if j, _ := rep.GetItem(ctx, "r", "j"); j.Stage != "audit" || j.Attempts != 3 {
		t.Errorf("j behind here: stage %q attempts %d; want the export's", j.Stage, j.Attempts)
	}
	want, _ := truth.Totals(ctx, "r")
	if tot, _ := rep.Totals(ctx, "r"); tot.CostUSD != want.CostUSD || tot.InputTokens != want.InputTokens {
		t.Errorf("replica totals %+v, want the home's %+v", tot, want)
	}
}

// Appliers on two connections to one journal (two processes) racing
// through one item's batches call each batch's write once, in the
// batches' order, and only the call that applied it; a write that fails
// applies nothing of its batch, which a retry then applies.
func TestApplyOpsWritesOnceAcrossConnections(t *testing.T) {
	ctx := context.Background()
	a, path := open(t)
	mustRun(t, a, "r", t0)
	if err := a.AddItem(ctx, store.Item{RunID: "r", ID: "i"}); err != nil {
		t.Fatal(err)
	}
	b, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	const n, appliers = 6, 4
	var mu sync.Mutex
	var written []int64
	applied := make([]int, n+1)
	var wg sync.WaitGroup
	errs := make(chan error, appliers)
	for w := range appliers {
		s := []*store.Store{a, b}[w%2]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seq := int64(1); seq <= n; seq++ {
				key := store.BatchKey{Run: "r", Item: "i", Seq: seq}
				ops := []store.Op{{Kind: store.OpUpdateItem, At: t0, Run: "r", Item: "i", Update: &store.ItemUpdate{Attempts: ptr(int(seq))}}}
				ok, err := s.ApplyOps(ctx, key, fmt.Sprint("d", seq), ops, func() error {
					mu.Lock()
					defer mu.Unlock()
					written = append(written, seq)
					return nil
				})
				if err != nil {
					errs <- err
					return
				}
				if ok {
					mu.Lock()
					applied[seq]++
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if want := []int64{1, 2, 3, 4, 5, 6}; !cmp.Equal(written, want) {
		t.Errorf("writes for batches %v, want %v", written, want)
	}
	for seq := 1; seq <= n; seq++ {
		if applied[seq] != 1 {
			t.Errorf("batch %d applied %d times", seq, applied[seq])
		}
	}
	key := store.BatchKey{Run: "r", Item: "i", Seq: n + 1}
	ops := []store.Op{{Kind: store.OpUpdateItem, At: t0, Run: "r", Item: "i", Update: &store.ItemUpdate{Stage: ptr("audit")}}}
	boom := errors.New("disk full")
	if _, err := a.ApplyOps(ctx, key, "d", ops, func() error { return boom }); !errors.Is(err, boom) {
		t.Errorf("failing write: %v", err)
	}
	if it, _ := b.GetItem(ctx, "r", "i"); it.Stage == "audit" {
		t.Errorf("a batch whose write failed changed the item")
	}
	if ok, err := b.ApplyOps(ctx, key, "d", ops, nil); !ok || err != nil {
		t.Errorf("retry after a failed write: %v, %v", ok, err)
	}
}
