// Package telemetry exports cadre's events as OpenTelemetry traces and
// metrics over OTLP/HTTP: a trace per run, a span per item, step and
// reaction, and counters of steps, tokens, cost and failures. Off (no
// endpoint anywhere), it starts nothing and its sink does nothing.
//
// Only identifiers, roles, runners, models, numbers and status words are
// exported: never an item's title or text, a prompt, an agent's output, an
// error's text or a secret, since a collector is often shared and kept
// longer than the journal.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/cadre-dev/cadre/internal/config"
	"github.com/cadre-dev/cadre/internal/event"
)

// ShutdownTimeout bounds how long Shutdown waits for the last spans and
// metric points to reach the collector: a collector that is down must
// not hold up cadre's exit.
const ShutdownTimeout = 5 * time.Second

// scope names cadre's tracer and meter.
const scope = "github.com/cadre-dev/cadre"

// Telemetry is cadre's exporter of traces and metrics; the zero value
// and nil are off.
type Telemetry struct {
	tp   *sdktrace.TracerProvider // nil when traces are off
	mp   *sdkmetric.MeterProvider // nil when metrics are off
	sink *sink                    // nil when off
}

// Endpoints are the OTLP/HTTP URLs traces and metrics are sent to, ""
// for a signal not exported.
type Endpoints struct {
	Traces, Metrics string
}

// Resolve says where cfg and the standard OTEL_* variables (read with
// getenv) send traces and metrics: a signal's own variable
// (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, a full URL), else
// OTEL_EXPORTER_OTLP_ENDPOINT, else telemetry.otlp_endpoint (base URLs,
// to which /v1/traces and /v1/metrics are added). The variables win over
// cadre.yaml, as they do for every program that reads them.
// OTEL_SDK_DISABLED=true turns both off.
func Resolve(cfg config.Telemetry, getenv func(string) string) Endpoints {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return Endpoints{}
	}
	base := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_ENDPOINT"))
	if base == "" {
		base = strings.TrimSpace(cfg.OTLPEndpoint)
	}
	pick := func(signal, path string) string {
		if own := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_" + signal + "_ENDPOINT")); own != "" {
			return own
		}
		if base == "" {
			return ""
		}
		return strings.TrimRight(base, "/") + path
	}
	return Endpoints{Traces: pick("TRACES", "/v1/traces"), Metrics: pick("METRICS", "/v1/metrics")}
}

// Enabled says whether cfg and the environment export anything.
func Enabled(cfg config.Telemetry, getenv func(string) string) bool {
	return Resolve(cfg, getenv) != Endpoints{}
}

// Start starts exporting as cfg and the environment say (Resolve); with
// no endpoint it returns a Telemetry that is off and started nothing.
// When on, its tracer provider becomes the process's global one (with the
// W3C trace-context propagator), so that libraries instrumented with
// OpenTelemetry, Temporal's interceptor among them, report to it too.
func Start(ctx context.Context, cfg config.Telemetry, getenv func(string) string) (*Telemetry, error) {
	ends := Resolve(cfg, getenv)
	if ends == (Endpoints{}) {
		return &Telemetry{}, nil
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(attribute.String("service.name", serviceName(cfg, getenv))))
	if err != nil {
		return nil, fmt.Errorf("telemetry resource: %w", err)
	}
	t := &Telemetry{}
	if ends.Traces != "" {
		if t.tp, err = tracerProvider(ctx, ends.Traces, headers(getenv, "TRACES"), res); err != nil {
			return nil, err
		}
	}
	if ends.Metrics != "" {
		if t.mp, err = meterProvider(ctx, ends.Metrics, headers(getenv, "METRICS"), res); err != nil {
			t.Shutdown(ctx)
			return nil, err
		}
	}
	if t.tp != nil {
		otel.SetTracerProvider(t.tp)
		otel.SetTextMapPropagator(propagation.TraceContext{})
	}
	otel.SetErrorHandler(&warner{w: os.Stderr})
	if t.sink, err = newSink(t.tp, t.mp); err != nil {
		t.Shutdown(ctx)
		return nil, err
	}
	return t, nil
}

