package app_test

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cadre-dev/cadre/internal/app"
	"github.com/cadre-dev/cadre/internal/config"
	"github.com/cadre-dev/cadre/internal/forge"
	"github.com/cadre-dev/cadre/internal/forge/forgetest"
	"github.com/cadre-dev/cadre/internal/runner"
	"github.com/cadre-dev/cadre/internal/runner/script"
	"github.com/cadre-dev/cadre/internal/runspec"
	"github.com/cadre-dev/cadre/internal/store"
)

const benchToken = "ghp_benchTOKEN0123456789abcdef"

// issueScenario answers every role of the cadre workflow at once: a plan of
// two tasks, one review round on the first, checks passing, a PR text. An
// issue takes 13 agent steps.
const issueScenario = "testdata/issue-scenario.yaml"

const stepsPerIssue = 13

// countingRunner is the script runner counting what cadre hands the agent
// (the prompt, the role's instructions — a system prompt costs tokens on
// every call as a message does — and the context file) and the CPU the
// agent itself spends: the script runner plays the agent inside cadre's
// process (writing its files and its transcript), which a real agent does
// in its own. Earlier outputs and the item's text are files the prompt
// points at, read by the agent as it needs them, and are not counted.
type countingRunner struct {
	runner.Runner
	bytes, steps *atomic.Int64
	agentCPU     *atomic.Int64 // nanoseconds
	agentSys     *atomic.Int64 // nanoseconds, the kernel's part of agentCPU
}

func (c countingRunner) Run(ctx context.Context, inv runner.Invocation) (runner.Result, error) {
	n := int64(len(inv.Prompt) + len(inv.Instructions))
	if fi, err := os.Stat(inv.ContextPath); err == nil {
		n += fi.Size()
	}
	c.bytes.Add(n)
	c.steps.Add(1)
	// The script runner works on the calling goroutine: pinned to this
	// thread, the thread's CPU time around Run is the agent's.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	u0, s0 := threadCPU()
	res, err := c.Runner.Run(ctx, inv)
	u1, s1 := threadCPU()
	c.agentCPU.Add(int64(u1 - u0 + s1 - s0))
	c.agentSys.Add(int64(s1 - s0))
	return res, err
}

// threadCPU is the user and system time of the calling thread.
func threadCPU() (user, sys time.Duration) {
	var ru syscall.Rusage
	syscall.Getrusage(1, &ru) // RUSAGE_THREAD
	return time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano())
}

// gitShim puts a git first on PATH that logs each command line to the
// returned file and execs the real git, so a benchmark counts every git
// process cadre starts (pushes and worktree creation included).
func gitShim(b testing.TB) (logPath string, restore func()) {
	b.Helper()
	real, err := exec.LookPath("git")
	if err != nil {
		b.Skip("needs git")
	}
	dir := b.TempDir()
	logPath = filepath.Join(dir, "git.log")
	// One record per process, ended by RS (a commit message may hold
	// newlines); an O_APPEND write this small is never interleaved.
	shim := "#!/bin/sh\nprintf '%s\\036' \"$*\" >> '" + logPath + "'\nexec '" + real + "' \"$@\"\n"
	if err := os.WriteFile(filepath.Join(dir, "git"), []byte(shim), 0o755); err != nil {
		b.Fatal(err)
	}
	old := os.Getenv("PATH")
	os.Setenv("PATH", dir+string(os.PathListSeparator)+old)
	return logPath, func() { os.Setenv("PATH", old) }
}

