package sandbox

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/cadre-dev/cadre/internal/proc"
)

// TestMain lets this test binary be the sandbox's network bridge, as the
// cadre binary is in use.
func TestMain(m *testing.M) {
	BridgeIfAsked()
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

// cobraVersion is the module the toolchain benchmark tests: a real one,
// with dependencies, whose tests take a few seconds.
const cobraVersion = "github.com/spf13/cobra@v1.8.1"

// cobraModule fetches cobra's source and its dependencies into a module
// cache of the benchmark's own (from the host's module cache where it
// holds them, else from the Go module proxy) and returns a writable copy
// of the source and that cache. It skips, saying so, when it cannot.
func cobraModule(b *testing.B, goCmd string) (src, modCache string) {
	b.Helper()
	root := b.TempDir()
	modCache = filepath.Join(root, "modcache")
	proxy := "https://proxy.golang.org,direct"
	if out, err := exec.Command(goCmd, "env", "GOMODCACHE").Output(); err == nil && isDir(strings.TrimSpace(string(out))) {
		proxy = "file://" + filepath.Join(strings.TrimSpace(string(out)), "cache", "download") + "," + proxy
	}
	env := append(os.Environ(), "GOMODCACHE="+modCache, "GOPROXY="+proxy, "GOFLAGS=-modcacherw", "GOTOOLCHAIN=local")
	run := func(dir string, args ...string) []byte {
		cmd := exec.Command(goCmd, args...)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.Output()
		if err != nil {
			b.Skipf("needs %s from the Go module proxy: go %s: %v", cobraVersion, strings.Join(args, " "), err)
		}
		return out
	}
	var dl struct{ Dir string }
	if err := json.Unmarshal(run(root, "mod", "download", "-json", cobraVersion), &dl); err != nil || dl.Dir == "" {
		b.Skipf("needs %s from the Go module proxy: no source directory (%v)", cobraVersion, err)
	}
	src = filepath.Join(root, "cobra")
	if out, err := exec.Command("cp", "-r", dl.Dir, src).CombinedOutput(); err != nil {
		b.Fatalf("copy cobra: %v: %s", err, out)
	}
	if out, err := exec.Command("chmod", "-R", "u+w", src).CombinedOutput(); err != nil {
		b.Fatalf("chmod cobra: %v: %s", err, out)
	}
	run(src, "mod", "download")
	return src, modCache
}

// BenchmarkGoTest measures `go test ./...` of a real module (cobra) as a
// later step of an item runs it, warm: confined (network deny, reading the
// module cache in place; network allow, from the item's copy of it) with
// the item's build cache, beside unconfined with a build cache of its own,
// each after a first step that filled its caches. Every iteration runs
// both, one after the other, so a busy machine slows both alike; the
// figures are the medians and their ratio, x-unconfined (the target is 1.2
// or less). "cached" is go test as it is, the test results coming from the
// build cache; "rerun" (-count=1) runs the tests again.
func BenchmarkGoTest(b *testing.B) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		b.Skip("needs the go command")
	}
	needBwrap(b)
	src, modCache := cobraModule(b, goCmd)
	home := b.TempDir()
	getenv := hostEnv(home, modCache)
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "GOTOOLCHAIN=local"}
	// step runs go test once, confined by p when it is set, with the
	// build caches under caches, and says how long it took.
	step := func(p *Policy, caches string, args []string) time.Duration {
		start := time.Now()
		spec := proc.Spec{Path: goCmd, Args: args, Dir: src, Env: append(slices.Clone(env),
			"GOMODCACHE="+modCache, "GOCACHE="+filepath.Join(caches, goBuildDir), "GOPROXY=off")}
		var log strings.Builder
		spec.Log = &log
		if p != nil {
			prep, err := p.Prepare(context.Background(), Step{Dir: src, Env: env})
			if err != nil {
				b.Fatal(err)
			}
			defer prep.Close()
			spec.Sandbox, spec.Env = prep.Sandbox, slices.Clone(env)
			for k, v := range prep.Env {
				spec.Env = append(spec.Env, k+"="+v)
			}
		}
		res, err := proc.Run(context.Background(), spec)
		if err != nil || res.ExitCode != 0 {
			b.Fatalf("go %s (confined: %v): exit %d, %v:\n%s", strings.Join(args, " "), p != nil, res.ExitCode, err, log.String())
		}
		return time.Since(start)
	}
	unconfined, items := b.TempDir(), b.TempDir()
	warm := map[string]bool{}
	for _, variant := range []string{"cached", "rerun"} {
		args := []string{"test"}
		if variant == "rerun" {
			args = append(args, "-count=1")
		}
		if os.Geteuid() == 0 {
			// It expects a write to a read-only file to fail, which it
			// does not for root.
			args = append(args, "-skip", "TestFailGenFishCompletionFile")
		}
		args = append(args, "./...")
		for _, network := range []string{NetDeny, NetAllow} {
			// Each network's item keeps its caches across the variants,
			// as an item's steps do.
			caches := filepath.Join(items, network)
			b.Run(variant+"/"+network, func(b *testing.B) {
				p, err := New(context.Background(), Settings{Network: network}, getenv)
				if err != nil {
					b.Fatal(err)
				}
				p = p.ForItem(true, caches)
				if !warm[variant] {
					step(nil, unconfined, args)
					warm[variant] = true
				}
				step(p, caches, args) // the item's first step fills its caches
				var free, confined []time.Duration
				for b.Loop() {
					free = append(free, step(nil, unconfined, args))
					confined = append(confined, step(p, caches, args))
				}
				slices.Sort(free)
				slices.Sort(confined)
				f, c := free[len(free)/2], confined[len(confined)/2]
				b.ReportMetric(float64(f.Milliseconds()), "unconfined-ms")
				b.ReportMetric(float64(c.Milliseconds()), "confined-ms")
				b.ReportMetric(float64(c)/float64(f), "x-unconfined")
			})
		}
	}
}
