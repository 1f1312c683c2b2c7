package engine

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/cadre-dev/cadre/internal/event"
	"github.com/cadre-dev/cadre/internal/executor"
	"github.com/cadre-dev/cadre/internal/runner"
	"github.com/cadre-dev/cadre/internal/store"
	"github.com/cadre-dev/cadre/internal/workflow"
	"github.com/cadre-dev/cadre/internal/workspace"
)

// wipRig runs one item's steps by hand on the remote rig's two workers,
// as the Temporal item workflow sends them, with an agent that does what
// edits says for its step and notes the uncommitted changes it found.
type wipRig struct {
	t     *testing.T
	rig   *remoteRig
	x     *remoteExec
	mu    sync.Mutex
	edits map[string]func(dir string)
	found map[string]string // step → git status of the tree it started in
}

func newWIPRig(t *testing.T) *wipRig {
	t.Helper()
	w := &wipRig{t: t, edits: map[string]func(string){}, found: map[string]string{}}
	w.rig = newRemoteRig(t, func(inv runner.Invocation) runner.Result {
		st := gitStatus(t, inv.Dir)
		w.mu.Lock()
		w.found[inv.Step] = st
		do := w.edits[inv.Step]
		w.mu.Unlock()
		if do != nil {
			do(inv.Dir)
		}
		return runner.Result{Output: signalText(inv.Role, "SUCCESS", -1)}
	})
	// The base has files for the agents to change and delete.
	a := w.rig.a.root
	os.WriteFile(filepath.Join(a, "keep.txt"), []byte("one\n"), 0o644)
	os.WriteFile(filepath.Join(a, "gone.txt"), []byte("bye\n"), 0o644)
	git(t, a, "add", "keep.txt", "gone.txt")
	git(t, a, "commit", "-qm", "files")
	git(t, a, "push", "-q", "origin", "main")
	w.x = &remoteExec{t: t, rig: w.rig, crashAt: -1}
	return w
}

// gitStatus is the tree's uncommitted changes, one path a line.
func gitStatus(t *testing.T, dir string) string {
	out, err := execGit(dir, "status", "--porcelain", "--untracked-files=all")
	if err != nil {
		t.Errorf("git status in %s: %v", dir, err)
	}
	return strings.TrimRight(string(out), "\n")
}

func (w *wipRig) agent(worker int, phase string) {
	w.t.Helper()
	c := workflow.AgentCall{ID: "a/" + phase + "/executor#1", Role: "executor", Phase: phase, Workflow: "four"}
	if _, err := w.x.open(worker).Agent(context.Background(), c, 1); err != nil {
		w.t.Fatalf("%s on worker %d: %v", c.ID, worker, err)
	}
}

func (w *wipRig) commit(worker int, phase string) error {
	out, err := w.x.open(worker).Action(context.Background(), workflow.ActionCall{ID: "a/" + phase + "/commit#1", Kind: "commit", Phase: phase})
	if err == nil && out.Failed {
		err = errors.New(out.Reason)
	}
	return err
}

// start begins the item and runs steps, then stops it.
func (w *wipRig) start(steps func()) string {
	w.t.Helper()
	sum, err := w.rig.a.eng.StartWith(context.Background(), Options{Workflow: "four"}, func(ctx context.Context, run string, it store.Item) error {
		w.x.run, w.x.item = run, it.ID
		if _, err := w.x.open(0).Begin(ctx); err != nil {
			return err
		}
		steps()
		_, err := w.x.open(0).End(ctx, executor.Ending{Stopped: true})
		return err
	})
	if err != nil {
		w.t.Fatal(err)
	}
	return sum.Run
}

// journaledWIP is the WIP the journal has with step id.
func (w *wipRig) journaledWIP(run, id string) *workspace.WIP {
	w.t.Helper()
	rec, err := w.rig.a.st.GetStep(context.Background(), run, id)
	if err != nil {
		w.t.Fatal(err)
	}
	var r struct {
		WIP *workspace.WIP `json:"wip"`
	}
	json.Unmarshal(rec.Result, &r)
	return r.WIP
}

