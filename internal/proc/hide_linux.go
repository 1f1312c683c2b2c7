package proc

import (
	"fmt"
	"syscall"
)

// HideSelf makes the calling process non-dumpable. An agent runs as the
// same user as cadre, and the kernel lets any same-user process read a
// dumpable process's environment (/proc/<pid>/environ) and memory
// (/proc/<pid>/mem): that is how an agent could read the GitHub token and
// the model keys cadre holds. A non-dumpable process's /proc entries
// belong to root and refuse ptrace-mode access to same-user processes
// (only CAP_SYS_PTRACE overrides it, which is why root is no test).
//
// The flag is reset by execve, so the agents cadre starts stay ordinary
// processes; they get only their minimal environment, never cadre's.
func HideSelf() error {
	// syscall rather than x/sys/unix: one call does not justify a direct
	// dependency.
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_DUMPABLE, 0, 0); errno != 0 {
		return fmt.Errorf("make the process non-dumpable: %w", errno)
	}
	return nil
}
