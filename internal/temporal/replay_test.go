package temporal

import (
	"io"
	"log/slog"
	"testing"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
)

// Determinism: histories of real runs replay against today's workflow
// code. A change that makes the workflow decide differently, or in another
// order, for the same activity results fails here before it breaks the
// workflows running on a server.
//
// Each was recorded from the dev server with `temporal workflow show
// --workflow-id <id> --output json` after a run with the script runner:
//   - history-simple.json: the simple workflow, one agent step and its
//     commit;
//   - history-runner.json: the stage pipeline (a plain task file, no
//     workflow: key) from stage plan, its first audit rated 4 and its
//     second 9 (audit_pass_rating 8): planner, coder, auditor, coder,
//     auditor, then the end that commits. The repository, cadre.yaml and
//     scenario are those of task "retry" in
//     internal/cli/testdata/temporal/temporal_runner.txtar with the task
//     at stage plan; record again with one worker and cadre run against
//     `temporal server start-dev`, whose address and queue cadre.yaml
//     names;
//   - history-halt.json and history-halted.json: the run of
//     internal/cli/testdata/temporal/temporal_halt.txtar (recorded the
//     same way): doomed's workflow, whose hard stop tells the run's other
//     items (the halt-siblings version marker, then a halt signal to
//     each), and unsure's, waiting for a human when that halt signal
//     came, ending stopped;
//   - history-halt-unversioned.json: doomed's workflow of the same run
//     recorded by the code before the halt signals (no halt-siblings
//     version marker), which workers of today's code must still replay;
//   - history-remote.json: the run of TestTemporalRemoteUncommittedWorkMoves
//     (internal/cli; the history written out after the run with the same
//     command): a stage-pipeline item on two workers in clones of their
//     own, the run's starter its home. Each worker's first step is cold
//     (an export from the home, then the step again with the snapshot),
//     every step's batch is applied home, the audit's worker is killed:
//     the audit times out on its heartbeat, waits on that worker's own
//     queue until its schedule-to-start timeout, then runs on the other;
//   - history-journal-waits.json and history-begin-failed.json: written
//     by TestDevServer (devserver_test.go, run with
//     CADRE_RECORD_HISTORIES=1): an item cancelled while its question is
//     journaled, the workflow waiting for that step before it journals
//     the item stopped (the journal-waits version marker); and an item
//     whose Begin fails on the worker's setup, journaled failed at its
//     home (the begin-failed marker);
//   - history-journal-unversioned.json and
//     history-begin-failed-unversioned.json: the same tests recorded by
//     the code before those versions (the cancelled question not waited
//     for; the workflow failing with Begin), which workers of today's code
//     must still replay;
//   - history-begin-stopped.json: written by TestDevServer too, an item
//     cancelled while it begins, journaled stopped once Begin ended (the
//     begin-stopped marker); history-begin-stopped-unversioned.json, the
//     same test recorded by the code before that version (the workflow
//     ending cancelled, its item not journaled stopped);
//   - history-continued.json: written by TestDevServer too, the first run
//     of a stage-pipeline item whose history reached recordedLimits: the
//     continue-as-new marker, then the workflow continued as new. It
//     replays with those limits (every worker of a queue has the same).
//   - history-route-next.json: written by TestDevServer too, the route
//     workflow (testdata/route.yaml) with the route-next marker: its loop
//     follows its steps' Next, the planner's Next: judge skipping the
//     actor, the judge's failed round taken up again at the actor (Next:
//     actor; the actor's Next: Done refused with a warning), then passed.
//     Replayed as if recorded before that marker (every step of each
//     round), it would not match.
//
// The histories recorded before the continue-as-new version replay even
// with limits they went far past: the workflows that made them did not
// continue, and replaying ones do not either.
func TestReplayRecordedHistory(t *testing.T) {
	for _, file := range []string{"testdata/history-simple.json", "testdata/history-runner.json",
		"testdata/history-halt.json", "testdata/history-halted.json", "testdata/history-halt-unversioned.json", "testdata/history-remote.json",
		"testdata/history-journal-waits.json", "testdata/history-journal-unversioned.json",
		"testdata/history-begin-failed.json", "testdata/history-begin-failed-unversioned.json",
		"testdata/history-begin-stopped.json", "testdata/history-begin-stopped-unversioned.json",
		"testdata/history-route-next.json"} {
		t.Run(file, func(t *testing.T) {
			r := worker.NewWorkflowReplayer()
			RegisterWorkflow(r, testWorkflows(t))
			logger := log.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
			if err := r.ReplayWorkflowHistoryFromJSONFile(logger, file); err != nil {
				t.Fatal(err)
			}
			r = worker.NewWorkflowReplayer()
			wf := testWorkflows(t)
			wf.History = HistoryLimits{Events: 1, Bytes: 1}
			RegisterWorkflow(r, wf)
			if err := r.ReplayWorkflowHistoryFromJSONFile(logger, file); err != nil {
				t.Fatalf("with limits it went past: %v", err)
			}
		})
	}
	t.Run("testdata/history-continued.json", func(t *testing.T) {
		r := worker.NewWorkflowReplayer()
		wf := testWorkflows(t)
		wf.History = recordedLimits
		RegisterWorkflow(r, wf)
		logger := log.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err := r.ReplayWorkflowHistoryFromJSONFile(logger, "testdata/history-continued.json"); err != nil {
			t.Fatal(err)
		}
	})
}
