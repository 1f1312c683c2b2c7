package temporal

import (
	"io"
	"log/slog"
	"testing"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
)

// Determinism: the history of a real run (recorded from the dev server
// with `temporal workflow show --output json`: the simple workflow, one
// agent step and its commit) replays against today's workflow code. A
// change that makes the workflow decide differently, or in another order,
// for the same activity results fails here before it breaks the workflows
// running on a server.
func TestReplayRecordedHistory(t *testing.T) {
	r := worker.NewWorkflowReplayer()
	RegisterWorkflow(r, testWorkflows(t))
	logger := log.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err := r.ReplayWorkflowHistoryFromJSONFile(logger, "testdata/history-simple.json"); err != nil {
		t.Fatal(err)
	}
}
