package cli_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	tpb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/cadre-dev/cadre/internal/store"
	"github.com/cadre-dev/cadre/internal/telemetry"
	"github.com/cadre-dev/cadre/internal/telemetry/telemetrytest"
)

// The task of the traced run: its title and body must reach no span.
const (
	tracedTitle = "Reticulate the quokka splines"
	tracedBody  = "Mind the marmoset ledger."
	tracedModel = "fake-model-7"
)

// TestTemporalRunOneTrace runs a task on the Temporal engine, against a
// dev server, with a cadre worker in a process of its own, each process
// exporting to a collector of its own: the starter as cadre.yaml's
// telemetry.otlp_endpoint says, the worker as OTEL_EXPORTER_OTLP_ENDPOINT
// (which wins over cadre.yaml) says. Every span of both is in the trace
// the run's id gives: the starter's run span and its start of the item's
// workflow; the worker's item and step spans, and Temporal's own, its
// RunWorkflow span a child of the starter's StartWorkflow span, carried
// over in Temporal's headers. The agent steps carry their role, runner
// and model, and no span holds the task's title or body or the token.
func TestTemporalRunOneTrace(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Temporal dev server")
	}
	bin := temporalCLI(t)
	addr := startTemporal(t, bin)
	starterOTLP, workerOTLP := telemetrytest.Start(t), telemetrytest.Start(t)
	for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
		"OTEL_SDK_DISABLED", "OTEL_SERVICE_NAME", "OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS", "CADRE_TELEMETRY_OTLP_ENDPOINT"} {
		t.Setenv(k, "")
	}

	g := &temporalRepo{work: t.TempDir(), path: os.Getenv("PATH")}
	g.dir, g.bare = filepath.Join(g.work, "repo"), filepath.Join(g.work, "origin.git")
	os.MkdirAll(filepath.Join(g.dir, "tasks"), 0o755)
	os.WriteFile(filepath.Join(g.dir, "cadre.yaml"), []byte("sandbox: {mode: none}\ntasks_dir: tasks\n"+
		"defaults: {runner: fake, workflow: runner, model: "+tracedModel+"}\nrunners:\n  fake: {type: script, scenario: scenario.yaml}\n"+
		"engine: temporal\ntemporal: {address: \""+addr+"\", task_queue: traced}\n"+
		"telemetry: {otlp_endpoint: \""+starterOTLP.URL+"\"}\n"), 0o644)
	os.WriteFile(filepath.Join(g.dir, "tasks", "t1.md"), []byte("---\nstage: code\n---\n# "+tracedTitle+"\n\n"+tracedBody+"\n"), 0o644)
	os.WriteFile(filepath.Join(g.dir, "scenario.yaml"), []byte(`rules:
  - role: coder
    actions:
      - write: {path: new.txt, content: "new\n"}
    signal: {result: SUCCESS, summary: edited, confidence: 9, next: auditor}
    usage: {input_tokens: 120, output_tokens: 30}
  - role: auditor
    signal: {result: PASS, summary: accepted, confidence: 9, next: Done, rating: 9}
`), 0o644)
	gitIn(t, g.work, "init", "-q", "--bare", "-b", "main", g.bare)
	gitIn(t, g.dir, "init", "-q", "-b", "main")
	gitIn(t, g.dir, "add", "-A")
	gitIn(t, g.dir, "-c", "user.email=t@example.com", "-c", "user.name=T", "commit", "-qm", "init")
	gitIn(t, g.dir, "remote", "add", "origin", g.bare)
	gitIn(t, g.dir, "push", "-q", "origin", "main")

	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", workerOTLP.URL)
	worker := g.start(t, "worker", "worker")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	run := g.start(t, "run", "run", "--plain")
	if code := run.wait(t, 2*time.Minute); code != 0 {
		t.Fatalf("cadre run exited with %d", code)
	}
	// Stopped, the worker flushes what it has not sent yet.
	worker.cmd.Process.Signal(syscall.SIGINT)
	if code := worker.wait(t, 30*time.Second); code != 0 {
		t.Fatalf("cadre worker exited with %d after SIGINT", code)
	}

	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(g.dir, ".cadre", "cadre.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	r, err := st.LatestRun(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != store.RunCompleted {
		t.Fatalf("run %s is %s, want completed", r.ID, r.Status)
	}
	checkOneTrace(t, r.ID, starterOTLP.Spans(), workerOTLP.Spans())
}

