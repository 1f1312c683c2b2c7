package cli_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// TestLiveView runs the scripts in testdata/tui: cadre on a real terminal
// (a tmux pane), driven by keys and checked on the screen as drawn.
func TestLiveView(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("the live view tests need tmux (apt-get install tmux)")
	}
	testscript.Run(t, testscript.Params{
		Dir:                 filepath.Join("testdata", "tui"),
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
		Setup:               setupScript,
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"initrepo": cmdInitRepo,
			"exits":    cmdExits,
			"waitfile": cmdWaitFile,
			"freeport": cmdFreePort,
			"term":     cmdTerm,
		},
	})
}

// cmdTerm drives a terminal: a private tmux server of the script, one
// 160×40 pane, killed when the script ends.
//
//	term start DIR COMMAND   run sh -c COMMAND in DIR on the terminal; the
//	                         pane stays readable after COMMAND exits
//	term wait REGEXP         wait until the screen (and its history) matches
//	                         REGEXP, a multi-line one
//	term keys KEY...         type keys (tmux key names: q, Q, Enter, Escape)
//	term capture FILE        write the visible screen to FILE
func cmdTerm(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: term start DIR COMMAND | term wait REGEXP | term keys KEY... | term capture FILE")
	}
	sock := ts.MkAbs("tmux.sock")
	switch args[0] {
	case "start":
		if len(args) != 3 {
			ts.Fatalf("usage: term start DIR COMMAND")
		}
		conf := ts.MkAbs("tmux.conf")
		ts.Check(os.WriteFile(conf, []byte("set -g remain-on-exit on\nset -g history-limit 2000\n"), 0o644))
		tmux(ts, sock, "-f", conf, "new-session", "-d", "-s", "main", "-x", "160", "-y", "40",
			"-c", ts.MkAbs(args[1]), "sh", "-c", args[2])
		ts.Defer(func() { exec.Command("tmux", "-S", sock, "kill-server").Run() })
	case "wait":
		re, err := regexp.Compile("(?m)" + args[1])
		ts.Check(err)
		// No delay is asserted: the limit only turns a broken view into
		// a failure instead of a hang.
		deadline := time.Now().Add(30 * time.Second)
		for {
			// With the history: what a program prints as it exits can
			// scroll off the visible lines of a pane that dies after it.
			screen := tmux(ts, sock, "capture-pane", "-p", "-S", "-", "-t", "main")
			if re.MatchString(screen) {
				return
			}
			if time.Now().After(deadline) {
				ts.Fatalf("the screen never matched %q; it shows:\n%s", args[1], screen)
			}
			time.Sleep(50 * time.Millisecond)
		}
	case "keys":
		tmux(ts, sock, append([]string{"send-keys", "-t", "main"}, args[1:]...)...)
	case "capture":
		ts.Check(os.WriteFile(ts.MkAbs(args[1]), []byte(tmux(ts, sock, "capture-pane", "-p", "-t", "main")), 0o644))
	default:
		ts.Fatalf("term: unknown subcommand %q", args[0])
	}
}

// tmux runs tmux on the script's server with the script's environment.
func tmux(ts *testscript.TestScript, sock string, args ...string) string {
	cmd := exec.Command("tmux", append([]string{"-S", sock}, args...)...)
	cmd.Env = []string{"TERM=xterm-256color", "LANG=C.UTF-8"}
	for _, k := range []string{"PATH", "HOME", "GIT_CONFIG_NOSYSTEM", "TMPDIR", "WORK"} {
		cmd.Env = append(cmd.Env, k+"="+ts.Getenv(k))
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		ts.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}
