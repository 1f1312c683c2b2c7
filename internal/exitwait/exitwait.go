// Package exitwait waits for a child process to exit, leaving it to be
// reaped, without holding a thread in a system call meanwhile.
//
// A thread blocked in waitid for as long as a child runs costs the Go
// scheduler: it takes the processor back from that thread and hands it to
// another, and its monitor, seeing that happen, keeps waking every 20 µs.
// With a dozen commands and sandboxes running at once, that is a share of
// cadre's own CPU which grows with the time its children take. Waiting on
// a pidfd through the runtime's poller costs neither. (A child whose
// output cadre reads to its end needs none of this: the end of its output
// is its exit, read through the poller.)
package exitwait

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Exited returns once the child pid has exited, leaving it unreaped: its
// pid, and so its process group id, cannot be reused until it is, and
// os.Process.Wait afterwards returns at once. Where the kernel offers no
// pollable pidfd, it blocks in waitid.
func Exited(pid int) error {
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return block(pid)
	}
	// A non-blocking descriptor is registered with the poller.
	f := os.NewFile(uintptr(fd), "pidfd")
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return block(pid)
	}
	var werr error
	err = rc.Read(func(fd uintptr) bool {
		var info unix.Siginfo
		werr = unix.Waitid(unix.P_PIDFD, int(fd), &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
		// Linux fills info in either way: no signal, no child exited.
		return werr != unix.EINTR && (werr != nil || info.Signo != 0)
	})
	if err != nil {
		return block(pid) // the poller did not take it
	}
	if werr != nil {
		return fmt.Errorf("wait for process %d: %w", pid, werr)
	}
	return nil
}

// block is Exited in a blocking waitid.
func block(pid int) error {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			if err != nil {
				return fmt.Errorf("wait for process %d: %w", pid, err)
			}
			return nil
		}
	}
}
