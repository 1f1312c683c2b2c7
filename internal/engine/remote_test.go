package engine

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/executor"
	"github.com/cadre-dev/cadre/internal/report"
	"github.com/cadre-dev/cadre/internal/runner"
	"github.com/cadre-dev/cadre/internal/store"
	"github.com/cadre-dev/cadre/internal/workflow"
	"github.com/cadre-dev/cadre/internal/workspace"
)

// fourPhases is a workflow of four phases, each an agent step and a
// commit: four committing steps.
const fourPhases = `name: four
description: four committed phases
phases:
  - {name: p1, steps: [{role: executor}, {run: commit}]}
  - {name: p2, steps: [{role: executor}, {run: commit}]}
  - {name: p3, steps: [{role: executor}, {run: commit}]}
  - {name: p4, steps: [{role: executor}, {run: commit}]}
`

// remoteRig is a bare origin and two clones of it, A and B, each with its
// own engine (its own repository, worktrees and state directory), sharing
// one journal, as workers on two machines share the starter's.
type remoteRig struct {
	a, b   *env
	origin string
	engB   *Engine
	rootB  string
	crash  func(point string) // B's crash points
}

// fourFlows is the workflow registry with fourPhases.
func fourFlows(t *testing.T) *workflow.Registry {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "four.yaml"), []byte(fourPhases), 0o644); err != nil {
		t.Fatal(err)
	}
	flows, err := workflow.LoadDefs(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	return flows
}

// writeStep is an agent that writes one file per step in its tree and
// notes which step files it found there.
func writeStep(found map[string][]string, mu *sync.Mutex) agentFunc {
	return func(inv runner.Invocation) runner.Result {
		var have []string
		files, _ := filepath.Glob(filepath.Join(inv.Dir, "step-*"))
		for _, f := range files {
			have = append(have, filepath.Base(f))
		}
		mu.Lock()
		found[inv.Step] = append([]string{inv.Dir}, have...)
		mu.Unlock()
		name := "step-" + strings.NewReplacer("/", "-", "#", "-").Replace(inv.Step)
		os.WriteFile(filepath.Join(inv.Dir, name), []byte(inv.Step+"\n"), 0o644)
		return runner.Result{Output: signalText(inv.Role, "SUCCESS", -1)}
	}
}

