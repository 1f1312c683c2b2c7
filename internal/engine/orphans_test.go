package engine

import (
	"bufio"
	"context"
	"os/exec"
	"syscall"
	"testing"

	"github.com/cadre-dev/cadre/internal/proc"
	"github.com/cadre-dev/cadre/internal/runner"
)

// startOrphan starts a process group standing for an agent that outlived
// a crashed cadre: a shell with a background child, both waiting.
func startOrphan(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", "sleep 300 & echo ready; wait")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	waited := make(chan struct{})
	go func() { cmd.Wait(); close(waited) }() // reap the leader once it dies
	t.Cleanup(func() {
		syscall.Kill(-pid, syscall.SIGKILL)
		<-waited
	})
	if line, _ := bufio.NewReader(out).ReadString('\n'); line != "ready\n" {
		t.Fatalf("orphan did not start: %q", line)
	}
	return pid
}

// TestResumeKillsOrphanedAgent interrupts a run while its coder's process
// group is alive, as a crash would leave it, and resumes. The resume must
// kill that group before the coder runs again, and only if the journal's
// record still names it (the same leader start time).
func TestResumeKillsOrphanedAgent(t *testing.T) {
	for _, tt := range []struct {
		name      string
		reusedPid bool // the journal recorded another process with that pid
	}{
		{name: "recorded group is killed"},
		{name: "reused pid is left alone", reusedPid: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var orphan int
			var aliveAtRerun []int
			e := newEnv(t, func(inv runner.Invocation) runner.Result {
				if inv.Role != "coder" {
					return passAll(inv)
				}
				if orphan == 0 {
					orphan = startOrphan(t)
					inv.OnStart(orphan)
					cancel() // cadre stops while the agent runs on
					return runner.Result{ExitCode: -1}
				}
				aliveAtRerun, _ = proc.Members(orphan)
				return passAll(inv)
			}, [2]string{"a", "code"})
			if _, err := e.eng.Start(ctx, Options{InPlace: true, Parallel: 1}); err == nil {
				t.Fatal("the interrupted run reported no error")
			}
			run, err := e.st.LatestRun(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			step, err := e.st.GetStep(context.Background(), run.ID, "a/code/coder#1")
			if err != nil {
				t.Fatal(err)
			}
			if step.Pgid != orphan || step.PgidStart == 0 {
				t.Fatalf("journal has group %d (start %d), want %d", step.Pgid, step.PgidStart, orphan)
			}
			if tt.reusedPid {
				if err := e.st.SetStepGroup(context.Background(), run.ID, step.ID, step.Pgid, step.PgidStart+1); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := e.eng.Resume(context.Background(), ""); err != nil {
				t.Fatalf("resume: %v", err)
			}
			if got := e.fake.calls; len(got) != 3 || got[1] != "a/code/coder#1" {
				t.Errorf("calls = %v, want the coder once more, then the auditor", got)
			}
			if tt.reusedPid {
				if len(aliveAtRerun) == 0 {
					t.Error("the group of a pid recorded for another process was killed")
				}
				if err := syscall.Kill(orphan, 0); err != nil {
					t.Errorf("leader %d after resume: %v, want alive", orphan, err)
				}
				return
			}
			if len(aliveAtRerun) > 0 {
				t.Errorf("processes %v of the orphaned agent were alive when the step ran again", aliveAtRerun)
			}
			step, _ = e.st.GetStep(context.Background(), run.ID, "a/code/coder#1")
			if step.Pgid != 0 {
				t.Errorf("the finished step still records group %d", step.Pgid)
			}
		})
	}
}
