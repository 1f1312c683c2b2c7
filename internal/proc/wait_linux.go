package proc

import "github.com/cadre-dev/cadre/internal/exitwait"

// waitExited blocks until process pid has exited but leaves it unreaped.
// While it is a zombie its pid, and so its process group id, cannot be
// reused, which makes signalling the group afterwards safe.
func waitExited(pid int) error {
	return exitwait.Exited(pid)
}
