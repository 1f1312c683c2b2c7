package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/cadre-dev/cadre/internal/forge/forgetest"
	"github.com/cadre-dev/cadre/internal/store"
)

// The end-to-end test of the Temporal engine: a dev server, two cadre
// workers on one repository, six GitHub issues worked through the cadre
// workflow by the script runner, a worker SIGKILLed while it runs an agent
// step and another while it publishes an item. Every process is the cadre
// binary (this test binary, as in the scripts); the Temporal CLI is
// .tools/bin/temporal (.ci/install-temporal).

const temporalItems = 6

// blockedItem's second code-writer step waits for the test to kill its
// worker; so does the push of pushedItem's branch.
const (
	blockedItem = "3"
	pushedItem  = "5"
	// blockedStep is the held step's id: task b's code-writer.
	blockedStep = blockedItem + "/implementation/b/code-writer#1"
)

// gate holds a step until the test has killed the worker running it: the
// step appends its worker's pid (its own parent's) to starts, then waits
// until release exists.
type gate struct{ starts, release string }

func (g gate) script() string {
	return fmt.Sprintf(`echo $PPID >> '%s'; while [ ! -e '%s' ]; do sleep 0.05; done`, g.starts, g.release)
}

// pids are the workers that started the held step, in order.
func (g gate) pids() []int {
	data, _ := os.ReadFile(g.starts)
	var pids []int
	for _, f := range strings.Fields(string(data)) {
		pids = append(pids, atoi(f))
	}
	return pids
}

// temporalScenario is the fleet benchmark's issue: 13 agent steps, two
// committed tasks. The rule of the blocked step goes before the second
// code-writer rule, which it overrides for blockedItem.
const (
	temporalScenario = "../app/testdata/issue-scenario.yaml"
	secondWriter     = "  - role: code-writer\n    attempt: 2\n"
)

// blockedRule holds blockedItem's second code-writer step at g.
func blockedRule(g gate) string {
	argv, _ := json.Marshal([]string{"sh", "-c", g.script()})
	return `  - role: code-writer
    task: "` + blockedItem + `"
    attempt: 2
    actions:
      - run: ` + string(argv) + `
      - write: {path: b.txt, content: "b\n"}
    signal: {result: SUCCESS, confidence: 9}`
}