func (w *wipRig) tree(worker int) string {
	root := w.rig.a.root
	if worker == 1 {
		root = w.rig.rootB
	}
	return filepath.Join(root, ".cadre", "worktrees", "a")
}

func p1Edits(dir string) {
	os.WriteFile(filepath.Join(dir, "keep.txt"), []byte("one\ntwo\n"), 0o644)
	os.Remove(filepath.Join(dir, "gone.txt"))
	os.MkdirAll(filepath.Join(dir, "new"), 0o755)
	os.WriteFile(filepath.Join(dir, "new", "added.txt"), []byte("added\n"), 0o644)
}

const p1Status = " D gone.txt\n M keep.txt\n?? new/added.txt"

// An agent step on A edits, adds and deletes files without committing;
// the next step, on B, finds exactly those changes, and adds its own; the
// item comes back to A, whose tree drops its own saved state for B's
// (nothing stashed); the commit, on B, holds every change once.
func TestRemoteItemCarriesUncommittedChanges(t *testing.T) {
	w := newWIPRig(t)
	w.edits["a/p1/executor#1"] = p1Edits
	w.edits["a/p2/executor#1"] = func(dir string) { os.WriteFile(filepath.Join(dir, "b.txt"), []byte("b\n"), 0o644) }
	branch := workspace.BranchName("a", "Task a")
	base := strings.TrimSpace(git(t, w.rig.origin, "rev-parse", "main"))
	run := w.start(func() {
		w.agent(0, "p1")
		w.agent(1, "p2")
		w.agent(0, "p3")
		if err := w.commit(1, "p3"); err != nil {
			t.Fatal(err)
		}
		w.agent(0, "p4")
	})
	if got := w.found["a/p2/executor#1"]; got != p1Status {
		t.Errorf("B's step found uncommitted changes\n%s\nwant A's\n%s", got, p1Status)
	}
	if got, want := w.found["a/p3/executor#1"], " D gone.txt\n M keep.txt\n?? b.txt\n?? new/added.txt"; got != want {
		t.Errorf("A's step after B's found\n%s\nwant\n%s", got, want)
	}
	if got := w.found["a/p4/executor#1"]; got != "" {
		t.Errorf("the step after the commit found uncommitted changes\n%s", got)
	}
	data, _ := os.ReadFile(filepath.Join(w.tree(1), "keep.txt"))
	if string(data) != "one\ntwo\n" {
		t.Errorf("B's keep.txt: %q, want A's edit", data)
	}
	// The WIP of p1 is a commit off the branch on the base, in the journal.
	p1 := w.journaledWIP(run, "a/p1/executor#1")
	if p1 == nil || p1.Commit == "" || p1.Base != base {
		t.Fatalf("p1's journaled WIP %+v, want a commit on %s", p1, base)
	}
	if parent := strings.TrimSpace(git(t, w.rig.origin, "rev-parse", p1.Commit+"^")); parent != base {
		t.Errorf("p1's WIP commit has parent %s, want the base %s", parent, base)
	}
	p3 := w.journaledWIP(run, "a/p3/executor#1")
	if p3 == nil || p3.Commit == "" {
		t.Fatalf("p3's journaled WIP %+v", p3)
	}
	if ref := strings.TrimSpace(git(t, w.rig.origin, "rev-parse", workspace.WIPRef(branch))); ref != p3.Commit {
		t.Errorf("origin's %s at %s, want the last WIP pushed, p3's %s", workspace.WIPRef(branch), ref, p3.Commit)
	}
	if c := w.journaledWIP(run, "a/p3/commit#1"); c == nil || *c != (workspace.WIP{}) {
		t.Errorf("the commit step journaled WIP %+v, want an empty one (clean)", c)
	}
	// Each step's record is numbered after the one before, on either worker.
	last := 0
	for _, id := range []string{"a/p1/executor#1", "a/p2/executor#1", "a/p3/executor#1", "a/p3/commit#1", "a/p4/executor#1"} {
		rec, _ := w.rig.a.st.GetStep(context.Background(), run, id)
		var r struct {
			WIP struct{ N int } `json:"wip"`
		}
		json.Unmarshal(rec.Result, &r)
		if r.WIP.N <= last {
			t.Errorf("%s's WIP is number %d, after %d", id, r.WIP.N, last)
		}
		last = r.WIP.N
	}
	// One commit, with every change once, on origin's branch alone.
	if got := stepTrailers(t, w.rig.origin, branch); strings.Join(got, " ") != "a/p3/commit#1" {
		t.Errorf("origin's commits %q, want p3's commit alone", got)
	}
	names := git(t, w.rig.origin, "show", "--format=", "--name-status", branch)
	if want := "A\tb.txt\nD\tgone.txt\nM\tkeep.txt\nA\tnew/added.txt\n"; names != want {
		t.Errorf("the commit changes\n%s\nwant\n%s", names, want)
	}
	if out := git(t, w.rig.a.root, "stash", "list") + git(t, w.rig.rootB, "stash", "list"); out != "" {
		t.Errorf("stashed: %s", out)
	}
	if got := gitStatus(t, w.tree(1)); got != "" {
		t.Errorf("B's tree after the commit: %s", got)
	}
}

