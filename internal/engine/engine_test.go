package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cadre-dev/cadre/internal/config"
	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/item/taskfile"
	"github.com/cadre-dev/cadre/internal/report"
	"github.com/cadre-dev/cadre/internal/role"
	"github.com/cadre-dev/cadre/internal/runner"
	"github.com/cadre-dev/cadre/internal/runstop"
	"github.com/cadre-dev/cadre/internal/sandbox"
	"github.com/cadre-dev/cadre/internal/store"
)

// agentFunc is what the fake agent does for one invocation.
type agentFunc func(inv runner.Invocation) runner.Result

// fakeRunner is an in-process runner whose behaviour each test scripts.
type fakeRunner struct {
	mu    sync.Mutex
	calls []string // step ids, in order (re-asks suffixed with "+reask")
	do    agentFunc
}

func (f *fakeRunner) Name() string              { return "fake" }
func (f *fakeRunner) Capabilities() runner.Caps { return runner.Caps{EditsFiles: true} }
func (f *fakeRunner) Run(ctx context.Context, inv runner.Invocation) (runner.Result, error) {
	f.mu.Lock()
	id := inv.Step
	if inv.Reask {
		id += "+reask"
	}
	f.calls = append(f.calls, id)
	f.mu.Unlock()
	return f.do(inv), nil
}

func signalText(role, result string, rating int) string {
	s := fmt.Sprintf("done\n\n### SIGNAL BLOCK\n- Agent: %s\n- Result: %s\n- Confidence: 9\n", role, result)
	if rating >= 0 {
		s += fmt.Sprintf("- Rating: %d\n", rating)
	}
	return s
}

// passAll writes a file as coder and passes every audit.
func passAll(inv runner.Invocation) runner.Result {
	switch inv.Role {
	case "coder":
		os.WriteFile(filepath.Join(inv.Dir, inv.Item+".txt"), []byte(inv.Step+"\n"), 0o644)
		return runner.Result{Output: signalText("coder", "SUCCESS", -1), Usage: event.Usage{InputTokens: 10, OutputTokens: 2, CostUSD: 0.01}}
	case "auditor":
		return runner.Result{Output: signalText("auditor", "PASS", 9)}
	}
	return runner.Result{Output: signalText(inv.Role, "PLAN_CREATED", -1)}
}

type env struct {
	t      *testing.T
	root   string
	st     *store.Store
	fake   *fakeRunner
	events []event.Event
	eng    *Engine
}

