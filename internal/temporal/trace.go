package temporal

import (
	"context"
	"fmt"

	"go.temporal.io/sdk/client"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
	"go.temporal.io/sdk/interceptor"
)

// TraceInterceptors are a client's interceptors (its workers' too) that
// trace with OpenTelemetry: a run's item workflow is started under the
// span runContext puts in its context for the run, and the trace goes on
// in the workers that run its steps, through Temporal's headers. Their
// tracer is the process's global provider: one the telemetry sets after
// the dial still gets the spans.
func TraceInterceptors(runContext func(ctx context.Context, run string) context.Context) ([]interceptor.ClientInterceptor, error) {
	tracing, err := temporalotel.NewTracingInterceptor(temporalotel.TracerOptions{})
	if err != nil {
		return nil, fmt.Errorf("temporal tracing: %w", err)
	}
	// runTrace first: the tracing interceptor it calls starts its span
	// in the context runTrace made.
	return []interceptor.ClientInterceptor{&runTrace{runContext: runContext}, tracing}, nil
}

// runTrace puts an item workflow's start in its run's trace.
type runTrace struct {
	interceptor.ClientInterceptorBase
	runContext func(ctx context.Context, run string) context.Context
}

func (r *runTrace) InterceptClient(next interceptor.ClientOutboundInterceptor) interceptor.ClientOutboundInterceptor {
	out := &runTraceOutbound{runContext: r.runContext}
	out.Next = next
	return out
}

type runTraceOutbound struct {
	interceptor.ClientOutboundInterceptorBase
	runContext func(ctx context.Context, run string) context.Context
}

func (o *runTraceOutbound) ExecuteWorkflow(ctx context.Context, in *interceptor.ClientExecuteWorkflowInput) (client.WorkflowRun, error) {
	for _, a := range in.Args {
		if item, ok := a.(ItemInput); ok && item.Run != "" {
			ctx = o.runContext(ctx, item.Run)
			break
		}
	}
	return o.Next.ExecuteWorkflow(ctx, in)
}
