package sandbox

import (
	"context"
	"os"
	"sort"
	"testing"
	"time"

	"github.com/cadre-dev/cadre/internal/proc"
)

// TestMain lets this test binary be the sandbox's network bridge, as the
// cadre binary is in use.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == BridgeCommand {
		os.Exit(RunBridge(os.Args[2:], os.Stderr))
	}
	os.Exit(m.Run())
}

// BenchmarkStepStart measures one agent step's whole sandbox start-up
// (Prepare: fresh home, mounts, and under model-only the proxy and its
// bridge; then `true` under bubblewrap), the median of the starts, beside
// a plain start of `true`.
func BenchmarkStepStart(b *testing.B) {
	bw, err := proc.FindBwrap("")
	if err != nil {
		b.Skipf("needs bubblewrap: %v", err)
	}
	if err := proc.ProbeSandbox(context.Background(), proc.Sandbox{Bwrap: bw}); err != nil {
		b.Skipf("the kernel forbids namespaces here: %v", err)
	}
	exe, _ := os.Executable()
	env := []string{"PATH=/usr/bin:/bin", "HOME=" + b.TempDir()}
	for _, network := range []string{"none", NetDeny, NetModelOnly} {
		b.Run(network, func(b *testing.B) {
			dir := b.TempDir()
			p := &Policy{Network: network, Bwrap: bw, Helper: exe}
			var times []time.Duration
			for b.Loop() {
				start := time.Now()
				spec := proc.Spec{Path: "/bin/true", Dir: dir, Env: env}
				var prep *Prepared
				if network != "none" {
					var err error
					if prep, err = p.Prepare(context.Background(), Step{Dir: dir, Env: env}); err != nil {
						b.Fatal(err)
					}
					spec.Sandbox = prep.Sandbox
				}
				res, err := proc.Run(context.Background(), spec)
				if prep != nil {
					prep.Close()
				}
				if err != nil || res.ExitCode != 0 {
					b.Fatal(err, res.StderrTail)
				}
				times = append(times, time.Since(start))
			}
			sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
			b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "median-ms")
		})
	}
}