func tracerProvider(ctx context.Context, endpoint string, hdr map[string]string, res *resource.Resource) (*sdktrace.TracerProvider, error) {
	if _, err := url.Parse(endpoint); err != nil {
		return nil, fmt.Errorf("telemetry traces endpoint: %w", err)
	}
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(endpoint), otlptracehttp.WithHeaders(hdr))
	if err != nil {
		return nil, fmt.Errorf("telemetry traces exporter: %w", err)
	}
	return sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res), sdktrace.WithIDGenerator(ids{})), nil
}

func meterProvider(ctx context.Context, endpoint string, hdr map[string]string, res *resource.Resource) (*sdkmetric.MeterProvider, error) {
	if _, err := url.Parse(endpoint); err != nil {
		return nil, fmt.Errorf("telemetry metrics endpoint: %w", err)
	}
	exp, err := otlpmetrichttp.New(ctx, otlpmetrichttp.WithEndpointURL(endpoint), otlpmetrichttp.WithHeaders(hdr))
	if err != nil {
		return nil, fmt.Errorf("telemetry metrics exporter: %w", err)
	}
	return sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp)), sdkmetric.WithResource(res)), nil
}

// serviceName is OTEL_SERVICE_NAME, else telemetry.service_name, else
// cadre.
func serviceName(cfg config.Telemetry, getenv func(string) string) string {
	for _, s := range []string{getenv("OTEL_SERVICE_NAME"), cfg.ServiceName} {
		if s = strings.TrimSpace(s); s != "" {
			return s
		}
	}
	return "cadre"
}

// headers are OTEL_EXPORTER_OTLP_HEADERS with the signal's own
// OTEL_EXPORTER_OTLP_<SIGNAL>_HEADERS over them: key=value pairs,
// comma-separated, values URL-encoded. They are read here, not left to
// the exporter, so that getenv is the one environment.
func headers(getenv func(string) string, signal string) map[string]string {
	out := map[string]string{}
	for _, v := range []string{getenv("OTEL_EXPORTER_OTLP_HEADERS"), getenv("OTEL_EXPORTER_OTLP_" + signal + "_HEADERS")} {
		for _, pair := range strings.Split(v, ",") {
			k, val, ok := strings.Cut(pair, "=")
			k = strings.TrimSpace(k)
			if !ok || k == "" {
				continue
			}
			if dec, err := url.PathUnescape(strings.TrimSpace(val)); err == nil {
				val = dec
			}
			out[k] = strings.TrimSpace(val)
		}
	}
	return out
}

// Enabled says whether t exports anything.
func (t *Telemetry) Enabled() bool { return t != nil && t.sink != nil }

// Sink is where cadre's events go to become spans and metric points. Off,
// it is a sink that does nothing, at no allocation.
func (t *Telemetry) Sink() event.Sink {
	if !t.Enabled() {
		return nop{}
	}
	return t.sink
}

// Shutdown ends the spans still open (a run interrupted, an item
// paused), as unfinished, and sends what is buffered, waiting at most
// ShutdownTimeout. After it the sink drops events.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	if t.sink != nil {
		t.sink.close()
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ShutdownTimeout)
	defer cancel()
	var errs []error
	if t.tp != nil {
		if err := t.tp.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("telemetry traces: %w", err))
		}
	}
	if t.mp != nil {
		if err := t.mp.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("telemetry metrics: %w", err))
		}
	}
	return errors.Join(errs...)
}

// nop is the sink of telemetry that is off.
type nop struct{}

func (nop) Handle(event.Event) {}

// warner writes the exporters' errors (a collector down) as cadre's
// warnings, each distinct one once a minute at most: an export retried
// every few seconds must not flood the terminal.
type warner struct {
	mu   sync.Mutex
	w    io.Writer
	last string
	at   time.Time
}

func (h *warner) Handle(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	msg, now := err.Error(), time.Now()
	if msg == h.last && now.Sub(h.at) < time.Minute {
		return
	}
	h.last, h.at = msg, now
	fmt.Fprintln(h.w, "cadre: warning: telemetry: "+msg)
}
