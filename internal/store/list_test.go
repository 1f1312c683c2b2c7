package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/cadre-dev/cadre/internal/store"
)

func TestRunsNewestFirstWithoutBenchmarks(t *testing.T) {
	s, _ := open(t)
	ctx := context.Background()
	t0 := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	mustRun(t, s, "old", t0)
	mustRun(t, s, "new", t0.Add(time.Hour))
	if err := s.CreateRun(ctx, store.Run{ID: "bench", Workflow: store.WorkflowBench, StartedAt: t0.Add(2 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	runs, err := s.Runs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range runs {
		ids = append(ids, r.ID)
	}
	if len(ids) != 2 || ids[0] != "new" || ids[1] != "old" {
		t.Errorf("runs = %v, want [new old]", ids)
	}
}

func TestLastEventSeq(t *testing.T) {
	s, _ := open(t)
	ctx := context.Background()
	if seq, err := s.LastEventSeq(ctx); err != nil || seq != 0 {
		t.Fatalf("empty journal: seq %d, err %v; want 0, nil", seq, err)
	}
	mustRun(t, s, "r", time.Now())
	for range 3 {
		if err := s.AppendEvent(ctx, store.Event{RunID: "r", Type: "stepStarted"}); err != nil {
			t.Fatal(err)
		}
	}
	_, last, err := s.Events(ctx, "r", 0)
	if err != nil {
		t.Fatal(err)
	}
	if seq, err := s.LastEventSeq(ctx); err != nil || seq != last {
		t.Errorf("seq %d, err %v; want %d", seq, err, last)
	}
}
