package store_test

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cadre-dev/cadre/internal/store"
)

// ev is an evaluation of a coder step by claude/sonnet in run r1; fields
// are overridden per case.
func ev(step, kind string, passed *bool, score *float64) store.Evaluation {
	return store.Evaluation{Source: store.SourceRun, RunID: "r1", ItemID: "a", StepID: step, Role: "coder",
		Runner: "claude", Model: "sonnet", Kind: kind, Passed: passed, Score: score}
}

func with(e store.Evaluation, fn func(*store.Evaluation)) store.Evaluation {
	fn(&e)
	return e
}

func usage(cost float64, ms, in, out int64) *store.EvalUsage {
	return &store.EvalUsage{CostUSD: cost, LatencyMS: ms, InputTokens: in, OutputTokens: out}
}

func record(t *testing.T, s *store.Store, evs ...store.Evaluation) {
	t.Helper()
	for _, e := range evs {
		if err := s.RecordEvaluation(context.Background(), e); err != nil {
			t.Fatalf("RecordEvaluation %+v: %v", e, err)
		}
	}
}

func TestEvalStatsAggregates(t *testing.T) {
	yes, no := ptr(true), ptr(false)
	tests := []struct {
		name   string
		evs    []store.Evaluation
		filter store.EvalFilter
		want   []store.EvalStat
	}{
		{
			name: "pass rate ignores rows without a verdict",
			evs: []store.Evaluation{
				ev("s1", store.KindGatekeeper, yes, nil),
				ev("s2", store.KindGatekeeper, no, nil),
				ev("s3", store.KindGatekeeper, yes, nil),
				ev("s1", store.KindJudge, nil, ptr(0.5)),
			},
			want: []store.EvalStat{{Role: "coder", Runner: "claude", Model: "sonnet",
				Samples: 4, Checked: 3, Passed: 2, Scored: 1, MeanScore: 0.5}},
		},
		{
			name: "mean score ignores rows without a score",
			evs: []store.Evaluation{
				ev("s1", store.KindJudge, nil, ptr(0.9)),
				ev("s2", store.KindJudge, nil, ptr(0.3)),
				ev("s3", store.KindOutcome, yes, nil),
			},
			want: []store.EvalStat{{Role: "coder", Runner: "claude", Model: "sonnet",
				Samples: 3, Checked: 1, Passed: 1, Scored: 2, MeanScore: 0.6}},
		},
		{
			name: "usage is averaged over the rows that carry it and summed once",
			evs: []store.Evaluation{
				with(ev("s1", store.KindGatekeeper, yes, ptr(1.0)), func(e *store.Evaluation) { e.Usage = usage(0.10, 1000, 100, 10) }),
				ev("s1", store.KindJudge, nil, ptr(0.8)),
				with(ev("s2", store.KindGatekeeper, yes, ptr(1.0)), func(e *store.Evaluation) { e.Usage = usage(0.30, 3000, 300, 30) }),
			},
			want: []store.EvalStat{{Role: "coder", Runner: "claude", Model: "sonnet",
				Samples: 3, Checked: 2, Passed: 2, Scored: 3, MeanScore: 2.8 / 3,
				Costed: 2, MeanCostUSD: 0.2, MeanLatencyMS: 2000, InputTokens: 400, OutputTokens: 40}},
		},
		{
			name: "recording the same evaluation twice counts it once",
			evs: []store.Evaluation{
				ev("s1", store.KindJudge, nil, ptr(0.2)),
				ev("s1", store.KindJudge, nil, ptr(1.0)), // a replay: the first record stands
				ev("s1", store.KindReview, nil, ptr(0.4)),
				with(ev("s1", store.KindJudge, nil, ptr(0.6)), func(e *store.Evaluation) { e.Source = store.SourceBench }),
			},
			filter: store.EvalFilter{Source: store.SourceRun},
			want: []store.EvalStat{{Role: "coder", Runner: "claude", Model: "sonnet",
				Samples: 2, Scored: 2, MeanScore: 0.3}},
		},
		{
			name: "grouped by role, runner and model, filtered by role",
			evs: []store.Evaluation{
				ev("s1", store.KindJudge, nil, ptr(0.5)),
				with(ev("s2", store.KindJudge, nil, ptr(0.7)), func(e *store.Evaluation) { e.Model = "opus" }),
				with(ev("s3", store.KindJudge, nil, ptr(0.9)), func(e *store.Evaluation) { e.Runner, e.Model = "codex", "" }),
				with(ev("s4", store.KindJudge, nil, ptr(0.1)), func(e *store.Evaluation) { e.Role = "planner" }),
			},
			filter: store.EvalFilter{Role: "coder"},
			want: []store.EvalStat{
				{Role: "coder", Runner: "claude", Model: "opus", Samples: 1, Scored: 1, MeanScore: 0.7},
				{Role: "coder", Runner: "claude", Model: "sonnet", Samples: 1, Scored: 1, MeanScore: 0.5},
				{Role: "coder", Runner: "codex", Samples: 1, Scored: 1, MeanScore: 0.9},
			},
		},
		{
			name: "filtered by source and run",
			evs: []store.Evaluation{
				ev("s1", store.KindJudge, nil, ptr(0.5)),
				with(ev("s1", store.KindJudge, nil, ptr(0.1)), func(e *store.Evaluation) { e.RunID = "r2" }),
				with(ev("c1", store.KindBench, yes, ptr(0.9)), func(e *store.Evaluation) { e.Source, e.RunID = store.SourceBench, "b1" }),
			},
			filter: store.EvalFilter{Source: store.SourceRun, RunID: "r1"},
			want:   []store.EvalStat{{Role: "coder", Runner: "claude", Model: "sonnet", Samples: 1, Scored: 1, MeanScore: 0.5}},
		},
		{
			name:   "no evaluations",
			filter: store.EvalFilter{Role: "coder"},
			want:   nil,
		},
	}
	approx := cmp.Comparer(func(a, b float64) bool { return math.Abs(a-b) < 1e-9 })
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := open(t)
			record(t, s, tt.evs...)
			got, err := s.EvalStats(context.Background(), tt.filter)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, approx); diff != "" {
				t.Errorf("EvalStats (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPassRateWithoutVerdicts(t *testing.T) {
	if got := (store.EvalStat{Samples: 3}).PassRate(); got != -1 {
		t.Errorf("PassRate without verdicts = %v, want -1 (unknown)", got)
	}
	if got := (store.EvalStat{Samples: 3, Checked: 4, Passed: 1}).PassRate(); got != 0.25 {
		t.Errorf("PassRate = %v, want 0.25", got)
	}
}

func TestRecordEvaluationRefusesBadInput(t *testing.T) {
	s, _ := open(t)
	base := ev("s1", store.KindJudge, nil, ptr(0.5))
	tests := []struct {
		name string
		e    store.Evaluation
		want string
	}{
		{"source", with(base, func(e *store.Evaluation) { e.Source = "prod" }), `source "prod"`},
		{"kind", with(base, func(e *store.Evaluation) { e.Kind = "vibe" }), `kind "vibe"`},
		{"run", with(base, func(e *store.Evaluation) { e.RunID = "" }), "without a run id"},
		{"step and item", with(base, func(e *store.Evaluation) { e.StepID, e.ItemID = "", "" }), "neither a step nor an item"},
		{"runner", with(base, func(e *store.Evaluation) { e.Runner = "" }), "role and runner are required"},
		{"score above 1", with(base, func(e *store.Evaluation) { e.Score = ptr(7.0) }), "outside 0..1"},
		{"score NaN", with(base, func(e *store.Evaluation) { e.Score = ptr(math.NaN()) }), "outside 0..1"},
		{"cost NaN", with(base, func(e *store.Evaluation) { e.Usage = usage(math.NaN(), 0, 0, 0) }), "not a number"},
		{"detail", with(base, func(e *store.Evaluation) { e.Detail = json.RawMessage("{oops") }), "detail is not valid JSON"},
	}
	for _, tt := range tests {
		err := s.RecordEvaluation(context.Background(), tt.e)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want containing %q", tt.name, err, tt.want)
		}
	}
	if got, err := s.Evaluations(context.Background(), store.EvalFilter{}, 0); err != nil || len(got) != 0 {
		t.Errorf("after refused records: %d evaluations stored (err %v), want none", len(got), err)
	}
}

