package engine

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cadre-dev/cadre/internal/signal"
	"github.com/cadre-dev/cadre/internal/workflow"
	"github.com/cadre-dev/cadre/internal/workspace"
)

// planTask runs a plan task's agent step on worker w.
func (w *wipRig) planAgent(worker int, task string) {
	w.t.Helper()
	c := workflow.AgentCall{ID: "a/p1/" + task + "/executor#1", Role: "executor", Phase: "p1", Workflow: "four"}
	if _, err := w.x.open(worker).Agent(context.Background(), c, 1); err != nil {
		w.t.Fatalf("%s on worker %d: %v", c.ID, worker, err)
	}
}

// planCommit runs a plan task's commit step on worker w, leaving others
// (the files of the tasks not done yet) out, as the interpreter does.
func (w *wipRig) planCommit(worker int, task string, others ...string) error {
	c := workflow.ActionCall{ID: "a/p1/" + task + "/commit#1", Kind: "commit", Phase: "p1",
		Task: &signal.PlanTask{ID: task, Title: "task " + task}, Others: others}
	out, err := w.x.open(worker).Action(context.Background(), c)
	if err == nil && out.Failed {
		err = errors.New(out.Reason)
	}
	return err
}

// killAt runs step with worker w killed at crash point p (the journal of
// truth keeps what it heard: the step started); the worker comes back as
// a new process.
func (w *wipRig) killAt(worker int, p string, step func()) {
	w.t.Helper()
	eng := w.rig.a.eng
	killed := false
	crash := func(q string) {
		if q == p {
			killed = true
			panic(crashed{})
		}
	}
	if worker == 1 {
		w.rig.crash = crash
	} else {
		eng.d.Crash = crash
	}
	func() {
		defer func() {
			if r := recover(); r != nil {
				if _, ok := r.(crashed); !ok {
					panic(r)
				}
			}
		}()
		step()
	}()
	w.rig.crash, eng.d.Crash = nil, func(string) {}
	if !killed {
		w.t.Fatalf("worker %d did not reach %s", worker, p)
	}
	w.x.items[worker].Close()
	w.x.items[worker] = nil
}

// Two plan tasks of one wave work in one tree, in turn on Temporal: a's
// agent adds a.txt, b's edits keep.txt, deletes gone.txt and adds b.txt,
// all left uncommitted. a's commit, which leaves b's files out, runs on
// another worker than the agents (and, killed after its push before the
// journal heard of its commit, is retried on a third process); b's
// commit runs after it. b's edits must all reach b's commit: the tree
// they are in moved to a's commit while they were only in the journal's
// WIP, whose parent is the head before a's commit.
func TestRemotePlanTaskKeepsOtherTasksEdits(t *testing.T) {
	bFiles := []string{"b.txt", "gone.txt", "keep.txt"}
	for _, tc := range []struct {
		name  string
		steps func(w *wipRig)
	}{
		{"moved", func(w *wipRig) {
			w.planAgent(0, "ta")
			w.planAgent(0, "tb")
			if err := w.planCommit(1, "ta", bFiles...); err != nil {
				t.Fatal(err)
			}
			if err := w.planCommit(0, "tb"); err != nil {
				t.Fatal(err)
			}
		}},
		// a's commit pushed on A, which dies; B provisions the item at
		// a's commit with the WIP of b's agent step, on the head before.
		{"killed, retried elsewhere", func(w *wipRig) {
			w.planAgent(0, "ta")
			w.planAgent(0, "tb")
			w.killAt(0, CrashRemotePushed, func() { w.planCommit(0, "ta", bFiles...) })
			if err := w.planCommit(1, "ta", bFiles...); err != nil {
				t.Fatal(err)
			}
			if err := w.planCommit(1, "tb"); err != nil {
				t.Fatal(err)
			}
		}},
		// a's commit pushed on B, which dies; A, which saved the WIP of
		// b's agent step itself, retries the started step: it fetches a's
		// commit and finds it.
		{"killed, retried where the edits were made", func(w *wipRig) {
			w.planAgent(0, "ta")
			w.planAgent(0, "tb")
			w.killAt(1, CrashRemotePushed, func() { w.planCommit(1, "ta", bFiles...) })
			if err := w.planCommit(0, "ta", bFiles...); err != nil {
				t.Fatal(err)
			}
			if err := w.planCommit(0, "tb"); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWIPRig(t)
			w.edits["a/p1/ta/executor#1"] = func(dir string) {
				os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a\n"), 0o644)
			}
			w.edits["a/p1/tb/executor#1"] = func(dir string) {
				os.WriteFile(filepath.Join(dir, "keep.txt"), []byte("one\nb\n"), 0o644)
				os.Remove(filepath.Join(dir, "gone.txt"))
				os.WriteFile(filepath.Join(dir, "b.txt"), []byte("b\n"), 0o644)
			}
			branch := workspace.BranchName("a", "Task a")
			w.start(func() { tc.steps(w) })
			if got := stepTrailers(t, w.rig.origin, branch); strings.Join(got, " ") != "a/p1/ta/commit#1 a/p1/tb/commit#1" {
				t.Fatalf("origin's commits %q, want ta's and tb's once", got)
			}
			show := func(step string) string {
				return git(t, w.rig.origin, "log", "-1", "--format=", "--name-status", "--grep", "Cadre-Step: "+step, branch)
			}
			if got, want := show("a/p1/ta/commit#1"), "A\ta.txt\n"; got != want {
				t.Errorf("ta's commit changes\n%s\nwant\n%s", got, want)
			}
			if got, want := show("a/p1/tb/commit#1"), "A\tb.txt\nD\tgone.txt\nM\tkeep.txt\n"; got != want {
				t.Errorf("tb's commit changes\n%s\nwant\n%s(tb's uncommitted edits were lost)", got, want)
			}
			if got := git(t, w.rig.origin, "show", branch+":keep.txt"); got != "one\nb\n" {
				t.Errorf("keep.txt on origin's branch: %q, want tb's edit", got)
			}
			if out := git(t, w.rig.a.root, "stash", "list") + git(t, w.rig.rootB, "stash", "list"); out != "" {
				t.Errorf("stashed: %s", out)
			}
		})
	}
}