func newRemoteRig(t *testing.T, do agentFunc) *remoteRig {
	t.Helper()
	a := newEnv(t, do, [2]string{"a", "code"})
	a.eng.d.Workflows = fourFlows(t)
	work := t.TempDir()
	r := &remoteRig{a: a, origin: filepath.Join(work, "origin.git"), rootB: filepath.Join(work, "b")}
	git(t, work, "clone", "-q", "--bare", a.root, r.origin)
	git(t, a.root, "remote", "add", "origin", r.origin)
	otherMachine(t, r.origin, r.rootB)
	deps := fakeDeps(t, r.rootB, a.st, a.fake, event.NewBus(nil, event.SinkFunc(func(event.Event) {})))
	deps.Workflows = a.eng.d.Workflows
	deps.Crash = func(p string) {
		if r.crash != nil {
			r.crash(p)
		}
	}
	var err error
	r.engB, err = New(context.Background(), deps)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// crashed is the panic of a worker killed at a crash point.
type crashed struct{}

// remoteExec performs a declarative item's steps as the Temporal item
// workflow does, each on the worker plan names (0: A, 1: B), its branch
// travelling through origin. The step numbered crashAt kills its worker
// after it pushed; it is retried on the other worker, and the killed
// one comes back as a new process.
type remoteExec struct {
	t       *testing.T
	rig     *remoteRig
	run     string
	item    string
	plan    []int
	crashAt int
	local   bool // the executor's items are not remote: no executor.OpenOptions
	// lost: what the killed worker journaled of the step it was killed
	// in never reaches the journal of truth, as a Temporal worker's
	// replica dies with it before its batch is sent.
	lost bool
	// at is the crash point of the kill (CrashRemotePushed when ""); same
	// retries the step on the killed worker, back as a new process.
	at   string
	same bool

	n      int
	items  [2]*ItemSteps
	visits map[string]int
}

func (x *remoteExec) open(i int) *ItemSteps {
	if x.items[i] != nil {
		return x.items[i]
	}
	eng := x.rig.a.eng
	if i == 1 {
		eng = x.rig.engB
	}
	var opts []executor.OpenOptions
	if !x.local {
		opts = append(opts, executor.OpenOptions{Remote: "origin"})
	}
	rs, err := eng.OpenRun(context.Background(), x.run, opts...)
	if err != nil {
		x.t.Fatal(err)
	}
	s, err := rs.OpenItem(context.Background(), x.item)
	if err != nil {
		x.t.Fatal(err)
	}
	x.items[i] = s
	return s
}

// on runs step on its planned worker, and again on the other one when the
// first is killed doing it.
func (x *remoteExec) on(step func(*ItemSteps) error) error {
	n := x.n
	x.n++
	w := x.plan[n]
	if n != x.crashAt {
		return step(x.open(w))
	}
	var before store.ItemExport
	if x.lost {
		var err error
		if before, err = x.rig.a.st.ExportItem(context.Background(), x.run, x.item); err != nil {
			x.t.Fatal(err)
		}
	}
	at := x.at
	if at == "" {
		at = CrashRemotePushed
	}
	killed := false
	x.rig.crash = func(p string) {
		if p == at {
			killed = true
			panic(crashed{})
		}
	}
	err := func() (err error) {
		defer func() {
			if r := recover(); r != nil {
				if _, ok := r.(crashed); !ok {
					panic(r)
				}
			}
		}()
		return step(x.open(w))
	}()
	x.rig.crash = nil
	if !killed {
		x.t.Fatalf("step %d did not reach %s on worker %d (err %v)", n, at, w, err)
	}
	x.items[w].Close()
	x.items[w] = nil // the worker comes back as a new process
	if x.lost {
		if err := x.rig.a.st.Hydrate(context.Background(), before); err != nil {
			x.t.Fatal(err)
		}
	}
	if x.same {
		return step(x.open(w))
	}
	return step(x.open(1 - w))
}

func (x *remoteExec) Agent(ctx context.Context, c workflow.AgentCall) (out workflow.Outcome, err error) {
	x.visits[c.Role]++
	v := x.visits[c.Role]
	err = x.on(func(s *ItemSteps) (err error) { out, err = s.Agent(ctx, c, v); return })
	return out, err
}

func (x *remoteExec) Action(ctx context.Context, c workflow.ActionCall) (out workflow.Outcome, err error) {
	err = x.on(func(s *ItemSteps) (err error) { out, err = s.Action(ctx, c); return })
	return out, err
}

func (x *remoteExec) Human(ctx context.Context, c workflow.HumanCall) (workflow.Answer, error) {
	return workflow.Answer{}, errors.New("no human in this test")
}

func (x *remoteExec) Warn(string) {}

// drive is an executor.Driver running each item through x's workers, ending it on A.
func (x *remoteExec) drive(ctx context.Context, run string, it store.Item) error {
	x.run, x.item, x.visits = run, it.ID, map[string]int{}
	b, err := x.open(0).Begin(ctx)
	if err != nil || b.Status != "" {
		return err
	}
	def, _ := x.rig.a.eng.Workflows().Get(b.Workflow)
	in := &workflow.Interp{Item: it.ID, Defs: x.rig.a.eng.Workflows(), Exec: x, Lim: b.Limits, Roles: x.rig.a.eng.RoleExists}
	res, err := in.Run(ctx, def)
	if err != nil {
		return err
	}
	if _, err := x.open(0).End(ctx, executor.Ending{Result: res}); err != nil {
		return err
	}
	for _, s := range x.items {
		if s != nil {
			s.Close()
		}
	}
	return nil
}

// stepTrailers lists the Cadre-Step trailers of the commits of branch in
// repository dir that are not on main.
func stepTrailers(t *testing.T, dir, branch string) []string {
	t.Helper()
	out := git(t, dir, "log", "--format=%(trailers:key="+workspace.TrailerKey+",valueonly)", "main.."+branch)
	var ids []string
	for _, l := range strings.Split(out, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			ids = append(ids, l)
		}
	}
	sort.Strings(ids)
	return ids
}

