package cli_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cadre-dev/cadre/internal/forge/forgetest"
	"github.com/cadre-dev/cadre/internal/store"
)

// cadre watch on the Temporal engine: the item runs on the
// workers, and so does the reaction's fix, as a workflow of its own. The
// worker running fix-surgeon is SIGKILLed in the middle of the step; the
// other takes the step over, and the reaction ends with one commit
// pushed.
func TestTemporalWatchWorkerKilledMidReaction(t *testing.T) {
	bin := temporalCLI(t)
	addr := startTemporal(t, bin)
	g := watchRepo(t, "sandbox: {mode: none}\nengine: temporal\ntemporal: {address: \""+addr+"\", task_queue: e2e}\n")
	gt := gate{filepath.Join(g.work, "fix.starts"), filepath.Join(g.work, "fix.release")}
	os.WriteFile(filepath.Join(g.dir, "scenario.yaml"), []byte(heldScenario(t, gt)), 0o644)
	tr := &temporalRepo{dir: g.dir, work: g.work, path: os.Getenv("PATH")}
	workers := map[int]*cadreProc{}
	for _, name := range []string{"worker1", "worker2"} {
		w := tr.start(t, name, "worker")
		workers[w.cmd.Process.Pid] = w
	}
	if code, out, errOut := g.cadre(t, "", "run", "--plain", "1"); code != 0 {
		t.Fatalf("run on Temporal: exit %d\n%s\n%s", code, errOut, out)
	}
	const branch = "cadre/1-fix-the-frobnicator"
	before := g.commits(t, branch)
	g.fake.SetCheckRun("acme", "widgets", g.rev(t, branch), forgetest.CheckRun{Name: "test", Conclusion: "failure", Title: "red"})

	watch := tr.start(t, "watch", "watch", "--once", "--heartbeat-timeout", "5s")
	var victim int
	waitFor(t, 90*time.Second, "fix-surgeon held by a worker", func() bool {
		pids := gt.pids()
		if len(pids) == 0 || workers[pids[0]] == nil {
			return false
		}
		victim = pids[0]
		return true
	})
	syscall.Kill(victim, syscall.SIGKILL)
	workers[victim].wait(t, 10*time.Second)
	waitFor(t, 90*time.Second, "fix-surgeon taken over by the other worker", func() bool {
		pids := gt.pids()
		return len(pids) > 1 && pids[len(pids)-1] != victim && workers[pids[len(pids)-1]] != nil
	})
	os.WriteFile(gt.release, nil, 0o644)
	if code := watch.wait(t, 120*time.Second); code != 0 {
		out, _ := os.ReadFile(watch.log)
		t.Fatalf("watch --once: exit %d\n%s", code, out)
	}
	if n := g.commits(t, branch); n != before+1 {
		t.Errorf("origin has %d commits on the branch after the reaction, want %d", n, before+1)
	}
	st, err := store.Open(context.Background(), filepath.Join(g.dir, ".cadre", "cadre.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	run, err := st.LatestRunOf(context.Background(), "1")
	if err != nil {
		t.Fatal(err)
	}
	fix, err := st.GetStep(context.Background(), run, "1/follow/ci_failed#1/fix-surgeon#1")
	if err != nil || fix.Status != store.StepCompleted || fix.Tries != 2 {
		t.Errorf("fix-surgeon's step: %+v, %v; want completed on its second try", fix, err)
	}
	react, err := st.GetStep(context.Background(), run, "1/follow/ci_failed#1")
	if err != nil || react.Status != store.StepCompleted || !strings.Contains(string(react.Result), `"pushed"`) {
		t.Errorf("the reaction: %+v, %v; want completed and pushed", react, err)
	}
}
