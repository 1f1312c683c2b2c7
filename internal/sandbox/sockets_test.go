package sandbox

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cadre-dev/cadre/internal/proc"
)

// connectScript tries to connect to the Unix socket named by its argument
// and write to it; it prints "connected" when it could.
const connectScript = `import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    s.connect(sys.argv[1])
    s.sendall(b"hello from the sandbox\n")
    print("connected")
except OSError as e:
    print("refused:", e)
`

// TestUntrustedReachesNoHostSocket: an untrusted item's step, under each
// network, cannot connect to a Unix socket listening under the host's
// /run, /var/run or /tmp, and nothing reaches the listeners; a program on
// its PATH under /run still runs.
func TestUntrustedReachesNoHostSocket(t *testing.T) {
	bw, err := proc.FindBwrap("")
	if err != nil {
		t.Skipf("needs bubblewrap: %v", err)
	}
	if err := proc.ProbeSandbox(context.Background(), proc.Sandbox{Bwrap: bw}); err != nil {
		t.Skipf("the kernel forbids namespaces here: %v", err)
	}
	// The interpreter itself, not a version manager's shim (slow to start,
	// and its root is not in the sandbox).
	py := "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		out, err := exec.Command("python3", "-c", "import sys; print(sys.executable)").Output()
		if err != nil {
			t.Skip("needs python3")
		}
		py = strings.TrimSpace(string(out))
	}
	var (
		socks    []string
		accepted atomic.Int32
		bin      string // a PATH directory under /run
	)
	for _, root := range []string{"/run", "/var/run", os.TempDir()} {
		dir, err := os.MkdirTemp(root, "cadre-test-")
		if err != nil {
			t.Logf("no socket under %s: %v", root, err)
			continue
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		sock := filepath.Join(dir, "s.sock")
		ln, err := net.Listen("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				accepted.Add(1)
				c.Close()
			}
		}()
		socks = append(socks, sock)
		if root == "/run" {
			bin = filepath.Join(dir, "bin")
			os.Mkdir(bin, 0o755)
			os.WriteFile(filepath.Join(bin, "cadre-test-tool"), []byte("#!/bin/sh\necho tool ran\n"), 0o755)
		}
	}
	if len(socks) == 0 {
		t.Skip("cannot make a socket under /run, /var/run or /tmp")
	}
	exe, _ := os.Executable()
	for _, network := range []string{NetAllow, NetDeny, NetModelOnly} {
		t.Run(network, func(t *testing.T) {
			run := &Policy{Network: NetAllow, Untrusted: network, Bwrap: bw, Helper: exe}
			path := filepath.Dir(py) + ":/usr/bin:/bin"
			if bin != "" {
				path = bin + ":" + path
			}
			env := []string{"PATH=" + path, "HOME=" + t.TempDir()}
			dir := t.TempDir()
			prep, err := run.ForItem(false, t.TempDir()).Prepare(context.Background(), Step{Dir: dir, Hosts: []string{"https://model.invalid"}, Env: env})
			if err != nil {
				t.Fatal(err)
			}
			defer prep.Close()
			confined := func(path string, args ...string) string {
				t.Helper()
				var log strings.Builder
				res, err := proc.Run(context.Background(), proc.Spec{Path: path, Args: args, Dir: dir,
					Env: proc.SetEnv(env, prep.Env), Log: &log, Sandbox: prep.Sandbox})
				if err != nil || res.ExitCode != 0 {
					t.Fatalf("%s: %v, exit %d: %s", path, err, res.ExitCode, log.String())
				}
				return log.String()
			}
			for _, sock := range socks {
				if out := confined(py, "-c", connectScript, sock); !strings.Contains(out, "refused") {
					t.Errorf("connect to %s: %s", sock, out)
				}
			}
			if bin != "" {
				if out := confined("/bin/sh", "-c", "cadre-test-tool"); !strings.Contains(out, "tool ran") {
					t.Errorf("a program on PATH under /run: %s", out)
				}
			}
		})
	}
	if n := accepted.Load(); n > 0 {
		t.Errorf("the host's sockets took %d connections from confined steps", n)
	}
}
