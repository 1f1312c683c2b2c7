package proc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// startLocked starts cmd from a goroutine locked to its OS thread and keeps
// that thread until release is called. The parent-death signal fires when
// the thread that forked the child exits, not the process: the Go runtime
// ends a thread when a goroutine locked to it returns, so a child forked
// from an unlocked goroutine could be killed at any moment by some later
// user of that thread. Holding the thread for the child's life makes the
// signal mean "cadre died". release must be called once the child is
// reaped.
func startLocked(cmd *exec.Cmd) (release func(), err error) {
	started := make(chan error)
	done := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		err := cmd.Start()
		started <- err
		if err == nil {
			<-done
		}
	}()
	if err := <-started; err != nil {
		return func() {}, err
	}
	return func() { close(done) }, nil
}

// watchdogScript kills process group $1 unless it reads "done" first. Its
// stdin is a pipe whose only writer is cadre, so the read returns at EOF
// when cadre dies, however it dies (SIGKILL included). It ignores the
// signals a terminal or a stop sends, which are cadre's to handle.
const watchdogScript = `trap '' HUP INT QUIT TERM
read -r word
[ "$word" = done ] || kill -9 "-$1" 2>/dev/null
exit 0`

// watchdog is a process outside an agent's group that kills the group when
// cadre dies. The parent-death signal reaches only the agent's first
// process; what it started (a shell's background jobs, a test run) would
// live on and keep changing the working tree beside the resumed step.
type watchdog struct {
	cmd *exec.Cmd
	w   io.WriteCloser
}

// startWatchdog starts the watchdog of group pgid, in a process group of
// its own so a terminal's Ctrl-C for cadre does not reach it.
func startWatchdog(pgid int) (*watchdog, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("watchdog pipe: %w", err)
	}
	defer r.Close()
	cmd := &exec.Cmd{
		Path:        "/bin/sh",
		Args:        []string{"sh", "-c", watchdogScript, "sh", strconv.Itoa(pgid)},
		Env:         []string{},
		Stdin:       r,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
	}
	if err := cmd.Start(); err != nil {
		w.Close()
		return nil, fmt.Errorf("start watchdog: %w", err)
	}
	return &watchdog{cmd: cmd, w: w}, nil
}

// stop tells the watchdog the group is finished with and reaps it. It must
// be called before the group's leader is reaped: until then the group id
// cannot name another group.
func (d *watchdog) stop() {
	if d == nil {
		return
	}
	_, _ = io.WriteString(d.w, "done\n") // a watchdog already gone has nothing left to do
	d.w.Close()
	_ = d.cmd.Wait()
}

// Group names a process group by its leader: the group id is the leader's
// pid, and the leader's start time tells it from a later process that was
// given the same pid.
type Group struct {
	ID    int
	Start uint64 // the leader's start time, in clock ticks after boot
}

// GroupOf returns the group led by process pid, which must be alive (or a
// zombie not yet reaped).
func GroupOf(pid int) (Group, error) {
	st, err := readStat(pid)
	if err != nil {
		return Group{}, err
	}
	return Group{ID: pid, Start: st.start}, nil
}

// ErrUnverified is wrapped by KillGroup's error when processes of the group
// are alive but its leader is gone, so nothing proves the group id was not
// reused for another group since.
var ErrUnverified = errors.New("leader gone: cannot tell the group from a later one with the same id")

// killWait bounds how long KillGroup waits for a killed group to die.
const killWait = 10 * time.Second

// KillGroup kills process group g with SIGKILL if, and only if, its leader
// is still the process that was recorded: alive with the same start time.
// It then waits until no process of the group is left (zombies count as
// gone). killed is false when there was nothing to kill: the leader is gone
// with its whole group, or its pid now names another process. When members
// live on without their leader the error wraps ErrUnverified and nothing is
// killed.
func KillGroup(ctx context.Context, g Group) (killed bool, err error) {
	if g.ID <= 1 {
		return false, fmt.Errorf("kill process group %d: not a process group id", g.ID)
	}
	st, err := readStat(g.ID)
	if errors.Is(err, os.ErrNotExist) {
		left, err := Members(g.ID)
		if err != nil {
			return false, err
		}
		if len(left) > 0 {
			return false, fmt.Errorf("process group %d (processes %v): %w", g.ID, left, ErrUnverified)
		}
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if st.start != g.Start {
		return false, nil
	}
	if err := syscall.Kill(-g.ID, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return false, fmt.Errorf("kill process group %d: %w", g.ID, err)
	}
	// The leader itself, should it have moved to another group.
	_ = syscall.Kill(g.ID, syscall.SIGKILL)
	deadline := time.NewTimer(killWait)
	defer deadline.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		left, err := Members(g.ID)
		if err != nil {
			return true, err
		}
		if len(left) == 0 {
			return true, nil
		}
		select {
		case <-tick.C:
		case <-deadline.C:
			return true, fmt.Errorf("process group %d: processes %v still alive %s after SIGKILL", g.ID, left, killWait)
		case <-ctx.Done():
			return true, fmt.Errorf("wait for process group %d to die: %w", g.ID, ctx.Err())
		}
	}
}

// stat is what cadre reads of /proc/<pid>/stat.
type stat struct {
	state byte
	ppid  int
	pgrp  int
	start uint64
}

// readStat reads a process's state, group and start time. The command name
// (field 2) may hold spaces and parentheses, so fields are counted from the
// last ')'. A missing process wraps os.ErrNotExist.
func readStat(pid int) (stat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return stat{}, fmt.Errorf("read state of process %d: %w", pid, err)
	}
	return parseStat(string(b))
}

func parseStat(s string) (stat, error) {
	end := strings.LastIndexByte(s, ')')
	if end < 0 {
		return stat{}, fmt.Errorf("process state %q: no command name", short(s))
	}
	// After the name: state (field 3), ppid, pgrp (5), …, starttime (22).
	f := strings.Fields(s[end+1:])
	if len(f) < 20 || len(f[0]) != 1 {
		return stat{}, fmt.Errorf("process state %q: too few fields", short(s))
	}
	ppid, err := strconv.Atoi(f[1])
	if err != nil {
		return stat{}, fmt.Errorf("process state: parent: %w", err)
	}
	pgrp, err := strconv.Atoi(f[2])
	if err != nil {
		return stat{}, fmt.Errorf("process state: group: %w", err)
	}
	start, err := strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		return stat{}, fmt.Errorf("process state: start time: %w", err)
	}
	return stat{state: f[0][0], ppid: ppid, pgrp: pgrp, start: start}, nil
}

func short(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// Members lists the live processes of group pgid. Zombies are left out:
// they run nothing and vanish once their parent reaps them.
func Members(pgid int) ([]int, error) {
	d, err := os.Open("/proc")
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	var pids []int
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		st, err := readStat(pid)
		if err != nil {
			continue // it exited while we looked
		}
		if st.pgrp == pgid && st.state != 'Z' && st.state != 'X' {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}
