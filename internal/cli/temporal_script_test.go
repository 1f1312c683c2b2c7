package cli_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"
)

// temporalCLI finds the Temporal CLI (its dev server): .tools/bin/temporal
// of the checkout, as .ci/install-temporal installs it, else PATH.
func temporalCLI(t testing.TB) string {
	t.Helper()
	if p, err := filepath.Abs(filepath.Join("..", "..", ".tools", "bin", "temporal")); err == nil {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if p, err := exec.LookPath("temporal"); err == nil {
		return p
	}
	t.Skip("needs the Temporal CLI: run .ci/install-temporal")
	return ""
}

// TestTemporalScript runs the scripts in testdata/temporal, each against
// its own Temporal dev server (TEMPORAL_ADDRESS), with the cadre binary
// as worker and as the process that starts and steers runs.
func TestTemporalScript(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Temporal dev server per script")
	}
	bin := temporalCLI(t)
	testscript.Run(t, testscript.Params{
		Dir:                 filepath.Join("testdata", "temporal"),
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
		Setup: func(env *testscript.Env) error {
			if err := setupScript(env); err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			srv, err := testsuite.StartDevServer(ctx, testsuite.DevServerOptions{ExistingPath: bin,
				ClientOptions: &client.Options{Logger: log.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))},
				Stdout:        io.Discard, Stderr: io.Discard})
			if err != nil {
				return err
			}
			env.Defer(func() { srv.Stop() })
			env.Setenv("TEMPORAL_ADDRESS", srv.FrontendHostPort())
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"initrepo": cmdInitRepo,
			"exits":    cmdExits,
			"waititem": cmdWaitItem,
			"collect":  cmdCollect,
			"freeport": cmdFreePort,
			"waitfile": cmdWaitFile,
		},
	})
}

// cmdWaitItem waits (up to a minute, or SECONDS) until cadre status
// --json shows the latest run's ITEM with STATUS, and sets RUN to that
// run's id.
//
//	waititem ITEM STATUS [SECONDS]
func cmdWaitItem(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 || len(args) > 3 {
		ts.Fatalf("usage: waititem ITEM STATUS [SECONDS]")
	}
	limit := time.Minute
	if len(args) == 3 {
		n, err := strconv.Atoi(args[2])
		if err != nil || n < 1 {
			ts.Fatalf("waititem: SECONDS %q is not a positive number", args[2])
		}
		limit = time.Duration(n) * time.Second
	}
	// testscript puts the cadre command on the script's PATH.
	var cadre string
	for _, dir := range filepath.SplitList(ts.Getenv("PATH")) {
		if _, err := os.Stat(filepath.Join(dir, "cadre")); err == nil {
			cadre = filepath.Join(dir, "cadre")
			break
		}
	}
	if cadre == "" {
		ts.Fatalf("waititem: no cadre on the script's PATH")
	}
	var last string
	for deadline := time.Now().Add(limit); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		cmd := exec.Command(cadre, "status", "--json")
		cmd.Dir = ts.MkAbs(".")
		cmd.Env = append(os.Environ(), "HOME="+ts.Getenv("HOME"), "GIT_CONFIG_NOSYSTEM=1", "PATH="+ts.Getenv("PATH"))
		out, err := cmd.Output()
		if err != nil {
			last = err.Error()
			continue
		}
		var st struct {
			Run   string `json:"run"`
			Items []struct {
				ID     string `json:"id"`
				Status string `json:"status"`
			} `json:"items"`
		}
		if json.Unmarshal(out, &st) != nil {
			continue
		}
		for _, it := range st.Items {
			if it.ID == args[0] {
				last = it.Status
				if it.Status == args[1] {
					ts.Setenv("RUN", st.Run)
					return
				}
			}
		}
	}
	ts.Fatalf("waititem: %s is %q after %s, want %s", args[0], last, limit, args[1])
}

// cmdFreePort sets NAME to a loopback TCP port free a moment ago, for a
// server the script starts in the background.
//
//	freeport NAME
func cmdFreePort(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: freeport NAME")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		ts.Fatalf("freeport: %v", err)
	}
	defer ln.Close()
	ts.Setenv(args[0], strconv.Itoa(ln.Addr().(*net.TCPAddr).Port))
}