func TestEvaluationsRoundTripNewestFirst(t *testing.T) {
	s, _ := open(t)
	ctx := context.Background()
	first := with(ev("s1", store.KindGatekeeper, ptr(false), ptr(0.5)), func(e *store.Evaluation) {
		e.CreatedAt = t0
		e.Detail = json.RawMessage(`{"checks":[{"name":"signal","passed":false}]}`)
		e.Usage = usage(0.25, 1500, 10, 20)
	})
	second := with(ev("s2", store.KindOutcome, nil, nil), func(e *store.Evaluation) { e.CreatedAt = t0.Add(time.Minute) })
	third := with(ev("s3", store.KindJudge, nil, ptr(0.9)), func(e *store.Evaluation) {
		e.CreatedAt = t0.Add(2 * time.Minute)
		e.Role = "planner"
	})
	record(t, s, first, second, third)

	got, err := s.Evaluations(ctx, store.EvalFilter{Role: "coder"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	ignoreID := cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".ID" }, cmp.Ignore())
	if diff := cmp.Diff([]store.Evaluation{second, first}, got, ignoreID); diff != "" {
		t.Errorf("Evaluations (-want +got):\n%s", diff)
	}
	got, err = s.Evaluations(ctx, store.EvalFilter{}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].StepID != "s3" {
		t.Errorf("Evaluations with limit 1 = %+v, want only the newest (s3)", got)
	}
}
