package proc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startGroup starts script in a process group of its own, as an orphan of
// an earlier cadre would be, and returns its pid once the script printed
// "ready". The test kills the group when it ends.
func startGroup(t *testing.T, script string) int {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	t.Cleanup(func() {
		syscall.Kill(-pid, syscall.SIGKILL)
		cmd.Wait()
	})
	if line, _ := bufio.NewReader(out).ReadString('\n'); line != "ready\n" {
		t.Fatalf("group did not start: %q", line)
	}
	return pid
}

// groupGone polls until group pgid has no live process, for up to d.
func groupGone(t *testing.T, pgid int, d time.Duration) bool {
	t.Helper()
	for deadline := time.Now().Add(d); ; time.Sleep(10 * time.Millisecond) {
		left, err := Members(pgid)
		if err != nil {
			t.Fatal(err)
		}
		if len(left) == 0 {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

func TestKillGroup(t *testing.T) {
	t.Parallel()
	const script = "sleep 300 & echo ready; wait"
	t.Run("same leader is killed with its group", func(t *testing.T) {
		t.Parallel()
		pid := startGroup(t, script)
		g, err := GroupOf(pid)
		if err != nil {
			t.Fatal(err)
		}
		killed, err := KillGroup(context.Background(), g)
		if err != nil || !killed {
			t.Fatalf("KillGroup = %v, %v; want true, nil", killed, err)
		}
		if left, _ := Members(pid); len(left) > 0 {
			t.Errorf("processes %v of the group outlived KillGroup", left)
		}
	})
	t.Run("a reused pid is not killed", func(t *testing.T) {
		t.Parallel()
		pid := startGroup(t, script)
		g, err := GroupOf(pid)
		if err != nil {
			t.Fatal(err)
		}
		// The journal recorded a process that had this pid before: it
		// started at another time.
		g.Start--
		killed, err := KillGroup(context.Background(), g)
		if err != nil || killed {
			t.Fatalf("KillGroup = %v, %v; want false, nil", killed, err)
		}
		if groupGone(t, pid, 200*time.Millisecond) {
			t.Fatal("the group of a reused pid was killed")
		}
		if err := syscall.Kill(pid, 0); err != nil {
			t.Errorf("leader %d: %v, want alive", pid, err)
		}
	})
	t.Run("members without their leader are not killed", func(t *testing.T) {
		t.Parallel()
		killed, err := KillGroup(context.Background(), Group{ID: deadLeaderGroup(t), Start: 1})
		if !errors.Is(err, ErrUnverified) || killed {
			t.Fatalf("KillGroup = %v, %v; want false, ErrUnverified", killed, err)
		}
	})
	t.Run("nothing left", func(t *testing.T) {
		t.Parallel()
		cmd := exec.Command("/bin/true")
		if err := cmd.Run(); err != nil {
			t.Fatal(err)
		}
		killed, err := KillGroup(context.Background(), Group{ID: cmd.Process.Pid, Start: 1})
		if err != nil || killed {
			t.Fatalf("KillGroup = %v, %v; want false, nil", killed, err)
		}
	})
}

// deadLeaderGroup makes a process group whose leader has exited and been
// reaped while a member lives on, and returns its id.
func deadLeaderGroup(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", "sleep 300 >/dev/null 2>&1 & echo $!")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.Output() // reaps the leader
	if err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	t.Cleanup(func() { syscall.Kill(-pgid, syscall.SIGKILL) })
	member, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("member pid %q: %v", out, err)
	}
	if st, err := readStat(member); err != nil || st.pgrp != pgid {
		t.Fatalf("member %d: %+v, %v; want in group %d", member, st, err, pgid)
	}
	return pgid
}

func TestParseStat(t *testing.T) {
	t.Parallel()
	// Field 2, the command name, may hold spaces and parentheses.
	line := "4242 (a (b) c) S 1 4240 4240 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 10 " +
		"18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0\n"
	st, err := parseStat(line)
	if err != nil {
		t.Fatal(err)
	}
	if st.state != 'S' || st.ppid != 1 || st.pgrp != 4240 || st.start != 987654 {
		t.Errorf("parseStat = %+v, want state S, ppid 1, pgrp 4240, start 987654", st)
	}
	for _, bad := range []string{"", "4242 (x", "4242 (x) S 1 2"} {
		if _, err := parseStat(bad); err == nil {
			t.Errorf("parseStat(%q) succeeded", bad)
		}
	}
}

func TestRunOnStart(t *testing.T) {
	t.Parallel()
	var got int
	s := sh("echo $$")
	s.OnStart = func(pid int) {
		got = pid
		if g, err := GroupOf(pid); err != nil || g.ID != pid || g.Start == 0 {
			t.Errorf("GroupOf(%d) = %+v, %v", pid, g, err)
		}
	}
	res, err := Run(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if want := firstPid(res.Stdout); got == 0 || got != want {
		t.Errorf("OnStart got pid %d, the process was %d", got, want)
	}
}

// TestHelperRunUntilKilled is not a test: TestRunDiesWithCadre runs the
// test binary through it as a cadre process running an agent, then
// SIGKILLs it.
func TestHelperRunUntilKilled(t *testing.T) {
	if os.Getenv("CADRE_PROC_HELPER") != "1" {
		t.Skip("helper process only")
	}
	// The agent reports its own pid and its background child's, then waits
	// as long as it is let.
	_, _ = Run(context.Background(), Spec{Path: "/bin/sh", Env: MinimalEnv(os.LookupEnv, nil, nil),
		Args: []string{"-c", "sleep 300 & echo $$ $!; while :; do sleep 1; done"},
		OnLine: func(stream, line string) {
			if stream == "stdout" {
				fmt.Println(line)
			}
		}})
}

// TestRunDiesWithCadre kills the process running an agent with SIGKILL, as
// the OOM killer or kill -9 would, and checks that the agent's whole group
// dies with it: the agent by its parent-death signal, its child by the
// watchdog.
func TestRunDiesWithCadre(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(os.Args[0], "-test.run", "^TestHelperRunUntilKilled$")
	cmd.Env = append(os.Environ(), "CADRE_PROC_HELPER=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		cmd.Process.Kill()
		t.Fatalf("helper: %v", err)
	}
	var agent, child int
	if _, err := fmt.Sscan(line, &agent, &child); err != nil {
		t.Fatalf("helper said %q: %v", line, err)
	}
	t.Cleanup(func() { syscall.Kill(-agent, syscall.SIGKILL) })
	cmd.Process.Kill()
	cmd.Wait()
	if !groupGone(t, agent, time.Second) {
		left, _ := Members(agent)
		t.Fatalf("processes %v of the agent's group (agent %d, child %d) outlived cadre by 1s", left, agent, child)
	}
}

// TestHelperSandboxedUntilKilled is TestSandboxedRunDiesWithCadre's cadre:
// a sandboxed agent that leaves a child running, until the test SIGKILLs it.
func TestHelperSandboxedUntilKilled(t *testing.T) {
	if os.Getenv("CADRE_PROC_HELPER") != "sandboxed" {
		t.Skip("helper process only")
	}
	sb := needSandbox(t)
	_, _ = Run(context.Background(), Spec{Path: "/bin/sh", Env: MinimalEnv(os.LookupEnv, nil, nil), Sandbox: &sb,
		Args: []string{"-c", "sleep 307 & echo started; while :; do sleep 1; done"},
		OnLine: func(stream, line string) {
			if stream == "stdout" {
				fmt.Println(line)
			}
		}})
}

// TestSandboxedRunDiesWithCadre: a sandboxed agent's whole tree dies with
// cadre, by bubblewrap's namespace alone: cadre starts no watchdog for it
// (bubblewrap is its only child).
func TestSandboxedRunDiesWithCadre(t *testing.T) {
	needSandbox(t)
	t.Parallel()
	cmd := exec.Command(os.Args[0], "-test.run", "^TestHelperSandboxedUntilKilled$")
	cmd.Env = append(os.Environ(), "CADRE_PROC_HELPER=sandboxed")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	if line, err := bufio.NewReader(out).ReadString('\n'); line != "started\n" {
		cmd.Process.Kill()
		t.Fatalf("helper: %q %v", line, err)
	}
	sleeper := func() []int {
		var pids []int
		dirs, _ := os.ReadDir("/proc")
		for _, d := range dirs {
			pid, err := strconv.Atoi(d.Name())
			if err != nil {
				continue
			}
			if b, _ := os.ReadFile("/proc/" + d.Name() + "/cmdline"); string(b) == "sleep\x00307\x00" {
				pids = append(pids, pid)
			}
		}
		return pids
	}
	// The background child may not have run sleep yet when "started" is
	// read.
	left := sleeper()
	for deadline := time.Now().Add(5 * time.Second); len(left) == 0 && time.Now().Before(deadline); left = sleeper() {
		time.Sleep(10 * time.Millisecond)
	}
	t.Cleanup(func() {
		for _, p := range left {
			syscall.Kill(p, syscall.SIGKILL)
		}
	})
	if len(left) != 1 {
		cmd.Process.Kill()
		t.Fatalf("the sandboxed child is not running: %v", left)
	}
	var children []string
	for _, tid := range taskIDs(cmd.Process.Pid) {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", cmd.Process.Pid, tid))
		children = append(children, strings.Fields(string(b))...)
	}
	if len(children) != 1 {
		t.Errorf("cadre has children %v, want bubblewrap alone", children)
	}
	cmd.Process.Kill()
	for deadline := time.Now().Add(5 * time.Second); len(sleeper()) > 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the sandboxed child %v outlived cadre by 5s", left)
		}
	}
}

// taskIDs lists the threads of process pid.
func taskIDs(pid int) []string {
	entries, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	var ids []string
	for _, e := range entries {
		ids = append(ids, e.Name())
	}
	return ids
}