// freePort is a port nothing listens on right now.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startTemporal starts a dev server on 127.0.0.1 with its own database and
// returns its frontend address once it answers.
func startTemporal(t *testing.T, bin string) string {
	t.Helper()
	dir := t.TempDir()
	port := freePort(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	logf, err := os.Create(filepath.Join(dir, "server.log"))
	if err != nil {
		t.Fatal(err)
	}
	srv := exec.Command(bin, "server", "start-dev", "--headless", "--ip", "127.0.0.1", "--port", strconv.Itoa(port),
		"--db-filename", filepath.Join(dir, "temporal.db"), "--log-level", "error")
	srv.Stdout, srv.Stderr = logf, logf
	srv.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-srv.Process.Pid, syscall.SIGKILL)
		srv.Wait()
		logf.Close()
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		c, err := client.DialContext(ctx, client.Options{HostPort: addr, Logger: quietLogger{}})
		if err == nil {
			_, err = c.CheckHealth(ctx, &client.CheckHealthRequest{})
			c.Close()
		}
		cancel()
		if err == nil {
			return addr
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(logf.Name())
			t.Fatalf("the Temporal dev server did not answer at %s: %v\n%s", addr, err, log)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// quietLogger drops the SDK's log while the test waits for the server.
type quietLogger struct{}

func (quietLogger) Debug(string, ...any) {}
func (quietLogger) Info(string, ...any)  {}
func (quietLogger) Warn(string, ...any)  {}
func (quietLogger) Error(string, ...any) {}

// temporalRepo is a repository of six GitHub issues on a fake GitHub, with
// a bare origin, for the script runner.
type temporalRepo struct {
	dir, bare, work string
	fake            *forgetest.Server
	agent, push     gate   // the blocked agent step, the blocked push
	path            string // PATH of the workers: git held at push
	remote          bool   // the workers are in clones of their own
}

func newTemporalRepo(t *testing.T) *temporalRepo {
	t.Helper()
	g := &temporalRepo{work: t.TempDir()}
	g.dir, g.bare = filepath.Join(g.work, "repo"), filepath.Join(g.work, "origin.git")
	g.agent = gate{filepath.Join(g.work, "agent.starts"), filepath.Join(g.work, "agent.release")}
	g.push = gate{filepath.Join(g.work, "push.starts"), filepath.Join(g.work, "push.release")}
	g.fake = forgetest.New(t, canary)
	g.fake.AddRepo("acme", "widgets")
	for i := range temporalItems {
		g.fake.AddIssue("acme", "widgets", forgetest.Issue{Title: fmt.Sprintf("Add two files %d", i+1), Body: "Add a.txt and b.txt.", Author: "alice"})
	}
	os.MkdirAll(g.dir, 0o755)
	// No sandbox: the held step reports its worker's host pid ($PPID,
	// which a PID namespace would renumber) in the test's directory.
	os.WriteFile(filepath.Join(g.dir, "cadre.yaml"), []byte("repository: acme/widgets\nsandbox: {mode: none}\n"+
		"github: {api_url: \""+g.fake.URL+"\", write_interval: 0s}\n"+
		"defaults: {runner: fake, workflow: cadre}\ncommands: {build: \"true\", test: \"true\"}\n"+
		"runners:\n  fake: {type: script, scenario: scenario.yaml}\n"), 0o644)
	issue, err := os.ReadFile(temporalScenario)
	if err != nil || !strings.Contains(string(issue), secondWriter) {
		t.Fatalf("%s lacks the second code-writer rule: %v", temporalScenario, err)
	}
	scenario := strings.Replace(string(issue), secondWriter, blockedRule(g.agent)+"\n"+secondWriter, 1)
	os.WriteFile(filepath.Join(g.dir, "scenario.yaml"), []byte(scenario), 0o644)
	// The workers' git holds the push of pushedItem's branch.
	real, err := exec.LookPath("git")
	if err != nil {
		t.Skip("needs git")
	}
	shim := filepath.Join(g.work, "bin")
	os.MkdirAll(shim, 0o755)
	os.WriteFile(filepath.Join(shim, "git"), []byte("#!/bin/sh\ncase \"$*\" in\n*'push --quiet -- '*'refs/heads/cadre/"+pushedItem+"-'*) "+g.push.script()+";;\nesac\n"+
		"exec '"+real+"' \"$@\"\n"), 0o755)
	g.path = shim + string(os.PathListSeparator) + os.Getenv("PATH")
	gitIn(t, g.work, "init", "-q", "--bare", g.bare)
	gitIn(t, g.dir, "init", "-q", "-b", "main")
	gitIn(t, g.dir, "add", "-A")
	gitIn(t, g.dir, "-c", "user.email=t@example.com", "-c", "user.name=T", "commit", "-qm", "init")
	gitIn(t, g.dir, "remote", "add", "origin", g.bare)
	gitIn(t, g.dir, "push", "-q", "origin", "main")
	return g
}

// cadreProc is a cadre process started in the background.
type cadreProc struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan error
}

// start starts cadre in the repository, its output to a file.
func (g *temporalRepo) start(t *testing.T, name string, args ...string) *cadreProc {
	t.Helper()
	return g.startIn(t, g.dir, name, args...)
}

// clone is a clone of the origin, as another machine has it.
func (g *temporalRepo) clone(t *testing.T, name string) string {
	t.Helper()
	dir := filepath.Join(g.work, name)
	if out, err := exec.Command("git", "clone", "-q", "-b", "main", g.bare, dir).CombinedOutput(); err != nil {
		t.Fatalf("git clone: %v %s", err, out)
	}
	return dir
}

// startIn starts cadre in dir, its output to a file.
func (g *temporalRepo) startIn(t *testing.T, dir, name string, args ...string) *cadreProc {
	t.Helper()
	p := &cadreProc{name: name, log: filepath.Join(g.work, name+".log"), done: make(chan error, 1)}
	f, err := os.Create(p.log)
	if err != nil {
		t.Fatal(err)
	}
	p.cmd = exec.Command("cadre", args...)
	p.cmd.Dir = dir
	p.cmd.Env = append(os.Environ(), "GITHUB_TOKEN="+canary, "PATH="+g.path)
	p.cmd.Stdout, p.cmd.Stderr = f, f
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.done <- p.cmd.Wait()
		f.Close()
	}()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.done
		p.done <- nil // for a later wait
		if t.Failed() {
			out, _ := os.ReadFile(p.log)
			t.Logf("%s output:\n%s", name, out)
		}
	})
	return p
}

