package temporal

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/trace"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"

	"github.com/cadre-dev/cadre/internal/telemetry"
)

type nextOutbound struct {
	interceptor.ClientOutboundInterceptorBase
	ctx context.Context
}

func (n *nextOutbound) ExecuteWorkflow(ctx context.Context, _ *interceptor.ClientExecuteWorkflowInput) (client.WorkflowRun, error) {
	n.ctx = ctx
	return nil, nil
}

// TestItemWorkflowStartsInRunTrace: an item's workflow is started in its
// run's trace, so Temporal's spans (and the workers') join it; another
// workflow's start is left as it was.
func TestItemWorkflowStartsInRunTrace(t *testing.T) {
	ics, err := TraceInterceptors(telemetry.RunContext)
	if err != nil {
		t.Fatal(err)
	}
	if len(ics) != 2 {
		t.Fatalf("%d interceptors, want the run's and Temporal's tracing", len(ics))
	}
	if _, ok := ics[1].(interceptor.Interceptor); !ok {
		t.Errorf("the tracing interceptor %T is not a worker's too", ics[1])
	}
	next := &nextOutbound{}
	out := ics[0].InterceptClient(next)
	out.ExecuteWorkflow(context.Background(), &interceptor.ClientExecuteWorkflowInput{Args: []any{ItemInput{Run: "r9", Item: "gh-1"}}})
	if got := trace.SpanContextFromContext(next.ctx).TraceID(); got != telemetry.RunTraceID("r9") {
		t.Errorf("item workflow started in trace %s, want run r9's %s", got, telemetry.RunTraceID("r9"))
	}
	out.ExecuteWorkflow(context.Background(), &interceptor.ClientExecuteWorkflowInput{Args: []any{"other"}})
	if sc := trace.SpanContextFromContext(next.ctx); sc.IsValid() {
		t.Errorf("another workflow started in trace %s", sc.TraceID())
	}
}
