// Package telemetrytest is a local OTLP/HTTP receiver for tests: it
// accepts what cadre exports and keeps it to be looked at.
package telemetrytest

import (
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"

	metricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	tracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	mpb "go.opentelemetry.io/proto/otlp/metrics/v1"
	tpb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// Receiver accepts POST /v1/traces and /v1/metrics, protobuf bodies, as
// an OpenTelemetry collector does.
type Receiver struct {
	URL string // the base URL: OTEL_EXPORTER_OTLP_ENDPOINT

	mu       sync.Mutex
	spans    []*tpb.Span
	metrics  []*mpb.Metric
	requests int
	headers  []http.Header
}

// Start starts a receiver, closed when t ends.
func Start(t testing.TB) *Receiver {
	r := &Receiver{}
	srv := httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(srv.Close)
	r.URL = srv.URL
	return r
}

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, err := read(req)
	if err != nil || req.Method != http.MethodPost || req.Header.Get("Content-Type") != "application/x-protobuf" {
		http.Error(w, "want a protobuf POST", http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests++
	r.headers = append(r.headers, req.Header.Clone())
	switch req.URL.Path {
	case "/v1/traces":
		var in tracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &in); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		for _, rs := range in.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				r.spans = append(r.spans, ss.Spans...)
			}
		}
		out, _ := proto.Marshal(&tracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(out)
	case "/v1/metrics":
		var in metricspb.ExportMetricsServiceRequest
		if err := proto.Unmarshal(body, &in); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		for _, rm := range in.ResourceMetrics {
			for _, sm := range rm.ScopeMetrics {
				r.metrics = append(r.metrics, sm.Metrics...)
			}
		}
		out, _ := proto.Marshal(&metricspb.ExportMetricsServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(out)
	default:
		http.NotFound(w, req)
	}
}

func read(req *http.Request) ([]byte, error) {
	var body io.Reader = req.Body
	if req.Header.Get("Content-Encoding") == "gzip" {
		gz, err := gzip.NewReader(req.Body)
		if err != nil {
			return nil, err
		}
		body = gz
	}
	return io.ReadAll(body)
}

// Spans are the spans received so far.
func (r *Receiver) Spans() []*tpb.Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*tpb.Span(nil), r.spans...)
}

// Metrics are the metrics received so far, one per export that had them.
func (r *Receiver) Metrics() []*mpb.Metric {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*mpb.Metric(nil), r.metrics...)
}

// Requests is how many requests came.
func (r *Receiver) Requests() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.requests
}

// Headers are the requests' headers.
func (r *Receiver) Headers() []http.Header {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]http.Header(nil), r.headers...)
}

// Attr is a span's attribute's value as text ("" when it has none).
func Attr(s *tpb.Span, key string) string {
	for _, kv := range s.Attributes {
		if kv.Key == key {
			return Text(kv.Value)
		}
	}
	return ""
}

// Text is an attribute value as text.
func Text(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return strconv.FormatInt(x.IntValue, 10)
	case *commonpb.AnyValue_DoubleValue:
		return strconv.FormatFloat(x.DoubleValue, 'g', -1, 64)
	case *commonpb.AnyValue_BoolValue:
		return strconv.FormatBool(x.BoolValue)
	}
	return v.String()
}

// Sum is the sum of a counter's points (the last export's, the points
// being cumulative) whose attributes include every one of where.
func (r *Receiver) Sum(name string, where map[string]string) (float64, bool) {
	var last *mpb.Metric
	for _, m := range r.Metrics() {
		if m.Name == name {
			last = m
		}
	}
	if last == nil || last.GetSum() == nil {
		return 0, false
	}
	total, found := 0.0, false
	for _, p := range last.GetSum().DataPoints {
		if !matches(p.Attributes, where) {
			continue
		}
		found = true
		switch v := p.Value.(type) {
		case *mpb.NumberDataPoint_AsInt:
			total += float64(v.AsInt)
		case *mpb.NumberDataPoint_AsDouble:
			total += v.AsDouble
		}
	}
	return total, found
}

func matches(attrs []*commonpb.KeyValue, where map[string]string) bool {
	n := 0
	for _, kv := range attrs {
		if want, ok := where[kv.Key]; ok && Text(kv.Value) == want {
			n++
		}
	}
	return n == len(where)
}
