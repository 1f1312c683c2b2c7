package proc

import (
	"fmt"
	"syscall"
	"unsafe"
)

// Values from <sys/wait.h>; the syscall package does not export them.
const (
	pPID    = 1
	wNoWait = 0x1000000
)

// waitExited blocks until process pid has exited but leaves it unreaped.
// While it is a zombie its pid, and so its process group id, cannot be
// reused, which makes signalling the group afterwards safe.
func waitExited(pid int) error {
	var info [128]byte // siginfo_t; filled in by the kernel and ignored
	for {
		_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(pid),
			uintptr(unsafe.Pointer(&info[0])), syscall.WEXITED|wNoWait, 0, 0)
		switch errno {
		case 0:
			return nil
		case syscall.EINTR:
			continue
		default:
			return fmt.Errorf("wait for process %d: %w", pid, errno)
		}
	}
}