// A step that leaves the tree clean records so: the WIP of the step before
// it is not restored on the next worker.
func TestRemoteItemCleanStepClearsWIP(t *testing.T) {
	w := newWIPRig(t)
	w.edits["a/p1/executor#1"] = func(dir string) { os.WriteFile(filepath.Join(dir, "x.txt"), []byte("x\n"), 0o644) }
	w.edits["a/p2/executor#1"] = func(dir string) { os.Remove(filepath.Join(dir, "x.txt")) }
	run := w.start(func() {
		w.agent(0, "p1")
		w.agent(0, "p2")
		w.agent(1, "p3")
	})
	if got := w.found["a/p2/executor#1"]; got != "?? x.txt" {
		t.Errorf("p2 found %q, want p1's x.txt", got)
	}
	if got := w.found["a/p3/executor#1"]; got != "" {
		t.Errorf("p3 on B found %q, want the clean tree p2 left", got)
	}
	if p2 := w.journaledWIP(run, "a/p2/executor#1"); p2 == nil || *p2 != (workspace.WIP{}) {
		t.Errorf("p2 journaled WIP %+v, want an empty one", p2)
	}
}

// A commit step killed after its push, before journaling it: B's commit step commits
// p1's changes and pushes, and B dies before journaling it; the journal's
// latest WIP is still p1's, on the old head. A retries the commit, adopts
// B's pushed commit and leaves the tree clean; the changes are in the
// branch once.
func TestRemoteItemWIPCommittedOnce(t *testing.T) {
	w := newWIPRig(t)
	w.edits["a/p1/executor#1"] = p1Edits
	branch := workspace.BranchName("a", "Task a")
	run := w.start(func() {
		w.agent(1, "p1")
		killed := false
		w.rig.crash = func(p string) {
			if p == CrashRemotePushed {
				killed = true
				panic(crashed{})
			}
		}
		func() {
			defer func() {
				if r := recover(); r != nil {
					if _, ok := r.(crashed); !ok {
						panic(r)
					}
				}
			}()
			w.commit(1, "p1")
		}()
		w.rig.crash = nil
		if !killed {
			t.Fatal("B's commit did not reach its push")
		}
		w.x.items[1].Close()
		w.x.items[1] = nil
		if err := w.commit(0, "p1"); err != nil {
			t.Fatal(err)
		}
		w.agent(0, "p2")
	})
	if got := w.found["a/p2/executor#1"]; got != "" {
		t.Errorf("A's step after the commit found uncommitted changes\n%s", got)
	}
	if got := stepTrailers(t, w.rig.origin, branch); strings.Join(got, " ") != "a/p1/commit#1" {
		t.Errorf("origin's commits %q, want p1's once", got)
	}
	names := git(t, w.rig.origin, "show", "--format=", "--name-status", branch)
	if want := "D\tgone.txt\nM\tkeep.txt\nA\tnew/added.txt\n"; names != want {
		t.Errorf("the commit changes\n%s\nwant\n%s", names, want)
	}
	rec, _ := w.rig.a.st.GetStep(context.Background(), run, "a/p1/commit#1")
	if rec.Status != store.StepCompleted || rec.Tries != 2 {
		t.Errorf("p1's commit %s after %d tries, want completed on its second", rec.Status, rec.Tries)
	}
}

