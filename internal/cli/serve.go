package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/sync/errgroup"

	"github.com/cadre-dev/cadre/internal/redact"
	"github.com/cadre-dev/cadre/internal/store"
	"github.com/cadre-dev/cadre/internal/ui/web"
	"github.com/cadre-dev/cadre/internal/workspace"
)

// defaultServeAddr is loopback only: the board shows agents' output.
const defaultServeAddr = "127.0.0.1:7420"

// ServeOptions are the flags of cadre serve.
type ServeOptions struct {
	Addr      string
	TokenFile string
}

// NewCmdServe builds cadre serve.
func NewCmdServe(f *Factory, runF func(context.Context, *Factory, *ServeOptions) error) *cobra.Command {
	opts := &ServeOptions{}
	cmd := &cobra.Command{
		Use:   "serve [--addr 127.0.0.1:7420] [--token-file FILE]",
		Short: "Web board of the repository's runs, live",
		Long: `Serve a web board of this repository's runs from its journal: a column per stage with a
card per item, moving live as the journal records events (Server-Sent Events); per item the
step timeline with each step's context file, output, log, signal, tokens and cost; per run the
cost by role, runner and model. It shows a run another cadre process is running, and runs
that ended.

The buttons (approve or reject a paused item, stop the run) need the token printed at start
(open the printed link, or paste it into the page), or the one in --token-file (created with
a new token when the file does not exist). Approving an item of a run no process runs
resumes that run here, in this process; approving one of a run another process runs records
the answer, and this process resumes the run when that one exits paused.

The board listens on 127.0.0.1 unless --addr says otherwise; it answers only requests
addressed to localhost or an IP address. cadre run --serve shows the same board from the
process running the run.

EXIT STATUS
  0    stopped (Ctrl-C)
  1    the board failed (the address is taken, the journal is unreadable)
  2    usage or config error`,
		Example: `  cadre serve                               # http://127.0.0.1:7420/#token=…
  cadre serve --addr 127.0.0.1:8080
  cadre serve --token-file ~/.config/cadre/token  # a token that survives restarts`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(cmd.Context(), f, opts)
			}
			return runServe(cmd.Context(), f, opts)
		},
	}
	cmd.Flags().StringVar(&opts.Addr, "addr", defaultServeAddr, "`HOST:PORT` to listen on")
	cmd.Flags().StringVar(&opts.TokenFile, "token-file", "", "read the action token from `FILE` (a new one is written there if it does not exist)")
	return cmd
}

func runServe(ctx context.Context, f *Factory, opts *ServeOptions) error {
	ws, err := f.workspace(ctx)
	if err != nil {
		return err
	}
	st, err := openStore(ctx, ws.root)
	if err != nil {
		return err
	}
	defer st.Close()
	acts := newBoardActions(f, ws, st, true)
	b, err := f.startBoard(ctx, ws, st, acts, opts.Addr, opts.TokenFile)
	if err != nil {
		return err
	}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return b.serve(gctx) })
	g.Go(func() error { return acts.watch(gctx) })
	err = g.Wait()
	acts.wait() // resumed runs end interrupted (resumable) at Ctrl-C
	if err != nil {
		return err
	}
	return nil
}

// board is a listening web board.
type board struct {
	srv *web.Server
	ln  net.Listener
	url string
}

func (b *board) serve(ctx context.Context) error { return b.srv.Serve(ctx, b.ln) }

// startBoard listens on addr and prints where the board is.
func (f *Factory) startBoard(ctx context.Context, ws workspaceCtx, st *store.Store, acts web.Actions, addr, tokenFile string) (*board, error) {
	token, err := boardToken(tokenFile)
	if err != nil {
		return nil, usageErr(err)
	}
	red := redact.New(f.Getenv(ws.cfg.GitHub.TokenEnv))
	srv, err := web.New(web.Options{Store: st, Token: token, Actions: acts, Redact: red.String})
	if err != nil {
		return nil, usageErr(err)
	}
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, usageErr(fmt.Errorf("--addr %s: %w", addr, err))
	}
	url := "http://" + ln.Addr().String() + "/"
	if tokenFile != "" {
		fmt.Fprintf(f.IO.ErrOut, "cadre: board at %s (actions need the token in %s)\n", url, tokenFile)
	} else {
		fmt.Fprintf(f.IO.ErrOut, "cadre: board at %s#token=%s\n", url, token)
	}
	return &board{srv: srv, ln: ln, url: url}, nil
}

// boardToken reads the token in file, writing a new one there when the
// file does not exist; no file: a new token for this process.
func boardToken(file string) (string, error) {
	if file == "" {
		return web.NewToken(), nil
	}
	data, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		token := web.NewToken()
		if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
			return "", fmt.Errorf("--token-file %s: %w", file, err)
		}
		if err := os.WriteFile(file, []byte(token+"\n"), 0o600); err != nil {
			return "", fmt.Errorf("--token-file %s: %w", file, err)
		}
		return token, nil
	}
	if err != nil {
		return "", fmt.Errorf("--token-file %s: %w", file, err)
	}
	token := strings.TrimSpace(string(data))
	if len(token) < 16 {
		return "", fmt.Errorf("--token-file %s: the token must have at least 16 characters", file)
	}
	return token, nil
}

func stateDirOf(ws workspaceCtx) string { return filepath.Join(ws.root, workspace.StateDir) }
