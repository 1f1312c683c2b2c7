package temporal

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"

	"github.com/cadre-dev/cadre/internal/engine"
)

// Dial connects to a Temporal frontend. The SDK's own log goes to logw.
func Dial(ctx context.Context, address, namespace string, logw io.Writer) (client.Client, error) {
	return DialWith(ctx, address, namespace, logw, nil)
}

// DialWith is Dial with the client's interceptors, which its workers
// use too (TraceInterceptors).
func DialWith(ctx context.Context, address, namespace string, logw io.Writer, ics []interceptor.ClientInterceptor) (client.Client, error) {
	c, err := client.DialContext(ctx, client.Options{HostPort: address, Namespace: namespace, Interceptors: ics,
		Logger: log.NewStructuredLogger(slog.New(slog.NewTextHandler(logw, &slog.HandlerOptions{Level: slog.LevelWarn})))})
	if err != nil {
		// The SDK's error says only that the dial failed: say what to do.
		return nil, fmt.Errorf("connect to temporal at %s: %w: is a Temporal server running there? start one (temporal server start-dev) or give its address (--temporal-address or temporal.address in cadre.yaml)", address, err)
	}
	return c, nil
}

// stopGrace bounds how long a stopping worker waits for its cancelled
// steps to end (their agents' process groups killed).
const stopGrace = 30 * time.Second

// Remote is what a worker needs for runs started on other machines (and
// what its machine's home serves them).
type Remote struct {
	// Home names the worker's own journal (HomeOf its state directory).
	Home string
	// Journal is that journal's side for the workers elsewhere (Export,
	// Apply); Replica keeps the items of runs from elsewhere.
	Journal Journal
	Replica Replica
	// Origin: the repository has a remote named origin.
	Origin bool
}

// Serve runs a worker for the repository of e on queue until ctx ends.
// progress must be a sink of e's events, for the steps' heartbeats. The
// worker also polls its own queue (the items of runs from elsewhere that
// it keeps come back to it) and its home's (the journal it shares with
// the runs it starts, for workers elsewhere).
func Serve(ctx context.Context, c client.Client, queue string, e *engine.Engine, progress *Progress, slots int, r Remote) error {
	id := workerID()
	acts := &Activities{Engine: e, Progress: progress, Home: r.Home, ID: id, Queue: "cadre-worker-" + id, Replica: r.Replica, Origin: r.Origin}
	// slots bounds the steps this worker runs at once, from both its
	// queues, as the embedded engine's limits bound one machine's agents;
	// the rest wait on the queue for this worker or another.
	tuner, err := slotTuner(slots)
	if err != nil {
		return err
	}
	// A step's heartbeats wait for their answers (lease.go); the SDK's own
	// carry a cancellation (cadre stop --now) to the step, and those it
	// sends at most every 80% of the heartbeat timeout (24s of the default
	// 30s): let it send them as often as the steps heartbeat, so a stop
	// takes seconds, not half a minute.
	opts := worker.Options{Tuner: tuner, MaxHeartbeatThrottleInterval: heartbeatEvery}
	w := worker.New(c, queue, opts)
	RegisterWorkflow(w, &Workflows{Defs: e.Workflows(), Roles: e.RoleExists})
	RegisterActivities(w, acts)
	opts.DisableWorkflowWorker = true
	own := worker.New(c, acts.Queue, opts)
	RegisterActivities(own, acts)
	ws := []worker.Worker{own}
	if r.Journal != nil {
		home := worker.New(c, HomeQueue(r.Home), worker.Options{DisableWorkflowWorker: true})
		RegisterHome(home, homeSteps{r.Journal})
		ws = append(ws, home)
	}
	for _, x := range ws {
		if err := x.Start(); err != nil {
			return fmt.Errorf("temporal worker: %w", err)
		}
		defer x.Stop()
	}
	stop := make(chan any)
	go func() {
		<-ctx.Done()
		close(stop)
	}()
	err = w.Run(stop)
	// The worker's stop cancels the running steps (another worker takes
	// them over); they still journal how they ended before e is closed.
	acts.wait(stopGrace)
	if err != nil {
		return fmt.Errorf("temporal worker on %s: %w", queue, err)
	}
	return nil
}

// StartHome serves the home's activities for the runs this process
// starts, until the returned stop is called.
func StartHome(c client.Client, home string, j Journal) (stop func(), err error) {
	w := worker.New(c, HomeQueue(home), worker.Options{DisableWorkflowWorker: true})
	RegisterHome(w, homeSteps{j})
	if err := w.Start(); err != nil {
		return nil, fmt.Errorf("temporal worker for the journal: %w", err)
	}
	return w.Stop, nil
}

// workerID names this worker process uniquely among the task queue's.
func workerID() string {
	host, _ := os.Hostname()
	var b [4]byte
	rand.Read(b[:])
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}

// slotTuner shares slots activity slots between a worker's queues.
func slotTuner(slots int) (worker.WorkerTuner, error) {
	acts, err := worker.NewFixedSizeSlotSupplier(slots)
	if err != nil {
		return nil, fmt.Errorf("temporal worker slots: %w", err)
	}
	// The SDK's defaults for the other kinds of task.
	other := func() worker.SlotSupplier {
		s, _ := worker.NewFixedSizeSlotSupplier(1000)
		return s
	}
	return worker.NewCompositeTuner(worker.CompositeTunerOptions{WorkflowSlotSupplier: other(), ActivitySlotSupplier: acts,
		LocalActivitySlotSupplier: other(), NexusSlotSupplier: other(), SessionActivitySlotSupplier: other()})
}
