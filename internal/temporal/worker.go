package temporal

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"

	"github.com/cadre-dev/cadre/internal/engine"
)

// Dial connects to a Temporal frontend. The SDK's own log goes to logw.
func Dial(ctx context.Context, address, namespace string, logw io.Writer) (client.Client, error) {
	c, err := client.DialContext(ctx, client.Options{HostPort: address, Namespace: namespace,
		Logger: log.NewStructuredLogger(slog.New(slog.NewTextHandler(logw, &slog.HandlerOptions{Level: slog.LevelWarn})))})
	if err != nil {
		return nil, fmt.Errorf("connect to temporal at %s: %w", address, err)
	}
	return c, nil
}

// stopGrace bounds how long a stopping worker waits for its cancelled
// steps to end (their agents' process groups killed).
const stopGrace = 30 * time.Second

// Serve runs a worker for the repository of e on queue until ctx ends.
// progress must be a sink of e's events, for the steps' heartbeats.
func Serve(ctx context.Context, c client.Client, queue string, e *engine.Engine, progress *Progress, slots int) error {
	// slots bounds the steps this worker runs at once, as the embedded
	// engine's limits bound one machine's agents; the rest wait on the
	// queue for this worker or another.
	w := worker.New(c, queue, worker.Options{MaxConcurrentActivityExecutionSize: slots})
	RegisterWorkflow(w, &Workflows{Defs: e.Workflows(), Roles: e.RoleExists})
	acts := &Activities{Engine: e, Progress: progress}
	RegisterActivities(w, acts)
	stop := make(chan any)
	go func() {
		<-ctx.Done()
		close(stop)
	}()
	err := w.Run(stop)
	// The worker's stop cancels the running steps (another worker takes
	// them over); they still journal how they ended before e is closed.
	acts.wait(stopGrace)
	if err != nil {
		return fmt.Errorf("temporal worker on %s: %w", queue, err)
	}
	return nil
}