// A WIP whose parent is not the branch's head came before a commit, which
// holds what it took of it: here p1's changes on A, then a commit someone
// pushed to the item's branch that changed keep.txt otherwise. B's next
// step starts from that commit with the rest of p1's changes (the
// deletion and the new file) restored, keep.txt as the commit has it, and
// a warning naming keep.txt, whose change of p1's is not in the tree.
func TestRemoteItemWIPBeforeCommitKeepsTheRest(t *testing.T) {
	w := newWIPRig(t)
	w.edits["a/p1/executor#1"] = p1Edits
	var mu sync.Mutex
	var warned []string
	w.rig.engB.d.Bus.Subscribe(event.SinkFunc(func(ev event.Event) {
		if ev.Type == event.Warning {
			mu.Lock()
			warned = append(warned, ev.Message)
			mu.Unlock()
		}
	}))
	branch := workspace.BranchName("a", "Task a")
	w.start(func() {
		w.agent(0, "p1")
		other := filepath.Join(t.TempDir(), "other")
		git(t, filepath.Dir(other), "clone", "-q", w.rig.origin, other)
		git(t, other, "checkout", "-q", "-b", branch)
		os.WriteFile(filepath.Join(other, "keep.txt"), []byte("someone else's\n"), 0o644)
		git(t, other, "-c", "user.name=O", "-c", "user.email=o@example.com", "commit", "-qam", "by hand")
		git(t, other, "push", "-q", "origin", branch)
		w.agent(1, "p2")
	})
	if got, want := w.found["a/p2/executor#1"], " D gone.txt\n?? new/added.txt"; got != want {
		t.Errorf("B's step found uncommitted changes\n%s\nwant what the commit did not take of p1's\n%s", got, want)
	}
	data, _ := os.ReadFile(filepath.Join(w.tree(1), "keep.txt"))
	if string(data) != "someone else's\n" {
		t.Errorf("B's keep.txt %q, want the pushed commit's", data)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(warned) != 1 || !strings.Contains(warned[0], "keep.txt are not restored") {
		t.Errorf("B's warnings %q, want one naming keep.txt", warned)
	}
	if out := git(t, w.rig.rootB, "stash", "list"); out != "" {
		t.Errorf("B stashed: %s", out)
	}
}

// An item whose branch was never pushed (no commit step yet) continues on
// another worker from the base its WIP was taken on, not from the base as
// it is now, so that its changes are restored.
func TestRemoteItemWIPBeforeFirstPush(t *testing.T) {
	w := newWIPRig(t)
	w.edits["a/p1/executor#1"] = p1Edits
	base := strings.TrimSpace(git(t, w.rig.origin, "rev-parse", "main"))
	w.start(func() {
		w.agent(0, "p1")
		os.WriteFile(filepath.Join(w.rig.a.root, "later.txt"), []byte("later\n"), 0o644)
		git(t, w.rig.a.root, "add", "later.txt")
		git(t, w.rig.a.root, "commit", "-qm", "the base moves on")
		git(t, w.rig.a.root, "push", "-q", "origin", "main")
		w.agent(1, "p2")
	})
	if got := w.found["a/p2/executor#1"]; got != p1Status {
		t.Errorf("B's step found\n%s\nwant p1's changes\n%s", got, p1Status)
	}
	if head := strings.TrimSpace(git(t, w.tree(1), "rev-parse", "HEAD")); head != base {
		t.Errorf("B's tree at %s, want the base p1 worked on, %s", head, base)
	}
}
