package telemetry

import (
	"context"
	"encoding/hex"
	"runtime"
	"strings"
	"testing"
	"time"

	tpb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/cadre-dev/cadre/internal/config"
	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/telemetry/telemetrytest"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

const (
	title  = "Make the login page remember me"
	secret = "ghp_plantedSecret0123456789"
)

// runEvents are a run of one item: an agent step that completes, an
// action, an agent step that fails, as the engine publishes them (its
// title in the item's start, free text in messages and errors).
func runEvents(t0 time.Time) []event.Event {
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	use := &event.Usage{InputTokens: 1200, OutputTokens: 300, CostUSD: 0.25}
	return []event.Event{
		{Time: at(0), Run: "r1", Type: event.RunStarted, Message: "started"},
		{Time: at(1), Run: "r1", Item: "gh-7", Type: event.TaskStarted, Message: title + " (cadre)"},
		{Time: at(2), Run: "r1", Item: "gh-7", Type: event.StepStarted, Step: "plan#1", Role: "planner", Runner: "claude", Model: "sonnet", Message: "picked"},
		{Time: at(3), Run: "r1", Item: "gh-7", Type: event.StepCompleted, Step: "plan#1", Role: "planner", Runner: "claude", Model: "sonnet", Usage: use},
		{Time: at(4), Run: "r1", Item: "gh-7", Type: event.StepStarted, Step: "commit#1", Message: "commit"},
		{Time: at(5), Run: "r1", Item: "gh-7", Type: event.StepCompleted, Step: "commit#1", Message: "commit"},
		{Time: at(6), Run: "r1", Item: "gh-7", Type: event.StepStarted, Step: "code#1", Role: "coder", Runner: "codex", Model: "gpt"},
		{Time: at(7), Run: "r1", Item: "gh-7", Type: event.StepFailed, Step: "code#1", Role: "coder", Runner: "codex", Model: "gpt",
			Error: "token " + secret + " refused: " + title, Usage: &event.Usage{InputTokens: 10, OutputTokens: 5, CostUSD: 0.5}},
		{Time: at(8), Run: "r1", Item: "gh-7", Type: event.TaskFailed, Error: title},
		{Time: at(9), Run: "r1", Type: event.RunCompleted, Message: "failed", Error: "1 item failed: " + title, Usage: &event.Usage{InputTokens: 1210}},
	}
}

func start(t *testing.T, r *telemetrytest.Receiver, more map[string]string) *Telemetry {
	t.Helper()
	vars := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": r.URL}
	for k, v := range more {
		vars[k] = v
	}
	tel, err := Start(context.Background(), config.Telemetry{ServiceName: "cadre"}, env(vars))
	if err != nil {
		t.Fatal(err)
	}
	if !tel.Enabled() {
		t.Fatal("telemetry is off with an endpoint set")
	}
	return tel
}

func byName(spans []*tpb.Span) map[string][]*tpb.Span {
	out := map[string][]*tpb.Span{}
	for _, s := range spans {
		out[s.Name] = append(out[s.Name], s)
	}
	return out
}

// TestRunExportsOneTrace: a run's events reach a collector as one trace,
// run → item → step spans with the step's role, runner, model, tokens,
// cost and status, a failed step in error; and as counters of steps,
// tokens, cost and failures by role and runner. No attribute holds the
// item's title or the secret its events carried.
func TestRunExportsOneTrace(t *testing.T) {
	r := telemetrytest.Start(t)
	tel := start(t, r, map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "x-team=cadre%20dev"})
	for _, e := range runEvents(time.Now()) {
		tel.Sink().Handle(e)
	}
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	spans := r.Spans()
	got := byName(spans)
	if len(got["run"]) != 1 || len(got["item"]) != 1 || len(got["step planner"]) != 1 || len(got["step coder"]) != 1 || len(got["step"]) != 1 {
		t.Fatalf("spans %v, want one run, item, step planner, step coder and step", names(spans))
	}
	run, item := got["run"][0], got["item"][0]
	for _, s := range spans {
		if hex.EncodeToString(s.TraceId) != RunTraceID("r1").String() {
			t.Errorf("span %s in trace %x, want the run's %s", s.Name, s.TraceId, RunTraceID("r1"))
		}
		noText(t, s)
	}
	if len(run.ParentSpanId) != 0 || string(item.ParentSpanId) != string(run.SpanId) {
		t.Errorf("run's parent %x, item's %x; want none and the run's %x", run.ParentSpanId, item.ParentSpanId, run.SpanId)
	}
	plan, code, commit := got["step planner"][0], got["step coder"][0], got["step"][0]
	for _, s := range []*tpb.Span{plan, code, commit} {
		if string(s.ParentSpanId) != string(item.SpanId) {
			t.Errorf("%s's parent %x, want the item's %x", s.Name, s.ParentSpanId, item.SpanId)
		}
	}
	want := map[string]string{"cadre.role": "planner", "cadre.runner": "claude", "cadre.model": "sonnet", "cadre.tokens.input": "1200",
		"cadre.tokens.output": "300", "cadre.cost_usd": "0.25", "cadre.status": "completed", "cadre.kind": "agent", "cadre.item": "gh-7"}
	for k, v := range want {
		if a := telemetrytest.Attr(plan, k); !strings.Contains(a, v) {
			t.Errorf("planner's %s = %q, want %q", k, a, v)
		}
	}
	if telemetrytest.Attr(commit, "cadre.kind") != "commit" || plan.Status.GetCode() == tpb.Status_STATUS_CODE_ERROR {
		t.Errorf("commit's kind %q, planner's status %v", telemetrytest.Attr(commit, "cadre.kind"), plan.Status)
	}
	if code.Status.GetCode() != tpb.Status_STATUS_CODE_ERROR || telemetrytest.Attr(code, "cadre.status") != "failed" {
		t.Errorf("failed step's status %v, cadre.status %q; want an error, failed", code.Status, telemetrytest.Attr(code, "cadre.status"))
	}
	if item.Status.GetCode() != tpb.Status_STATUS_CODE_ERROR || telemetrytest.Attr(run, "cadre.status") != "failed" {
		t.Errorf("item's status %v, run's cadre.status %q", item.Status, telemetrytest.Attr(run, "cadre.status"))
	}
	checkMetrics(t, r)
	if h := r.Headers(); len(h) == 0 || h[0].Get("X-Team") != "cadre dev" {
		t.Errorf("OTEL_EXPORTER_OTLP_HEADERS not sent: %v", h)
	}
}

