package sandbox

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
)

// BridgeIfAsked runs the bridge and exits when this process was started
// as one (BridgeCommand first among its arguments), and returns
// otherwise: a test binary whose tests confine steps under model-only
// is the executable the sandbox starts as its bridge, so its TestMain
// calls this first.
func BridgeIfAsked() {
	if len(os.Args) > 1 && os.Args[1] == BridgeCommand {
		os.Exit(RunBridge(os.Args[2:], os.Stderr))
	}
}

// RunBridge is the helper cadre runs first inside a model-only sandbox (as
// the hidden command BridgeCommand): in the agent's own network namespace,
// where nothing but loopback exists, it listens on the proxy address and
// on each forwarded model endpoint, carries every connection to cadre's
// proxy through the Unix socket bound in, then runs the agent command
// given after "--" and exits with its status.
//
//	__sandbox-bridge --socket PATH --proxy 127.0.0.1:3128 [--forward 127.0.0.1:PORT]... -- PROG [ARGS...]
func RunBridge(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet(BridgeCommand, flag.ContinueOnError)
	fs.SetOutput(stderr)
	sock := fs.String("socket", "", "the proxy's Unix socket")
	proxyAddr := fs.String("proxy", "", "where the agent finds the proxy")
	var forwards multi
	fs.Var(&forwards, "forward", "a model endpoint reached through the proxy (repeatable)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	cmdArgs := fs.Args()
	if *sock == "" || *proxyAddr == "" || len(cmdArgs) == 0 {
		fmt.Fprintln(stderr, "cadre sandbox bridge: usage: --socket PATH --proxy ADDR [--forward ADDR]... -- PROG [ARGS...]")
		return 2
	}
	if err := listen(*proxyAddr, func(c net.Conn) { relay(c, *sock, "") }); err != nil {
		fmt.Fprintf(stderr, "cadre sandbox bridge: %v\n", err)
		return 2
	}
	for _, f := range forwards {
		if err := listen(f, func(c net.Conn) { relay(c, *sock, f) }); err != nil {
			fmt.Fprintf(stderr, "cadre sandbox bridge: %v\n", err)
			return 2
		}
	}
	return runChild(cmdArgs, stderr)
}

type multi []string

func (m *multi) String() string     { return fmt.Sprint(*m) }
func (m *multi) Set(v string) error { *m = append(*m, v); return nil }

// listen serves addr until the process ends, each connection in its own
// goroutine.
func listen(addr string, serve func(net.Conn)) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); serve(c) }()
		}
	}()
	return nil
}

// relay carries c to the proxy. With target set, it first asks the proxy
// for a tunnel to target, so c speaks to the model endpoint directly.
func relay(c net.Conn, sock, target string) {
	up, err := net.Dial("unix", sock)
	if err != nil {
		return
	}
	defer up.Close()
	br := bufio.NewReader(up)
	if target != "" {
		fmt.Fprintf(up, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
		resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
		if err != nil || resp.StatusCode != http.StatusOK {
			return
		}
	}
	done := make(chan struct{}, 2)
	go func() { io.Copy(up, c); closeWrite(up); done <- struct{}{} }()
	go func() { io.Copy(c, br); closeWrite(c); done <- struct{}{} }()
	<-done
	<-done
}

// runChild runs the agent with this process's stdio and environment,
// passes on the signals a stop sends, and returns its exit status (128+N
// when signal N ended it, like a shell).
func runChild(args []string, stderr io.Writer) int {
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(stderr, "cadre sandbox bridge: %v\n", err)
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			return 127
		}
		return 126
	}
	go func() {
		for s := range sigs {
			cmd.Process.Signal(s)
		}
	}()
	err := cmd.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	if err != nil {
		fmt.Fprintf(stderr, "cadre sandbox bridge: %v\n", err)
		return 1
	}
	return 0
}
