package cli_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/cadre-dev/cadre/internal/cli"
	"github.com/cadre-dev/cadre/internal/proc"
	"github.com/cadre-dev/cadre/internal/sandbox"
	"github.com/cadre-dev/cadre/internal/store"
)

// TestMain lets the test binary act as the cadre command inside scripts.
func TestMain(m *testing.M) {
	// Tests that run cadre in-process make this binary the sandbox's
	// network bridge (os.Executable), as the cadre binary is in use.
	sandbox.BridgeIfAsked()
	testscript.Main(m, map[string]func(){
		"cadre":  func() { os.Exit(cli.Main()) },
		"maxrss": maxRSS,
	})
}

// maxRSS runs a command and fails when its peak resident memory (its own or
// that of any child it waited for) went over a limit, so a script can show
// that memory stays bounded however much output an agent makes. A limit
// written +MiB is over the peak of "PROG version": what the workload adds
// to the program's own footprint, which does not depend on what else the
// binary links. It prints the figures, and exits with the command's code.
//
//	maxrss [+]MiB PROG [ARGS...]
func maxRSS() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: maxrss [+]MiB PROG [ARGS...]")
		os.Exit(2)
	}
	limit, err := strconv.Atoi(strings.TrimPrefix(os.Args[1], "+"))
	if err != nil {
		fmt.Fprintf(os.Stderr, "maxrss: limit %q is not a number\n", os.Args[1])
		os.Exit(2)
	}
	if strings.HasPrefix(os.Args[1], "+") {
		idle := exec.Command(os.Args[2], "version")
		if err := idle.Run(); err != nil {
			fmt.Fprintf(os.Stderr, "maxrss: %s version: %v\n", os.Args[2], err)
			os.Exit(2)
		}
		base := idle.ProcessState.SysUsage().(*syscall.Rusage).Maxrss / 1024
		fmt.Fprintf(os.Stderr, "maxrss: %s version peaks at %d MiB\n", os.Args[2], base)
		limit += int(base)
	}
	cmd := exec.Command(os.Args[2], os.Args[3:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err = cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		fmt.Fprintf(os.Stderr, "maxrss: %v\n", err)
		os.Exit(2)
	}
	peak := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss / 1024 // KiB on Linux
	fmt.Fprintf(os.Stderr, "maxrss: peak %d MiB\n", peak)
	if peak > int64(limit) && !raceEnabled {
		fmt.Fprintf(os.Stderr, "maxrss: peak %d MiB is over the limit of %d MiB\n", peak, limit)
		os.Exit(1)
	}
	os.Exit(cmd.ProcessState.ExitCode())
}

// TestScript runs the end-to-end scripts in testdata/script against the
// cadre binary. Each script builds its own git repository under $WORK.
func TestScript(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 filepath.Join("testdata", "script"),
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
		Setup:               setupScript,
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"initrepo":  cmdInitRepo,
			"exits":     cmdExits,
			"waitfile":  cmdWaitFile,
			"groupgone": cmdGroupGone,
			"seedevals": cmdSeedEvals,
			"serve":     cmdServe,
			"collect":   cmdCollect,
		},
		Condition: func(cond string) (bool, error) {
			switch cond {
			case "sandbox":
				return sandboxWorks(), nil
			case "root":
				return os.Geteuid() == 0, nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
	})
}

// sandboxWorks probes once whether bubblewrap runs here; scripts guarded
// by [sandbox] skip only where it is missing or the kernel forbids its
// namespaces (.ci/run installs it).
var sandboxWorks = sync.OnceValue(func() bool {
	bw, err := proc.FindBwrap("")
	if err == nil {
		err = proc.ProbeSandbox(context.Background(), proc.Sandbox{Bwrap: bw})
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "sandbox scripts skip: %v\n", err)
	}
	return err == nil
})

// cmdServe starts an HTTP server on ADDR (port 0: any) for the rest of the
// script, answering every request with "NAME ok" and appending each
// request's path to $WORK/NAME.hits, so a script can tell whether a
// sandboxed agent reached it. It sets NAME_URL and NAME_PORT.
//
//	serve NAME ADDR
func cmdServe(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: serve NAME ADDR")
	}
	name := args[0]
	ln, err := net.Listen("tcp", args[1])
	if err != nil {
		ts.Fatalf("serve: %v", err)
	}
	hits := ts.MkAbs(filepath.Join(ts.Getenv("WORK"), name+".hits"))
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f, err := os.OpenFile(hits, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err == nil {
			fmt.Fprintln(f, r.URL.Path)
			f.Close()
		}
		fmt.Fprintf(w, "%s ok\n", name)
	})}
	go srv.Serve(ln)
	ts.Defer(func() { srv.Close() })
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	upper := strings.ToUpper(name)
	ts.Setenv(upper+"_URL", "http://"+ln.Addr().String())
	ts.Setenv(upper+"_PORT", port)
}