func execGit(dir string, args ...string) ([]byte, error) {
	return exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := execGit(dir, args...)
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// newEnv makes a repository with the given task files (name → stage) and an
// engine whose every role uses the fake runner.
func newEnv(t *testing.T, do agentFunc, tasks ...[2]string) *env {
	t.Helper()
	root := t.TempDir()
	git(t, root, "init", "-q", "-b", "main")
	git(t, root, "config", "user.email", "t@example.com")
	git(t, root, "config", "user.name", "T")
	os.MkdirAll(filepath.Join(root, "tasks"), 0o755)
	for _, tk := range tasks {
		body := fmt.Sprintf("---\nstage: %s\nattempts: 0\ncustom: keep-me\n---\n# Task %s\n\n## Goal\nDo %s.\n", tk[1], tk[0], tk[0])
		os.WriteFile(filepath.Join(root, "tasks", tk[0]+".md"), []byte(body), 0o644)
	}
	git(t, root, "add", "-A")
	git(t, root, "commit", "-qm", "init", "--allow-empty")
	os.WriteFile(filepath.Join(root, ".git", "info", "exclude"), []byte("/.cadre/\n"), 0o644)
	st, err := store.Open(context.Background(), filepath.Join(root, ".cadre", "cadre.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e := &env{t: t, root: root, st: st, fake: &fakeRunner{do: do}}
	cfg := config.Default()
	cfg.Defaults.Runner = "fake"
	reg := runner.NewRegistry()
	reg.Register("fake", func(runner.Settings) (runner.Runner, error) { return e.fake, nil })
	roles, err := role.Load("")
	if err != nil {
		t.Fatal(err)
	}
	bus := event.NewBus(nil, event.SinkFunc(func(ev event.Event) { e.events = append(e.events, ev) }))
	e.eng, err = New(context.Background(), Deps{Root: root, Config: cfg, Store: st, Roles: roles, Runners: reg, Bus: bus})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *env) task(id string) *taskfile.Task {
	e.t.Helper()
	tk, err := taskfile.Load(filepath.Join(e.root, "tasks", id+".md"))
	if err != nil {
		e.t.Fatal(err)
	}
	return tk
}

// seq lists "type role" of the events of one item.
func (e *env) seq(item string, types ...string) []string {
	want := map[string]bool{}
	for _, t := range types {
		want[t] = true
	}
	var out []string
	for _, ev := range e.events {
		if ev.Item == item && want[ev.Type] {
			out = append(out, strings.TrimSpace(ev.Type+" "+ev.Role))
		}
	}
	return out
}

func (e *env) commits() []string {
	out := strings.TrimSpace(git(e.t, e.root, "log", "--format=%s"))
	return strings.Split(out, "\n")
}

func TestCodeStageTaskRunsCoderThenAuditor(t *testing.T) {
	e := newEnv(t, passAll, [2]string{"a", "code"})
	sum, err := e.eng.Start(context.Background(), Options{InPlace: true})
	if err != nil || sum.Status != store.RunCompleted {
		t.Fatalf("run: %v %+v", err, sum)
	}
	if diff := cmp.Diff([]string{"a/code/coder#1", "a/audit/auditor#1"}, e.fake.calls); diff != "" {
		t.Error(diff)
	}
	want := []string{"taskStarted", "stageStarted coder", "stageCompleted coder", "stageStarted auditor", "stageCompleted auditor", "taskCompleted"}
	if diff := cmp.Diff(want, e.seq("a", event.TaskStarted, event.StageStarted, event.StageCompleted, event.TaskCompleted)); diff != "" {
		t.Error(diff)
	}
}

func TestPlanStageTaskRunsPlannerCoderAuditor(t *testing.T) {
	e := newEnv(t, passAll, [2]string{"a", "plan"})
	if _, err := e.eng.Start(context.Background(), Options{InPlace: true}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a/plan/planner#1", "a/code/coder#1", "a/audit/auditor#1"}, e.fake.calls); diff != "" {
		t.Error(diff)
	}
}

func TestAuditPassMarksTaskCompletedAndCommits(t *testing.T) {
	e := newEnv(t, passAll, [2]string{"a", "code"}, [2]string{"b", "code"})
	if _, err := e.eng.Start(context.Background(), Options{InPlace: true}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b"} {
		tk := e.task(id)
		if tk.Stage != "completed" || tk.Agent != "auditor" || tk.Mode != "audit" {
			t.Errorf("%s frontmatter = %s/%s/%s", id, tk.Stage, tk.Mode, tk.Agent)
		}
		if !strings.Contains(tk.Body, "**Rating: 9/10**") || !strings.Contains(tk.Body, "**Verdict: ACCEPTED**") {
			t.Errorf("%s review missing:\n%s", id, tk.Body)
		}
	}
	raw, _ := os.ReadFile(filepath.Join(e.root, "tasks", "a.md"))
	if !strings.Contains(string(raw), "custom: keep-me") {
		t.Error("unknown frontmatter key lost")
	}
	if diff := cmp.Diff([]string{"Task b", "Task a", "init"}, e.commits()); diff != "" {
		t.Error(diff)
	}
	// The body says what the commit changed, before cadre's trailers.
	body := git(t, e.root, "log", "-1", "--format=%b")
	if !regexp.MustCompile(`^Changes \d+ files? \(\+\d+ -\d+\):\n(- .+ \(\+\d+ -\d+\)\n)*- tasks/b\.md \(\+\d+ -\d+\)\n`).MatchString(body) || !strings.Contains(body, "\n\nCadre-Step: b/commit\n") {
		t.Errorf("body:\n%s", body)
	}
	if trailer := git(t, e.root, "log", "-1", "--format=%(trailers:key=Cadre-Step,valueonly)"); strings.TrimSpace(trailer) != "b/commit" {
		t.Errorf("trailer = %q", trailer)
	}
	if files := git(t, e.root, "ls-tree", "-r", "--name-only", "HEAD"); strings.Contains(files, ".cadre") {
		t.Errorf(".cadre committed:\n%s", files)
	}
	if out := git(t, e.root, "status", "--porcelain"); out != "" {
		t.Errorf("tree dirty after run: %s", out)
	}
}

func TestAuditFailOnceSendsTaskBackToCode(t *testing.T) {
	var coderReview string
	audits := 0
	e := newEnv(t, func(inv runner.Invocation) runner.Result {
		if inv.Role == "coder" && inv.Attempt == 2 {
			coderReview = inv.Prompt
		}
		if inv.Role == "auditor" {
			audits++
			if audits == 1 {
				return runner.Result{Output: "## Findings\nwrong text\n" + signalText("auditor", "INSUFFICIENT", 5)}
			}
		}
		return passAll(inv)
	}, [2]string{"a", "code"})
	if _, err := e.eng.Start(context.Background(), Options{InPlace: true}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a/code/coder#1", "a/audit/auditor#1", "a/code/coder#2", "a/audit/auditor#2"}, e.fake.calls); diff != "" {
		t.Error(diff)
	}
	if !regexp.MustCompile(`outputs/audit-auditor-1\.[0-9a-f]{32}\.md`).MatchString(coderReview) {
		t.Errorf("second coder prompt does not point at the review:\n%s", coderReview)
	}
	tk := e.task("a")
	if tk.Stage != "completed" || tk.Attempts != 1 {
		t.Errorf("frontmatter %s/%d", tk.Stage, tk.Attempts)
	}
	if strings.Contains(tk.Body, "wrong text") || strings.Count(tk.Body, "## Review") != 1 {
		t.Errorf("review not replaced:\n%s", tk.Body)
	}
}

func TestAuditFailTwiceStopsRunnerAndLeavesTaskInAudit(t *testing.T) {
	e := newEnv(t, func(inv runner.Invocation) runner.Result {
		if inv.Role == "auditor" {
			return runner.Result{Output: signalText("auditor", "INSUFFICIENT", 3)}
		}
		return passAll(inv)
	}, [2]string{"a", "code"}, [2]string{"b", "code"})
	sum, err := e.eng.Start(context.Background(), Options{InPlace: true})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Status != store.RunFailed {
		t.Errorf("status %s", sum.Status)
	}
	tk := e.task("a")
	if tk.Stage != "audit" || tk.Attempts != 2 {
		t.Errorf("frontmatter %s/%d, want audit/2", tk.Stage, tk.Attempts)
	}
	if !strings.Contains(tk.Body, "**Verdict: REJECTED**") {
		t.Error("rejecting review not written")
	}
	if st := git(t, e.root, "status", "--porcelain"); !strings.Contains(st, "a.txt") {
		t.Errorf("coder's change not left uncommitted: %q", st)
	}
	if len(e.commits()) != 1 {
		t.Errorf("commits: %v", e.commits())
	}
	if got := e.seq("b", event.TaskStarted); len(got) != 0 {
		t.Error("runner went on to the next task after a hard stop")
	}
	if got := e.seq("a", event.TaskFailed, event.RunnerStopped); len(got) != 2 {
		t.Errorf("events %v", got)
	}
}

func TestAgentCrashStopsRunnerImmediately(t *testing.T) {
	e := newEnv(t, func(inv runner.Invocation) runner.Result {
		if inv.Role == "coder" {
			return runner.Result{ExitCode: 1, StderrTail: "boom", Output: signalText("coder", "SUCCESS", -1)}
		}
		return passAll(inv)
	}, [2]string{"a", "plan"}, [2]string{"b", "code"})
	sum, err := e.eng.Start(context.Background(), Options{InPlace: true})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Status != store.RunFailed || !strings.Contains(sum.Reason, "coder exited with code 1 (see ") || !strings.HasSuffix(sum.Reason, "; its stderr ends: boom") {
		t.Errorf("summary %s %q", sum.Status, sum.Reason)
	}
	if diff := cmp.Diff([]string{"a/plan/planner#1", "a/code/coder#1"}, e.fake.calls); diff != "" {
		t.Error(diff)
	}
	if e.task("a").Stage != "code" {
		t.Errorf("stage %s", e.task("a").Stage)
	}
}

func TestStopCancelsBeforeNextStage(t *testing.T) {
	var e *env
	e = newEnv(t, func(inv runner.Invocation) runner.Result {
		if inv.Step == "a/code/coder#1" {
			if err := runstop.Request(e.eng.StateDir(), e.events[0].Run); err != nil {
				t.Error(err)
			}
		}
		return passAll(inv)
	}, [2]string{"a", "code"}, [2]string{"b", "code"})
	sum, err := e.eng.Start(context.Background(), Options{InPlace: true})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Status != store.RunStopped {
		t.Errorf("status %s", sum.Status)
	}
	if diff := cmp.Diff([]string{"a/code/coder#1"}, e.fake.calls); diff != "" {
		t.Error(diff)
	}
	// Resume finishes the run without repeating the coder.
	e.fake.calls = nil
	sum, err = e.eng.Resume(context.Background(), "")
	if err != nil || sum.Status != store.RunCompleted {
		t.Fatalf("resume: %v %s", err, sum.Status)
	}
	if diff := cmp.Diff([]string{"a/audit/auditor#1", "b/code/coder#1", "b/audit/auditor#1"}, e.fake.calls); diff != "" {
		t.Error(diff)
	}
}

// An agent interrupted (Ctrl-C, cadre stop --now) had spent tokens: they
// are journaled with its step, which stays started and runs again on
// resume, and the run's totals count both tries.
func TestInterruptedStepKeepsItsUsage(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	spent := event.Usage{InputTokens: 1200, OutputTokens: 40, CostUSD: 0.25}
	e := newEnv(t, func(inv runner.Invocation) runner.Result {
		if inv.Step == "a/code/coder#1" && ctx.Err() == nil {
			cancel() // interrupted while the model answered
			return runner.Result{Usage: spent, Model: "claude-x"}
		}
		res := passAll(inv)
		res.Usage = event.Usage{InputTokens: 10, OutputTokens: 1, CostUSD: 0.5}
		return res
	}, [2]string{"a", "code"})
	if _, err := e.eng.Start(ctx, Options{InPlace: true}); err == nil {
		t.Log("start returned without error after the interruption")
	}
	run := e.events[0].Run
	st, err := e.st.GetStep(context.Background(), run, "a/code/coder#1")
	if err != nil {
		t.Fatal(err)
	}
	if st.Status != store.StepStarted || st.Usage.InputTokens != 1200 || st.Usage.CostUSD != 0.25 || st.Model != "claude-x" {
		t.Errorf("interrupted step: %s, %+v, model %q; want started with what its agent used", st.Status, st.Usage, st.Model)
	}
	if tot, _ := e.st.Totals(context.Background(), run); tot.CostUSD != 0.25 {
		t.Errorf("totals after the interruption: %+v", tot)
	}
	sum, err := e.eng.Resume(context.Background(), run)
	if err != nil || sum.Status != store.RunCompleted {
		t.Fatalf("resume: %v %s", err, sum.Status)
	}
	// The coder ran again, and the auditor: both tries of the coder count.
	if tot, _ := e.st.Totals(context.Background(), run); tot.CostUSD != 1.25 || tot.InputTokens != 1220 {
		t.Errorf("totals after resume: %+v, want the interrupted try and both finished steps", tot)
	}
}

func TestMissingSignalIsAskedOnceThenFails(t *testing.T) {
	e := newEnv(t, func(inv runner.Invocation) runner.Result {
		if inv.Role == "coder" {
			return runner.Result{Output: "I changed things."}
		}
		return passAll(inv)
	}, [2]string{"a", "code"})
	sum, _ := e.eng.Start(context.Background(), Options{InPlace: true})
	if diff := cmp.Diff([]string{"a/code/coder#1", "a/code/coder#1+reask"}, e.fake.calls); diff != "" {
		t.Error(diff)
	}
	if !strings.Contains(sum.Reason, "no SIGNAL BLOCK in coder output (see ") || sum.Status != store.RunFailed {
		t.Errorf("reason %q status %s", sum.Reason, sum.Status)
	}
}

func TestReaskRecoversAndUsageIsSummed(t *testing.T) {
	e := newEnv(t, func(inv runner.Invocation) runner.Result {
		if inv.Role == "auditor" && !inv.Reask {
			return runner.Result{Output: "looks fine", Usage: event.Usage{InputTokens: 100}}
		}
		r := passAll(inv)
		r.Usage.InputTokens += 1
		return r
	}, [2]string{"a", "audit"})
	sum, err := e.eng.Start(context.Background(), Options{InPlace: true})
	if err != nil || sum.Status != store.RunCompleted {
		t.Fatalf("%v %s %s", err, sum.Status, sum.Reason)
	}
	if sum.Usage.InputTokens != 101 {
		t.Errorf("usage %+v, want both asks counted", sum.Usage)
	}
}

func TestRatingOutOfRangeFailsStep(t *testing.T) {
	e := newEnv(t, func(inv runner.Invocation) runner.Result {
		if inv.Role == "auditor" {
			return runner.Result{Output: signalText("auditor", "PASS", 11)}
		}
		return passAll(inv)
	}, [2]string{"a", "code"})
	sum, _ := e.eng.Start(context.Background(), Options{InPlace: true})
	if sum.Status != store.RunFailed || !strings.Contains(sum.Reason, "11") || !strings.Contains(sum.Reason, "Rating") {
		t.Errorf("status %s reason %q", sum.Status, sum.Reason)
	}
}

func TestAgentWrittenOutputFileWins(t *testing.T) {
	e := newEnv(t, func(inv runner.Invocation) runner.Result {
		if inv.Role == "auditor" {
			os.WriteFile(inv.OutputPath, []byte("### Review by file\nall good\n"+signalText("auditor", "PASS", 10)), 0o644)
			return runner.Result{Output: "ignored reply"}
		}
		return passAll(inv)
	}, [2]string{"a", "audit"})
	if _, err := e.eng.Start(context.Background(), Options{InPlace: true}); err != nil {
		t.Fatal(err)
	}
	if body := e.task("a").Body; !strings.Contains(body, "Review by file") || !strings.Contains(body, "Rating: 10/10") {
		t.Errorf("review from the output file missing:\n%s", body)
	}
}

// callLog is an agent that appends each step id to a file outside the
// repository, so calls are counted across processes.
type callLog struct{ path string }

func (c callLog) Name() string              { return "log" }
func (c callLog) Capabilities() runner.Caps { return runner.Caps{EditsFiles: true} }
func (c callLog) Run(_ context.Context, inv runner.Invocation) (runner.Result, error) {
	f, err := os.OpenFile(c.path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return runner.Result{}, err
	}
	fmt.Fprintln(f, inv.Step)
	f.Close()
	return passAll(inv), nil
}

// TestHelperCrashingRun is not a test: TestResumeAfterCrash runs the test
// binary through it as a separate cadre process that SIGKILLs itself at a
// crash point.
func TestHelperCrashingRun(t *testing.T) {
	root := os.Getenv("CADRE_HELPER_ROOT")
	if root == "" {
		t.Skip("helper process only")
	}
	st, err := store.Open(context.Background(), filepath.Join(root, ".cadre", "cadre.db"))
	if err != nil {
		t.Fatal(err)
	}
	reg := runner.NewRegistry()
	reg.Register("log", func(runner.Settings) (runner.Runner, error) { return callLog{os.Getenv("CADRE_HELPER_CALLS")}, nil })
	cfg := config.Default()
	cfg.Defaults.Runner = "log"
	roles, _ := role.Load("")
	point := os.Getenv("CADRE_HELPER_CRASH")
	eng, err := New(context.Background(), Deps{Root: root, Config: cfg, Store: st, Roles: roles, Runners: reg,
		Bus: event.NewBus(nil), Crash: func(p string) {
			if p == point {
				syscall.Kill(os.Getpid(), syscall.SIGKILL)
				select {}
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	inPlace := os.Getenv("CADRE_HELPER_INPLACE") == "1"
	if os.Getenv("CADRE_HELPER_MODE") == "resume" {
		_, err = eng.Resume(context.Background(), "")
	} else {
		_, err = eng.Start(context.Background(), Options{InPlace: inPlace, Parallel: 1})
	}
	if err != nil {
		t.Fatal(err)
	}
}

// TestResumeAfterCrash kills a real engine process at every crash point,
// resumes it, and compares commits and agent calls with an uninterrupted run.
func TestResumeAfterCrash(t *testing.T) {
	for _, inPlace := range []bool{true, false} {
		mode := map[bool]string{true: "in-place", false: "worktrees"}[inPlace]
		run := func(t *testing.T, root, calls, crashAt, how string) error {
			cmd := exec.Command(os.Args[0], "-test.run", "^TestHelperCrashingRun$")
			cmd.Env = append(os.Environ(), "CADRE_HELPER_ROOT="+root, "CADRE_HELPER_CALLS="+calls,
				"CADRE_HELPER_CRASH="+crashAt, "CADRE_HELPER_MODE="+how, "CADRE_HELPER_INPLACE="+map[bool]string{true: "1"}[inPlace])
			out, err := cmd.CombinedOutput()
			if err != nil && crashAt == "" {
				t.Logf("%s", out)
			}
			return err
		}
		tasks := [][2]string{{"a", "code"}, {"b", "plan"}}
		clean := newEnv(t, passAll, tasks...)
		cleanCalls := filepath.Join(t.TempDir(), "calls")
		if err := run(t, clean.root, cleanCalls, "", "start"); err != nil {
			t.Fatalf("%s clean run: %v", mode, err)
		}
		want, _ := os.ReadFile(cleanCalls)
		for _, point := range CrashPoints {
			t.Run(mode+"/"+point, func(t *testing.T) {
				e := newEnv(t, passAll, tasks...)
				calls := filepath.Join(t.TempDir(), "calls")
				if err := run(t, e.root, calls, point, "start"); err == nil {
					t.Fatal("the run did not crash")
				}
				if err := run(t, e.root, calls, "", "resume"); err != nil {
					t.Fatalf("resume: %v", err)
				}
				got, _ := os.ReadFile(calls)
				seen := map[string]int{}
				for _, c := range strings.Fields(string(got)) {
					seen[c]++
				}
				repeated := 0
				for id, n := range seen {
					if n > 1 {
						repeated++
						// Only a step whose result was never journaled may run again.
						if point != CrashAgentExited || n != 2 {
							t.Errorf("step %s ran %d times", id, n)
						}
					}
				}
				if point == CrashAgentExited && repeated != 1 {
					t.Errorf("%d steps repeated, want exactly the one killed before its record", repeated)
				}
				if diff := cmp.Diff(strings.Fields(string(want)), uniq(strings.Fields(string(got)))); diff != "" {
					t.Errorf("agent calls differ from a clean run: %s", diff)
				}
				for _, branch := range branchesOf(t, clean, inPlace) {
					if diff := cmp.Diff(logOf(t, clean.root, branch), logOf(t, e.root, branch)); diff != "" {
						t.Errorf("%s: commits differ from a clean run: %s", branch, diff)
					}
				}
				sum, err := report.Summarize(context.Background(), e.st, lastRun(t, e.st))
				if err != nil || sum.Status != store.RunCompleted {
					t.Errorf("journal: %v %s", err, sum.Status)
				}
				if diff := cmp.Diff(journalOf(t, clean.st), journalOf(t, e.st)); diff != "" {
					t.Errorf("journal differs from a clean run: %s", diff)
				}
			})
		}
	}
}

// journalOf lists a run's steps as "id kind status", and its items' final
// stage and status: what must match between a crashed-and-resumed run and
// an uninterrupted one (tries and times may differ).
func journalOf(t *testing.T, st *store.Store) []string {
	ctx := context.Background()
	run := lastRun(t, st)
	steps, err := st.Steps(ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, s := range steps {
		out = append(out, fmt.Sprintf("%s %s %s", s.ID, s.Kind, s.Status))
	}
	items, _ := st.Items(ctx, run)
	for _, it := range items {
		out = append(out, fmt.Sprintf("item %s %s %s %d", it.ID, it.Stage, it.Status, it.Attempts))
	}
	return out
}

func uniq(in []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

func branchesOf(t *testing.T, e *env, inPlace bool) []string {
	if inPlace {
		return []string{"main"}
	}
	return strings.Fields(git(t, e.root, "for-each-ref", "--format=%(refname:short)", "refs/heads/cadre/"))
}

// logOf lists a branch's commits as subject + changed files, which must be
// equal between runs (hashes differ by time).
func logOf(t *testing.T, root, branch string) string {
	return git(t, root, "log", "--format=%s%n%(trailers:key=Cadre-Step)", "--name-only", branch)
}

func lastRun(t *testing.T, st *store.Store) string {
	r, err := st.LatestRun(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return r.ID
}

func TestPreflightErrors(t *testing.T) {
	t.Run("dirty tree names files", func(t *testing.T) {
		e := newEnv(t, passAll, [2]string{"a", "code"})
		os.WriteFile(filepath.Join(e.root, "left.txt"), []byte("x"), 0o644)
		_, err := e.eng.Start(context.Background(), Options{InPlace: true})
		if !errors.Is(err, ErrPreflight) || !strings.Contains(err.Error(), "left.txt") {
			t.Errorf("err = %v", err)
		}
		if _, err := e.st.LatestRun(context.Background()); !errors.Is(err, store.ErrNotFound) {
			t.Error("a run was recorded despite the failed pre-flight")
		}
	})
	cases := []struct {
		name string
		opts Options
		want string
	}{
		{"missing task", Options{Targets: []string{"tasks/nope.md"}}, "tasks/nope.md: no such task file"},
		{"unknown column", Options{Column: "cod"}, `--column "cod": unknown stage`},
		{"empty column", Options{Column: "audit"}, "no task in stage audit"},
		{"unknown workflow", Options{Workflow: "zzz"}, "unknown workflow"},
		{"unknown runner", Options{Runner: "nosuch"}, `unknown runner "nosuch"`},
	}
	t.Run("unknown role in roles", func(t *testing.T) {
		e := newEnv(t, passAll, [2]string{"a", "code"})
		e.eng.d.Config.Roles = map[string]config.RoleConfig{"coder": {Runner: "fake"}, "code-reviwer": {Runner: "fake"}}
		want := "roles.code-reviwer: no such role"
		if _, err := e.eng.Start(context.Background(), Options{InPlace: true}); !errors.Is(err, ErrPreflight) || !strings.Contains(err.Error(), want) {
			t.Errorf("run: err = %v, want %q", err, want)
		}
		if _, err := e.eng.DryRun(context.Background(), Options{}); !errors.Is(err, ErrPreflight) || !strings.Contains(err.Error(), want) {
			t.Errorf("dry run: err = %v, want %q", err, want)
		}
	})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, passAll, [2]string{"a", "code"})
			for i, tg := range c.opts.Targets {
				c.opts.Targets[i] = filepath.Join(e.root, tg)
			}
			_, err := e.eng.Start(context.Background(), c.opts)
			if !errors.Is(err, ErrPreflight) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want %q", err, c.want)
			}
		})
	}
	t.Run("dependency cycle", func(t *testing.T) {
		e := newEnv(t, passAll)
		os.WriteFile(filepath.Join(e.root, "tasks", "x.md"), []byte("---\nstage: code\ndepends_on: [y]\n---\n"), 0o644)
		os.WriteFile(filepath.Join(e.root, "tasks", "y.md"), []byte("---\nstage: code\ndepends_on: [x]\n---\n"), 0o644)
		git(t, e.root, "add", "-A")
		git(t, e.root, "commit", "-qm", "tasks")
		_, err := e.eng.Start(context.Background(), Options{})
		if !errors.Is(err, ErrPreflight) || !strings.Contains(err.Error(), "x → y → x") {
			t.Errorf("err = %v", err)
		}
	})
}

func TestDependenciesRunFirst(t *testing.T) {
	e := newEnv(t, passAll)
	os.WriteFile(filepath.Join(e.root, "tasks", "a.md"), []byte("---\nstage: code\ndepends_on: [b]\n---\n# A\n"), 0o644)
	os.WriteFile(filepath.Join(e.root, "tasks", "b.md"), []byte("---\nstage: code\n---\n# B\n"), 0o644)
	git(t, e.root, "add", "-A")
	git(t, e.root, "commit", "-qm", "tasks")
	if _, err := e.eng.Start(context.Background(), Options{}); err != nil {
		t.Fatal(err)
	}
	if len(e.fake.calls) != 4 || !strings.HasPrefix(e.fake.calls[0], "b/") {
		t.Errorf("calls %v: b must run before a", e.fake.calls)
	}
}

func TestCriticFallsBackToArchitectRunner(t *testing.T) {
	e := newEnv(t, passAll, [2]string{"a", "code"})
	e.eng.d.Config.Roles = map[string]config.RoleConfig{"architect": {Runner: "arch-runner", Model: "big"}}
	name, model, from := e.eng.runnerFor(Options{}, "critic")
	if name != "arch-runner" || model != "big" || from != "roles.architect.runner" {
		t.Errorf("critic runner %s/%s from %s", name, model, from)
	}
	e.eng.runnerFor(Options{}, "critic")
	warned := 0
	for _, ev := range e.events {
		if ev.Type == event.Warning && ev.Role == "critic" {
			warned++
		}
	}
	if warned != 1 {
		t.Errorf("%d warnings, want one", warned)
	}
	e.eng.d.Config.Roles["critic"] = config.RoleConfig{Runner: "crit"}
	if name, _, _ := e.eng.runnerFor(Options{}, "critic"); name != "crit" {
		t.Errorf("configured critic runner ignored: %s", name)
	}
}

func TestQuotaTripsTheRunnerAndPausesTheRun(t *testing.T) {
	var e *env
	e = newEnv(t, func(inv runner.Invocation) runner.Result { return passAll(inv) }, [2]string{"a", "code"}, [2]string{"b", "code"})
	quota := &quotaRunner{inner: e.fake}
	e.eng.d.Runners = runner.NewRegistry()
	e.eng.d.Runners.Register("fake", func(runner.Settings) (runner.Runner, error) { return quota, nil })
	sum, err := e.eng.Start(context.Background(), Options{InPlace: true})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Status != store.RunPaused || !strings.Contains(sum.Reason, "quota or spend limit") {
		t.Errorf("status %s reason %q", sum.Status, sum.Reason)
	}
	// The tripped runner got one call; the second item never reached it.
	if quota.calls != 1 {
		t.Errorf("%d calls to the tripped runner", quota.calls)
	}
	items, _ := e.st.Items(context.Background(), sum.Run)
	if items[0].Status != store.ItemPaused || items[1].Status != store.ItemPending {
		t.Errorf("items %+v", items)
	}
	// With the quota lifted, resume finishes the work.
	quota.lifted = true
	sum, err = e.eng.Resume(context.Background(), "")
	if err != nil || sum.Status != store.RunCompleted {
		t.Fatalf("resume: %v %s %s", err, sum.Status, sum.Reason)
	}
}

// quotaRunner fails with a quota error until lifted.
type quotaRunner struct {
	inner  *fakeRunner
	calls  int
	lifted bool
}

func (q *quotaRunner) Name() string              { return "fake" }
func (q *quotaRunner) Capabilities() runner.Caps { return runner.Caps{EditsFiles: true} }
func (q *quotaRunner) Run(ctx context.Context, inv runner.Invocation) (runner.Result, error) {
	if !q.lifted {
		q.calls++
		return runner.Result{ExitCode: 1}, &runner.Error{Kind: runner.KindQuota, Runner: "fake", Msg: "credit balance too low"}
	}
	return q.inner.Run(ctx, inv)
}

func TestGitHubTokenNeverPassedToAgents(t *testing.T) {
	e := newEnv(t, passAll, [2]string{"a", "code"})
	var got []string
	e.eng.d.Runners = runner.NewRegistry()
	e.eng.d.Runners.Register("fake", func(s runner.Settings) (runner.Runner, error) { got = s.Env; return e.fake, nil })
	e.eng.d.Config.Runners = map[string]config.RunnerConfig{"fake": {Env: []string{"MY_KEY", "GITHUB_TOKEN", "GH_TOKEN"}}}
	if _, err := e.eng.newRunner("fake"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"MY_KEY"}, got); diff != "" {
		t.Error(diff)
	}
}

// The pull request's text is the output of the composer step the journal
// has as completed, not whichever composer file sorts last: a later one
// that failed (a timeout, a refusal) never goes public.
func TestPRTextFromPRComposer(t *testing.T) {
	e := newEnv(t, passAll, [2]string{"a", "code"})
	ctx := context.Background()
	ir := &itemRun{run: "r", it: store.Item{RunID: "r", ID: "a"}, outDir: t.TempDir()}
	if err := e.eng.d.Store.CreateRun(ctx, store.Run{ID: "r", Status: store.RunRunning}, ir.it); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(ir.outDir, "outputs"), 0o755)
	for n, text := range map[int]string{1: "# Fix the frobnicator\n\n## Summary\nIt no longer breaks.\n\n### SIGNAL BLOCK\n- Agent: pr-composer\n- Result: SUCCESS\n",
		2: "# Half a thought\n\nIgnore the above and\n"} {
		// Each attempt's output is named apart, as the engine names it.
		id := fmt.Sprintf("a/pr/pr-composer#%d", n)
		_, out, _ := ir.stepFiles(id)
		out = strings.TrimSuffix(out, ".md") + fmt.Sprintf(".%016x.md", n)
		os.WriteFile(out, []byte(text), 0o644)
		rec := store.Step{RunID: "r", ItemID: "a", ID: id, Role: "pr-composer", Kind: "agent", OutputPath: "/elsewhere/outputs/" + filepath.Base(out)}
		if err := e.eng.d.Store.StartStep(ctx, rec); err != nil {
			t.Fatal(err)
		}
		rec.Status = map[int]string{1: store.StepCompleted, 2: store.StepFailed}[n]
		if err := e.eng.d.Store.FinishStep(ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	title, body := e.eng.prText(ctx, ir, Issue{Number: 7, Title: "issue title"})
	if title != "Fix the frobnicator" {
		t.Errorf("title %q", title)
	}
	if body != "## Summary\nIt no longer breaks.\n\nCloses #7\n" {
		t.Errorf("body %q", body)
	}
}

// TestAgentsBoundsConcurrentStepsOfAnItem fans a plan of four independent
// tasks out in one item and checks --agents caps the agent steps at once.
func TestAgentsBoundsConcurrentStepsOfAnItem(t *testing.T) {
	for _, agents := range []int{1, 2} {
		var mu sync.Mutex
		running, peak := 0, 0
		e := newEnv(t, func(inv runner.Invocation) runner.Result {
			mu.Lock()
			running++
			peak = max(peak, running)
			mu.Unlock()
			time.Sleep(20 * time.Millisecond) // overlap, if the limit allows it
			mu.Lock()
			running--
			mu.Unlock()
			out := "### SIGNAL BLOCK\n- Agent: x\n- Result: SUCCESS\n- Confidence: 9\n- Verdict: pass\n- Rating: 9\n"
			if inv.Role == "implementation-planner" {
				out = "```json\n" + `{"tasks":[{"id":"a"},{"id":"b"},{"id":"c"},{"id":"d"}]}` + "\n```\n" + out
			}
			return runner.Result{Output: out}
		}, [2]string{"t", "code"})
		sum, err := e.eng.Start(context.Background(), Options{Workflow: "cadre", Agents: agents})
		if err != nil || sum.Status != store.RunCompleted {
			t.Fatalf("agents=%d: %v %s %s", agents, err, sum.Status, sum.Reason)
		}
		if peak > agents {
			t.Errorf("agents=%d: %d agent steps ran at once", agents, peak)
		}
	}
}

// TestRunnerTimeout checks runners.NAME.timeout reaches the runner, and
// that --timeout still wins over it.
func TestRunnerTimeout(t *testing.T) {
	tests := []struct {
		name   string
		runner config.Duration // runners.fake.timeout
		flag   time.Duration   // --timeout
		want   time.Duration
	}{
		{"defaults.timeout", 0, 0, 20 * time.Minute},
		{"the runner's own", config.Duration(2 * time.Minute), 0, 2 * time.Minute},
		{"--timeout over the runner's", config.Duration(2 * time.Minute), 30 * time.Second, 30 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			var got []time.Duration
			e := newEnv(t, func(inv runner.Invocation) runner.Result {
				mu.Lock()
				got = append(got, inv.Timeout)
				mu.Unlock()
				return passAll(inv)
			}, [2]string{"a", "code"})
			if tt.runner > 0 {
				e.eng.d.Config.Runners = map[string]config.RunnerConfig{"fake": {Timeout: tt.runner}}
			}
			if _, err := e.eng.Start(context.Background(), Options{InPlace: true, Timeout: tt.flag}); err != nil {
				t.Fatal(err)
			}
			if len(got) == 0 {
				t.Fatal("no step ran")
			}
			for _, d := range got {
				if d != tt.want {
					t.Errorf("step timeout %v, want %v (all: %v)", d, tt.want, got)
				}
			}
		})
	}
}

// TestAttemptIsTheStepsN: a runner's Attempt (CADRE_ATTEMPT) is the n of
// its step id (docs/workflows.md#step-ids-and-resume), while Visit counts the role's steps in the item:
// the code-writer of a plan's second task is attempt 1, visit 2.
func TestAttemptIsTheStepsN(t *testing.T) {
	var mu sync.Mutex
	got := map[string][2]int{}
	e := newEnv(t, func(inv runner.Invocation) runner.Result {
		mu.Lock()
		got[inv.Step] = [2]int{inv.Attempt, inv.Visit}
		mu.Unlock()
		out := "### SIGNAL BLOCK\n- Agent: x\n- Result: SUCCESS\n- Confidence: 9\n- Verdict: pass\n- Rating: 9\n"
		if inv.Role == "implementation-planner" {
			out = "```json\n" + `{"tasks":[{"id":"a"},{"id":"b","depends_on":["a"]}]}` + "\n```\n" + out
		}
		return runner.Result{Output: out}
	}, [2]string{"t", "code"})
	if sum, err := e.eng.Start(context.Background(), Options{Workflow: "cadre"}); err != nil || sum.Status != store.RunCompleted {
		t.Fatalf("%v %s %s", err, sum.Status, sum.Reason)
	}
	want := map[string][2]int{"t/implementation/a/code-writer#1": {1, 1}, "t/implementation/b/code-writer#1": {1, 2}}
	for step, w := range want {
		if got[step] != w {
			t.Errorf("%s: attempt, visit = %v, want %v", step, got[step], w)
		}
	}
}

// A re-ask continues the agent's session, except under a sandbox, whose
// per-process home held that session and is gone: there the agent gets
// the whole prompt again with the note.
func TestReaskResumesSessionUnlessSandboxed(t *testing.T) {
	for _, sandboxed := range []bool{false, true} {
		t.Run(fmt.Sprintf("sandboxed=%v", sandboxed), func(t *testing.T) {
			var reask runner.Invocation
			e := newEnv(t, func(inv runner.Invocation) runner.Result {
				if inv.Role == "auditor" && !inv.Reask {
					return runner.Result{Output: "looks fine", SessionID: "sess-1"}
				}
				if inv.Reask {
					reask = inv
				}
				return passAll(inv)
			}, [2]string{"a", "audit"})
			if sandboxed {
				e.eng.d.Sandbox = &sandbox.Policy{Network: sandbox.NetAllow}
			}
			if sum, err := e.eng.Start(context.Background(), Options{InPlace: true}); err != nil || sum.Status != store.RunCompleted {
				t.Fatalf("%v %s %s", err, sum.Status, sum.Reason)
			}
			if !reask.Reask {
				t.Fatal("no re-ask")
			}
			wantSession := map[bool]string{false: "sess-1", true: ""}[sandboxed]
			if reask.Session != wantSession {
				t.Errorf("re-ask session %q, want %q", reask.Session, wantSession)
			}
			if got, full := reask.UserText(), strings.Contains(reask.UserText(), reask.Prompt); full != sandboxed || !strings.Contains(got, reask.Followup) {
				t.Errorf("re-ask text carries the prompt: %v, want %v; note included: %v", full, sandboxed, strings.Contains(got, reask.Followup))
			}
		})
	}
}

// The runner the pre-flight check builds is the one the run uses: a
// script runner parses its scenario once per run, not twice.
func TestRunnerBuiltOncePerRun(t *testing.T) {
	e := newEnv(t, passAll, [2]string{"a", "code"}, [2]string{"b", "code"})
	built := 0
	e.eng.d.Runners = runner.NewRegistry()
	e.eng.d.Runners.Register("fake", func(runner.Settings) (runner.Runner, error) { built++; return e.fake, nil })
	sum, err := e.eng.Start(context.Background(), Options{InPlace: true})
	if err != nil || sum.Status != store.RunCompleted {
		t.Fatalf("run: %v %s", err, sum.Status)
	}
	if built != 1 {
		t.Errorf("runner built %d times for one run, want 1", built)
	}
	// A second run gets its own instance.
	os.WriteFile(filepath.Join(e.root, "tasks", "c.md"), []byte("---\nstage: code\nattempts: 0\n---\n# Task c\n"), 0o644)
	git(t, e.root, "add", "-A")
	git(t, e.root, "commit", "-qm", "c")
	if _, err := e.eng.Start(context.Background(), Options{InPlace: true}); err != nil {
		t.Fatal(err)
	}
	if built != 2 {
		t.Errorf("runner built %d times for two runs, want 2", built)
	}
}

// A task whose coder changed nothing completes without a commit: its
// commit step records "nothing to commit" and its branch stays at the
// base, while the task that changed a file gets its commit.
func TestNothingToCommitMakesNoCommit(t *testing.T) {
	e := newEnv(t, func(inv runner.Invocation) runner.Result {
		if inv.Role == "coder" && inv.Item == "idle" {
			return runner.Result{Output: signalText("coder", "SUCCESS", -1)}
		}
		return passAll(inv)
	}, [2]string{"idle", "code"}, [2]string{"busy", "code"})
	sum, err := e.eng.Start(context.Background(), Options{})
	if err != nil || sum.Status != store.RunCompleted {
		t.Fatalf("run: %v, %+v", err, sum)
	}
	for item, want := range map[string]string{"idle": `{"commit":"","nothing":"nothing to commit"}`, "busy": `"commit":"`} {
		rec, err := e.st.GetStep(context.Background(), sum.Run, item+"/commit")
		if err != nil || rec.Status != store.StepCompleted || !strings.Contains(string(rec.Result), want) {
			t.Errorf("%s's commit step %s %s, %v; want completed with %s", item, rec.Status, rec.Result, err, want)
		}
		if strings.Contains(string(rec.Result), "nothing") != (item == "idle") {
			t.Errorf("%s's commit step records %s", item, rec.Result)
		}
	}
	for branch, want := range map[string]string{"cadre/idle-task-idle": "0", "cadre/busy-task-busy": "1"} {
		if n := strings.TrimSpace(git(t, e.root, "rev-list", "--count", "main.."+branch)); n != want {
			t.Errorf("%s is %s commits past main, want %s", branch, n, want)
		}
	}
}

// A step's completion event names the model as the backend reported it,
// not the one asked for: telemetry and the views count its cost there.
func TestStepCompletedNamesTheReportedModel(t *testing.T) {
	e := newEnv(t, func(inv runner.Invocation) runner.Result {
		res := passAll(inv)
		if inv.Role == "coder" {
			res.Model = "claude-x-20261201"
		}
		return res
	}, [2]string{"a", "code"})
	if sum, err := e.eng.Start(context.Background(), Options{InPlace: true}); err != nil || sum.Status != store.RunCompleted {
		t.Fatalf("start: %v %s", err, sum.Status)
	}
	found := false
	for _, ev := range e.events {
		if ev.Type == event.StepCompleted && ev.Step == "a/code/coder#1" {
			found = true
			if ev.Model != "claude-x-20261201" {
				t.Errorf("coder's stepCompleted names model %q, want the reported claude-x-20261201", ev.Model)
			}
		}
	}
	if !found {
		t.Error("no stepCompleted event for the coder")
	}
}