// An item's steps on two machines: A works the first phase and pushes,
// B starts from A's pushed commits, is killed after pushing its second
// commit (the commit step is retried on A, which finds the commit in the
// fetched branch and makes no second one), comes back as a new process
// for the third phase, and A catches up with B's pushes for the last.
// origin's branch ends with exactly one commit per committing step.
func TestRemoteItemMovesBetweenMachines(t *testing.T) {
	var mu sync.Mutex
	found := map[string][]string{}
	rig := newRemoteRig(t, writeStep(found, &mu))
	// Steps: p1 executor, commit, p2 executor, commit (B killed after
	// its push, retried on A), p3 executor, commit, p4 executor, commit.
	x := &remoteExec{t: t, rig: rig, plan: []int{0, 0, 1, 1, 1, 1, 0, 0}, crashAt: 3}
	sum, branch := runFour(t, x)
	if len(rig.a.fake.calls) != 4 {
		t.Errorf("agent steps %q, want each executor once", rig.a.fake.calls)
	}
	inA, inB := filepath.Join(rig.a.root, ".cadre"), filepath.Join(rig.rootB, ".cadre")
	want := map[string]struct {
		root  string
		files int
	}{
		"a/p1/executor#1": {inA, 0}, "a/p2/executor#1": {inB, 1}, "a/p3/executor#1": {inB, 2}, "a/p4/executor#1": {inA, 3},
	}
	for step, w := range want {
		got := found[step]
		if len(got) == 0 || !strings.HasPrefix(got[0], w.root) || len(got)-1 != w.files {
			t.Errorf("%s ran in %v, want under %s with the %d earlier phases' files", step, got, w.root, w.files)
		}
	}
	// The retried commit step journaled B's pushed commit, on its second
	// try; both machines end at origin's head, nothing stashed.
	checkAdopted(t, rig, sum.Run, branch, 2)
}

// runFour runs item a through the four-phase workflow as x drives it, and
// checks that the run completed with origin's branch holding exactly one
// commit of each commit step; it returns the run and the branch.
func runFour(t *testing.T, x *remoteExec) (report.Summary, string) {
	t.Helper()
	sum, err := x.rig.a.eng.StartWith(context.Background(), Options{Workflow: "four"}, x.drive)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Status != store.RunCompleted {
		t.Fatalf("run %s: %s", sum.Status, sum.Reason)
	}
	branch := workspace.BranchName("a", "Task a")
	commits := []string{"a/p1/commit#1", "a/p2/commit#1", "a/p3/commit#1", "a/p4/commit#1"}
	if got := stepTrailers(t, x.rig.origin, branch); strings.Join(got, " ") != strings.Join(commits, " ") {
		t.Fatalf("origin's %s has commits of steps %q, want one of each of %q", branch, got, commits)
	}
	return sum, branch
}

// checkAdopted checks that p2's commit step journaled the commit origin has
// of it (on its tries-th try, unless tries is 0), that A's worktree is at
// origin's head, and that neither machine stashed anything.
func checkAdopted(t *testing.T, rig *remoteRig, run, branch string, tries int) {
	t.Helper()
	rec, err := rig.a.st.GetStep(context.Background(), run, "a/p2/commit#1")
	if err != nil {
		t.Fatal(err)
	}
	var r actionResult
	json.Unmarshal(rec.Result, &r)
	p2 := strings.TrimSpace(git(t, rig.origin, "log", "-1", "--format=%H", "--grep", "Cadre-Step: a/p2/commit#1", branch))
	if rec.Status != store.StepCompleted || r.Commit != p2 || (tries > 0 && rec.Tries != tries) {
		t.Errorf("p2's commit step %s (tries %d) journaled %q, want completed with origin's %s", rec.Status, rec.Tries, r.Commit, p2)
	}
	head := strings.TrimSpace(git(t, rig.origin, "rev-parse", branch))
	if got := strings.TrimSpace(git(t, filepath.Join(rig.a.root, ".cadre", "worktrees", "a"), "rev-parse", "HEAD")); got != head {
		t.Errorf("A's worktree at %s, want origin's %s", got, head)
	}
	if out := git(t, rig.a.root, "stash", "list") + git(t, rig.rootB, "stash", "list"); out != "" {
		t.Errorf("stashed: %s", out)
	}
}