// cmdCollect gathers the files called NAME that agents wrote in their
// steps' output directories (.cadre/runs/*/items/*/outputs under the
// current directory: besides its worktree, the one place a sandboxed
// agent may write) into DEST, run by run and item by item; with none,
// DEST is removed. Agents of a script record what they did there.
//
//	collect NAME DEST
func cmdCollect(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: collect NAME DEST")
	}
	files, err := filepath.Glob(ts.MkAbs(filepath.Join(".cadre", "runs", "*", "items", "*", "outputs", args[0])))
	ts.Check(err)
	// In the order they were last written: runs started in one second
	// have ids in no order of time.
	written := map[string]time.Time{}
	for _, f := range files {
		info, err := os.Stat(f)
		ts.Check(err)
		written[f] = info.ModTime()
	}
	slices.SortStableFunc(files, func(a, b string) int { return written[a].Compare(written[b]) })
	dest := ts.MkAbs(args[1])
	if len(files) == 0 {
		ts.Check(os.RemoveAll(dest))
		return
	}
	var all []byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		ts.Check(err)
		all = append(all, b...)
	}
	ts.Check(os.WriteFile(dest, all, 0o644))
}

// setupScript gives every script a private HOME with a git identity, so
// commits work and no user or system git configuration leaks in.
func setupScript(env *testscript.Env) error {
	home, err := os.MkdirTemp("", "cadre-script-home-")
	if err != nil {
		return err
	}
	env.Defer(func() { os.RemoveAll(home) })
	gitconfig := "[user]\n\tname = Cadre Test\n\temail = test@example.com\n" +
		"[init]\n\tdefaultBranch = main\n[advice]\n\tdetachedHead = false\n"
	if err := os.WriteFile(filepath.Join(home, ".gitconfig"), []byte(gitconfig), 0o644); err != nil {
		return err
	}
	env.Setenv("HOME", home)
	env.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	// A process that stays alive for the whole script, for lock tests.
	env.Setenv("LIVE_PID", strconv.Itoa(os.Getpid()))
	return nil
}

// cmdInitRepo makes DIR (default: the current directory) a git repository
// and commits everything in it.
//
//	initrepo [DIR]
func cmdInitRepo(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! initrepo")
	}
	if len(args) > 1 {
		ts.Fatalf("usage: initrepo [DIR]")
	}
	dir := "."
	if len(args) == 1 {
		dir = args[0]
	}
	dir = ts.MkAbs(dir)
	for _, argv := range [][]string{
		{"init", "--quiet", "--initial-branch", "main"},
		{"add", "-A"},
		{"commit", "--quiet", "--no-verify", "-m", "initial commit"},
	} {
		cmd := exec.Command("git", argv...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "HOME="+ts.Getenv("HOME"), "GIT_CONFIG_NOSYSTEM=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			ts.Fatalf("git %v in %s: %v\n%s", argv, dir, err, out)
		}
	}
}

// cmdExits runs a program and checks its exact exit code, which `! exec`
// cannot tell apart (1, 2, 3 and 130 mean different things: see
// "Exit status" in README.md).
// Its stdout and stderr are then available to stdout/stderr.
//
//	exits CODE PROG [ARGS...]
func cmdExits(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! exits")
	}
	if len(args) < 2 {
		ts.Fatalf("usage: exits CODE PROG [ARGS...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("exits: CODE %q is not a number", args[0])
	}
	got := 0
	if err := ts.Exec(args[1], args[2:]...); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("exits: %v", err)
		}
		got = ee.ExitCode()
	}
	if got != want {
		ts.Fatalf("%s exited with %d, want %d", args[1], got, want)
	}
}

// cmdWaitFile blocks until FILE exists: it lets a script act while a
// background command is at a known point, without guessing a delay. It
// gives up after a generous limit so a broken run fails instead of hanging.
//
//	waitfile FILE
func cmdWaitFile(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: waitfile FILE")
	}
	path := ts.MkAbs(args[0])
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("waitfile: %s did not appear", args[0])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// cmdGroupGone checks that no live process is left in the process group
// whose id FILE holds, polling for up to a second: a SIGKILLed process's
// group dies an instant after it.
//
//	groupgone FILE
func cmdGroupGone(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: groupgone FILE")
	}
	data, err := os.ReadFile(ts.MkAbs(args[0]))
	if err != nil {
		ts.Fatalf("groupgone: %v", err)
	}
	pgid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pgid <= 1 {
		ts.Fatalf("groupgone: %s holds %q, not a process group id", args[0], data)
	}
	deadline := time.Now().Add(time.Second)
	for {
		left, err := proc.Members(pgid)
		if err != nil {
			ts.Fatalf("groupgone: %v", err)
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for _, pid := range left {
				syscall.Kill(pid, syscall.SIGKILL) // do not leak them past the test
			}
			ts.Fatalf("processes %v of group %d are still alive", left, pgid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// cmdSeedEvals records evaluations in the journal of the repository in the
// current directory, one store.Evaluation as JSON per line of FILE (field
// names as in Go). Runs do not record evaluations yet; this stands in for
// them so scripts can exercise cadre scores.
//
//	seedevals FILE
func cmdSeedEvals(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: seedevals FILE")
	}
	var evs []store.Evaluation
	sc := bufio.NewScanner(strings.NewReader(ts.ReadFile(args[0])))
	for n := 1; sc.Scan(); n++ {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var e store.Evaluation
		dec := json.NewDecoder(strings.NewReader(sc.Text()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&e); err != nil {
			ts.Fatalf("seedevals: %s:%d: %v", args[0], n, err)
		}
		evs = append(evs, e)
	}
	ctx := context.Background()
	st, err := store.Open(ctx, ts.MkAbs(filepath.Join(".cadre", "cadre.db")))
	ts.Check(err)
	defer st.Close()
	ts.Check(st.RecordEvaluations(ctx, evs...))
}
