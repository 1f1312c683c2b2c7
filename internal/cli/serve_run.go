package cli

import (
	"context"
	"errors"
	"os"
	"regexp"

	"fmt"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sync/errgroup"

	"github.com/cadre-dev/cadre/internal/engine"
	"github.com/cadre-dev/cadre/internal/report"
	"github.com/cadre-dev/cadre/internal/store"
	"github.com/cadre-dev/cadre/internal/ui/web"
)

// ServeFlags are run's, resume's and do's --serve and --token-file.
type ServeFlags struct {
	Addr      string // "": no board
	TokenFile string
}

// boardGrace is how long a paused run --serve waits for a page to
// (re)connect before it exits 3 as a run without a board would.
const boardGrace = 3 * time.Second

func addServeFlags(cmd *cobra.Command, sf *ServeFlags) {
	fl := cmd.Flags()
	fl.StringVar(&sf.Addr, "serve", "", "serve the web board while the run goes on, on `HOST:PORT` (alone: "+defaultServeAddr+"); paused items wait for answers while the board is open")
	fl.Lookup("serve").NoOptDefVal = defaultServeAddr
	fl.StringVar(&sf.TokenFile, "token-file", "", "with --serve: the board's action token is in `FILE`")
}

// serveAddrRE is a HOST:PORT, as --serve takes it.
var serveAddrRE = regexp.MustCompile(`^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]*):[0-9]{1,5}$`)

// serveAddrArg takes the address of "--serve HOST:PORT": the flag's value
// is optional (alone it is the default address), so its parser left the
// address among the arguments. An argument that names a file stays one.
func serveAddrArg(cmd *cobra.Command, sf *ServeFlags, args []string) []string {
	if !cmd.Flags().Changed("serve") || sf.Addr != defaultServeAddr || len(args) == 0 || !serveAddrRE.MatchString(args[0]) {
		return args
	}
	if _, err := os.Stat(args[0]); err == nil {
		return args
	}
	sf.Addr = args[0]
	return args[1:]
}

// checkServeFlags refuses --token-file without --serve, and --serve where
// nothing would serve the board (a dry run), which would otherwise be
// ignored silently.
func checkServeFlags(cmd *cobra.Command, sf ServeFlags, dryRun bool) error {
	switch {
	case sf.Addr == "" && cmd.Flags().Changed("token-file"):
		return usageErr(errors.New("--token-file needs --serve"))
	case sf.Addr != "" && dryRun:
		return usageErr(errors.New("--serve cannot go with --dry-run, which runs nothing"))
	}
	return nil
}

// runServed runs start (a new run or a resume) with the web board served
// from this process, shown as sh says (the live view too, on a terminal).
// When the run pauses for a human while a board page is open, the process
// waits for the answers (on the board or in the live view) instead of
// exiting 3, and resumes the run after each one, until the run no longer
// pauses, the page is closed, the board's Stop is pressed or the process
// is interrupted.
func (f *Factory) runServed(ctx context.Context, ws workspaceCtx, sf ServeFlags, sh shown,
	start func(context.Context, *engine.Engine) (report.Summary, error)) error {
	st, err := openStore(ctx, ws.root)
	if err != nil {
		return err
	}
	defer st.Close()
	acts := newBoardActions(ctx, f, ws, st, false)
	// Only this run's repository: its process answers for no other.
	b, err := f.startBoard(ctx, []web.Repo{f.boardRepo(ws, st, acts)}, sf.Addr, sf.TokenFile)
	if err != nil {
		return err
	}
	bctx, stopBoard := context.WithCancel(context.WithoutCancel(ctx))
	var g errgroup.Group
	g.Go(func() error { return b.serve(bctx) })
	defer func() {
		stopBoard()
		g.Wait()
	}()

	sh.approve = acts.Approve
	sum, err := f.runEngineOf(ctx, ws, sh, func(ctx context.Context, e *engine.Engine) (report.Summary, error) {
		seen := acts.count()
		sum, err := start(ctx, e)
		say := func(msg string) { fmt.Fprintln(f.IO.ErrOut, "cadre: "+msg) }
		if sh.live { // the view owns the terminal: it shows the words
			say = func(msg string) { e.Warn(sum.Run, msg) }
		}
		for err == nil && sum.Status == store.RunPaused {
			if acts.count() == seen && !f.awaitAnswer(ctx, b, acts, sum, say) {
				break
			}
			seen = acts.count()
			sum, err = e.Resume(ctx, sum.Run)
		}
		return sum, err
	})
	fctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	b.srv.Flush(fctx)
	cancel()
	return finishRun(f, sum, relPath(err, ws.root), sh.json)
}

// awaitAnswer waits for an answer on the board; false when there will be
// none: no page stays open, Stop was pressed, or ctx ended.
func (f *Factory) awaitAnswer(ctx context.Context, b *board, acts *boardActions, sum report.Summary, say func(string)) bool {
	say(fmt.Sprintf("run %s paused: %s", sum.Run, sum.Reason))
	say(fmt.Sprintf("waiting for an answer on the board at %s (close it or press Ctrl-C to exit)", b.url))
	seen := acts.count()
	alone := time.Now()
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		if acts.count() != seen {
			return true
		}
		if acts.stopWaiting(sum.Run) {
			return false
		}
		if b.srv.Clients() > 0 {
			alone = time.Now()
		} else if time.Since(alone) > boardGrace {
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-acts.wake:
		case <-t.C:
		}
	}
}
