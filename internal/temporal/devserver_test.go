package temporal

import (
	"context"
	"io"
	"log/slog"
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/temporalproto"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"

	"github.com/cadre-dev/cadre/internal/executor"
	flow "github.com/cadre-dev/cadre/internal/workflow"
)

// What the SDK's test environment does not do as the server does (it
// hands a cancelled activity's failure to the workflow at once, whatever
// its options say) is tested here against a dev server: the Temporal CLI
// of .tools/bin (.ci/install-temporal), else PATH.
//
// With CADRE_RECORD_HISTORIES=1 the tests write the histories they make
// to testdata, for TestReplayRecordedHistory.

// devServer starts a dev server and a client of it.
func devServer(t *testing.T) client.Client {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a Temporal dev server")
	}
	bin, err := filepath.Abs(filepath.Join("..", "..", ".tools", "bin", "temporal"))
	if _, serr := os.Stat(bin); err != nil || serr != nil {
		if bin, err = osexec.LookPath("temporal"); err != nil {
			t.Skip("needs the Temporal CLI: run .ci/install-temporal")
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	logger := log.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
	srv, err := testsuite.StartDevServer(ctx, testsuite.DevServerOptions{ExistingPath: bin,
		ClientOptions: &client.Options{Logger: logger}, Stdout: io.Discard, Stderr: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Stop() })
	return srv.Client()
}

// serve runs a worker of the item workflow and steps on queue, and the
// home's activities on home's queue when h is set.
func serve(t *testing.T, c client.Client, queue string, steps Steps, home string, h HomeSteps) {
	t.Helper()
	serveWith(t, c, queue, steps, home, h, testWorkflows(t))
}

// serveWith is serve with the workflows wf.
func serveWith(t *testing.T, c client.Client, queue string, steps Steps, home string, h HomeSteps, wf *Workflows) {
	t.Helper()
	w := worker.New(c, queue, worker.Options{})
	RegisterWorkflow(w, wf)
	RegisterActivities(w, steps)
	ws := []worker.Worker{w}
	if h != nil {
		hw := worker.New(c, HomeQueue(home), worker.Options{DisableWorkflowWorker: true})
		RegisterHome(hw, h)
		ws = append(ws, hw)
	}
	for _, x := range ws {
		if err := x.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(x.Stop)
	}
}

// record checks that the workflow's history replays against today's code
// and, when asked, writes it to testdata/name.
func record(t *testing.T, c client.Client, id, name string) {
	t.Helper()
	recordRun(t, c, id, "", name, testWorkflows(t))
}

// recordRun is record of one run of the workflow ("": its last), which
// replays against wf.
func recordRun(t *testing.T, c client.Client, id, runID, name string, wf *Workflows) {
	t.Helper()
	hist := &historypb.History{}
	it := c.GetWorkflowHistory(context.Background(), id, runID, false, 0)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		hist.Events = append(hist.Events, ev)
	}
	r := worker.NewWorkflowReplayer()
	RegisterWorkflow(r, wf)
	if err := r.ReplayWorkflowHistory(log.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil))), hist); err != nil {
		t.Fatalf("replay: %v", err)
	}
	if os.Getenv("CADRE_RECORD_HISTORIES") == "" {
		return
	}
	data, err := temporalproto.CustomJSONMarshalOptions{Indent: "  "}.Marshal(hist)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join("testdata", name), append(data, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

// slowAsk is fakeSteps whose Ask, once cancelled, takes a while to end
// (a journal write under way): it logs "ask done" when it returns.
type slowAsk struct {
	*fakeSteps
	asking chan struct{}
}

func (s *slowAsk) Ask(ctx context.Context, in HumanInput) (Asked, error) {
	s.log("ask %s", in.Call.ID)
	close(s.asking)
	for ctx.Err() == nil {
		// Cancellation reaches an activity through its heartbeats.
		activityHeartbeat(ctx)
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(time.Second)
	s.log("ask done")
	return Asked{}, ctx.Err()
}

// The dev-server tests share one server: starting one takes seconds.
func TestDevServer(t *testing.T) {
	c := devServer(t)
	t.Run("CancelWaitsForTheJournalStep", func(t *testing.T) { testCancelWaitsForTheJournalStep(t, c) })
	t.Run("BeginFailedJournaledAtHome", func(t *testing.T) { testBeginFailedJournaledAtHome(t, c) })
	t.Run("CancelDuringBeginStopsTheItem", func(t *testing.T) { testCancelDuringBegin(t, c) })
	t.Run("ContinueAsNew", func(t *testing.T) { testContinueAsNew(t, c) })
	t.Run("LostStepLandsNothing", func(t *testing.T) { testLostStepLandsNothing(t, c) })
	t.Run("NextRoutesTheLoop", func(t *testing.T) { testNextRoutesTheLoop(t, c) })
}

// recordedLimits are the history limits history-continued.json was
// recorded with, and replays with.
var recordedLimits = HistoryLimits{Events: 12, Bytes: 1 << 30}

// An item whose history reaches the limits continues as new on a server:
// the starter's handle follows it through its runs to the item's end
// (the workflow id stays, the run id changes), each stage run once. Its
// first run is recorded (the continue-as-new marker, then the workflow
// continued as new).
func testContinueAsNew(t *testing.T, c client.Client) {
	f := &fakeSteps{workflow: flow.PipelineWorkflow, stage: flow.StagePlan, staged: runnerStage(4, 9)}
	wf := testWorkflows(t)
	wf.History = recordedLimits
	serveWith(t, c, "continue", f, "", nil, wf)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	in := ItemInput{Run: "r1", Item: "t4", StepTimeout: time.Minute}
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: WorkflowID("r1", "t4"), TaskQueue: "continue"}, WorkflowName, in)
	if err != nil {
		t.Fatal(err)
	}
	first := run.GetRunID() // Get follows the runs
	var ended executor.Ended
	if err := run.Get(ctx, &ended); err != nil {
		t.Fatal(err)
	}
	if ended.Status != "completed" {
		t.Errorf("ended %+v, want completed", ended)
	}
	last, err := c.DescribeWorkflowExecution(ctx, run.GetID(), "")
	if err != nil {
		t.Fatal(err)
	}
	if got := last.WorkflowExecutionInfo.Execution.RunId; got == first {
		t.Errorf("the item ended in its first run %s: it never continued as new", got)
	}
	f.mu.Lock()
	want := []string{"begin r1/t4", "stage t4/plan/planner#1 review \"\"", "stage t4/code/coder#1 review \"\"",
		"stage t4/audit/auditor#1 review \"\"", "stage t4/code/coder#2 review \"out/t4/audit/auditor#1\"",
		"stage t4/audit/auditor#2 review \"\"", "end"}
	calls := slices.Clone(f.calls)
	f.mu.Unlock()
	if !slices.Equal(calls, want) {
		t.Errorf("calls %q\nwant  %q", calls, want)
	}
	recordRun(t, c, run.GetID(), first, "history-continued.json", wf)
}