// A worker killed after pushing a commit step's commit, whose journal of
// the step dies with it (a Temporal worker's replica): the step is retried
// elsewhere by a worker the journal does not tell it was tried. It finds
// the pushed commit, in the branch it fetched (or, when it did not fetch,
// behind the push the remote refuses), and makes no second one. So does
// the killed worker's next process, retrying a commit it made unpushed.
func TestRemoteItemCommitStepLostWithItsWorker(t *testing.T) {
	for _, tc := range []struct {
		name string
		plan []int
		at   string
		same bool
	}{
		// A last saw B's p2 executor: it fetches and finds B's commit.
		{name: "fetched", plan: []int{0, 0, 1, 1, 1, 1, 0, 0}},
		// A ran p2's executor itself: nothing tells it to fetch; its
		// push is refused and it finds B's commit behind it.
		{name: "refused", plan: []int{0, 0, 0, 1, 1, 1, 0, 0}},
		// B is killed before its push and comes back in its clone,
		// whose worktree holds the commit: it pushes that one.
		{"unpushed", []int{0, 0, 1, 1, 1, 1, 0, 0}, CrashCommitted, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			found := map[string][]string{}
			rig := newRemoteRig(t, writeStep(found, &mu))
			x := &remoteExec{t: t, rig: rig, plan: tc.plan, crashAt: 3, lost: true, at: tc.at, same: tc.same}
			sum, branch := runFour(t, x)
			checkAdopted(t, rig, sum.Run, branch, 0)
		})
	}
}