func checkMetrics(t *testing.T, r *telemetrytest.Receiver) {
	t.Helper()
	for _, c := range []struct {
		name  string
		where map[string]string
		want  float64
	}{
		{"cadre.steps", map[string]string{"cadre.role": "planner", "cadre.runner": "claude"}, 1},
		{"cadre.steps", map[string]string{"cadre.kind": "commit"}, 1},
		{"cadre.tokens", map[string]string{"cadre.role": "planner", "cadre.direction": "input"}, 1200},
		{"cadre.tokens", map[string]string{"cadre.role": "coder", "cadre.direction": "output"}, 5},
		{"cadre.cost_usd", map[string]string{"cadre.runner": "codex"}, 0.5},
		{"cadre.failures", map[string]string{"cadre.role": "coder", "cadre.runner": "codex"}, 1},
	} {
		got, ok := r.Sum(c.name, c.where)
		if !ok || got != c.want {
			t.Errorf("%s %v = %v (found %v), want %v", c.name, c.where, got, ok, c.want)
		}
	}
	if _, ok := r.Sum("cadre.failures", map[string]string{"cadre.role": "planner"}); ok {
		t.Error("a failure counted for the planner, whose step completed")
	}
}

func names(spans []*tpb.Span) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name)
	}
	return out
}

// noText fails when a span carries the item's title, the planted secret
// or any event's free text, in an attribute or its status.
func noText(t *testing.T, s *tpb.Span) {
	t.Helper()
	texts := []string{title, "Make the login", secret, "refused", "picked", "item failed:"}
	for _, kv := range s.Attributes {
		v := telemetrytest.Text(kv.Value)
		for _, x := range texts {
			if strings.Contains(v, x) {
				t.Errorf("span %s's %s = %q holds %q", s.Name, kv.Key, v, x)
			}
		}
	}
	for _, x := range texts {
		if strings.Contains(s.Status.GetMessage(), x) {
			t.Errorf("span %s's status %q holds %q", s.Name, s.Status.GetMessage(), x)
		}
	}
}