// issueRepo is a repository with a bare origin and a fake GitHub holding n
// open issues; extra is added to its cadre.yaml.
func issueRepo(b testing.TB, n int, extra string) (root, bare string, fake *forgetest.Server) {
	b.Helper()
	work := b.TempDir()
	root, bare = filepath.Join(work, "repo"), filepath.Join(work, "origin.git")
	fake = forgetest.New(b, benchToken)
	fake.AddRepo("acme", "widgets")
	for i := range n {
		fake.AddIssue("acme", "widgets", forgetest.Issue{Title: fmt.Sprintf("Add two files %d", i), Body: "Add a.txt and b.txt.", Author: "alice"})
	}
	os.MkdirAll(filepath.Join(root, "src"), 0o755)
	os.WriteFile(filepath.Join(root, "cadre.yaml"), []byte("repository: acme/widgets\ngithub: {api_url: \""+fake.URL+"\"}\n"+
		"defaults: {runner: fake, workflow: cadre}\ncommands: {build: \"true\", test: \"true\"}\n"+
		"runners:\n  fake: {type: script, scenario: scenario.yaml}\n"+extra), 0o644)
	scenario, err := os.ReadFile(issueScenario)
	if err != nil {
		b.Fatal(err)
	}
	os.WriteFile(filepath.Join(root, "scenario.yaml"), scenario, 0o644)
	for i := range 50 {
		os.WriteFile(filepath.Join(root, "src", fmt.Sprintf("f%02d.go", i)), []byte("package src\n"), 0o644)
	}
	run := func(dir string, args ...string) {
		c := exec.Command("git", args...)
		c.Dir = dir
		if out, err := c.CombinedOutput(); err != nil {
			b.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	run(work, "init", "-q", "--bare", bare)
	run(root, "init", "-q", "-b", "main")
	run(root, "config", "user.email", "b@example.com")
	run(root, "config", "user.name", "B")
	run(root, "add", "-A")
	run(root, "commit", "-qm", "init")
	run(root, "remote", "add", "origin", bare)
	run(root, "push", "-q", "origin", "main")
	return root, bare, fake
}

// cpuTime is the user+system time of this process and its waited-for
// children so far.
func cpuTime() (time.Duration, int64) {
	var self, kids syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids)
	tv := func(t syscall.Timeval) time.Duration { return time.Duration(t.Nano()) }
	return tv(self.Utime) + tv(self.Stime) + tv(kids.Utime) + tv(kids.Stime), self.Maxrss
}

// selfCPU is this process's user+system time, and the system part.
func selfCPU() (all, sys time.Duration) {
	var self syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	return time.Duration(self.Utime.Nano() + self.Stime.Nano()), time.Duration(self.Stime.Nano())
}

// keep, when set, is where finished runs' directories are moved instead of
// being deleted.
var keep string

// issueRun is one measured run of issues GitHub issues.
type issueRun struct {
	wall, cpu, self time.Duration
	selfSys         time.Duration // the kernel's part of self
	agent, agentSys time.Duration // the script agent's CPU, inside self, and its kernel part
	steps, bytes    int64
	gits, gcs       int
	files           int // files and directories cadre made in its state directory, temporary ones not counted
	maxRSSKB        int64
	bySub           map[string]int // git processes by subcommand
	argv            []string       // every git command line, in order
	root            string
}

// runIssues works issues GitHub issues through the cadre workflow,
// parallel at once, with the script runner as an instant agent, the fake
// GitHub without write spacing and a local bare origin; it checks every
// issue became a pull request.
func runIssues(b testing.TB, issues, parallel int) issueRun {
	b.Helper()
	return runIssuesWith(b, issues, parallel, "")
}

// runIssuesWith is runIssues with extra added to cadre.yaml.
func runIssuesWith(b testing.TB, issues, parallel int, extra string) issueRun {
	b.Helper()
	ctx := context.Background()
	root, bare, fake := issueRepo(b, issues, extra)
	if keep != "" {
		// Moved aside rather than deleted when the run's test ends (its
		// cleanups run last first: before the removal of the directory).
		b.Cleanup(func() { os.Rename(filepath.Dir(root), filepath.Join(keep, strconv.Itoa(int(time.Now().UnixNano())))) })
	}
	logPath, restore := gitShim(b)
	defer restore()
	getenv := func(k string) string {
		if k == "GITHUB_TOKEN" {
			return benchToken
		}
		return os.Getenv(k)
	}
	cfg, err := app.LoadConfig(root, getenv)
	if err != nil {
		b.Fatal(err)
	}
	var bytes, steps, agentCPU, agentSys atomic.Int64
	runners := func(map[string]config.Price) *runner.Registry {
		reg := runner.NewRegistry()
		reg.Register("script", func(s runner.Settings) (runner.Runner, error) {
			r, err := script.New(s)
			return countingRunner{Runner: r, bytes: &bytes, steps: &steps, agentCPU: &agentCPU, agentSys: &agentSys}, err
		})
		return reg
	}
	ws := app.Workspace{Root: root, Config: cfg}
	st, err := app.OpenStore(ctx, root)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	eng, flush, err := app.NewEngine(ctx, ws, st, app.Options{Getenv: getenv, Runners: runners,
		Forge: app.NewGitHub(ws, getenv, forge.WithWriteGap(0))})
	if err != nil {
		b.Fatal(err)
	}
	targets := make([]string, issues)
	for i := range targets {
		targets[i] = strconv.Itoa(i + 1)
	}
	os.Truncate(logPath, 0)
	// A user's repository is older than the moment the run starts: past
	// the window in which a file just written is read again rather than
	// trusted by its stat (the hooks and config git init wrote), which a
	// run on a repository made moments before would pay at every step.
	time.Sleep(150 * time.Millisecond)
	cpu0, sys0 := selfCPU()
	all0, _ := cpuTime()
	bb, timed := b.(*testing.B)
	if timed {
		bb.StartTimer()
	}
	start := time.Now()
	sum, err := eng.Start(ctx, runspec.Options{Targets: targets, Parallel: parallel})
	wall := time.Since(start)
	if timed {
		bb.StopTimer()
	}
	all1, maxrss := cpuTime()
	cpu1, sys1 := selfCPU()
	flush()
	if err != nil || sum.Status != store.RunCompleted {
		b.Fatalf("run: %v %s %s", err, sum.Status, sum.Reason)
	}
	if n := len(fake.PRs("acme", "widgets")); n != issues {
		b.Fatalf("%d pull requests, want %d", n, issues)
	}
	if got := steps.Load(); got != int64(issues*stepsPerIssue) {
		b.Fatalf("%d agent steps, want %d", got, issues*stepsPerIssue)
	}
	_ = bare
	log, _ := os.ReadFile(logPath)
	files := 0
	for _, d := range []string{"runs", "archive"} {
		filepath.WalkDir(filepath.Join(root, ".cadre", d), func(_ string, _ fs.DirEntry, err error) error {
			if err == nil {
				files++
			}
			return nil
		})
	}
	r := issueRun{files: files, wall: wall, cpu: all1 - all0, self: cpu1 - cpu0, selfSys: sys1 - sys0,
		agent: time.Duration(agentCPU.Load()), agentSys: time.Duration(agentSys.Load()), steps: steps.Load(), bytes: bytes.Load(), maxRSSKB: maxrss, bySub: map[string]int{}, root: root}
	for _, line := range strings.Split(string(log), "\036") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		r.gits++
		r.argv = append(r.argv, line)
		sub := gitSubcommand(strings.Fields(line))
		r.bySub[sub]++
		if sub == "gc" || sub == "maintenance" {
			r.gcs++
		}
	}
	return r
}

