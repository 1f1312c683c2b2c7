package app_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	tpb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/cadre-dev/cadre/internal/app"
	"github.com/cadre-dev/cadre/internal/config"
	"github.com/cadre-dev/cadre/internal/forge"
	"github.com/cadre-dev/cadre/internal/runner"
	"github.com/cadre-dev/cadre/internal/runner/script"
	"github.com/cadre-dev/cadre/internal/runspec"
	"github.com/cadre-dev/cadre/internal/store"
	"github.com/cadre-dev/cadre/internal/telemetry"
	"github.com/cadre-dev/cadre/internal/telemetry/telemetrytest"
)

// telemetryRun runs one GitHub issue through the cadre workflow with the
// script runner, OTEL_EXPORTER_OTLP_ENDPOINT set to endpoint ("" for
// none), and returns once the engine is closed (its telemetry flushed).
func telemetryRun(t *testing.T, endpoint string) {
	t.Helper()
	ctx := context.Background()
	root, _, fake := issueRepo(t, 1, "")
	// The analyst reports what it used, to be counted.
	path := filepath.Join(root, "scenario.yaml")
	scenario, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	used := "    say: Two files are needed.\n    usage: {input_tokens: 1500, output_tokens: 70, cost_usd: 0.02}\n"
	os.WriteFile(path, []byte(strings.Replace(string(scenario), "    say: Two files are needed.\n", used, 1)), 0o644)
	if out, err := exec.Command("git", "-C", root, "commit", "-qam", "usage").CombinedOutput(); err != nil {
		t.Fatalf("git commit: %v %s", err, out)
	}
	getenv := func(k string) string {
		switch k {
		case "GITHUB_TOKEN":
			return benchToken
		case "OTEL_EXPORTER_OTLP_ENDPOINT":
			return endpoint
		case "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "OTEL_SDK_DISABLED":
			return ""
		}
		return os.Getenv(k)
	}
	cfg, err := app.LoadConfig(root, getenv)
	if err != nil {
		t.Fatal(err)
	}
	runners := func(map[string]config.Price) *runner.Registry {
		reg := runner.NewRegistry()
		reg.Register("script", script.New)
		return reg
	}
	ws := app.Workspace{Root: root, Config: cfg}
	st, err := app.OpenStore(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	eng, flush, err := app.NewEngine(ctx, ws, st, app.Options{Getenv: getenv, Runners: runners,
		Forge: app.NewGitHub(ws, getenv, forge.WithWriteGap(0))})
	if err != nil {
		t.Fatal(err)
	}
	sum, err := eng.Start(ctx, runspec.Options{Targets: []string{"1"}, Parallel: 1})
	flush()
	if err != nil || sum.Status != store.RunCompleted {
		t.Fatalf("run: %v %s %s", err, sum.Status, sum.Reason)
	}
	if n := len(fake.PRs("acme", "widgets")); n != 1 {
		t.Fatalf("%d pull requests, want 1", n)
	}
}

// TestRunTracedToCollector: an engine's run with an OTLP endpoint set
// reaches a collector as one trace, run → item → step spans, the agent
// steps with their role, runner and tokens; no attribute holds the
// issue's title or text or the GitHub token; and the steps, tokens and
// cost are counted.
func TestRunTracedToCollector(t *testing.T) {
	if testing.Short() {
		t.Skip("an issue through the cadre workflow")
	}
	r := telemetrytest.Start(t)
	telemetryRun(t, r.URL)
	spans := r.Spans()
	var runs, items, agents []*tpb.Span
	for _, s := range spans {
		switch {
		case s.Name == "run":
			runs = append(runs, s)
		case s.Name == "item":
			items = append(items, s)
		case strings.HasPrefix(s.Name, "step ") && telemetrytest.Attr(s, "cadre.role") != "":
			agents = append(agents, s)
		}
	}
	if len(runs) != 1 || len(items) != 1 || len(agents) == 0 {
		t.Fatalf("%d run, %d item and %d agent step spans (of %d), want 1, 1 and some", len(runs), len(items), len(agents), len(spans))
	}
	run := runs[0]
	if string(items[0].ParentSpanId) != string(run.SpanId) {
		t.Errorf("the item's span is not the run's child")
	}
	want := telemetry.RunTraceID(telemetrytest.Attr(run, "cadre.run"))
	byID := map[string]*tpb.Span{}
	for _, s := range spans {
		byID[string(s.SpanId)] = s
	}
	for _, s := range spans {
		if string(s.TraceId) != string(want[:]) {
			t.Errorf("span %s in another trace", s.Name)
		}
		for _, kv := range s.Attributes {
			v := telemetrytest.Text(kv.Value)
			for _, x := range []string{"Add two files", "Add a.txt", benchToken} {
				if strings.Contains(v, x) {
					t.Errorf("span %s's %s = %q holds %q", s.Name, kv.Key, v, x)
				}
			}
		}
	}
	for _, s := range agents {
		if p := byID[string(s.ParentSpanId)]; p == nil || p.Name != "item" {
			t.Errorf("agent step %s is not the item's child", s.Name)
		}
		if telemetrytest.Attr(s, "cadre.runner") != "fake" || telemetrytest.Attr(s, "cadre.tokens.input") == "" || telemetrytest.Attr(s, "cadre.status") != "completed" {
			t.Errorf("agent step %s's attributes %v", s.Name, s.Attributes)
		}
	}
	for _, c := range []struct {
		name  string
		where map[string]string
		want  float64
	}{
		{"cadre.steps", map[string]string{"cadre.runner": "fake", "cadre.role": "issue-analyst"}, 1},
		{"cadre.tokens", map[string]string{"cadre.role": "issue-analyst", "cadre.direction": "input"}, 1500},
		{"cadre.tokens", map[string]string{"cadre.role": "issue-analyst", "cadre.direction": "output"}, 70},
		{"cadre.cost_usd", map[string]string{"cadre.role": "issue-analyst"}, 0.02},
	} {
		if got, ok := r.Sum(c.name, c.where); !ok || got != c.want {
			t.Errorf("%s %v = %v (found %v), want %v", c.name, c.where, got, ok, c.want)
		}
	}
}

// TestRunUntracedWithoutEndpoint: with no endpoint, a run sends nothing.
func TestRunUntracedWithoutEndpoint(t *testing.T) {
	if testing.Short() {
		t.Skip("an issue through the cadre workflow")
	}
	r := telemetrytest.Start(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", r.URL) // the process's own is not the run's getenv
	telemetryRun(t, "")
	if n := r.Requests(); n != 0 {
		t.Errorf("%d requests reached the collector", n)
	}
}