// checkOneTrace checks the spans the starter and the worker of run sent.
func checkOneTrace(t *testing.T, run string, starter, worker []*tpb.Span) {
	t.Helper()
	want := telemetry.RunTraceID(run)
	for side, spans := range map[string][]*tpb.Span{"starter": starter, "worker": worker} {
		for _, s := range spans {
			if string(s.TraceId) != string(want[:]) {
				t.Errorf("the %s's span %s is in trace %x, not run %s's %s", side, s.Name, s.TraceId, run, want)
			}
			for _, kv := range s.Attributes {
				v := telemetrytest.Text(kv.Value)
				for _, x := range []string{tracedTitle, tracedBody, "quokka", "marmoset", canary} {
					if strings.Contains(v, x) {
						t.Errorf("the %s's span %s: %s = %q holds the task's text or a secret", side, s.Name, kv.Key, v)
						break
					}
				}
			}
		}
	}
	named := func(spans []*tpb.Span, match func(*tpb.Span) bool) []*tpb.Span {
		var out []*tpb.Span
		for _, s := range spans {
			if match(s) {
				out = append(out, s)
			}
		}
		return out
	}
	prefix := func(p string) func(*tpb.Span) bool {
		return func(s *tpb.Span) bool { return strings.HasPrefix(s.Name, p) }
	}
	ids := func(spans []*tpb.Span) map[string]bool {
		out := map[string]bool{}
		for _, s := range spans {
			out[string(s.SpanId)] = true
		}
		return out
	}
	names := func(spans []*tpb.Span) []string {
		var out []string
		for _, s := range spans {
			out = append(out, s.Name)
		}
		return out
	}

	// The starter: the run's span, the trace's root, and the start of the
	// item's workflow under it.
	runs := named(starter, func(s *tpb.Span) bool { return s.Name == "run" })
	if len(runs) != 1 || telemetrytest.Attr(runs[0], "cadre.run") != run || len(runs[0].ParentSpanId) != 0 {
		t.Fatalf("the starter sent %d run spans, want run %s's one root span; it sent %v", len(runs), run, names(starter))
	}
	runSpan := runs[0]
	if n := len(named(worker, func(s *tpb.Span) bool { return s.Name == "run" })); n != 0 {
		t.Errorf("the worker sent %d run spans, want none: the run's span is the starter's", n)
	}
	starts := named(starter, prefix("StartWorkflow:"))
	if len(starts) == 0 {
		t.Fatalf("the starter sent no StartWorkflow span; it sent %v", names(starter))
	}
	for _, s := range starts {
		if string(s.ParentSpanId) != string(runSpan.SpanId) {
			t.Errorf("the starter's %s is not the run span's child", s.Name)
		}
	}

	// The worker: Temporal's spans, continued from the starter's start of
	// the workflow, and cadre's item and step spans.
	flows := named(worker, prefix("RunWorkflow:"))
	if len(flows) == 0 {
		t.Fatalf("the worker sent no RunWorkflow span; it sent %v", names(worker))
	}
	for _, s := range flows {
		if !ids(starts)[string(s.ParentSpanId)] {
			t.Errorf("the worker's %s is not a child of the starter's StartWorkflow span", s.Name)
		}
	}
	acts := named(worker, prefix("StartActivity:"))
	ran := named(worker, prefix("RunActivity:"))
	if len(acts) == 0 || len(ran) == 0 {
		t.Fatalf("the worker sent %d StartActivity and %d RunActivity spans, want some of each; it sent %v", len(acts), len(ran), names(worker))
	}
	for _, s := range acts {
		if !ids(flows)[string(s.ParentSpanId)] {
			t.Errorf("the worker's %s is not a child of its RunWorkflow span", s.Name)
		}
	}
	for _, s := range ran {
		if !ids(acts)[string(s.ParentSpanId)] {
			t.Errorf("the worker's %s is not a child of a StartActivity span", s.Name)
		}
	}
	items := named(worker, func(s *tpb.Span) bool { return s.Name == "item" })
	if len(items) != 1 || telemetrytest.Attr(items[0], "cadre.item") != "t1" || telemetrytest.Attr(items[0], "cadre.run") != run {
		t.Fatalf("the worker sent %d item spans, want item t1's one; it sent %v", len(items), names(worker))
	}
	if string(items[0].ParentSpanId) != string(runSpan.SpanId) {
		t.Errorf("the worker's item span is not the run span's child")
	}
	if s := telemetrytest.Attr(items[0], "cadre.status"); s != "completed" {
		t.Errorf("the item span's status %q, want completed", s)
	}
	roles := map[string]bool{}
	for _, s := range named(worker, prefix("step ")) {
		role := telemetrytest.Attr(s, "cadre.role")
		roles[role] = true
		if s.Name != "step "+role || string(s.ParentSpanId) != string(items[0].SpanId) {
			t.Errorf("agent step span %s (role %q) is not the item span's child", s.Name, role)
		}
		for k, v := range map[string]string{"cadre.run": run, "cadre.item": "t1", "cadre.kind": "agent", "cadre.runner": "fake",
			"cadre.model": tracedModel, "cadre.status": "completed"} {
			if got := telemetrytest.Attr(s, k); got != v {
				t.Errorf("agent step span %s: %s = %q, want %q", s.Name, k, got, v)
			}
		}
		if role == "coder" && telemetrytest.Attr(s, "cadre.tokens.input") != "120" {
			t.Errorf("the coder's span: cadre.tokens.input = %q, want 120", telemetrytest.Attr(s, "cadre.tokens.input"))
		}
	}
	if !roles["coder"] || !roles["auditor"] {
		t.Errorf("the worker sent agent step spans of roles %v, want coder and auditor", roles)
	}
}