// cadre stop --now while an item's question is being journaled: the
// workflow waits for that journal step to end before it journals the item
// stopped, so the two never write at once, and the last word is the stop.
func testCancelWaitsForTheJournalStep(t *testing.T, c client.Client) {
	f := &slowAsk{fakeSteps: &fakeSteps{workflow: "simple", agent: lowConfidence}, asking: make(chan struct{})}
	serve(t, c, "cancel", f, "", nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	in := ItemInput{Run: "r1", Item: "t1", StepTimeout: time.Minute, Heartbeat: 2 * time.Second}
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: WorkflowID("r1", "t1"), TaskQueue: "cancel"}, WorkflowName, in)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-f.asking:
	case <-ctx.Done():
		t.Fatal("the question was never asked")
	}
	if err := c.CancelWorkflow(ctx, run.GetID(), ""); err != nil {
		t.Fatal(err)
	}
	if err := run.Get(ctx, nil); !temporal.IsCanceledError(err) {
		t.Fatalf("workflow error %v, want cancelled", err)
	}
	f.mu.Lock()
	calls, ends := slices.Clone(f.calls), slices.Clone(f.ends)
	f.mu.Unlock()
	want := []string{"begin r1/t1", "agent t1/work/executor#1 visit 1", "ask t1/work/executor#1/human", "ask done", "end"}
	if !slices.Equal(calls, want) {
		t.Errorf("calls %q, want %q", calls, want)
	}
	if len(ends) != 1 || !ends[0].Stopped {
		t.Errorf("endings %+v, want one stopped", ends)
	}
	record(t, c, run.GetID(), "history-journal-waits.json")
}

// A Begin that fails on the worker's setup is journaled failed at the
// run's home, and the workflow completes with the item's end.
func testBeginFailedJournaledAtHome(t *testing.T, c client.Client) {
	const home = "elsewhere:/repo/.cadre#1"
	f := &fakeSteps{workflow: "simple", begin: temporal.NewNonRetryableApplicationError("item t2: no remote origin", ErrTypeNoOrigin, nil)}
	h := &fakeHome{}
	serve(t, c, "begin", f, home, h)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	in := ItemInput{Run: "r1", Item: "t2", StepTimeout: time.Minute, Home: home}
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: WorkflowID("r1", "t2"), TaskQueue: "begin"}, WorkflowName, in)
	if err != nil {
		t.Fatal(err)
	}
	var ended executor.Ended
	err = run.Get(ctx, &ended)
	record(t, c, run.GetID(), "history-begin-failed.json")
	if err != nil {
		t.Fatal(err)
	}
	why := "could not begin: item t2: no remote origin"
	if ended.Status != flow.ResultFailed || ended.Reason != why {
		t.Errorf("result %+v, want failed: %s", ended, why)
	}
	if len(h.fails) != 1 || h.fails[0].Reason != why {
		t.Errorf("journaled at home: %+v", h.fails)
	}
}

// cadre stop --now while the item begins: the workflow waits for Begin to
// end, then journals the item stopped (the begin-stopped marker).
func testCancelDuringBegin(t *testing.T, c client.Client) {
	beginning := make(chan struct{})
	f := &fakeSteps{workflow: "simple"}
	f.beginning = func(ctx context.Context) error {
		close(beginning)
		err := untilCancelled(ctx)
		f.log("begin done")
		return err
	}
	serve(t, c, "stop-begin", f, "", nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	in := ItemInput{Run: "r1", Item: "t3", StepTimeout: time.Minute, Heartbeat: 2 * time.Second}
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: WorkflowID("r1", "t3"), TaskQueue: "stop-begin"}, WorkflowName, in)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-beginning:
	case <-ctx.Done():
		t.Fatal("Begin never ran")
	}
	if err := c.CancelWorkflow(ctx, run.GetID(), ""); err != nil {
		t.Fatal(err)
	}
	err = run.Get(ctx, nil)
	record(t, c, run.GetID(), "history-begin-stopped.json")
	if !temporal.IsCanceledError(err) {
		t.Fatalf("workflow error %v, want cancelled", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if want := []string{"begin r1/t3", "begin done", "end"}; !slices.Equal(f.calls, want) {
		t.Errorf("calls %q, want %q", f.calls, want)
	}
	if len(f.ends) != 1 || !f.ends[0].Stopped {
		t.Errorf("endings %+v, want one stopped", f.ends)
	}
}