// wait waits for the process to exit and returns its exit code (-1:
// killed by a signal); it fails the test after limit.
func (p *cadreProc) wait(t *testing.T, limit time.Duration) int {
	t.Helper()
	select {
	case err := <-p.done:
		p.done <- err
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatalf("%s: %v", p.name, err)
		}
		return 0
	case <-time.After(limit):
		t.Fatalf("%s did not end within %s", p.name, limit)
		return -1
	}
}

// waitFor polls cond until it holds, failing after limit.
func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, limit)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestTemporalWorkerKilledMidStep runs six issues on Temporal with two
// workers. It SIGKILLs the worker running an agent step; then the other,
// the only one left, while it pushes an item's branch (the item's last
// activity); then it starts a third, which has opened no item and must
// continue them all. Every item completes and is published once, no step
// that completed runs again, and the held steps ran again exactly under
// the worker that took over.
func TestTemporalWorkerKilledMidStep(t *testing.T) { testWorkersKilled(t, false) }

// TestTemporalRemoteWorkersKilled is the same with every worker in its own
// clone of the origin, as on other machines: no worker shares the
// starter's journal or worktrees. The journal of truth is the starter's.
func TestTemporalRemoteWorkersKilled(t *testing.T) { testWorkersKilled(t, true) }

func testWorkersKilled(t *testing.T, remote bool) {
	bin := temporalCLI(t)
	addr := startTemporal(t, bin)
	g := newTemporalRepo(t)
	g.remote = remote
	queue := "e2e"
	workers := map[int]*cadreProc{}
	startWorker := func(name string) {
		dir := g.dir
		if remote {
			dir = g.clone(t, name)
		}
		w := g.startIn(t, dir, name, "worker", "--temporal-address", addr, "--task-queue", queue)
		workers[w.cmd.Process.Pid] = w
	}
	startWorker("worker1")
	startWorker("worker2")
	targets := make([]string, temporalItems)
	for i := range targets {
		targets[i] = strconv.Itoa(i + 1)
	}
	// A killed worker's steps move on after 15s of silence. A live one
	// heartbeats every 2s; one whose heartbeats cannot get through for
	// the whole timeout stops its step, which may be another worker's by
	// then, and that step starts again: a loaded machine with the race
	// detector still gets one through in 15s (not always in 5s).
	run := g.start(t, "run", append([]string{"run", "--plain", "--engine", "temporal", "--temporal-address", addr,
		"--task-queue", queue, "--heartbeat-timeout", "15s"}, targets...)...)

	// settle bounds each wait for the run to reach a point: a guard that
	// turns a hang into a failure, not a deadline; with the race detector
	// on a loaded machine the run takes minutes.
	const settle = 4 * time.Minute
	// kill waits until a live worker holds the gate's step and kills it;
	// it returns the workers killed so far.
	killed := map[int]bool{}
	var kills []map[string]agentStep // the agent steps right after each kill
	kill := func(gt gate, what string) map[int]bool {
		victim := 0
		waitFor(t, settle, what+" held by a live worker", func() bool {
			for _, pid := range gt.pids() {
				if !killed[pid] {
					victim = pid
					return true
				}
			}
			return false
		})
		w := workers[victim]
		if w == nil {
			t.Fatalf("%s runs under pid %d, not a worker's", what, victim)
		}
		if err := w.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		if code := w.wait(t, 10*time.Second); code != -1 {
			t.Fatalf("%s exited with %d after SIGKILL", w.name, code)
		}
		killed[victim] = true
		kills = append(kills, g.agentSteps(t))
		return maps.Clone(killed)
	}
	open := func(gt gate) {
		if err := os.WriteFile(gt.release, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	deadAt := map[gate]map[int]bool{}
	deadAt[g.agent] = kill(g.agent, "the agent step of item "+blockedItem)
	open(g.agent)
	// The worker that took the held step over finishes it before the next
	// kill, which may be its own: killed between its agent's end and the
	// journal, it would leave the step to run to its end once more.
	waitFor(t, settle, "the held agent step "+blockedStep+" completed", func() bool {
		return g.agentSteps(t)[blockedStep].status == store.StepCompleted
	})
	deadAt[g.push] = kill(g.push, "the push of item "+pushedItem)
	startWorker("worker3")
	open(g.push)

	if code := run.wait(t, settle); code != 0 {
		t.Fatalf("cadre run exited with %d", code)
	}
	// The starter shows the items' events, which its workers journaled
	// (or, remote, sent back with each step).
	out, _ := os.ReadFile(run.log)
	for _, id := range targets {
		if !strings.Contains(string(out), " "+id+" taskCompleted") {
			t.Errorf("cadre run's output lacks item %s's taskCompleted", id)
		}
	}
	// A held step ran under workers killed before its gate opened, then
	// once more, to its end, under a live one.
	for gt, dead := range deadAt {
		pids := gt.pids()
		ok := len(pids) >= 2 && workers[pids[len(pids)-1]] != nil && !dead[pids[len(pids)-1]]
		for _, pid := range pids[:max(len(pids)-1, 0)] {
			ok = ok && dead[pid]
		}
		if !ok {
			t.Errorf("%s: ran under workers %v; killed before it was let through: %v", filepath.Base(gt.starts), pids, dead)
		}
	}
	g.checkTemporalRun(t, kills)
}

// agentStep is what is known of an agent step: its journaled status and
// starts, and how many times its runner ran it to the end (the script
// runner appends a header to the step's log each time).
type agentStep struct {
	status     string
	tries, ran int
}

// agentSteps reads the agent steps of the repository's latest run.
func (g *temporalRepo) agentSteps(t *testing.T) map[string]agentStep {
	t.Helper()
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
	steps, err := st.Steps(ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]agentStep{}
	for _, s := range steps {
		if s.Kind != "agent" {
			continue
		}
		stem := strings.NewReplacer("/", "-", "#", "-").Replace(strings.TrimPrefix(s.ID, s.ItemID+"/"))
		log, _ := os.ReadFile(filepath.Join(g.dir, ".cadre", "runs", r.ID, "items", s.ItemID, "logs", stem+".log"))
		out[s.ID] = agentStep{status: s.Status, tries: s.Tries, ran: strings.Count(string(log), "script fake: ")}
	}
	return out
}

// checkAgentSteps checks that every agent step completed, and ran once
// unless a worker was killed while it ran: kills are the agent steps as
// they were right after each kill. A step completed at a kill never ran
// again; a step running at a kill (its run in the killed worker never
// completed) ran at most once more per kill.
func (g *temporalRepo) checkAgentSteps(t *testing.T, kills []map[string]agentStep) {
	t.Helper()
	final := g.agentSteps(t)
	if len(final) != temporalItems*stepsPerIssue {
		t.Errorf("%d agent steps journaled, want %d", len(final), temporalItems*stepsPerIssue)
	}
	for id, f := range final {
		if f.status != store.StepCompleted || f.ran < 1 || f.ran > f.tries {
			t.Errorf("agent step %s: %s, started %d times, ran to its end %d times", id, f.status, f.tries, f.ran)
		}
		running := 0
		for _, k := range kills {
			switch at := k[id]; at.status {
			case store.StepCompleted:
				if at != f {
					t.Errorf("agent step %s ran again after it completed: %+v at a kill, %+v at the end", id, at, f)
				}
			case store.StepStarted:
				running++
			}
		}
		if f.tries > 1+running {
			t.Errorf("agent step %s started %d times, running at %d kills", id, f.tries, running)
		}
	}
	// A remote worker's start of the step never reached the journal of
	// truth: it died with the worker.
	if b := final[blockedStep]; b.tries != 2-btoi(g.remote) || b.ran != 1 {
		t.Errorf("the held agent step %s: %+v, want started %d times (killed once), ran to its end once", blockedStep, b, 2-btoi(g.remote))
	}
}

// checkTemporalRun checks the journal, the branches and the fake GitHub
// after the run.
func (g *temporalRepo) checkTemporalRun(t *testing.T, kills []map[string]agentStep) {
	t.Helper()
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
		t.Errorf("run %s is %s, want completed", r.ID, r.Status)
	}
	items, err := st.Items(ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != temporalItems {
		t.Errorf("%d items in the journal, want %d", len(items), temporalItems)
	}
	for _, it := range items {
		if it.Status != store.ItemCompleted {
			t.Errorf("item %s is %s (%s), want completed", it.ID, it.Status, it.Error)
		}
	}
	steps, err := st.Steps(ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	g.checkAgentSteps(t, kills)

	// One commit per committing step, across all branches.
	commits := map[string]string{} // step → commit
	for _, s := range steps {
		if s.Kind != "commit" || s.Status != store.StepCompleted {
			continue
		}
		var res struct{ Commit string }
		json.Unmarshal(s.Result, &res)
		if res.Commit != "" {
			commits[s.ID] = res.Commit
		}
	}
	seen := map[string]string{}
	prs := g.fake.PRs("acme", "widgets")
	for _, pr := range prs {
		out, err := exec.Command("git", "-C", g.bare, "log", "--format=%H %(trailers:key=Cadre-Step,valueonly,separator=%x2C)", "main.."+pr.Head).Output()
		if err != nil {
			t.Errorf("branch %s of pull request %d: %v", pr.Head, pr.Number, err)
			continue
		}
		if strings.TrimSpace(string(out)) == "" {
			t.Errorf("branch %s of pull request %d has no commits over main", pr.Head, pr.Number)
			continue
		}
		// Every task's file, whichever worker wrote it.
		files, _ := exec.Command("git", "-C", g.bare, "diff", "--name-only", "main..."+pr.Head).Output()
		if got := strings.Fields(string(files)); !slices.Contains(got, "a.txt") || !slices.Contains(got, "b.txt") {
			t.Errorf("branch %s of pull request %d changes %q, want a.txt and b.txt", pr.Head, pr.Number, got)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			sha, step, _ := strings.Cut(line, " ")
			if step == "" {
				t.Errorf("commit %s on %s has no Cadre-Step trailer", sha, pr.Head)
				continue
			}
			if prev := seen[step]; prev != "" {
				t.Errorf("step %s committed twice: %s and %s", step, prev, sha)
			}
			seen[step] = sha
			if commits[step] != sha {
				t.Errorf("commit %s of step %s on %s; the journal has %q", sha, step, pr.Head, commits[step])
			}
		}
	}
	if len(seen) != len(commits) || len(commits) < 2*temporalItems {
		t.Errorf("%d commits pushed, %d journaled; want one per task of each item (%d)", len(seen), len(commits), 2*temporalItems)
	}

	// One pull request per item.
	heads := map[string]bool{}
	for _, pr := range prs {
		heads[pr.Head] = true
	}
	for _, it := range items {
		n := 0
		for _, pr := range prs {
			if strings.HasPrefix(pr.Head, "cadre/"+it.ID+"-") {
				n++
			}
		}
		if n != 1 {
			t.Errorf("item %s has %d pull requests, want 1", it.ID, n)
		}
		// The progress comments, exactly once each too.
		kinds := map[string]int{}
		for _, c := range g.fake.Comments("acme", "widgets", atoi(it.ID)) {
			for _, k := range []string{"start", "done", "failed"} {
				kinds[k] += strings.Count(c.Body, ":"+k+" -->")
			}
		}
		if kinds["start"] != 1 || kinds["done"] != 1 || kinds["failed"] != 0 {
			t.Errorf("issue %s comments by kind %v, want one start and one done", it.ID, kinds)
		}
	}
	if len(prs) != temporalItems || len(heads) != temporalItems {
		t.Errorf("%d pull requests on %d branches, want %d", len(prs), len(heads), temporalItems)
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

const stepsPerIssue = 13

// TestTemporalRemoteUncommittedWorkMoves runs a plain task file (the
// stage pipeline: the coder edits, the auditor reviews, the item commits
// at its end) on two workers in clones of their own. The worker holding
// the audit is killed: the other one continues the item and must find the
// coder's uncommitted changes (modified, added and deleted files), which
// the item's end commits.
func TestTemporalRemoteUncommittedWorkMoves(t *testing.T) {
	bin := temporalCLI(t)
	addr := startTemporal(t, bin)
	g := &temporalRepo{work: t.TempDir()}
	g.dir, g.bare = filepath.Join(g.work, "repo"), filepath.Join(g.work, "origin.git")
	audit := gate{filepath.Join(g.work, "audit.starts"), filepath.Join(g.work, "audit.release")}
	g.path = os.Getenv("PATH")
	os.MkdirAll(filepath.Join(g.dir, "tasks"), 0o755)
	os.WriteFile(filepath.Join(g.dir, "cadre.yaml"), []byte("sandbox: {mode: none}\ntasks_dir: tasks\n"+
		"defaults: {runner: fake, workflow: runner}\nrunners:\n  fake: {type: script, scenario: scenario.yaml}\n"), 0o644)
	os.WriteFile(filepath.Join(g.dir, "old.txt"), []byte("old\n"), 0o644)
	os.WriteFile(filepath.Join(g.dir, "gone.txt"), []byte("gone\n"), 0o644)
	os.WriteFile(filepath.Join(g.dir, "tasks", "t1.md"), []byte("---\nstage: code\n---\n# Edit files\n"), 0o644)
	argv, _ := json.Marshal([]string{"sh", "-c", audit.script()})
	os.WriteFile(filepath.Join(g.dir, "scenario.yaml"), []byte(`rules:
  - role: coder
    actions:
      - write: {path: new.txt, content: "new\n"}
      - replace: {path: old.txt, old: "old", new: "changed"}
      - run: ["rm", "gone.txt"]
    signal: {result: SUCCESS, summary: edited, confidence: 9, next: auditor}
  - role: auditor
    actions:
      - run: `+string(argv)+`
    signal: {result: PASS, summary: accepted, confidence: 9, next: Done, rating: 9}
`), 0o644)
	gitIn(t, g.work, "init", "-q", "--bare", "-b", "main", g.bare)
	gitIn(t, g.dir, "init", "-q", "-b", "main")
	gitIn(t, g.dir, "add", "-A")
	gitIn(t, g.dir, "-c", "user.email=t@example.com", "-c", "user.name=T", "commit", "-qm", "init")
	gitIn(t, g.dir, "remote", "add", "origin", g.bare)
	gitIn(t, g.dir, "push", "-q", "origin", "main")

	workers := map[int]*cadreProc{}
	for _, name := range []string{"worker1", "worker2"} {
		w := g.startIn(t, g.clone(t, name), name, "worker", "--temporal-address", addr, "--task-queue", "wip")
		workers[w.cmd.Process.Pid] = w
	}
	run := g.start(t, "run", "run", "--plain", "--engine", "temporal", "--temporal-address", addr,
		"--task-queue", "wip", "--heartbeat-timeout", "3s")
	var victim *cadreProc
	waitFor(t, 60*time.Second, "the audit held by a worker", func() bool {
		pids := audit.pids()
		if len(pids) > 0 {
			victim = workers[pids[0]]
		}
		return victim != nil
	})
	victim.cmd.Process.Signal(syscall.SIGKILL)
	victim.wait(t, 10*time.Second)
	if err := os.WriteFile(audit.release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if code := run.wait(t, 90*time.Second); code != 0 {
		t.Fatalf("cadre run exited with %d", code)
	}
	if pids := audit.pids(); len(pids) != 2 || workers[pids[1]] == nil || workers[pids[1]] == victim {
		t.Fatalf("the audit ran under %v, want the killed worker's then the other's", pids)
	}
	out, err := exec.Command("git", "-C", g.bare, "for-each-ref", "--format=%(refname:short)", "refs/heads/cadre/").Output()
	branch := strings.TrimSpace(string(out))
	if err != nil || branch == "" || strings.Contains(branch, "\n") {
		t.Fatalf("the item's branch on origin: %q, %v", out, err)
	}
	diff, _ := exec.Command("git", "-C", g.bare, "diff", "--name-status", "main", branch).Output()
	for _, want := range []string{"A\tnew.txt", "M\told.txt", "D\tgone.txt"} {
		if !strings.Contains(string(diff), want) {
			t.Errorf("the item's commit lacks %q; it changes:\n%s", want, diff)
		}
	}
	if refs, _ := exec.Command("git", "-C", g.bare, "for-each-ref", "refs/cadre/").Output(); len(refs) != 0 {
		t.Errorf("work-in-progress refs left on origin after the item completed:\n%s", refs)
	}
	task, _ := os.ReadFile(filepath.Join(g.dir, "tasks", "t1.md"))
	if !strings.Contains(string(task), "stage: completed") {
		t.Errorf("the starter's task file:\n%s\nwant stage: completed", task)
	}
}

// gitIn runs git in dir, failing the test when it fails.
func gitIn(t *testing.T, dir string, args ...string) {
	t.Helper()
	c := exec.Command("git", args...)
	c.Dir = dir
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v %s", args, err, out)
	}
}
