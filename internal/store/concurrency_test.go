package store_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"testing"

	"github.com/cadre-dev/cadre/internal/store"
	"golang.org/x/sync/errgroup"
)

// writeWork does one worker's share of journal writes: an item, n steps
// (each started then completed with one token of input) and n events.
func writeWork(ctx context.Context, s *store.Store, run string, worker, n int) error {
	item := fmt.Sprintf("item-%d", worker)
	if err := s.AddItem(ctx, store.Item{RunID: run, ID: item}); err != nil {
		return err
	}
	for i := range n {
		id := fmt.Sprintf("%s/step#%d", item, i)
		if err := s.StartStep(ctx, store.Step{RunID: run, ItemID: item, ID: id}); err != nil {
			return err
		}
		if err := s.FinishStep(ctx, store.Step{RunID: run, ID: id, Status: "completed", Usage: store.Usage{InputTokens: 1}}); err != nil {
			return err
		}
		if err := s.AppendEvent(ctx, store.Event{RunID: run, Type: "stepCompleted", ItemID: item}); err != nil {
			return err
		}
		status := "running"
		if err := s.UpdateItem(ctx, run, item, store.ItemUpdate{Status: &status, CurrentStep: &id}); err != nil {
			return err
		}
	}
	return nil
}

func TestConcurrentWriters(t *testing.T) {
	ctx := context.Background()
	s, _ := open(t)
	mustRun(t, s, "r1", t0)
	const workers, n = 8, 25
	var g errgroup.Group
	for w := range workers {
		g.Go(func() error { return writeWork(ctx, s, "r1", w, n) })
	}
	if err := g.Wait(); err != nil {
		t.Fatalf("writer: %v", err)
	}
	assertWork(t, s, "r1", workers, n)
}

func assertWork(t *testing.T, s *store.Store, run string, workers, n int) {
	t.Helper()
	ctx := context.Background()
	items, err := s.Items(ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	steps, err := s.Steps(ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	events, _, err := s.Events(ctx, run, 0)
	if err != nil {
		t.Fatal(err)
	}
	totals, err := s.Totals(ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != workers || len(steps) != workers*n || len(events) != workers*n || totals.InputTokens != int64(workers*n) {
		t.Errorf("items %d steps %d events %d input tokens %d; want %d, %d, %d, %d",
			len(items), len(steps), len(events), totals.InputTokens, workers, workers*n, workers*n, workers*n)
	}
	for _, st := range steps {
		if st.Status != "completed" || st.Tries != 1 {
			t.Errorf("step %s: status %q tries %d", st.ID, st.Status, st.Tries)
		}
	}
}

// readUntil polls the journal through r until done is closed, checking each
// read succeeds and that the event stream only grows, with no seq gaps
// skipped by the afterSeq cursor.
func readUntil(t *testing.T, r *store.Store, run string, done <-chan struct{}) int {
	t.Helper()
	ctx := context.Background()
	var (
		after int64
		seen  int
	)
	for {
		select {
		case <-done:
			// One last read after the writer finished.
			evs, _, err := r.Events(ctx, run, after)
			if err != nil {
				t.Errorf("final read: %v", err)
			}
			return seen + len(evs)
		default:
		}
		evs, last, err := r.Events(ctx, run, after)
		if err != nil {
			t.Errorf("read events: %v", err)
			return seen
		}
		for _, e := range evs {
			if e.Seq <= after {
				t.Errorf("event seq %d not after cursor %d", e.Seq, after)
			}
			after = e.Seq
		}
		if last != after {
			t.Errorf("last %d, cursor %d", last, after)
		}
		seen += len(evs)
		if _, err := r.Steps(ctx, run); err != nil {
			t.Errorf("read steps: %v", err)
		}
		if _, err := r.GetRun(ctx, run); err != nil {
			t.Errorf("read run: %v", err)
		}
	}
}

func TestSecondStoreReadsWhileFirstWrites(t *testing.T) {
	ctx := context.Background()
	w, path := open(t)
	mustRun(t, w, "r1", t0)
	r, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()

	const workers, n = 4, 25
	done := make(chan struct{})
	var (
		wg     sync.WaitGroup
		werr   error
		werrMu sync.Mutex
	)
	for i := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := writeWork(ctx, w, "r1", i, n); err != nil {
				werrMu.Lock()
				werr = err
				werrMu.Unlock()
			}
		}()
	}
	go func() { wg.Wait(); close(done) }()
	seen := readUntil(t, r, "r1", done)
	if werr != nil {
		t.Fatalf("writer: %v", werr)
	}
	if seen != workers*n {
		t.Errorf("reader saw %d events, want %d", seen, workers*n)
	}
	assertWork(t, r, "r1", workers, n)
}

// helperEnv names the database a re-executed test binary writes to.
const helperEnv = "CADRE_STORE_TEST_WRITER_DB"

// TestHelperWriter is not a test on its own: TestTwoProcesses re-runs the
// test binary with helperEnv set so this writes from another process.
func TestHelperWriter(t *testing.T) {
	path := os.Getenv(helperEnv)
	if path == "" {
		t.Skip("helper process for TestTwoProcesses")
	}
	ctx := context.Background()
	s, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := writeWork(ctx, s, "r1", 0, 50); err != nil {
		t.Fatal(err)
	}
}

func TestTwoProcesses(t *testing.T) {
	if os.Getenv(helperEnv) != "" {
		t.Skip("inside helper")
	}
	ctx := context.Background()
	r, path := open(t)
	mustRun(t, r, "r1", t0)

	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHelperWriter$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperEnv+"="+path)
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var werr error
	go func() { werr = cmd.Wait(); close(done) }()
	// While the other process writes, this one both reads and writes.
	if err := r.AppendEvent(ctx, store.Event{RunID: "r1", Type: "runStarted"}); err != nil {
		t.Errorf("write from parent: %v", err)
	}
	seen := readUntil(t, r, "r1", done)
	if werr != nil {
		t.Fatalf("writer process: %v\n%s", werr, out.String())
	}
	if seen != 51 {
		t.Errorf("reader saw %d events, want 51", seen)
	}
	assertWorkOneItem(t, r)
}

func assertWorkOneItem(t *testing.T, s *store.Store) {
	t.Helper()
	steps, err := s.Steps(context.Background(), "r1")
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) != 50 {
		t.Errorf("steps = %d, want 50", len(steps))
	}
}

type syncBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	return len(p), nil
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}
