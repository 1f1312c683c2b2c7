package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cadre-dev/cadre/internal/store"
	"github.com/google/go-cmp/cmp"
)

// open returns a fresh store in a temp dir, closed when the test ends.
func open(t testing.TB) (*store.Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), ".cadre", "cadre.db")
	s, err := store.Open(context.Background(), path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s, path
}

func mustRun(t testing.TB, s *store.Store, id string, started time.Time) {
	t.Helper()
	if err := s.CreateRun(context.Background(), store.Run{ID: id, Repo: "/repo", Workflow: "default", StartedAt: started}); err != nil {
		t.Fatalf("CreateRun %s: %v", id, err)
	}
}

var t0 = time.Date(2025, 3, 4, 5, 6, 7, 123456789, time.UTC)

func ptr[T any](v T) *T { return &v }

func TestOpenCreatesFileAndParentDir(t *testing.T) {
	_, path := open(t)
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("database file not created: %v", err)
	}
}

func TestOpenPathWithURICharacters(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "a dir?x=1#frag%20", "cadre.db")
	s, err := store.Open(ctx, path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer s.Close()
	mustRun(t, s, "r1", t0)
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("database not at the literal path %q: %v", path, err)
	}
}

func TestOpenTwiceKeepsData(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "cadre.db")
	for i := range 3 {
		s, err := store.Open(ctx, path)
		if err != nil {
			t.Fatalf("Open #%d: %v", i+1, err)
		}
		if i == 0 {
			mustRun(t, s, "r1", t0)
		}
		if _, err := s.GetRun(ctx, "r1"); err != nil {
			t.Errorf("Open #%d: GetRun: %v", i+1, err)
		}
		if err := s.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
	}
}

func TestOpenEmptyPath(t *testing.T) {
	if _, err := store.Open(context.Background(), ""); err == nil {
		t.Fatal("Open(\"\") succeeded, want error")
	}
}

func TestCreateAndGetRun(t *testing.T) {
	ctx := context.Background()
	s, _ := open(t)
	want := store.Run{
		ID: "r1", Repo: "/repo", Workflow: "default", Status: "running",
		Options: json.RawMessage(`{"parallel":2}`), PID: 42,
		StartedAt: t0, UpdatedAt: t0.Add(time.Second),
	}
	if err := s.CreateRun(ctx, want); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetRun(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("GetRun mismatch (-want +got):\n%s", diff)
	}
}

