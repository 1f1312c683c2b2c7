package exitwait

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// Each way of waiting returns only once the child has exited, and leaves
// it a zombie for os.Process.Wait to reap, with its exit status.
func TestExited(t *testing.T) {
	for name, wait := range map[string]func(int) error{"poller": Exited, "blocking": block} {
		t.Run(name, func(t *testing.T) {
			if name == "poller" {
				fd, err := unix.PidfdOpen(os.Getpid(), unix.PIDFD_NONBLOCK)
				if err != nil {
					t.Skipf("no pidfd here (%v): Exited blocks in waitid", err)
				}
				unix.Close(fd)
			}
			done := filepath.Join(t.TempDir(), "done")
			cmd := exec.Command("sh", "-c", `sleep 0.2; : > "$1"; exit 3`, "sh", done)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			if err := wait(cmd.Process.Pid); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(done); err != nil {
				t.Errorf("returned before the child finished: %v", err)
			}
			stat, err := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/stat")
			if err != nil {
				t.Fatal(err)
			}
			// The state follows the command name in parentheses.
			if _, rest, _ := strings.Cut(string(stat), ") "); !strings.HasPrefix(rest, "Z") {
				t.Errorf("the child is not left a zombie: %s", stat)
			}
			cmd.Wait()
			if got := cmd.ProcessState.ExitCode(); got != 3 {
				t.Errorf("exit code %d after the wait, want 3", got)
			}
		})
	}
}

// Waiting for a process that is not a child is an error, not a hang.
func TestExitedNotAChild(t *testing.T) {
	if err := Exited(1); err == nil {
		t.Error("waiting for pid 1 succeeded")
	}
}
