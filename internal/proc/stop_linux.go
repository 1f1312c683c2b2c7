package proc

import (
	"os"
	"strconv"
	"syscall"
	"time"
)

// terminate sends SIGTERM to what process pid runs: its process group, or,
// for a sandboxed pid (bubblewrap), the processes inside the sandbox. It
// returns the sandbox's first process, its init, when it found one.
//
// Bubblewrap does not pass signals on: SIGTERM to its group would end
// bubblewrap alone, and its parent-death signal would then SIGKILL the
// whole sandbox at once, giving the agent no grace. So the signal goes to
// the process groups of everything below the sandbox's init instead (the
// agent runs in a session, and so a group, of its own). The init itself
// is left out: it reaps the sandbox's processes and, as the first process
// of a PID namespace, ignores a signal it has no handler for anyway.
func terminate(pid int, sandboxed bool) (init Group, found bool) {
	if !sandboxed {
		_ = syscall.Kill(-pid, syscall.SIGTERM)
		return Group{}, false
	}
	procs := processes()
	for p, st := range procs {
		if st.ppid == pid {
			init, found = Group{ID: p, Start: st.start}, true
			break
		}
	}
	if !found {
		// Not started yet, or gone: nothing inside to give a grace to.
		_ = syscall.Kill(-pid, syscall.SIGTERM)
		return Group{}, false
	}
	signaled := map[int]bool{}
	for _, p := range descendants(procs, init.ID) {
		g := procs[p].pgrp
		switch {
		case g == pid || g == init.ID:
			_ = syscall.Kill(p, syscall.SIGTERM) // never bubblewrap's own group
		case !signaled[g]:
			signaled[g] = true
			_ = syscall.Kill(-g, syscall.SIGTERM)
		}
	}
	return init, true
}

// goneWait bounds how long Run waits for what a process left behind to
// die once it is sent SIGKILL.
const goneWait = killWait

// awaitGone makes sure nothing the process pid started still runs before
// Run returns, so the next attempt of a step never overlaps this one: it
// waits (at most goneWait) until its group has no live member, and for a
// sandboxed run until the sandbox's init, whose exit is the end of every
// process in the sandbox, is gone. The group must have been sent SIGKILL.
func awaitGone(pid int, sandboxed bool, init Group, found bool) {
	deadline := time.Now().Add(goneWait)
	if sandboxed && found {
		if st, err := readStat(init.ID); err == nil && st.start == init.Start {
			// The first process of a PID namespace takes SIGKILL from its
			// parent's namespace; the kernel then kills the rest of it.
			_ = syscall.Kill(init.ID, syscall.SIGKILL)
		}
		for alive(init) && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
	}
	for time.Now().Before(deadline) {
		left, err := Members(pid)
		if err != nil || len(left) == 0 {
			return
		}
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		time.Sleep(5 * time.Millisecond)
	}
}

// alive says whether the process g names still runs (a zombie does not).
func alive(g Group) bool {
	st, err := readStat(g.ID)
	return err == nil && st.start == g.Start && st.state != 'Z' && st.state != 'X'
}

// processes reads the state of every process; one that exits meanwhile
// is left out.
func processes() map[int]stat {
	d, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	defer d.Close()
	names, _ := d.Readdirnames(-1)
	out := make(map[int]stat, len(names))
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		if st, err := readStat(pid); err == nil && st.state != 'Z' && st.state != 'X' {
			out[pid] = st
		}
	}
	return out
}

// descendants lists the processes below root in procs, root left out.
func descendants(procs map[int]stat, root int) []int {
	children := map[int][]int{}
	for p, st := range procs {
		children[st.ppid] = append(children[st.ppid], p)
	}
	var out []int
	for queue := children[root]; len(queue) > 0; queue = queue[1:] {
		p := queue[0]
		out = append(out, p)
		queue = append(queue, children[p]...)
	}
	return out
}