// gitSubcommand names the command of a logged git argv, after its options.
func gitSubcommand(argv []string) string {
	for i := 0; i < len(argv); i++ {
		switch a := argv[i]; {
		case a == "-c" || a == "-C":
			i++
		case strings.HasPrefix(a, "-"):
		default:
			return a
		}
	}
	return ""
}

// BenchmarkIssueFleet runs GitHub issues through the 13-step cadre
// workflow (instant script agent, fake GitHub with no write spacing, bare
// origin; push and pull request per issue) at issues×parallel. Per
// configuration it reports wall time; overhead per agent step (wall ×
// parallel ÷ steps: the agent is instant, so all of it is cadre's, git's
// and the fake server's); CPU per step including children (the git shim's
// sh adds about 1 ms per git process), cadre's process alone (which also
// serves the fake GitHub and plays the script agent), and that less the
// script agent's own CPU (its files and transcript: a real agent's work,
// in its own process), with the kernel's part of that (system time:
// creating files is most of it, and what it costs depends on the file
// system, not on cadre); peak RSS; git processes and
// automatic gc/maintenance runs per issue; bytes handed to agents per
// issue (prompt, role instructions and context file); files and
// directories cadre leaves in its state directory per step (creating a file
// is most of the kernel's part above). CADRE_BENCH_FLEET_CONFIG, when set,
// is added to the fleet's cadre.yaml: "sandbox: {mode: none}" measures it
// unconfined.
func BenchmarkIssueFleet(b *testing.B) {
	// A run's files are deleted only when all runs are done: on a file
	// system that avoids reusing recently freed inodes (ext4 without a
	// journal), a run after thousands of deletes pays for them in every
	// file it creates, a cost of the benchmark, not of cadre.
	dir, err := os.MkdirTemp("", "issuefleet")
	if err != nil {
		b.Fatal(err)
	}
	keep = dir
	defer func() { keep = ""; os.RemoveAll(dir) }()
	for _, c := range []struct{ issues, parallel int }{{1, 1}, {30, 10}, {100, 10}} {
		b.Run(fmt.Sprintf("%dx%d", c.issues, c.parallel), func(b *testing.B) {
			b.StopTimer()
			var tot issueRun
			for i := 0; i < b.N; i++ {
				r := runIssuesWith(b, c.issues, c.parallel, os.Getenv("CADRE_BENCH_FLEET_CONFIG"))
				tot.wall += r.wall
				tot.cpu += r.cpu
				tot.self += r.self
				tot.agent += r.agent
				tot.selfSys += r.selfSys
				tot.agentSys += r.agentSys
				tot.steps += r.steps
				tot.bytes += r.bytes
				tot.gits += r.gits
				tot.gcs += r.gcs
				tot.files += r.files
				tot.maxRSSKB = max(tot.maxRSSKB, r.maxRSSKB)
				b.Logf("git processes by command: %v", r.bySub)
			}
			n := float64(b.N)
			issues := float64(c.issues) * n
			steps := float64(tot.steps)
			ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
			b.ReportMetric(tot.wall.Seconds()/n, "s-wall")
			b.ReportMetric(ms(tot.wall)*float64(min(c.parallel, c.issues))/steps, "ms-overhead/step")
			b.ReportMetric(ms(tot.cpu)/steps, "ms-cpu/step")
			b.ReportMetric(ms(tot.self)/steps, "ms-cadre-cpu/step")
			b.ReportMetric(ms(tot.self-tot.agent)/steps, "ms-cadre-own-cpu/step")
			b.ReportMetric(ms(tot.selfSys-tot.agentSys)/steps, "ms-cadre-own-sys/step")
			b.ReportMetric(float64(tot.files)/steps, "files/step")
			b.ReportMetric(float64(tot.maxRSSKB)/1024, "MB-peak-rss")
			b.ReportMetric(float64(tot.gits)/issues, "git/issue")
			b.ReportMetric(float64(tot.gcs)/issues, "gc/issue")
			b.ReportMetric(float64(tot.bytes)/1024/issues, "KB-to-agents/issue")
		})
	}
}