func TestCreateRunDefaults(t *testing.T) {
	ctx := context.Background()
	s, _ := open(t)
	if err := s.CreateRun(ctx, store.Run{ID: "r1"}); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetRun(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != "running" || got.StartedAt.IsZero() || !got.UpdatedAt.Equal(got.StartedAt) ||
		got.Options != nil || got.EndedAt != nil || got.StartedAt.Location() != time.UTC {
		t.Errorf("defaults not applied: %+v", got)
	}
}

func TestCreateRunErrors(t *testing.T) {
	ctx := context.Background()
	s, _ := open(t)
	mustRun(t, s, "dup", t0)
	tests := []struct {
		name string
		run  store.Run
		want string
	}{
		{"empty id", store.Run{}, "empty run id"},
		{"bad status", store.Run{ID: "x", Status: "done"}, `unknown status "done"`},
		{"bad options", store.Run{ID: "x", Options: json.RawMessage(`{`)}, "options is not valid JSON"},
		{"duplicate", store.Run{ID: "dup"}, "already exists"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := s.CreateRun(ctx, tt.run)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("CreateRun error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestSetRunStatus(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		status    string
		wantEnded bool
	}{
		{"running", false},
		{"completed", true},
		{"failed", true},
		{"stopped", false},
		{"paused", false},
		{"interrupted", false},
	}
	for _, tt := range tests {
		t.Run(tt.status, func(t *testing.T) {
			s, _ := open(t)
			mustRun(t, s, "r1", t0)
			if err := s.SetRunStatus(ctx, "r1", tt.status, 77); err != nil {
				t.Fatal(err)
			}
			got, err := s.GetRun(ctx, "r1")
			if err != nil {
				t.Fatal(err)
			}
			if got.Status != tt.status || got.PID != 77 {
				t.Errorf("status, pid = %q, %d; want %q, 77", got.Status, got.PID, tt.status)
			}
			if !got.UpdatedAt.After(t0) {
				t.Errorf("UpdatedAt %v not advanced past StartedAt %v", got.UpdatedAt, t0)
			}
			if (got.EndedAt != nil) != tt.wantEnded {
				t.Errorf("EndedAt = %v, want set: %v", got.EndedAt, tt.wantEnded)
			}
		})
	}
}

func TestSetRunStatusResumeClearsEndedAt(t *testing.T) {
	ctx := context.Background()
	s, _ := open(t)
	mustRun(t, s, "r1", t0)
	if err := s.SetRunStatus(ctx, "r1", "failed", 1); err != nil {
		t.Fatal(err)
	}
	if err := s.SetRunStatus(ctx, "r1", "running", 2); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetRun(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if got.EndedAt != nil {
		t.Errorf("EndedAt = %v after resuming, want nil", got.EndedAt)
	}
}

func TestSetRunStatusErrors(t *testing.T) {
	ctx := context.Background()
	s, _ := open(t)
	mustRun(t, s, "r1", t0)
	if err := s.SetRunStatus(ctx, "missing", "running", 1); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("missing run: err = %v, want ErrNotFound", err)
	}
	if err := s.SetRunStatus(ctx, "r1", "bogus", 1); err == nil || errors.Is(err, store.ErrNotFound) {
		t.Errorf("bad status: err = %v, want a validation error", err)
	}
}

func TestGetRunNotFound(t *testing.T) {
	s, _ := open(t)
	if _, err := s.GetRun(context.Background(), "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("err = %v, want ErrNotFound", err)
	}
}

func TestLatestRun(t *testing.T) {
	ctx := context.Background()
	s, _ := open(t)
	if _, err := s.LatestRun(ctx); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("empty journal: err = %v, want ErrNotFound", err)
	}
	// Created out of order: the latest is by start time, not insertion.
	mustRun(t, s, "middle", t0.Add(time.Hour))
	mustRun(t, s, "newest", t0.Add(2*time.Hour))
	mustRun(t, s, "oldest", t0)
	got, err := s.LatestRun(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != "newest" {
		t.Errorf("LatestRun = %q, want newest", got.ID)
	}
	// A later benchmark is not the latest run: resume and status would
	// take its options for a workflow run's.
	if err := s.CreateRun(ctx, store.Run{ID: "bench1", Workflow: store.WorkflowBench, StartedAt: t0.Add(3 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if got, err := s.LatestRun(ctx); err != nil || got.ID != "newest" {
		t.Errorf("LatestRun after a bench = %q, %v; want newest", got.ID, err)
	}
}

func TestRunsOf(t *testing.T) {
	ctx := context.Background()
	s, _ := open(t)
	mustRun(t, s, "work", t0.Add(5*time.Hour))
	for i, id := range []string{"b-old", "b-new"} {
		if err := s.CreateRun(ctx, store.Run{ID: id, Workflow: store.WorkflowBench, StartedAt: t0.Add(time.Duration(i) * time.Hour)}); err != nil {
			t.Fatal(err)
		}
	}
	runs, err := s.RunsOf(ctx, store.WorkflowBench)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range runs {
		ids = append(ids, r.ID)
	}
	if strings.Join(ids, ",") != "b-new,b-old" {
		t.Errorf("RunsOf(bench) = %v, want [b-new b-old]", ids)
	}
}

func TestItems(t *testing.T) {
	ctx := context.Background()
	s, _ := open(t)
	mustRun(t, s, "r1", t0)
	mustRun(t, s, "r2", t0)
	first := store.Item{
		RunID: "r1", ID: "task-b", Source: "task", Ref: "tasks/b.md", Title: "B",
		InitStage: "code", InitAttempts: 1, Stage: "code", Attempts: 1, UpdatedAt: t0,
	}
	for _, it := range []store.Item{
		first,
		{RunID: "r1", ID: "task-a", Source: "task", Ref: "tasks/a.md", Title: "A", UpdatedAt: t0},
		{RunID: "r2", ID: "task-a", Title: "other run", UpdatedAt: t0},
		// Re-adding must not change anything, Init* fields included.
		{RunID: "r1", ID: "task-b", Title: "changed", InitStage: "review", InitAttempts: 9, Stage: "review", Status: "failed"},
	} {
		if err := s.AddItem(ctx, it); err != nil {
			t.Fatalf("AddItem %s/%s: %v", it.RunID, it.ID, err)
		}
	}
	got, err := s.Items(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	first.Status = "pending"
	want := []store.Item{first, {RunID: "r1", ID: "task-a", Source: "task", Ref: "tasks/a.md", Title: "A", Status: "pending", UpdatedAt: t0}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Items mismatch (-want +got):\n%s", diff)
	}
}

func TestUpdateItem(t *testing.T) {
	ctx := context.Background()
	base := store.Item{RunID: "r1", ID: "a", Stage: "plan", Status: "pending", Attempts: 0, CurrentStep: "", Error: "", InitStage: "plan", UpdatedAt: t0}
	tests := []struct {
		name string
		u    store.ItemUpdate
		want func(it *store.Item)
	}{
		{"nothing", store.ItemUpdate{}, func(*store.Item) {}},
		{"stage", store.ItemUpdate{Stage: ptr("code")}, func(it *store.Item) { it.Stage = "code" }},
		{"status and step", store.ItemUpdate{Status: ptr("running"), CurrentStep: ptr("a/code/coder#1")},
			func(it *store.Item) { it.Status = "running"; it.CurrentStep = "a/code/coder#1" }},
		{"error and attempts", store.ItemUpdate{Error: ptr("tests failed"), Attempts: ptr(2)},
			func(it *store.Item) { it.Error = "tests failed"; it.Attempts = 2 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := open(t)
			mustRun(t, s, "r1", t0)
			if err := s.AddItem(ctx, base); err != nil {
				t.Fatal(err)
			}
			if err := s.UpdateItem(ctx, "r1", "a", tt.u); err != nil {
				t.Fatal(err)
			}
			got, err := s.GetItem(ctx, "r1", "a")
			if err != nil {
				t.Fatal(err)
			}
			want := base
			tt.want(&want)
			if !got.UpdatedAt.After(t0) {
				t.Errorf("UpdatedAt %v not stamped", got.UpdatedAt)
			}
			want.UpdatedAt = got.UpdatedAt
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("item mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestItemErrors(t *testing.T) {
	ctx := context.Background()
	s, _ := open(t)
	mustRun(t, s, "r1", t0)
	if err := s.AddItem(ctx, store.Item{RunID: "r1", ID: "a"}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		err      error
		notFound bool
	}{
		{"add to unknown run", s.AddItem(ctx, store.Item{RunID: "nope", ID: "a"}), true},
		{"add without id", s.AddItem(ctx, store.Item{RunID: "r1"}), false},
		{"add bad status", s.AddItem(ctx, store.Item{RunID: "r1", ID: "b", Status: "done"}), false},
		{"update missing", s.UpdateItem(ctx, "r1", "zz", store.ItemUpdate{Stage: ptr("x")}), true},
		{"update bad status", s.UpdateItem(ctx, "r1", "a", store.ItemUpdate{Status: ptr("done")}), false},
		{"get missing", func() error { _, err := s.GetItem(ctx, "r1", "zz"); return err }(), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.err == nil {
				t.Fatal("no error")
			}
			if errors.Is(tt.err, store.ErrNotFound) != tt.notFound {
				t.Errorf("err = %v; want ErrNotFound: %v", tt.err, tt.notFound)
			}
		})
	}
	items, err := s.Items(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 1 || items[0].Status != "pending" {
		t.Errorf("rejected writes changed items: %+v", items)
	}
}

func TestEvents(t *testing.T) {
	ctx := context.Background()
	s, _ := open(t)
	mustRun(t, s, "r1", t0)
	mustRun(t, s, "r2", t0)
	in := []store.Event{
		{RunID: "r1", Time: t0, Type: "runStarted"},
		{RunID: "r2", Time: t0, Type: "runStarted"},
		{RunID: "r1", Time: t0.Add(time.Second), Type: "stepStarted", ItemID: "a", Data: json.RawMessage(`{"step":"a/code/coder#1"}`)},
		{RunID: "r1", Time: t0.Add(2 * time.Second), Type: "stepCompleted", ItemID: "a"},
	}
	for _, e := range in {
		if err := s.AppendEvent(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	all, last, err := s.Events(ctx, "r1", 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []store.Event{in[0], in[2], in[3]}
	if diff := cmp.Diff(want, all, cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".Seq" }, cmp.Ignore())); diff != "" {
		t.Errorf("Events mismatch (-want +got):\n%s", diff)
	}
	if last != all[2].Seq || !(all[0].Seq < all[1].Seq && all[1].Seq < all[2].Seq) {
		t.Errorf("seqs %d,%d,%d last %d: want increasing and last = final seq", all[0].Seq, all[1].Seq, all[2].Seq, last)
	}

	tests := []struct {
		name     string
		run      string
		after    int64
		wantN    int
		wantLast int64
	}{
		{"after first", "r1", all[0].Seq, 2, all[2].Seq},
		{"caught up", "r1", last, 0, last},
		{"all runs", "", 0, 4, all[2].Seq},
		{"unknown run", "nope", 0, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, gotLast, err := s.Events(ctx, tt.run, tt.after)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != tt.wantN || gotLast != tt.wantLast {
				t.Errorf("got %d events, last %d; want %d, last %d", len(got), gotLast, tt.wantN, tt.wantLast)
			}
		})
	}
}

func TestAppendEventErrors(t *testing.T) {
	ctx := context.Background()
	s, _ := open(t)
	mustRun(t, s, "r1", t0)
	tests := []struct {
		name     string
		e        store.Event
		notFound bool
	}{
		{"unknown run", store.Event{RunID: "nope", Type: "runStarted"}, true},
		{"no type", store.Event{RunID: "r1"}, false},
		{"bad data", store.Event{RunID: "r1", Type: "x", Data: json.RawMessage(`{"a":`)}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := s.AppendEvent(ctx, tt.e)
			if err == nil || errors.Is(err, store.ErrNotFound) != tt.notFound {
				t.Errorf("err = %v; want an error, ErrNotFound: %v", err, tt.notFound)
			}
		})
	}
}

func TestSetRunOptions(t *testing.T) {
	ctx := context.Background()
	s, _ := open(t)
	mustRun(t, s, "r1", t0)
	if err := s.SetRunOptions(ctx, "r1", json.RawMessage(`{"budget_usd":20}`)); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetRun(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Options) != `{"budget_usd":20}` {
		t.Errorf("options = %s, want the new ones", got.Options)
	}
	if err := s.SetRunOptions(ctx, "missing", json.RawMessage(`{}`)); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("missing run: err = %v, want ErrNotFound", err)
	}
	if err := s.SetRunOptions(ctx, "r1", json.RawMessage(`{`)); err == nil {
		t.Error("invalid JSON was accepted")
	}
}
