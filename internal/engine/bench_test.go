package engine

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cadre-dev/cadre/internal/config"
	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/eventlog"
	"github.com/cadre-dev/cadre/internal/role"
	"github.com/cadre-dev/cadre/internal/runner"
	"github.com/cadre-dev/cadre/internal/runner/script"
	"github.com/cadre-dev/cadre/internal/store"
)

// timedRunner is an instant agent that records when each call began and
// ended, so the gaps between calls measure the engine's own overhead.
type timedRunner struct {
	mu    sync.Mutex
	spans []span
}

type span struct {
	item       string
	start, end time.Time
}

func (r *timedRunner) Name() string              { return "instant" }
func (r *timedRunner) Capabilities() runner.Caps { return runner.Caps{} }
func (r *timedRunner) Run(_ context.Context, inv runner.Invocation) (runner.Result, error) {
	start := time.Now()
	res := passAll(inv)
	r.mu.Lock()
	r.spans = append(r.spans, span{inv.Item, start, time.Now()})
	r.mu.Unlock()
	return res, nil
}

// BenchmarkInPlaceRun100 runs 100 code-stage tasks in place (coder, auditor,
// commit each) with an instant agent. It reports the median and p90 engine
// overhead between two agent steps of one task (journal, context file,
// prompt, frontmatter, events), the mean wall time per step including each
// task's commit, and the process's peak RSS.
func BenchmarkInPlaceRun100(b *testing.B) {
	const tasks = 100
	var gaps []time.Duration
	var perStep []float64
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		root := benchRepo(b, tasks, map[string]string{})
		st, err := store.Open(context.Background(), filepath.Join(root, ".cadre", "cadre.db"))
		if err != nil {
			b.Fatal(err)
		}
		journal := eventlog.NewSink(st)
		tr := &timedRunner{}
		reg := runner.NewRegistry()
		reg.Register("instant", func(runner.Settings) (runner.Runner, error) { return tr, nil })
		cfg := config.Default()
		cfg.Defaults.Runner = "instant"
		roles, _ := role.Load("")
		eng, err := New(context.Background(), Deps{Root: root, Config: cfg, Store: st, Roles: roles, Runners: reg, Bus: event.NewBus(nil, journal)})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start := time.Now()
		sum, err := eng.Start(context.Background(), Options{InPlace: true})
		wall := time.Since(start)
		b.StopTimer()
		if err != nil || sum.Status != store.RunCompleted {
			b.Fatalf("run: %v %s %s", err, sum.Status, sum.Reason)
		}
		if len(tr.spans) != 2*tasks {
			b.Fatalf("%d agent steps, want %d", len(tr.spans), 2*tasks)
		}
		for j := 1; j < len(tr.spans); j++ {
			if tr.spans[j].item == tr.spans[j-1].item {
				gaps = append(gaps, tr.spans[j].start.Sub(tr.spans[j-1].end))
			}
		}
		perStep = append(perStep, float64(wall.Microseconds())/1000/float64(len(tr.spans)))
		journal.Close()
		st.Close()
		b.StartTimer()
	}
	sort.Slice(gaps, func(i, j int) bool { return gaps[i] < gaps[j] })
	b.ReportMetric(float64(gaps[len(gaps)/2].Microseconds())/1000, "ms-overhead-median")
	b.ReportMetric(float64(gaps[len(gaps)*9/10].Microseconds())/1000, "ms-overhead-p90")
	var mean float64
	for _, v := range perStep {
		mean += v
	}
	b.ReportMetric(mean/float64(len(perStep)), "ms-wall/step")
	b.ReportMetric(peakRSSMB(), "MB-peak-rss")
}

// benchRepo makes a committed repository with n code-stage task files and
// the given extra files.
func benchRepo(b *testing.B, n int, files map[string]string) string {
	b.Helper()
	root := b.TempDir()
	gitB(b, root, "init", "-q", "-b", "main")
	gitB(b, root, "config", "user.email", "b@example.com")
	gitB(b, root, "config", "user.name", "B")
	for i := range n {
		files[fmt.Sprintf("tasks/t%03d.md", i)] = fmt.Sprintf("---\nstage: code\nattempts: 0\n---\n# Task %d\n", i)
	}
	for name, text := range files {
		os.MkdirAll(filepath.Dir(filepath.Join(root, name)), 0o755)
		os.WriteFile(filepath.Join(root, name), []byte(text), 0o644)
	}
	gitB(b, root, "add", "-A")
	gitB(b, root, "commit", "-qm", "init")
	return root
}

func gitB(b *testing.B, dir string, args ...string) {
	b.Helper()
	if out, err := execGit(dir, args...); err != nil {
		b.Fatalf("git %v: %v %s", args, err, out)
	}
}

// peakRSSMB reads the process's peak resident set size (VmHWM).
func peakRSSMB() float64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")))
			return float64(kb) / 1024
		}
	}
	return 0
}

// BenchmarkFleet100 runs 100 items at once through coder → auditor → commit,
// each in its own worktree on its own branch, with the script runner as an
// instant agent. It reports wall time, agent steps per second and the
// process's peak RSS.
func BenchmarkFleet100(b *testing.B) {
	for _, parallel := range []int{4, 8} {
		b.Run(fmt.Sprintf("parallel=%d", parallel), func(b *testing.B) {
			const items = 100
			var wall time.Duration
			steps := 0
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				files := map[string]string{"scenario.yaml": fleetScenario}
				for n := range 50 {
					files[fmt.Sprintf("src/f%02d.go", n)] = "package src\n"
				}
				root := benchRepo(b, items, files)
				st, err := store.Open(context.Background(), filepath.Join(root, ".cadre", "cadre.db"))
				if err != nil {
					b.Fatal(err)
				}
				journal := eventlog.NewSink(st)
				reg := runner.NewRegistry()
				reg.Register("script", script.New)
				cfg := config.Default()
				cfg.Defaults.Runner = "instant"
				cfg.Runners = map[string]config.RunnerConfig{"instant": {Type: "script", Scenario: "scenario.yaml"}}
				roles, _ := role.Load("")
				eng, err := New(context.Background(), Deps{Root: root, Config: cfg, Store: st, Roles: roles, Runners: reg, Bus: event.NewBus(nil, journal)})
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				start := time.Now()
				sum, err := eng.Start(context.Background(), Options{Parallel: parallel})
				wall += time.Since(start)
				b.StopTimer()
				if err != nil || sum.Status != store.RunCompleted {
					b.Fatalf("run: %v %s %s", err, sum.Status, sum.Reason)
				}
				for _, it := range sum.Items {
					steps += it.Steps
				}
				journal.Close()
				st.Close()
				b.StartTimer()
			}
			if steps != 2*items*b.N {
				b.Fatalf("%d agent steps, want %d", steps, 2*items*b.N)
			}
			b.ReportMetric(wall.Seconds()/float64(b.N), "s-wall")
			b.ReportMetric(float64(steps)/wall.Seconds(), "steps/s")
			b.ReportMetric(peakRSSMB(), "MB-peak-rss")
		})
	}
}

const fleetScenario = `rules:
  - role: coder
    actions:
      - write: {path: src/change.go, content: "package src\n\nconst Done = true\n"}
    signal: {result: SUCCESS, confidence: 9}
    usage: {input_tokens: 1000, output_tokens: 100, cost_usd: 0.001}
  - role: auditor
    signal: {result: PASS, confidence: 9, rating: 9}
    usage: {input_tokens: 1000, output_tokens: 100, cost_usd: 0.001}
`