// TestReactionSpans: cadre watch's steps of a reaction are children of a
// reaction span under the item's span as the run's process made it (the
// ids are the run's, no run span here), and the reaction's duration is
// recorded, and its delay from the item's latest webhook delivery.
func TestReactionSpans(t *testing.T) {
	r := telemetrytest.Start(t)
	tel := start(t, r, nil)
	tel.sink.quiet = 10 * time.Millisecond
	t0 := time.Now()
	step := "gh-7/follow/ci_failed#1/fix-surgeon#1"
	for _, e := range []event.Event{
		{Type: event.WebhookReceived, Item: "gh-7", Time: t0.Add(-9 * time.Second)},
		{Type: event.WebhookReceived, Item: "gh-7", Time: t0.Add(-1500 * time.Millisecond)}, // the latest
		{Type: event.WebhookReceived, Item: "gh-8", Time: t0.Add(-time.Second)},
	} {
		e.Run = "r1"
		tel.Sink().Handle(e)
	}
	for i, e := range []event.Event{
		{Type: event.StepStarted, Step: step, Role: "fix-surgeon", Runner: "claude"},
		{Type: event.StepCompleted, Step: step, Role: "fix-surgeon", Runner: "claude", Usage: &event.Usage{OutputTokens: 9}},
		{Type: event.StepStarted, Step: "gh-7/follow/ci_failed#1/commit", Message: "commit"},
		{Type: event.StepCompleted, Step: "gh-7/follow/ci_failed#1/commit", Message: "commit"},
	} {
		e.Run, e.Item, e.Time = "r1", "gh-7", t0.Add(time.Duration(i)*time.Second)
		tel.Sink().Handle(e)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		tel.sink.mu.Lock()
		open := len(tel.sink.runs["r1"].items["gh-7"].reactions)
		tel.sink.mu.Unlock()
		if open == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	tel.Shutdown(context.Background())
	got := byName(r.Spans())
	if len(got["reaction"]) != 1 || len(got["step fix-surgeon"]) != 1 || len(got["step"]) != 1 || len(got["item"]) != 0 {
		t.Fatalf("spans %v, want a reaction, its two steps and no item span of this process's own", names(r.Spans()))
	}
	re := got["reaction"][0]
	if hex.EncodeToString(re.ParentSpanId) != itemSpanID("r1", "gh-7").String() || hex.EncodeToString(re.TraceId) != RunTraceID("r1").String() {
		t.Errorf("reaction under %x in trace %x, want the item's span %s in the run's trace", re.ParentSpanId, re.TraceId, itemSpanID("r1", "gh-7"))
	}
	if telemetrytest.Attr(re, "cadre.reaction.kind") != "ci_failed" || telemetrytest.Attr(re, "cadre.status") == "unfinished" {
		t.Errorf("reaction's attributes %v", re.Attributes)
	}
	if d := time.Duration(re.EndTimeUnixNano - re.StartTimeUnixNano); d != 3*time.Second {
		t.Errorf("reaction lasted %s, want 3s (its first step's start to its last's end)", d)
	}
	for _, s := range append(got["step fix-surgeon"], got["step"]...) {
		if string(s.ParentSpanId) != string(re.SpanId) {
			t.Errorf("%s under %x, want the reaction %x", s.Name, s.ParentSpanId, re.SpanId)
		}
	}
	var latency bool
	for _, m := range r.Metrics() {
		if m.Name == "cadre.reaction.latency" && len(m.GetHistogram().GetDataPoints()) > 0 && m.GetHistogram().DataPoints[0].GetSum() == 3 {
			latency = true
		}
	}
	if !latency {
		t.Error("no cadre.reaction.latency point of 3s")
	}
	var delay []float64
	for _, m := range r.Metrics() {
		if m.Name == "cadre.reaction.delay" {
			for _, p := range m.GetHistogram().GetDataPoints() {
				delay = append(delay, p.GetSum())
			}
		}
	}
	if len(delay) == 0 || delay[len(delay)-1] != 1.5 {
		t.Errorf("cadre.reaction.delay points %v, want 1.5s (the item's latest delivery to the reaction)", delay)
	}
}

func TestReactionOf(t *testing.T) {
	for _, c := range []struct{ step, id, kind string }{
		{"gh-7/follow/ci_failed#2/fix-surgeon#1", "gh-7/follow/ci_failed#2", "ci_failed"},
		{"gh-7/follow/conflict#1/verify", "gh-7/follow/conflict#1", "conflict"},
		{"gh-7/follow/ci_failed#2", "", ""},
		{"gh-7/follow/end", "", ""},
		{"gh-7/follow/ci_failed/human#1", "", ""},
		{"gh-8/follow/ci_failed#1/x", "", ""},
		{"plan#1", "", ""},
	} {
		if id, kind := reactionOf("gh-7", c.step); id != c.id || kind != c.kind {
			t.Errorf("reactionOf(%q) = %q, %q; want %q, %q", c.step, id, kind, c.id, c.kind)
		}
	}
}

// TestOffSendsNothing: with no endpoint anywhere (or the SDK disabled),
// telemetry starts nothing, sends nothing, and its sink does nothing.
func TestOffSendsNothing(t *testing.T) {
	r := telemetrytest.Start(t)
	for name, vars := range map[string]map[string]string{
		"no endpoint":  {"OTEL_SERVICE_NAME": "x"},
		"sdk disabled": {"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": r.URL},
	} {
		before := runtime.NumGoroutine()
		tel, err := Start(context.Background(), config.Telemetry{ServiceName: "cadre"}, env(vars))
		if err != nil {
			t.Fatal(err)
		}
		if tel.Enabled() {
			t.Errorf("%s: on", name)
		}
		if _, ok := tel.Sink().(nop); !ok {
			t.Errorf("%s: sink %T, want the no-op", name, tel.Sink())
		}
		for _, e := range runEvents(time.Now()) {
			tel.Sink().Handle(e)
		}
		if n := runtime.NumGoroutine(); n > before {
			t.Errorf("%s: %d goroutines, %d before", name, n, before)
		}
		tel.Shutdown(context.Background())
	}
	if n := r.Requests(); n != 0 {
		t.Errorf("%d requests reached the collector", n)
	}
}

func TestResolve(t *testing.T) {
	cfg := config.Telemetry{OTLPEndpoint: "http://yaml:4318/"}
	for _, c := range []struct {
		vars map[string]string
		want Endpoints
	}{
		{nil, Endpoints{"http://yaml:4318/v1/traces", "http://yaml:4318/v1/metrics"}},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://env:4318"}, Endpoints{"http://env:4318/v1/traces", "http://env:4318/v1/metrics"}},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://t:1/x"}, Endpoints{"http://t:1/x", "http://yaml:4318/v1/metrics"}},
		{map[string]string{"OTEL_SDK_DISABLED": "TRUE"}, Endpoints{}},
	} {
		if got := Resolve(cfg, env(c.vars)); got != c.want {
			t.Errorf("Resolve with %v = %+v, want %+v", c.vars, got, c.want)
		}
	}
	if got := Resolve(config.Telemetry{}, env(map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://t:1/x"})); got != (Endpoints{Traces: "http://t:1/x"}) {
		t.Errorf("traces endpoint alone: %+v, want traces only", got)
	}
}

// BenchmarkSinkOff is what an event costs with telemetry off.
func BenchmarkSinkOff(b *testing.B) {
	tel, err := Start(context.Background(), config.Telemetry{}, env(nil))
	if err != nil {
		b.Fatal(err)
	}
	s := tel.Sink()
	evs := runEvents(time.Now())
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		s.Handle(evs[i%len(evs)])
	}
}

// BenchmarkSinkOn is what an event costs with telemetry on (spans and
// points buffered; the export is the SDK's, in the background).
func BenchmarkSinkOn(b *testing.B) {
	r := telemetrytest.Start(b)
	tel, err := Start(context.Background(), config.Telemetry{}, env(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": r.URL}))
	if err != nil {
		b.Fatal(err)
	}
	defer tel.Shutdown(context.Background())
	s := tel.Sink()
	evs := runEvents(time.Now())
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		s.Handle(evs[i%len(evs)])
	}
}
