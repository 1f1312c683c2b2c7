package app_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"

	"github.com/cadre-dev/cadre/internal/app"
	"github.com/cadre-dev/cadre/internal/engine"
	"github.com/cadre-dev/cadre/internal/report"
	"github.com/cadre-dev/cadre/internal/runspec"
	"github.com/cadre-dev/cadre/internal/store"
	"github.com/cadre-dev/cadre/internal/temporal"
)

// taskRepo is a repository with n task files on the simple workflow
// (executor, commit) and an instant script agent.
func taskRepo(b testing.TB, n int) string {
	b.Helper()
	root := filepath.Join(b.TempDir(), "repo")
	os.MkdirAll(filepath.Join(root, "tasks"), 0o755)
	os.WriteFile(filepath.Join(root, "cadre.yaml"), []byte("defaults: {runner: fake}\n"+
		"runners:\n  fake: {type: script, scenario: scenario.yaml}\n"), 0o644)
	os.WriteFile(filepath.Join(root, "scenario.yaml"), []byte(`rules:
  - role: executor
    actions:
      - write: {path: done.txt, content: "done\n"}
    signal: {result: SUCCESS, summary: done, confidence: 9, next: Done}
`), 0o644)
	for i := range n {
		os.WriteFile(filepath.Join(root, "tasks", fmt.Sprintf("t%03d.md", i)),
			[]byte(fmt.Sprintf("---\nstage: code\nworkflow: simple\n---\n# Task %d\n", i)), 0o644)
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"},
		{"-c", "user.email=b@example.com", "-c", "user.name=B", "commit", "-qm", "init"}} {
		c := exec.Command("git", args...)
		c.Dir = root
		if out, err := c.CombinedOutput(); err != nil {
			b.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	return root
}

// benchEngine wires an engine for root with its own journal connection,
// as a separate cadre process would have.
func benchEngine(b testing.TB, root string) (*engine.Engine, func()) {
	b.Helper()
	ctx := context.Background()
	cfg, err := app.LoadConfig(root, os.Getenv)
	if err != nil {
		b.Fatal(err)
	}
	st, err := app.OpenStore(ctx, root)
	if err != nil {
		b.Fatal(err)
	}
	e, flush, err := app.NewEngine(ctx, app.Workspace{Root: root, Config: cfg}, st, app.Options{})
	if err != nil {
		b.Fatal(err)
	}
	return e, func() { flush(); st.Close() }
}

func checkCompleted(b testing.TB, sum report.Summary, err error, n int) {
	b.Helper()
	if err != nil || sum.Status != store.RunCompleted || len(sum.Items) != n {
		b.Fatalf("run: %v %s %s, %d items", err, sum.Status, sum.Reason, len(sum.Items))
	}
}

// BenchmarkTemporalVsEmbedded runs 100 task files (instant script agent,
// the simple workflow: one agent step and a commit each) on the embedded
// engine (limits.parallel_issues 10) and on the Temporal dev server with
// two workers (each its own engine and journal connection, as two cadre
// worker processes, each running at most 10 steps at once), and reports both wall times and their ratio.
func BenchmarkTemporalVsEmbedded(b *testing.B) {
	bin, err := filepath.Abs(filepath.Join("..", "..", ".tools", "bin", "temporal"))
	if _, serr := os.Stat(bin); err != nil || serr != nil {
		if bin, err = exec.LookPath("temporal"); err != nil {
			b.Skip("needs the Temporal CLI: run .ci/install-temporal")
		}
	}
	const items, parallel = 100, 10
	ctx := context.Background()
	srv, err := testsuite.StartDevServer(ctx, testsuite.DevServerOptions{ExistingPath: bin,
		ClientOptions: &client.Options{Logger: log.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))},
		Stdout:        io.Discard, Stderr: io.Discard})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Stop()
	b.StopTimer()
	var embedded, onTemporal time.Duration
	for i := 0; i < b.N; i++ {
		root := taskRepo(b, items)
		e, closeE := benchEngine(b, root)
		start := time.Now()
		sum, err := e.Start(ctx, runspec.Options{Parallel: parallel})
		embedded += time.Since(start)
		closeE()
		checkCompleted(b, sum, err, items)

		root = taskRepo(b, items)
		queue := fmt.Sprintf("bench-%d", i)
		wctx, stop := context.WithCancel(ctx)
		done := make(chan error, 2)
		for range 2 {
			w, closeW := benchEngine(b, root)
			defer closeW()
			r := temporal.Remote{Home: temporal.HomeOf(w.StateDir()), Journal: temporal.EngineJournal{Engine: w}, Replica: temporal.EngineReplica{Engine: w}}
			go func() { done <- temporal.Serve(wctx, srv.Client(), queue, w, &temporal.Progress{}, parallel, r) }()
		}
		e, closeE = benchEngine(b, root)
		// As cadre run does: the starter serves its journal as the run's home.
		s := &temporal.Starter{Client: srv.Client(), TaskQueue: queue, StepTimeout: time.Minute, Home: temporal.HomeOf(e.StateDir())}
		stopHome, err := temporal.StartHome(srv.Client(), s.Home, temporal.EngineJournal{Engine: e})
		if err != nil {
			b.Fatal(err)
		}
		t := &runspec.TemporalTarget{Address: srv.FrontendHostPort(), Namespace: "default", TaskQueue: queue}
		start = time.Now()
		sum, err = e.StartWith(ctx, runspec.Options{Parallel: parallel, Temporal: t}, s.Drive)
		onTemporal += time.Since(start)
		stopHome()
		closeE()
		stop()
		<-done
		<-done
		checkCompleted(b, sum, err, items)
	}
	n := float64(b.N)
	b.ReportMetric(embedded.Seconds()/n, "s-embedded")
	b.ReportMetric(onTemporal.Seconds()/n, "s-temporal")
	b.ReportMetric(onTemporal.Seconds()/embedded.Seconds(), "ratio")
}