// A worker whose push of a commit step's commit was refused, and whose
// fetch then failed, tries the step again: its commit repeats the one the
// remote gained (pushed by a worker the journal never heard of the step
// from), so it is dropped and the remote's adopted, not refused.
func TestRemoteItemDropsItsRepeatedCommit(t *testing.T) {
	var mu sync.Mutex
	rig := newRemoteRig(t, writeStep(map[string][]string{}, &mu))
	x := &remoteExec{t: t, rig: rig, crashAt: -1}
	ctx := context.Background()
	agent := func(w int, phase string) error {
		_, err := x.open(w).Agent(ctx, workflow.AgentCall{ID: "a/" + phase + "/executor#1", Role: "executor", Phase: phase, Workflow: "four"}, 1)
		return err
	}
	commit := func(w int, phase string) error {
		out, err := x.open(w).Action(ctx, workflow.ActionCall{ID: "a/" + phase + "/commit#1", Kind: "commit", Phase: phase})
		if err == nil && out.Failed {
			err = errors.New(out.Reason)
		}
		return err
	}
	branch := workspace.BranchName("a", "Task a")
	wtA := filepath.Join(rig.a.root, ".cadre", "worktrees", "a")
	_, err := rig.a.eng.StartWith(ctx, Options{Workflow: "four"}, func(ctx context.Context, run string, it store.Item) error {
		x.run, x.item = run, it.ID
		if _, err := x.open(0).Begin(ctx); err != nil {
			return err
		}
		for _, err := range []error{agent(0, "p1"), commit(0, "p1"), agent(0, "p2")} {
			if err != nil {
				t.Fatal(err)
			}
		}
		before, err := rig.a.st.ExportItem(ctx, run, it.ID)
		if err != nil {
			t.Fatal(err)
		}
		if err := commit(1, "p2"); err != nil {
			t.Fatal(err)
		}
		if err := rig.a.st.Hydrate(ctx, before); err != nil { // B's journal of it is lost
			t.Fatal(err)
		}
		// A made the step's commit too; its push was refused.
		git(t, wtA, "add", "-A")
		git(t, wtA, "commit", "-q", "-m", "repeat", "-m", workspace.TrailerKey+": a/p2/commit#1\n"+workspace.RunTrailerKey+": "+run)
		if err := rig.a.st.StartStep(ctx, store.Step{RunID: run, ItemID: it.ID, ID: "a/p2/commit#1", Kind: "commit"}); err != nil {
			t.Fatal(err)
		}
		if err := commit(0, "p2"); err != nil {
			t.Fatalf("A's retry of the step: %v", err)
		}
		_, err = x.open(0).End(ctx, executor.Ending{Stopped: true})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := stepTrailers(t, rig.origin, branch); strings.Join(got, " ") != "a/p1/commit#1 a/p2/commit#1" {
		t.Errorf("origin has commits of %q, want p1's and p2's once", got)
	}
	head := strings.TrimSpace(git(t, rig.origin, "rev-parse", branch))
	if got := strings.TrimSpace(git(t, wtA, "rev-parse", "HEAD")); got != head {
		t.Errorf("A's worktree at %s, want origin's %s", got, head)
	}
	if out := git(t, wtA, "status", "--porcelain"); out != "" {
		t.Errorf("A's worktree has changes: %q", out)
	}
}

// A worker's uncommitted leftovers, when another worker went on with the
// item, are put aside in the stash, not lost; a worktree with a commit
// origin's branch does not have is refused, not reset.
func TestRemoteItemRefusesToLoseWork(t *testing.T) {
	var mu sync.Mutex
	found := map[string][]string{}
	rig := newRemoteRig(t, writeStep(found, &mu))
	x := &remoteExec{t: t, rig: rig, crashAt: -1}
	agent := func(w int, phase string) error {
		_, err := x.open(w).Agent(context.Background(), workflow.AgentCall{ID: "a/" + phase + "/executor#1", Role: "executor", Phase: phase, Workflow: "four"}, 1)
		return err
	}
	commit := func(w int, phase string) error {
		out, err := x.open(w).Action(context.Background(), workflow.ActionCall{ID: "a/" + phase + "/commit#1", Kind: "commit", Phase: phase})
		if err == nil && out.Failed {
			err = errors.New(out.Reason)
		}
		return err
	}
	wtA := filepath.Join(rig.a.root, ".cadre", "worktrees", "a")
	wtB := filepath.Join(rig.rootB, ".cadre", "worktrees", "a")
	_, err := rig.a.eng.StartWith(context.Background(), Options{Workflow: "four"}, func(ctx context.Context, run string, it store.Item) error {
		x.run, x.item = run, it.ID
		if _, err := x.open(0).Begin(ctx); err != nil {
			return err
		}
		for _, err := range []error{agent(0, "p1"), commit(0, "p1"), agent(1, "p2"), commit(1, "p2")} {
			if err != nil {
				t.Fatal(err)
			}
		}
		os.WriteFile(filepath.Join(wtA, "leftover"), []byte("x"), 0o644)
		if err := agent(0, "p3"); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(wtA, "leftover")); err == nil {
			t.Error("A's leftover change is still in its tree after catching up")
		}
		if out := git(t, rig.a.root, "stash", "list"); !strings.Contains(out, "a's uncommitted changes") {
			t.Errorf("A's stash: %q, want its leftover put aside", out)
		}
		if err := commit(0, "p3"); err != nil {
			t.Fatal(err)
		}
		git(t, wtB, "commit", "-q", "--allow-empty", "-m", "mine")
		err := agent(1, "p4")
		if err == nil || !strings.Contains(err.Error(), "refused") || !strings.Contains(err.Error(), "does not contain") {
			t.Errorf("B's step over a commit of its own: %v, want it refused", err)
		}
		if log := git(t, wtB, "log", "-1", "--format=%s"); strings.TrimSpace(log) != "mine" {
			t.Errorf("B's own commit is gone: head %q", log)
		}
		_, err = x.open(0).End(ctx, executor.Ending{Stopped: true})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(found["a/p3/executor#1"]) != 3 {
		t.Errorf("p3 on A found %v, want p1's and p2's files", found["a/p3/executor#1"])
	}
	if got := stepTrailers(t, rig.origin, workspace.BranchName("a", "Task a")); len(got) != 3 {
		t.Errorf("origin has commits of %q, want p1..p3", got)
	}
}

// gitShim puts a git first on PATH that logs each command line, and
// returns a function that reads the log's subcommands and empties it.
func gitShim(t *testing.T) func() map[string]int {
	t.Helper()
	real, err := exec.LookPath("git")
	if err != nil {
		t.Skip("needs git")
	}
	dir := t.TempDir()
	logPath := filepath.Join(dir, "git.log")
	shim := "#!/bin/sh\nprintf '%s\\036' \"$*\" >> '" + logPath + "'\nexec '" + real + "' \"$@\"\n"
	if err := os.WriteFile(filepath.Join(dir, "git"), []byte(shim), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return func() map[string]int {
		data, _ := os.ReadFile(logPath)
		os.Remove(logPath)
		by := map[string]int{}
		for _, rec := range strings.Split(string(data), "\036") {
			if f := strings.Fields(rec); len(f) > 0 {
				by[subcommand(f)]++
			}
		}
		return by
	}
}

// subcommand is the git subcommand of a logged command line, after the
// -c options.
func subcommand(f []string) string {
	for len(f) > 1 && f[0] == "-c" {
		f = f[2:]
	}
	return f[0]
}

// The git processes a remote item adds to the same steps on the same
// worker: the fetch of its first step (two for a new item: git refuses to
// fetch a branch the remote lacks, so the base is fetched again alone),
// one push per committing step, the check of the remote when the run is
// opened, and at the end of each step the check for uncommitted changes
// and the save and push of any; nothing between steps that stayed on one
// worker. The embedded engine's own runs fetch, push and save nothing.
func TestRemoteItemGitProcesses(t *testing.T) {
	count := gitShim(t)
	run := func(local bool) map[string]int {
		var mu sync.Mutex
		rig := newRemoteRig(t, writeStep(map[string][]string{}, &mu))
		x := &remoteExec{t: t, rig: rig, plan: make([]int, 8), crashAt: -1, local: local}
		count()
		sum, err := rig.a.eng.StartWith(context.Background(), Options{Workflow: "four"}, x.drive)
		by := count()
		if err != nil || sum.Status != store.RunCompleted {
			t.Fatalf("run: %+v, %v", sum, err)
		}
		if heads := git(t, rig.origin, "for-each-ref", "refs/heads/cadre/"); local != (heads == "") {
			t.Errorf("origin's item branches: %q (local %v)", heads, local)
		}
		return by
	}
	local, remote := run(true), run(false)
	// git config is asked again when a configuration file changed within
	// the last moments (see workspace's racyWindow): the rig's setup
	// just wrote them, so how many times depends on timing, not the item.
	delete(local, "config")
	delete(remote, "config")
	extra := map[string]int{}
	total := 0
	for sub, n := range remote {
		if d := n - local[sub]; d != 0 {
			extra[sub] = d
			total += d
		}
	}
	for sub, n := range local {
		if _, ok := remote[sub]; !ok {
			extra[sub] = -n
			total -= n
		}
	}
	t.Logf("git processes: %d local, %d remote; the remote item adds %v: %.2f per step over 8 steps (4 committing)", sum(local), sum(remote), extra, float64(total)/8)
	// Each step ends with a git status; the four agent steps leave their
	// file uncommitted, which takes an add and a write-tree into a copy of
	// the index, a commit-tree and a push of the WIP commit; the item's
	// end deletes the WIP ref (one push more). The local item fetches the
	// base from origin as it starts (a remote get-url, the fetch, and a
	// rev-parse finding its branch not made yet); the remote item fetches
	// it with its branch, and once more.
	if want := map[string]int{"fetch": 1, "push": 4 + 4 + 1, "rev-parse": -1, "status": 8, "add": 4, "write-tree": 4, "commit-tree": 4}; !mapsEqual(extra, want) {
		t.Errorf("a remote item adds %v git processes, want %v", extra, want)
	}

	// The embedded engine's own run of the same item.
	var mu sync.Mutex
	rig := newRemoteRig(t, writeStep(map[string][]string{}, &mu))
	count()
	sum, err := rig.a.eng.Start(context.Background(), Options{Workflow: "four"})
	by := count()
	if err != nil || sum.Status != store.RunCompleted {
		t.Fatalf("run: %+v, %v", sum, err)
	}
	// It fetches the base from origin as the item starts, once.
	for _, sub := range []string{"fetch", "push", "merge", "stash", "remote", "ls-remote", "write-tree", "commit-tree", "restore"} {
		if want := map[string]int{"fetch": 1, "remote": 1}[sub]; by[sub] != want {
			t.Errorf("the embedded engine ran git %s %d times, want %d: %v", sub, by[sub], want, by)
		}
	}
	if heads := git(t, rig.origin, "for-each-ref", "refs/heads/cadre/"); heads != "" {
		t.Errorf("the embedded engine pushed: %s", heads)
	}
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func mapsEqual(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
